# failure=local: while Redis cannot answer (down, stopped past timeout=),
# a zone's requests are decided in this instance's shared memory, with
# the same algorithms, headers and variables, shared by its workers,
# instead of all passing (open) or all failing (closed). Once Redis
# answers again, Redis decides again.

use lib 't/lib';
use RlTest;

my $r = start_redis();          # the failure=local zone's Redis
my $up = start_redis();         # another zone's, never down
my $ng = start_nginx(redis => $r, workers => 2,
                     vars => { UpPort => $up->port }, config => <<'CONF');
    rl_zone loc redis=127.0.0.1:$RedisPort timeout=300ms failure=local
            size=1m;
    rl_zone up redis=127.0.0.1:$UpPort timeout=2s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /t {
            rl_rule zone=loc key=$arg_k rate=3r/d algorithm=fixed_window;
            empty_gif;
        }
        location /both {
            rl_rule zone=up key=$arg_k rate=100r/d name=wide;
            rl_rule zone=loc key=$arg_k rate=1r/d name=narrow;
            empty_gif;
        }
        location /up {
            rl_rule zone=up key=$arg_k rate=100r/d name=wide;
            empty_gif;
        }
        location /mixed {
            rl_rule zone=loc key=$arg_k rate=100r/d name=wide2;
            rl_rule zone=up key=$arg_k rate=1r/d name=narrow2;
            empty_gif;
        }
        location /loconly {
            rl_rule zone=loc key=$arg_k rate=100r/d name=wide2;
            empty_gif;
        }
        location /metrics {
            rl_metrics;
        }
    }
CONF
my $port = $ng->port;

