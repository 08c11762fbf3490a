# Rules on two Redis zones. Each zone's timeout= counts on its own: a
# zone whose Redis stopped gives up at its own timeout, not the other
# zone's. A request that one zone rejects gives back what the other
# zone's Redis counted before the client hears the rejection: the 429
# waits for the refund's answer (at most that zone's timeout), so the
# client's next request, on whichever worker, finds nothing counted.
#
# Zone x (timeout=5s) admits at once; zone y's Redis is stopped, so y
# times out at its 1s and failure=closed rejects the request. In the
# second case x's Redis is stopped too, right after it decided (well
# within y's 1s, however busy the host), so the refund cannot be
# answered (the request waits up to x's 5s) until it goes on again.

use lib 't/lib';
use RlTest;
use RlTest::Proc qw(now);

my $rx = start_redis();
my $ry = start_redis();
my $yport = $ry->port;

my $ng = start_nginx(redis => $rx, workers => 1, config => <<"CONF");
    rl_zone x redis=127.0.0.1:\$RedisPort timeout=5s;
    rl_zone y redis=127.0.0.1:$yport timeout=1s failure=closed;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /both {
            rl_rule zone=x key=k rate=5r/h name=x;
            rl_rule zone=y key=k rate=5r/h name=y;
            empty_gif;
        }
        location /x {
            rl_rule zone=x key=k rate=5r/h name=x;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;


my $first = http_get($port, '/both');
is("$first->{code} $first->{headers}{'x-ratelimit-remaining'}", '200 4',
   'both zones answer: 200, 4 left');

$ry->kill('STOP');
my $t = http_get($port, '/both', -timeout => 8);
is("$t->{code} $t->{headers}{'x-rl-status'}", '429 ERROR',
   'y stopped: failure=closed');
ok($t->{elapsed} >= 0.95 && $t->{elapsed} < 3,
   "y stopped: answered at y's timeout=1s, not x's 5s ("
   . sprintf('%.2fs', $t->{elapsed}) . ')');
$t = http_get($port, '/x');
is("$t->{code} $t->{headers}{'x-ratelimit-remaining'}", '200 3',
   'the rejected request counted nothing in x');

# y back: decisions resume by themselves
$ry->kill('CONT');
ok(wait_until(sub { http_get($port, '/both')->{code} == 200 },
              timeout => 5, interval => 0.1), 'y answers again');

sub y_timeouts {
    my @l = grep { /rl_zone "y".*no reply/ } split /\n/, $ng->error_log_text;
    return scalar @l;
}
my $seen = y_timeouts();
$ry->kill('STOP');
my $calls = $rx->calls('evalsha');
my $conn = http_start($port, '/both');
ok(wait_until(sub { $rx->calls('evalsha') > $calls }, timeout => 5),
   'x decided the second request');
$rx->kill('STOP');

ok(wait_until(sub { y_timeouts() > $seen }, timeout => 5), 'y timed out');
ok(!wait_until(sub { $conn->poll }, timeout => 0.5),
   'the rejection waits while x cannot answer the refund');

my $cont = now();
$rx->kill('CONT');
my $res = $conn->result(5);
is("$res->{code} $res->{headers}{'x-rl-status'}", '429 ERROR',
   'then failure=closed rejects it');
ok($conn->{end} >= $cont, 'once x answered the refund');

my $next = http_get($port, '/x');
is("$next->{code} $next->{headers}{'x-ratelimit-remaining'}", '200 1',
   'the second rejected request counted nothing in x either');

$ry->kill('CONT');
$ng->stop;
$rx->stop;
$ry->stop;
done_testing();
