# A request that one zone rejects gives back what another zone's Redis
# counted before the client hears the rejection: the 429 waits for the
# refund's answer (at most that zone's timeout), so the client's next
# request, on whichever worker, finds nothing counted.
#
# Zone x admits at once; zone y's Redis is stopped, so y times out (its
# 300ms) and failure=closed rejects the request; x's Redis is stopped
# meanwhile, so its refund cannot be answered (the request waits up to
# x's timeout, 2s) until it goes on again.

use lib 't/lib';
use RlTest;
use RlTest::Proc qw(now);

my $rx = start_redis();
my $ry = start_redis();
my $yport = $ry->port;

my $ng = start_nginx(redis => $rx, workers => 2, config => <<"CONF");
    rl_zone x redis=127.0.0.1:\$RedisPort timeout=2s;
    rl_zone y redis=127.0.0.1:$yport timeout=300ms failure=closed;
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

sub evalsha_calls {
    my ($r) = @_;
    my ($n) = $r->cli('INFO', 'commandstats') =~ /^cmdstat_evalsha:calls=(\d+)/m;
    return $n // 0;
}

my $first = http_get($port, '/both');
is("$first->{code} $first->{headers}{'x-ratelimit-remaining'}", '200 4',
   'both zones answer: 200, 4 left');

$ry->kill('STOP');
my $calls = evalsha_calls($rx);
my $conn = http_start($port, '/both');
ok(wait_until(sub { evalsha_calls($rx) > $calls }, timeout => 5),
   'x decided the second request');
$rx->kill('STOP');

ok(wait_until(sub { $ng->error_log_text =~ /rl_zone "y".*no reply/ },
              timeout => 5), 'y timed out');
ok(!wait_until(sub { $conn->poll }, timeout => 0.5),
   'the rejection waits while x cannot answer the refund');

my $cont = now();
$rx->kill('CONT');
my $res = $conn->result(5);
is("$res->{code} $res->{headers}{'x-rl-status'}", '429 ERROR',
   'then failure=closed rejects it');
ok($conn->{end} >= $cont, 'once x answered the refund');

my $next = http_get($port, '/x');
is("$next->{code} $next->{headers}{'x-ratelimit-remaining'}", '200 3',
   'the rejected request counted nothing in x');

$ry->kill('CONT');
$ng->stop;
$rx->stop;
$ry->stop;
done_testing();