sub remaining { $_[0]{headers}{'x-ratelimit-remaining'} // 'none' }


# Redis decides while it is up
my $res = http_get($port, '/t?k=a');
is(code_status($res) . ' ' . remaining($res), '200 PASSED 2', 'Redis up: decided');
ok($r->calls('evalsha') >= 1, 'Redis up: Redis was asked');

# ------------------------------------------------------------ Redis stopped

$r->kill('STOP');

# the first request waits for timeout=, then is decided here
my $first = http_get($port, '/t?k=s', -timeout => 5);
is(code_status($first) . ' ' . remaining($first), '200 PASSED 2',
   'Redis stopped: decided locally at timeout=, with its figures');
ok($first->{elapsed} >= 0.2 && $first->{elapsed} < 2,
   sprintf('... after about timeout=300ms (%.2fs)', $first->{elapsed}));

# the other worker learns by its own timeout; then both decide at once.
# One key over both workers: the local store is the instance's.
my @got;
for my $i (1 .. 6) {
    my $res = http_get($port, '/t?k=s', -timeout => 5);
    push @got, code_status($res) . ' ' . remaining($res);
}
is_deeply(\@got, ['200 PASSED 1', '200 PASSED 0', ('429 REJECTED 0') x 4],
          'Redis stopped: 3 pass over both workers, then 429')
    or diag(explain \@got);
my $rej = http_get($port, '/t?k=s', -timeout => 5);
like($rej->{headers}{'retry-after'} // '', qr/^\d+$/,
     'a local rejection has Retry-After');
ok($rej->{elapsed} < 0.25,
   sprintf('Redis known down: decided at once (%.2fs)', $rej->{elapsed}));

is(metric_value($port, 'rl_requests_total{zone="loc",rule="3r/d",outcome="error"}'), 0,
   'no request of the zone counted as an error');
is(metric_value($port, 'rl_requests_total{zone="loc",rule="3r/d",outcome="rejected"}'),
   5, 'local rejections counted as rejected');
is(metric_value($port, 'rl_local_decisions_total{zone="loc"}'), 8,
   'rl_local_decisions_total counts the requests decided locally');
is(metric_value($port, 'rl_store_up{zone="loc"}'), 0, 'rl_store_up 0 meanwhile');

# stacked on a zone that is up: a local rejection gives back what the
# other zone's Redis counted (a rejected request consumes nothing)
my @both;
for my $i (1 .. 3) {
    push @both, code_status(http_get($port, '/both?k=c', -timeout => 5));
}
is_deeply(\@both, ['200 PASSED', '429 REJECTED', '429 REJECTED'],
          'stacked: the local rule admits 1, then rejects')
    or diag(explain \@both);
$res = http_get($port, '/up?k=c');
is(remaining($res), 98,
   'the zone that is up counted only the admitted request (refunded)');

# and the other way round: the zone that is up rejects, what the local
# store counted is given back
my @mixed;
for my $i (1 .. 3) {
    push @mixed, code_status(http_get($port, '/mixed?k=m', -timeout => 5));
}
is_deeply(\@mixed, ['200 PASSED', '429 REJECTED', '429 REJECTED'],
          'stacked: the zone that is up admits 1, then rejects')
    or diag(explain \@mixed);
$res = http_get($port, '/loconly?k=m');
is(code_status($res) . ' ' . remaining($res), '200 PASSED 98',
   'the local store counted only the admitted request (refunded)');

# ------------------------------------------------- Redis answers again

$r->kill('CONT');
my $evals = $r->calls('evalsha');
my $last;
ok(wait_until(sub {
    $last = http_get($port, '/t?k=back', -timeout => 5);
    return $r->calls('evalsha') > $evals + 1 && code_status($last) eq '200 PASSED';
}, timeout => 5, interval => 0.1), 'SIGCONT: Redis decides again')
    or diag(code_status($last));
ok(wait_until(sub { metric_value($port, 'rl_store_up{zone="loc"}') == 1 },
              timeout => 5, interval => 0.1), 'rl_store_up 1 again');

# ------------------------------------------------------------ Redis killed

$r->kill('KILL');
@got = ();
for my $i (1 .. 5) {
    my $res = http_get($port, '/t?k=d', -timeout => 5);
    push @got, code_status($res) . ' ' . remaining($res);
}
is_deeply(\@got, ['200 PASSED 2', '200 PASSED 1', '200 PASSED 0',
                  ('429 REJECTED 0') x 2],
          'Redis killed: decided locally')
    or diag(explain \@got);

# restarted empty: Redis decides again, from its own (fresh) state
$r->start;
ok(wait_until(sub {
    $last = http_get($port, '/t?k=d', -timeout => 5);
    return code_status($last) eq '200 PASSED';
}, timeout => 5, interval => 0.1), 'restarted: Redis admits the key again')
    or diag(code_status($last));
ok($r->calls('evalsha') >= 1, 'restarted: Redis was asked');

# one line per incident and worker, not one per request
my @err = grep { /\[error\]/ && /"loc": redis/ } split /\n/,
           $ng->error_log_text;
ok(@err >= 2 && @err <= 4, 'one line per incident and worker, not one per '
   . 'request (got ' . scalar(@err) . ')')
    or diag(join "\n", @err);
ok(!(grep { !/unavailable: .*; requests get failure=local$/ } @err),
   'each names the policy the requests get');

$ng->stop;
$r->stop;

# Once a worker knows its Redis down, a request the local store rejects
# costs the zones that are up nothing, though their rule comes first: no
# decision, no refund. (One worker, whose link failed at start: above,
# with two, a request may land on a worker that has not learnt it yet.)
my $ng1 = start_nginx(redis => $up, workers => 1,
                      vars => { Dead => free_port() }, config => <<'CONF');
    rl_zone loc redis=127.0.0.1:$Dead failure=local;
    rl_zone up redis=127.0.0.1:$RedisPort timeout=2s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /both {
            rl_rule zone=up key=$arg_k rate=100r/d name=wide;
            rl_rule zone=loc key=$arg_k rate=1r/d name=narrow;
            empty_gif;
        }
    }
CONF
ok(wait_until(sub { $ng1->error_log_text =~ /"loc": redis \S+ unavailable/ },
              timeout => 5, interval => 0.1), 'the dead Redis is known down');
my $calls = $up->calls('evalsha');
my @order = map { code_status(http_get($ng1->port, '/both?k=o')) } 1 .. 3;
is_deeply(\@order, ['200 PASSED', '429 REJECTED', '429 REJECTED'],
          'the local rule admits 1, then rejects')
    or diag(explain \@order);
is($up->calls('evalsha') - $calls, 1, 'the zone that is up was asked for '
   . 'the admitted request only');
$ng1->stop;
$up->stop;

done_testing();
