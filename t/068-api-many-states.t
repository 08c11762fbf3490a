# One rule name with more states than one script call's request holds
# (issue 31, 1): seventy locations share name=shared, each with a window
# of its own (a state each: SPEC section 2). The operator API reads,
# writes and lists all of them, on Redis and on the embedded store:
# the key's state names the rule that binds even when it is the 70th,
# a reset forgets every state, a block rejects in every one, and the
# worker never writes past an array (make SANITIZE=1 runs this too).

use lib 't/lib';
use RlTest;
use RlTest::Api;

my $n = 70;
my $locations = join "\n", map {
    "location /r$_ { rl_rule zone=main key=\$http_x_key rate=5r/${_}s "
    . "name=shared; empty_gif; }\n"
    . "location /m$_ { rl_rule zone=mem key=\$http_x_key rate=5r/${_}s "
    . "name=mshared; empty_gif; }"
} 1 .. $n;

my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 2, config => <<"CONF");
    rl_zone main redis=127.0.0.1:\$RedisPort timeout=5s;
    rl_zone mem;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        $locations
        location /rl/ { rl_api write=on; }
    }
CONF
my $port = $ng->port;
my $api = RlTest::Api->new($port, '/rl/');

sub as { my ($path, $key) = @_; code_status(http_get($port, $path,
                                                     'X-Key' => $key)) }

for my $store (['shared', 'r', 'Redis'], ['mshared', 'm', 'embedded']) {
    my ($name, $loc, $what) = @$store;

    # the last state (beyond 64) used up, the first one touched once
    my @codes = map { as("/$loc$n", 'k') } 1 .. 6;
    is_deeply(\@codes, [('200 PASSED') x 5, '429 REJECTED'],
              "$what: five in the ${n}th state") or diag explain \@codes;
    is(as("/${loc}1", 'k'), '200 PASSED', "$what: the first state is apart");

    my ($code, $data) = $api->get("1/rules/$name/keys/k");
    is($code, 200, "$what: the key of a name of $n states") or diag explain $data;
    is($data->{remaining}, 0, "$what: the ${n}th state binds: nothing left");
    is($data->{limit}, 5, "$what: its limit");
    ok($data->{reset} > 0 && $data->{reset} <= 2 * $n,
       "$what: reset within two of its windows ($data->{reset})");

    ($code, $data) = $api->get("1/rules/$name/keys/other");
    is($code, 200, "$what: a key never seen");
    is($data->{remaining}, 5, "$what: reads whole");

    ($code) = $api->call('POST', "1/rules/$name/keys/b/block",
                         { ttl => 60, reason => 'many' });
    is($code, 201, "$what: a block");
    is(as("/$loc$n", 'b'), '429 REJECTED', "$what: rejects in the last state");
    ($code, $data) = $api->get("1/rules/$name/keys/b");
    is_deeply([$code, $data->{blocked}{reason}], [200, 'many'],
              "$what: and reads as blocked");

    ($code) = $api->call('DELETE', "1/rules/$name/keys/k");
    is($code, 204, "$what: a reset");
    ($code, $data) = $api->get("1/rules/$name/keys/k");
    is($data->{remaining}, 5, "$what: every state forgotten, the last too");
    is(as("/$loc$n", 'k'), '200 PASSED', "$what: the key passes again");
}

my ($code, $data) = $api->get('1/rules');
is($code, 200, '/1/rules');
is(scalar(grep { $_->{name} eq 'shared' } @$data), 1, 'the name listed once');
is(scalar @$data, 2, 'two names in all');

$ng->stop;
done_testing();
