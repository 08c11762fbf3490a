# Recovery: Redis killed and restarted on the same port, scripts flushed,
# data flushed. Meanwhile requests get the failure policy; afterwards
# decisions resume by themselves; nothing crashes.

use lib 't/lib';
use RlTest;

my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 2, config => <<'CONF');
    rl_zone recopen redis=127.0.0.1:$RedisPort timeout=300ms failure=open;
    rl_zone recclosed redis=127.0.0.1:$RedisPort timeout=300ms
            failure=closed;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /open {
            rl_rule zone=recopen key=k rate=100000r/d;
            empty_gif;
        }
        location /closed {
            rl_rule zone=recclosed key=k rate=100000r/d;
            empty_gif;
        }
        location /lim {
            rl_rule zone=recopen key=$arg_k rate=3r/d algorithm=fixed_window;
            empty_gif;
        }
        location /lims {
            rl_rule zone=recopen key=$arg_k rate=3r/d
                    algorithm=sliding_window;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;


sub resumes {
    my ($loc, $what) = @_;
    my $last;
    my $ok = wait_until(sub {
        $last = http_get($port, $loc, -timeout => 5);
        return code_status($last) eq '200 PASSED';
    }, timeout => 5, interval => 0.1);
    ok($ok, "$loc: decisions resume within 5s $what")
        or diag('last answer: ' . code_status($last));
}

is(code_status(http_get($port, '/open')), '200 PASSED', 'before: /open PASSED');
is(code_status(http_get($port, '/closed')), '200 PASSED', 'before: /closed PASSED');

# ---------------------------------------------------------------- SIGKILL

$r->kill('KILL');

my ($slow_o, $slow_c) = (0, 0);
for my $i (1 .. 10) {
    my $o = http_get($port, '/open', -timeout => 5);
    is(code_status($o), '200 ERROR', "redis dead, failure=open: 200 ERROR ($i)");
    $slow_o++ if $o->{elapsed} > 1;
    my $c = http_get($port, '/closed', -timeout => 5);
    is(code_status($c), '429 ERROR', "redis dead, failure=closed: 429 ERROR ($i)");
    $slow_c++ if $c->{elapsed} > 1;
}
is($slow_o + $slow_c, 0, 'redis dead: every answer within 1s');

$r->restart;
resumes('/open', 'after restart');
resumes('/closed', 'after restart');

# the limit works again, from an empty Redis (each worker reconnects on
# its own: a request the other worker takes before it has may get the
# policy, ERROR; then again, with a fresh key)
my ($got, $n) = ('', 0);
wait_until(sub {
    my @st = map { code_status(http_get($port, "/lim?k=after$n")) } 1 .. 4;
    $n++;
    $got = join ', ', @st;
    return !grep { /ERROR/ } @st;
}, timeout => 5, interval => 0.1);
is($got, '200 PASSED, 200 PASSED, 200 PASSED, 429 REJECTED',
   'after restart: limit counts again');

# ---------------------------------------------------------------- SCRIPT FLUSH

# both workers connected again (the requests above may all have met one
# of them; the other's backoff can outlast them, and its requests get
# the policy until it reconnects: not what this part tests)
ok(wait_until(sub { $r->client_count('ngx_rl') == 2 }, timeout => 5),
   'after restart: both workers connected again');

for my $loc (qw(lim lims)) {
    $r->cli('SCRIPT', 'FLUSH');
    my @st;
    for my $i (1 .. 5) {
        push @st, code_status(http_get($port, "/$loc?k=flush"));
        $r->cli('SCRIPT', 'FLUSH') if $i == 2;
    }
    is_deeply(\@st, [ ('200 PASSED') x 3, ('429 REJECTED') x 2 ],
              "/$loc: SCRIPT FLUSH is invisible: PASSED x3, REJECTED x2")
        or diag(explain(\@st));
}

# every worker meets NOSCRIPT (each has its own connection)
$r->cli('SCRIPT', 'FLUSH');
my @many = http_parallel($port, [ map { "/open?n=$_" } 1 .. 20 ],
                         concurrency => 10, full => 1);
my @bad = grep { code_status($_) ne '200 PASSED' } @many;
is(scalar @bad, 0, 'after SCRIPT FLUSH, 20 concurrent requests all PASSED')
    or diag(join ', ', map { code_status($_) } @bad);

# ---------------------------------------------------------------- FLUSHALL

# (a new key: the instance's deny cache still knows k=flush is over)
$r->cli('FLUSHALL');
@codes = map { code_status(http_get($port, '/lim?k=flushall')) } 1 .. 4;
is_deeply(\@codes, [ ('200 PASSED') x 3, '429 REJECTED' ],
          'after FLUSHALL: PASSED x3, REJECTED, never ERROR')
    or diag(explain(\@codes));

# ---------------------------------------------------------------- second kill

# a second outage is handled as the first one
$r->kill('KILL');
is(code_status(http_get($port, '/open', -timeout => 5)), '200 ERROR',
   'second outage: 200 ERROR');
$r->restart;
resumes('/open', 'after the second restart');
resumes('/closed', 'after the second restart');

# ---------------------------------------------------------------- long outage

# Down for 3s with traffic (any reconnect backoff grows meanwhile), then
# back: decisions resume within 2s (+1s of slack for this test's polling).
$r->kill('KILL');
my $down_until = now() + 3;
my $during = 0;
while (now() < $down_until) {
    my $o = http_get($port, '/open', -timeout => 5);
    $during++ if code_status($o) ne '200 ERROR';
    wait_until(sub { now() >= $down_until }, timeout => 0.1);
}
is($during, 0, 'long outage: every answer 200 ERROR');
$r->restart;
my $t0 = now();
resumes('/open', 'after a 3s outage');
my $took = now() - $t0;
ok($took <= 3, sprintf('after a 3s outage: resumed in %.2fs (<= 2s + slack)',
                       $took));

my $log = $ng->error_log_text;
my @err = grep { /\[error\]/ && /recopen/ && /redis/i } split /\n/, $log;
ok(@err >= 1, 'the outage is logged at error level with zone and redis');
# 2 workers x 3 outages; 40 or so requests went to recopen while down
ok(@err <= 12, 'not one error line per request (' . scalar(@err) . ')')
    or diag(join "\n", @err[0 .. ($#err > 11 ? 11 : $#err)]);

$ng->stop;
$r->stop;
done_testing();
