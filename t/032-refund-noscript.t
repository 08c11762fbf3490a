# A refund that meets NOSCRIPT is sent again with the script's text, as
# a decision is: Redis may lose the script (SCRIPT FLUSH, a restart, a
# failover) between a request's decision in one zone and the refund
# another zone's rejection sends there.
#
# Zone x admits the request and counts it; zone y's Redis is stopped
# meanwhile, x's scripts are flushed, y goes on and rejects the request
# (its 1r/h is used), so x gets the refund after it lost the script.
# y's rule takes its cost from a variable, so the deny cache (which only
# answers for constant costs) leaves the rejection to Redis.

use lib 't/lib';
use RlTest;

my $rx = start_redis();
my $ry = start_redis();
my $yport = $ry->port;

my $ng = start_nginx(redis => $rx, workers => 1, config => <<"CONF");
    rl_zone x redis=127.0.0.1:\$RedisPort timeout=5s;
    rl_zone y redis=127.0.0.1:$yport timeout=5s;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /both {
            rl_rule zone=x key=k rate=100r/h name=x;
            rl_rule zone=y key=k rate=1r/h name=y cost=\$arg_c;
            empty_gif;
        }
        location /x {
            rl_rule zone=x key=k rate=100r/h name=x;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;


my $first = http_get($port, '/both?c=1');
is($first->{code}, 200, 'the first request passes both zones');

$ry->kill('STOP');
my $calls = $rx->calls('evalsha');
my $conn = http_start($port, '/both?c=1');
ok(wait_until(sub { $rx->calls('evalsha') > $calls }, timeout => 5),
   'x decided the second request');
$rx->cli('SCRIPT', 'FLUSH');
$ry->kill('CONT');
my $res = $conn->result(8);
is($res->{code}, 429, 'y rejects the second request');

my $next = http_get($port, '/x');
is("$next->{code} $next->{headers}{'x-ratelimit-remaining'}", '200 98',
   'x gave the rejected request back (100 - the first - this one)');
unlike($ng->error_log_text, qr/replied to a refund/,
       'no refund error in the log');

$ng->stop;
done_testing();
