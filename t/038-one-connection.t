# One connection per worker per Redis server: zones on the same server
# (same address, credentials, db and timeouts) share it, and the
# requests of a turn leave as one script call whatever their zone, so
# rules of two such zones cost one round trip. A zone on another db,
# with other timeouts or on another address has its own. An outage is
# still told, and counted, per zone.

use lib 't/lib';
use RlTest;

my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 1, ready => 4,
                     config => <<'CONF');
    rl_zone a redis=127.0.0.1:$RedisPort prefix=a:;
    rl_zone b redis=127.0.0.1:$RedisPort prefix=b: failure=closed;
    rl_zone otherdb redis=127.0.0.1:$RedisPort db=1;
    rl_zone slower redis=127.0.0.1:$RedisPort timeout=1s;
    rl_zone sock redis=unix:$RedisSock;
    rl_zone mem;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /ab {
            rl_rule zone=a key=$arg_k rate=3r/d;
            rl_rule zone=b key=$arg_k rate=2r/d;
            empty_gif;
        }
        location /all {
            rl_rule zone=a key=all rate=1000r/d;
            rl_rule zone=otherdb key=all rate=1000r/d;
            rl_rule zone=slower key=all rate=1000r/d;
            rl_rule zone=sock key=all rate=1000r/d;
            rl_rule zone=mem key=all rate=1000r/d;
            empty_gif;
        }
        location /metrics {
            rl_metrics;
        }
    }
CONF
my $port = $ng->port;


is(code_status(http_get($port, '/all')), '200 PASSED', 'every zone decides');
my $n = 0;
wait_until(sub { ($n = $r->client_count('ngx_rl')) == 4 }, timeout => 5);
is($n, 4, 'one worker, four servers (a and b share one): 4 connections');

# two zones, one round trip: one EVALSHA per request, and each zone's
# rule counts with its own prefix
my $calls = $r->calls('evalsha');
my @got = map { code_status(http_get($port, '/ab?k=x')) } 1 .. 3;
is_deeply(\@got, ['200 PASSED', '200 PASSED', '429 REJECTED'],
          'the rules of both zones decide')
    or diag(explain \@got);
is($r->calls('evalsha') - $calls, 4, 'one script call per request for '
   . 'both zones, and one refund of a when b rejects: 4 for 3 requests');
ok($r->cli('--scan', '--pattern', 'a:*') ne ''
   && $r->cli('--scan', '--pattern', 'b:*') ne '',
   'each zone writes under its own prefix');

# an outage is each zone's: a line each, rl_store_up 0 each, its own
# policy each
$r->kill('KILL');
is(code_status(http_get($port, '/ab?k=y', -timeout => 5)), '429 ERROR',
   'Redis down: b is failure=closed');
my @down = map { metric_value($port, qq{rl_store_up{zone="$_"}}) } qw(a b otherdb);
is_deeply(\@down, [0, 0, 0], 'rl_store_up 0 for every zone on the server')
    or diag(explain \@down);
my $log = $ng->error_log_text;
like($log, qr/rl_zone "a": redis 127\.0\.0\.1:\d+ unavailable: .*; requests get failure=open/,
     'zone a logs the incident with its policy');
like($log, qr/rl_zone "b": redis 127\.0\.0\.1:\d+ unavailable: .*; requests get failure=closed/,
     'zone b logs the incident with its policy');

$r->start;
ok(wait_until(sub { code_status(http_get($port, '/ab?k=z')) eq '200 PASSED' },
              timeout => 5, interval => 0.1),
   'Redis back: both zones decide again');
ok(wait_until(sub { metric_value($port, 'rl_store_up{zone="b"}') == 1 },
              timeout => 5, interval => 0.1), 'rl_store_up 1 again');
ok(metric_value($port, 'rl_store_reconnects_total{zone="a"}') >= 1
   && metric_value($port, 'rl_store_reconnects_total{zone="b"}') >= 1,
   'the reconnection counts for both zones');
wait_until(sub { ($n = $r->client_count('ngx_rl')) == 4 }, timeout => 5);
is($n, 4, 'still 4 connections after the reconnection');

$ng->stop;
$r->stop;

done_testing();
