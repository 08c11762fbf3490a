# A worker never blocks on Redis: with Redis stopped (SIGSTOP), a location
# without rules on the same single worker answers at once, limited requests
# answer at timeout= with the failure policy, and, Redis being known down,
# the next ones get the policy at once. SIGCONT: decisions resume.

use lib 't/lib';
use RlTest;

my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 1, config => <<'CONF');
    rl_zone nbopen redis=127.0.0.1:$RedisPort timeout=2s failure=open;
    rl_zone nbclosed redis=127.0.0.1:$RedisPort timeout=2s failure=closed;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /open {
            rl_rule zone=nbopen key=k rate=1000r/d;
            empty_gif;
        }
        location /closed {
            rl_rule zone=nbclosed key=k rate=1000r/d;
            empty_gif;
        }
        location /free {
            return 200 "free";
        }
    }
CONF
my $port = $ng->port;

sub status_of { $_[0]{headers}{'x-rl-status'} // '' }
sub fmt { sprintf '%.2fs', $_[0]{elapsed} }

# warm up: both zones connected and deciding
for my $loc (qw(open closed)) {
    my $res = http_get($port, "/$loc");
    is($res->{code}, 200, "/$loc before the outage: 200");
    is(status_of($res), 'PASSED', "/$loc before the outage: PASSED");
}

$r->kill('STOP');

my $co = http_start($port, '/open');
my $cc = http_start($port, '/closed');

# both stay pending (asserted for 300ms), the worker is not blocked
ok(!wait_until(sub { $co->poll || $cc->poll }, timeout => 0.3),
   'limited requests pending while Redis is stopped');

my $free = http_get($port, '/free', -timeout => 5);
is($free->{code}, 200, '/free answers while limited requests are pending');
ok($free->{elapsed} < 1, '/free answers within 1s (' . fmt($free) . ')');
ok(!$co->poll && !$cc->poll, 'limited requests still pending after /free');

my $ro = $co->result(8);
is($ro->{code}, 200, 'failure=open: 200 at timeout');
is(status_of($ro), 'ERROR', 'failure=open: $rl_status ERROR');
ok($ro->{elapsed} >= 1.5 && $ro->{elapsed} <= 4,
   'failure=open: answered at timeout=2s (' . fmt($ro) . ')');

my $rc = $cc->result(8);
is($rc->{code}, 429, 'failure=closed: 429 at timeout');
is(status_of($rc), 'ERROR', 'failure=closed: $rl_status ERROR');
ok($rc->{elapsed} >= 1.5 && $rc->{elapsed} <= 4,
   'failure=closed: answered at timeout=2s (' . fmt($rc) . ')');

# Redis known down: the policy at once, many times (one log line, not many)
for my $i (1 .. 5) {
    my $o = http_get($port, '/open', -timeout => 8);
    is($o->{code} . ' ' . status_of($o), '200 ERROR',
       "known down, failure=open: 200 ERROR ($i)");
    ok($o->{elapsed} < 1.5, "known down, failure=open: fast (" . fmt($o) . ")");
    my $c = http_get($port, '/closed', -timeout => 8);
    is($c->{code} . ' ' . status_of($c), '429 ERROR',
       "known down, failure=closed: 429 ERROR ($i)");
    ok($c->{elapsed} < 1.5,
       "known down, failure=closed: fast (" . fmt($c) . ")");
}
$free = http_get($port, '/free', -timeout => 5);
ok($free->{code} == 200 && $free->{elapsed} < 1,
   '/free still fast (' . fmt($free) . ')');

$r->kill('CONT');

for my $loc (qw(open closed)) {
    my $last;
    my $back = wait_until(sub {
        $last = http_get($port, "/$loc", -timeout => 5);
        return status_of($last) eq 'PASSED';
    }, timeout => 5, interval => 0.1);
    ok($back, "/$loc: decisions resume within 5s after SIGCONT")
        or diag("last: $last->{code} " . status_of($last));
}

# one error-level line per incident per worker, naming zone and redis
my @lines = split /\n/, $ng->error_log_text;
for my $zone (qw(nbopen nbclosed)) {
    my @err = grep { /\[error\]/ && /\b$zone\b/ && /redis/i } @lines;
    ok(@err >= 1 && @err <= 2,
       "zone $zone: 1 or 2 error lines for the outage, not one per request"
       . " (got " . scalar(@err) . ")")
        or diag(join "\n", @err[0 .. ($#err > 9 ? 9 : $#err)]);
}

$ng->stop;
$r->stop;

done_testing();
