# The operator API (SPEC section 8) on a Redis Cluster: each key value's
# state, block, override and reset go to the master of its slot (the
# state keys' hash tag), and follow the slot when it moves; a caller's
# quota (rl_quota, SPEC section 14) reads each of its rules on the
# master of that rule's key value.

use lib 't/lib';
use RlTest;
use RlTest::Api;
use RlTest::Cluster;

my $c = RlTest::Cluster->new(masters => 3, replicas => 0,
                             node_timeout => 1000);
my @M = $c->masters;
is(scalar @M, 3, 'a cluster of 3 masters');

my $ng = start_nginx(workers => 2, start => 0, vars => { Seed => $c->seed },
                     config => <<'CONF');
    rl_zone c cluster=$Seed timeout=5s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /t {
            rl_rule zone=c key=$http_x_key rate=3r/h algorithm=fixed_window
                    name=t;
            empty_gif;
        }
        location /o {
            rl_rule zone=c key=$http_x_other rate=5r/h
                    algorithm=fixed_window name=o;
            empty_gif;
        }
        location = /quota { rl_quota t o; }
        location /rl/ { rl_api write=on; }
    }
CONF
my ($ok, $msg) = $ng->try_start;
unless (ok($ok, 'nginx starts on the cluster')) {
    diag($msg);
    done_testing();
    exit;
}
my $port = $ng->port;
my $api = RlTest::Api->new($port, '/rl/');

sub as { http_get($port, '/t', 'X-Key' => $_[0], -timeout => 10) }

# a key value on each master
my @v = map { $c->value_on($_, prefix => 'k') } @M;
for my $i (0 .. $#M) {
    my $v = $v[$i];
    my @codes = map { code_status(as($v)) } 1 .. 4;
    is_deeply(\@codes, [('200 PASSED') x 3, '429 REJECTED'],
              "$v (master $i): three an hour");
    my ($code, $data) = $api->get("1/rules/t/keys/$v");
    is($code, 200, "$v: its state");
    is($data->{remaining}, 0, "$v: read on its master");

    ($code) = $api->call('POST', "1/rules/t/keys/$v/block", { ttl => 60 });
    is($code, 201, "$v: blocked");
    is_deeply([ $c->holders("rl:{$v}") ], [ $M[$i] ],
              "$v: the block is on its slot's master");
    ($code) = $api->call('DELETE', "1/rules/t/keys/$v/block");
    is($code, 204, "$v: unblocked");
    is(scalar(() = $c->holders("rl:{$v}")), 0, "$v: the block is gone");

    ($code) = $api->call('PUT', "1/rules/t/keys/$v/override", { limit => 9 });
    is($code, 200, "$v: an override");
    is($c->get("rl:{$v}"), 'limit t=9', "$v: written on its master");
    is(as($v)->{headers}{'x-ratelimit-limit'}, 9, "$v: in force");
    $api->call('DELETE', "1/rules/t/keys/$v/override");

    ($code) = $api->call('DELETE', "1/rules/t/keys/$v");
    is($code, 204, "$v: reset");
    is(as($v)->{headers}{'x-ratelimit-remaining'}, 2,
       "$v: a whole window again");
}

# a caller whose two rules' keys are on two masters: each read there
http_get($port, '/o', 'X-Other' => $v[1]) for 1 .. 2;
my $q = http_get($port, '/quota', 'X-Key' => $v[0], 'X-Other' => $v[1],
                 -timeout => 10);
is($q->{code}, 200, 'a quota of rules on two masters');
my %left = $q->{body} =~ /"name":"(\w+)","zone":"c","limit":\d+,"remaining":(\d+)/g;
is_deeply(\%left, { t => 2, o => 3 }, 'each read on its own master')
    or diag($q->{body});

my ($code, $data) = $api->get('1/rules/t/top');
is_deeply([ sort map { $_->{key} } @{ $data->{keys} } ], [ sort @v ],
          'the top keys of every master');

# the slot of a value moves: the API follows it
my $v = $v[0];
my $slot = $c->slot_of("{$v}");
$c->migrate_slot($slot, $M[1]);
my $got;
ok(wait_until(sub {
       ($got) = $api->call('POST', "1/rules/t/keys/$v/block", {});
       $got == 201 }, timeout => 10, interval => 0.2),
   'a write after the slot moved lands once the map knows');
is_deeply([ $c->holders("rl:{$v}") ], [ $M[1] ],
          'on the master that serves the slot now');
is(code_status(as($v)), '429 REJECTED', 'and holds');

unlike($ng->error_log_text, qr/\[(alert|crit|emerg)\]/, 'no alert');
done_testing();
