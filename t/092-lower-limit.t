# A lower N that later ends forgets nothing a key holds (SPEC section 9:
# "the slots held stay counted whatever N is in force"; and a
# sliding_log's admitted times alike), against the test upstream, on
# the embedded store and on Redis:
#
# - concurrency=6, 6 requests held at the upstream; a lower N of 2 (a
#   live limit, or the key's override); one request (rejected); the
#   lower N ends; 6 more requests: all rejected, the upstream never sees
#   more than 6 at once. Before, the embedded store cut the key's log to
#   the lower N's 2 slots: 4 of the 6 were admitted, 10 at once.
# - sliding_log at 6r/h: 6 admitted; a lower N of 2 (a live limit, an
#   override, a live limit of 0); requests rejected; the lower N ends;
#   6 more: all rejected. Before, the embedded store kept the 2 newest
#   times (none under 0, and the state read as whole, which the sweep
#   forgets): 4 (6) more were admitted, 10 (12) in an hour.
#
# Redis zones held already (a sorted set has no size): they are here as
# the reference the embedded store must match.

use lib 't/lib';
use RlTest;
use RlTest::Api;

my $r = start_redis();
my $up = start_upstream();
my $UP = $up->port;
my $ng = start_nginx(redis => $r, workers => 2, ready => 2, config => <<"CONF");
    rl_fleet name=one interval=1s;
    rl_zone mem;
    rl_zone red redis=127.0.0.1:\$RedisPort timeout=2s;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /c/mem {
            rl_rule zone=mem key=\$arg_key concurrency=6 name=mslots;
            proxy_pass http://127.0.0.1:$UP/hold;
        }
        location /c/red {
            rl_rule zone=red key=\$arg_key concurrency=6 name=rslots;
            proxy_pass http://127.0.0.1:$UP/hold;
        }
        location /l/mem { rl_rule zone=mem key=\$arg_key rate=6r/h
                                  algorithm=sliding_log name=mlog;
                          empty_gif; }
        location /l/red { rl_rule zone=red key=\$arg_key rate=6r/h
                                  algorithm=sliding_log name=rlog;
                          empty_gif; }
        location /rl/ { rl_api write=on; }
    }
CONF
my $P = $ng->port;
my $api = RlTest::Api->new($P, '/rl/');

# the rule's N lowered to $n for $key (a live limit: every key), and
# back
sub lower {
    my ($how, $rule, $key, $n) = @_;
    my ($code) = $how eq 'override'
        ? $api->call('PUT', "1/rules/$rule/keys/$key/override",
                     { limit => $n })
        : $api->call('PUT', "1/rules/$rule/limit", { limit => $n });
    return $code;
}
sub lift {
    my ($how, $rule, $key) = @_;
    my ($code) = $how eq 'override'
        ? $api->call('DELETE', "1/rules/$rule/keys/$key/override")
        : $api->call('DELETE', "1/rules/$rule/limit");
    return $code;
}
sub codes {
    my (@paths) = @_;
    return join ' ', map { code_status($_) }
                     http_parallel($P, \@paths, concurrency => 6,
                                   timeout => 30, full => 1);
}
my $none = join ' ', ('429 REJECTED') x 6;

for my $store (qw(mem red)) {
    for my $how (qw(live override)) {
        my $rule = $store eq 'mem' ? 'mslots' : 'rslots';
        my $key = "c-$store-$how";
        my @held = map { http_start($P, "/c/$store?key=$key&until=$key") }
                   1 .. 6;
        ok(wait_until(sub { $up->stats($key)->{now} == 6 }, timeout => 10),
           "$store, $how: 6 requests hold the key's 6 slots");
        is(lower($how, $rule, $key, 2), 200, "... N lowered to 2 ($how)");
        is(code_status(http_get($P, "/c/$store?key=$key&ms=1")),
           '429 REJECTED', '... one more request: rejected');
        is(lift($how, $rule, $key), 204, '... the lower N ended');
        is(codes(map { "/c/$store?key=$key&ms=300" } 1 .. 6), $none,
           '... 6 more: all rejected, the 6 slots still held');
        is($up->stats($key)->{max}, 6,
           '... the upstream never saw more than 6 at once');
        $up->release($key);
        is(join(' ', map { $_->result(10)->{code} } @held),
           join(' ', (200) x 6), '... the held requests end');
    }
}

for my $store (qw(mem red)) {
    for my $case (['live', 2], ['override', 2], ['live', 0]) {
        my ($how, $n) = @$case;
        my $rule = $store eq 'mem' ? 'mlog' : 'rlog';
        my $key = "l-$store-$how-$n";
        is(codes(map { "/l/$store?key=$key" } 1 .. 6),
           join(' ', ('200 PASSED') x 6), "$store, $how $n: 6 admitted");
        is(lower($how, $rule, $key, $n), 200, "... N lowered to $n ($how)");
        is(join(' ', map { code_status(http_get($P, "/l/$store?key=$key")) }
                     1 .. 4),
           join(' ', ('429 REJECTED') x 4), '... requests rejected');
        # other keys' requests: the embedded store's sweep (a few states
        # a request, never the one a request just used) passes by the
        # key's state (before, under 0 it read as whole: forgotten)
        http_get($P, "/l/$store?key=$key-$_") for 1 .. 10;
        is(lift($how, $rule, $key), 204, '... the lower N ended');
        is(codes(map { "/l/$store?key=$key" } 1 .. 6), $none,
           '... 6 more: all rejected, 6 in the hour already');
    }
}

$ng->stop;
done_testing();
