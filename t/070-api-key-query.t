# Key values a path segment cannot carry (issue 31, 6; SPEC section 8):
# every /1/rules/NAME/keys/VALUE[/ACTION] has a twin
# /1/rules/NAME/key[/ACTION]?value=VALUE. "." and ".." (which clients
# resolve away, encoded or not), a value with '/' or a NUL byte, and one
# longer than 4,096 bytes (limited by the rule, digested as the rule
# digests it) are read, blocked, unblocked, overridden and reset, on
# Redis and on the embedded store. A parameter given twice
# (?value=a&value=b) is refused, not read as the last one.

use lib 't/lib';
use RlTest;
use RlTest::Api;

my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 2, config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
    rl_zone mem;
    rl_zone lz redis=127.0.0.1:$RedisPort timeout=5s lease=1s
            prefix=pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp;
    server {
        listen 127.0.0.1:$ServerPort;
        large_client_header_buffers 4 32k;
        add_header X-RL-Status $rl_status always;
        location /r { rl_rule zone=main key=$http_x_key rate=3r/m name=r;
                      empty_gif; }
        location /m { rl_rule zone=mem key=$http_x_key rate=3r/m name=m;
                      empty_gif; }
        location /l { rl_rule zone=lz key=$http_x_key rate=3r/m name=l;
                      empty_gif; }
        location /rl/ { rl_api write=on; }
    }
CONF
my $port = $ng->port;
my $api = RlTest::Api->new($port, '/rl/');
sub as { code_status(http_get($port, $_[0], 'X-Key' => $_[1])) }
sub qv { 'value=' . RlTest::Api::enc($_[0]) }

my $long = 'L' x 5000;
for my $store (['r', 'Redis'], ['m', 'embedded']) {
    my ($rule, $what) = @$store;
    for my $value ('.', '..', 'a/b', "\xff\xfe", 'v' x 43, 'w' x 64, $long) {
        my $name = length $value > 20 ? length($value) . ' bytes'
                                      : "\"$value\"";
        $name =~ s/([^ -~])/sprintf("\\x%02x", ord $1)/ge;
        my @codes = map { as("/$rule", $value) } 1 .. 4;
        is_deeply(\@codes, [('200 PASSED') x 3, '429 REJECTED'],
                  "$what: $name is limited") or diag explain \@codes;

        my ($code, $data) = $api->get("1/rules/$rule/key?" . qv($value));
        is($code, 200, "$what: $name read in the query");
        is($data->{remaining}, 0, "$what: $name: nothing left");

        ($code) = $api->call('DELETE', "1/rules/$rule/key?" . qv($value));
        is($code, 204, "$what: $name reset");
        is(as("/$rule", $value), '200 PASSED', "$what: $name passes again");

        ($code) = $api->call('POST', "1/rules/$rule/key/block?" . qv($value),
                             { ttl => 60, reason => 'q' });
        is($code, 201, "$what: $name blocked");
        is(as("/$rule", $value), '429 REJECTED', "$what: $name rejected");
        ($code, $data) = $api->get("1/rules/$rule/key?" . qv($value));
        is($data->{blocked}{reason}, 'q', "$what: $name reads as blocked");
        ($code) = $api->call('DELETE',
                             "1/rules/$rule/key/block?" . qv($value));
        is($code, 204, "$what: $name unblocked");

        ($code) = $api->call('PUT', "1/rules/$rule/key/override?" . qv($value),
                             { limit => 10 });
        is($code, 200, "$what: $name overridden");
        ($code, $data) = $api->get("1/rules/$rule/key?" . qv($value));
        is($data->{limit}, 10, "$what: $name reads its override");
        is(as("/$rule", $value), '200 PASSED', "$what: $name passes");
        ($code) = $api->call('DELETE',
                             "1/rules/$rule/key/override?" . qv($value));
        is($code, 204, "$what: the override of $name removed");
        $api->call('DELETE', "1/rules/$rule/key?" . qv($value));
    }
}

# Values of 42 to 64 bytes are kept as they are, where a digest takes 41:
# each buffer that holds one is sized for the longer (before, the API's
# block key overran its allocation and the block went to another key;
# the embedded store's block key overran into its own length; with
# leases and a long prefix=, a write overran the stack, and every
# instance's worker 0 did so reading the audit)
for my $value ('x' x 42, 'y' x 64) {
    my $name = length($value) . ' bytes, leases, a prefix of 60';
    my ($code) = $api->call('POST', "1/rules/l/keys/$value/block",
                            { ttl => 60, reason => 'q' });
    is($code, 201, "$name: blocked");
    is(as('/l', $value), '429 REJECTED', "$name: rejected");
    ($code) = $api->call('DELETE', "1/rules/l/keys/$value/block");
    is($code, 204, "$name: unblocked");
    is(as('/l', $value), '200 PASSED', "$name: passes");
}

# the path form and the query form name one key
as('/r', 'same') for 1 .. 2;
is(($api->get('1/rules/r/keys/same'))[1]{remaining}, 1, 'the path form');
is(($api->get('1/rules/r/key?value=same'))[1]{remaining}, 1,
   'the query form: the same key');

# errors
my ($code, $data) = $api->get('1/rules/r/key');
is_deeply([$code, $data->{error}{code}], [400, 'KeyInvalid'],
          'no value=: 400');
($code, $data) = $api->get('1/rules/r/key?value=');
is_deeply([$code, $data->{error}{code}], [400, 'KeyInvalid'],
          'an empty value: 400');
($code, $data) = $api->get('1/rules/r/key/nothing?value=x');
is_deeply([$code, $data->{error}{code}], [404, 'PathNotFound'],
          'an unknown action: 404');

# a parameter given twice is refused, nothing written (before, the
# block went to b, the last one, and a's never came)
($code, $data) = $api->call('POST', '1/rules/r/key/block?value=a&value=b',
                            { ttl => 60, reason => 'twice' });
is_deeply([$code, $data->{error}{code}], [400, 'ArgumentInvalid'],
          'value=a&value=b: 400');
like($data->{error}{text}, qr/value= is given twice/, 'saying so');
is(as('/r', $_), '200 PASSED', "$_ was not blocked") for qw(a b);
($code, $data) = $api->get('1/rules/r/key?value=a&zone=main&zone=mem');
is_deeply([$code, $data->{error}{code}], [400, 'ArgumentInvalid'],
          'zone= twice: 400');
($code) = $api->get('1/rules/r/key?_=1&value=a&_=2');
is($code, 200, 'a parameter the API does not read, twice: no concern');
$ng->stop;
done_testing();
