# Leases (SPEC section 6): hot groups spend capacity Redis has already
# counted, from this instance's shared memory. What must hold:
# conservation (after leases end, Redis' count is the requests served,
# across reloads too), the bounds under overload, capacity one instance
# holds comes back to the others, Redis stopped (leases spent until they
# end, then the policy), cold keys never leased, what is not leased
# (delay=, dry runs), blocks within lease=, and nginx -t's errors.

use lib 't/lib';
use RlTest;
use POSIX ();
use Time::HiRes ();

my $r = start_redis();

# ------------------------------------------------------------ helpers

# rl_lease_units_total{zone=Z,use=U} of the instance
sub units {
    my ($ng, $use, $zone) = @_;
    $zone //= 'z';
    return metric_value($ng->port,
                        "rl_lease_units_total{zone=\"$zone\",use=\"$use\"}");
}

# every grant spent or given back: nothing held, nothing in flight
sub settled {
    my (@ng) = @_;
    for my $ng (@ng) {
        my ($g, $s, $b) = map { units($ng, $_) } qw(granted spent returned);
        return 0 if $g < 0 || $g != $s + $b;
    }
    return 1;
}

sub day_edge_near {
    my $into = time() % 86400;
    return $into < 5 || $into > 86400 - 120;
}

# Sends GET to targets ([port, path], in turn), `rate` a second for
# `seconds`; returns the responses, in order.
sub paced {
    my ($targets, %o) = @_;
    my $n = int($o{rate} * $o{seconds});
    my $t0 = now();
    my (@conns, @res, @open);
    for my $i (0 .. $n - 1) {
        my $at = $t0 + $i / $o{rate};
        while ((my $wait = $at - now()) > 0) {
            @open = grep { !($conns[$_]->poll
                             && ($res[$_] = $conns[$_]->result(0))) } @open;
            Time::HiRes::sleep($wait < 0.002 ? $wait : 0.002);
        }
        my ($port, $path) = @{ $targets->[$i % @$targets] };
        push @conns, http_start($port, $path);
        push @open, $#conns;
    }
    $res[$_] = $conns[$_]->result(10) for @open;
    return @res;
}

# The access log of the test locations: msec request_time status uri key
my $log_format = q{log_format t '$msec $request_time $status $uri $arg_k';};

# [start, end, status, uri, key] of each logged request, by end
sub logged {
    my (@ng) = @_;
    my @rows;
    for my $ng (@ng) {
        open my $fh, '<', $ng->dir . '/logs/t.log' or next;
        while (<$fh>) {
            my ($end, $took, $status, $uri, $key) = split;
            push @rows, [ $end - $took, $end, $status, $uri, $key ];
        }
    }
    return sort { $a->[1] <=> $b->[1] } @rows;
}

my $conf = <<'CONF';
    LOGFORMAT
    rl_zone z redis=127.0.0.1:$RedisPort lease=LEASE timeout=TIMEOUT
            failure=open;
    server {
        listen 127.0.0.1:$ServerPort reuseport;
        access_log logs/t.log t;
        add_header X-RL-Status $rl_status always;
        location /fixed {
            rl_rule zone=z key=$arg_k rate=RATE algorithm=fixed_window;
            empty_gif;
        }
        location /log {
            rl_rule zone=z key=$arg_k rate=20r/2s algorithm=sliding_log;
            empty_gif;
        }
        location /token {
            rl_rule zone=z key=$arg_k rate=20r/s algorithm=token_bucket;
            empty_gif;
        }
        location /gcra {
            rl_rule zone=z key=$arg_k rate=20r/s algorithm=gcra burst=10;
            empty_gif;
        }
        location /shaped {
            rl_rule zone=z key=$arg_k rate=1000r/s algorithm=gcra burst=50
                    delay=10;
            empty_gif;
        }
        location /dry {
            rl_rule zone=z key=$arg_k rate=100000r/d dry_run;
            empty_gif;
        }
        location /metrics { rl_metrics; }
    }
CONF

sub conf {
    my (%o) = @_;
    (my $c = $conf) =~ s/LOGFORMAT/$log_format/;
    $c =~ s/LEASE/$o{lease} \/\/ '200ms'/e;
    $c =~ s/TIMEOUT/$o{timeout} \/\/ '5s'/e;
    $c =~ s/RATE/$o{rate} \/\/ '1000000r\/d'/e;
    return $c;
}

# ------------------------------------------------------------ nginx -t

for my $case (['lease=0', 'invalid lease "0": from 1ms to 10s'],
              ['lease=11s', 'invalid lease "11s": from 1ms to 10s'],
              ['lease=abc', 'invalid lease "abc": from 1ms to 10s']) {
    my $ng = start_nginx(start => 0, redis => $r, config => <<"CONF");
    rl_zone z redis=127.0.0.1:\$RedisPort $case->[0];
CONF
    my ($ok, $text) = $ng->config_test;
    ok(!$ok && index($text, $case->[1]) >= 0, "nginx -t: $case->[0]")
        or diag($text);
}
{
    my $ng = start_nginx(start => 0, config => <<'CONF');
    rl_zone e lease=100ms;
CONF
    my ($ok, $text) = $ng->config_test;
    like($ok ? '' : $text,
         qr/\[emerg\].*"lease" needs "redis", "cluster" or "sentinel".*nginx\.conf:\d+/,
         'nginx -t: lease= on an embedded zone');
}

# ------------------------------------------------------------ figures

{
    $r->cli('FLUSHALL');
    my $ng = start_nginx(redis => $r, workers => 1, config => conf());
    my $calls = $r->calls('evalsha');
    my @left;
    for (1 .. 40) {
        my $t = http_get($ng->port, '/fixed?k=figures');
        push @left, $t->{headers}{'x-ratelimit-remaining'} // -1;
    }
    is_deeply(\@left, [ map { 1000000 - $_ } 1 .. 40 ],
              'a hot key, leased: X-RateLimit-Remaining as in exact mode');
    ok(units($ng, 'spent') > 0, 'its requests spent from leases ('
       . units($ng, 'spent') . ' units)');
    ok($r->calls('evalsha') - $calls < 40,
       'fewer script calls than requests ('
       . ($r->calls('evalsha') - $calls) . ' for 40)');
    like(http_get($ng->port, '/metrics')->{body},
         qr/^# TYPE rl_lease_units_total counter$/m,
         'rl_lease_units_total on the metrics page');
    $ng->stop;
}

# ------------------------------------------------------------ conservation

SKIP: {
    skip 'a day window ends within two minutes', 10 if day_edge_near();
    for my $reload (0, 1) {
        $r->cli('FLUSHALL');
        my @ng = map { start_nginx(redis => $r, workers => 2,
                                   config => conf()) } 1 .. 2;
        my $key = "flood$reload";
        my @targets = map { ([ $ng[0]->port, "/fixed?k=$key" ],
                             [ $ng[1]->port, "/fixed?k=$key" ]) } 1 .. 400;
        my $hup;
        if ($reload) {
            # in the middle of the flood: the master reloads
            my $master = $ng[0]->pid;
            $hup = spawn(sub { Time::HiRes::sleep(0.3); kill 'HUP', $master;
                               return 'sent' });
        }
        my %old = map { $_ => 1 } $ng[0]->worker_pids;
        my @res = http_parallel(undef, \@targets, concurrency => 16,
                                full => 1);
        my $served = grep { $_->{code} == 200 } @res;
        is($served, 800, ($reload ? 'with a reload: ' : '')
           . '2 instances x 2 workers: every request served');
        if ($reload) {
            is($hup->wait(10), 'sent', 'the reload was asked for');
            ok(wait_until(sub { !grep { $old{$_} } $ng[0]->worker_pids },
                          timeout => 15),
               'the old workers exited');
        }
        ok(units($ng[0], 'spent') + units($ng[1], 'spent') > 0,
           'leases were spent');
        ok(wait_until(sub { settled(@ng) }, timeout => 10),
           'every lease ended: granted = spent + returned')
            or diag(join ' ', map { my $n = $_;
                   map { "$_=" . units($n, $_) } qw(granted spent returned)
                   } @ng);
        my $t = http_get($ng[0]->port, "/fixed?k=$key");
        is($t->{headers}{'x-ratelimit-remaining'}, 1000000 - $served - 1,
           ($reload ? 'with a reload: ' : '')
           . 'Redis counted exactly the requests served');
        $_->stop for @ng;
    }
}

# ------------------------------------------------------------ bounds

# 3x overload from 2 instances, the four algorithms at once (20r/s each;
# the windows 1 s for fixed_window, 2 s for sliding_log; lease 200ms)
{
    $r->cli('FLUSHALL');
    my @ng = map { start_nginx(redis => $r, workers => 2,
                               config => conf(rate => '20r/s')) } 1 .. 2;
    my @targets;
    for my $loc (qw(fixed log token gcra)) {
        push @targets, map { [ $ng[$_]->port, "/$loc?k=bounds" ] } 0, 1;
    }
    my @res = paced(\@targets, rate => 4 * 60, seconds => 3);
    my @rows = grep { $_->[2] == 200 } logged(@ng);
    my %by;
    push @{ $by{ $_->[3] } }, $_ for @rows;
    my $lease = 0.2;
    ok(@{ $by{'/fixed'} // [] } > 0 && @{ $by{'/gcra'} // [] } > 0,
       'each location admitted requests');
    ok((grep { $_->{code} == 429 } @res) > 0, 'and rejected some: overload');
    ok(units($ng[0], 'spent') + units($ng[1], 'spent') > 0,
       'leases were spent under overload');

    # fixed_window: N a window (counting those decided surely in it:
    # between their start and their end, both in the window)
    my %win;
    $win{ int($_->[0]) }++ for grep { int($_->[0]) == int($_->[1]) }
                                   @{ $by{'/fixed'} };
    my ($worst) = sort { $b <=> $a } values %win;
    ok($worst <= 20, "fixed_window: at most N=20 in any window ($worst)");

    # sliding_log: N in any interval of W - lease = 1.8 s
    my $most = 0;
    my @log = @{ $by{'/log'} };
    for my $i (0 .. $#log) {
        my $from = $log[$i][1] - (2 - $lease);
        my $n = grep { $_->[0] > $from && $_->[1] <= $log[$i][1] } @log;
        $most = $n if $n > $most;
    }
    ok($most <= 20, "sliding_log: at most N=20 in any 1.8 s ($most)");

    # token_bucket (20 deep), gcra (1 + 10 deep): in any interval T, the
    # depth plus 20/s over T + lease
    for my $c (['/token', 20], ['/gcra', 11]) {
        my ($loc, $depth) = @$c;
        my @a = @{ $by{$loc} };
        my $over = 0;
        for my $i (0 .. $#a) {
            for my $j ($i .. $#a) {
                my $t = $a[$j][1] - $a[$i][0];
                my $n = grep { $_->[0] >= $a[$i][0] && $_->[1] <= $a[$j][1] }
                        @a[$i .. $j];
                my $bound = $depth + 20 * ($t + $lease);
                $over = $n - $bound if $n - $bound > $over;
            }
        }
        ok($over <= 0, "$loc: within depth + rate x (T + lease)"
           . ($over > 0 ? " (over by $over)" : ''));
    }
    $_->stop for @ng;
}

# ------------------------------------------------------------ return

# A takes a lease and goes idle; B gets all the capacity A held within
# lease= (its rejections are kept in its deny cache that long at most)
SKIP: {
    skip 'a day window ends within two minutes', 7 if day_edge_near();
    $r->cli('FLUSHALL');
    my @ng = map { start_nginx(redis => $r, workers => 1,
                               config => conf(rate => '100r/d',
                                              lease => '1s')) } 1 .. 2;
    my ($a, $b) = @ng;
    my $admitted = grep { $_ == 200 }
                   http_parallel($a->port, [ ('/fixed?k=held') x 30 ],
                                 concurrency => 4);
    my $idle = now();
    ok(units($a, 'granted') > units($a, 'spent'),
       'A holds units it did not spend (granted ' . units($a, 'granted')
       . ', spent ' . units($a, 'spent') . ')');
    my $first = grep { $_ == 200 }
                http_parallel($b->port, [ ('/fixed?k=held') x 100 ],
                              concurrency => 4);
    ok($admitted + $first < 100, "B first finds A's capacity held ("
       . ($admitted + $first) . ' of 100 admitted)');
    my $back = wait_until(sub {
        http_get($b->port, '/fixed?k=held')->{code} == 200 },
        timeout => 10, interval => 0.02);
    my $took = now() - $idle;
    ok($back, "B is admitted again ${took}s after A went idle");
    ok($took < 2 * 1 + a_second() - 0.5, 'within lease (1s) of its '
       . 'rejection, and of A going idle, with room for a slow host');
    my $rest = grep { $_ == 200 }
               http_parallel($b->port, [ ('/fixed?k=held') x 100 ],
                             concurrency => 4);
    is($admitted + $first + 1 + $rest, 100,
       'B gets all the capacity A held: 100 admitted in all');
    is(http_get($b->port, '/fixed?k=held')->{code}, 429, 'never more');
    ok(units($a, 'returned') > 0, 'A returned what it held');
    $_->stop for @ng;
}

# ------------------------------------------------------------ Redis stopped

{
    $r->cli('FLUSHALL');
    my $ng = start_nginx(redis => $r, workers => 1,
                         config => conf(lease => '1500ms',
                                        timeout => '200ms'));
    http_get($ng->port, '/fixed?k=stop') for 1 .. 30;   # hot, leased
    ok(units($ng, 'spent') > 0, 'the key is leased');
    $r->kill('STOP');
    my $stopped = now();
    my (@seen, $slowest, $error_at);
    $slowest = 0;
    while (now() - $stopped < 4) {
        my $t = http_get($ng->port, '/fixed?k=stop');
        push @seen, $t->{headers}{'x-rl-status'} // '';
        $slowest = $t->{elapsed} if $t->{elapsed} > $slowest;
        if ($seen[-1] eq 'ERROR') {
            $error_at = now() - $stopped;
            last;
        }
    }
    $r->kill('CONT');
    ok((grep { $_ eq 'PASSED' } @seen) > 0,
       'Redis stopped: the lease is spent (' . scalar(@seen) . ' requests: '
       . join(',', @seen[0 .. ($#seen < 3 ? $#seen : 3)]) . '...)');
    ok(defined $error_at, 'then the failure policy (ERROR, failure=open)');
    ok(defined $error_at && $error_at < 1.5 + 1,
       'once the lease ended: ' . ($error_at // 'never') . 's after the stop');
    ok($slowest < 0.2 + 0.8, "no request waited past timeout= ($slowest s)");
    ok(wait_until(sub {
        (http_get($ng->port, '/fixed?k=stop')->{headers}{'x-rl-status'} // '')
            eq 'PASSED' }, timeout => 10),
       'Redis continued: decisions resume');
    $ng->stop;
}

# ------------------------------------------------------------ not leased

{
    $r->cli('FLUSHALL');
    my $ng = start_nginx(redis => $r, workers => 1,
                         config => conf(lease => '200ms'));
    # a cold key: one request a period, each its own script call
    my $calls = $r->calls('evalsha');
    for (1 .. 5) {
        http_get($ng->port, '/fixed?k=cold');
        Time::HiRes::sleep(0.25);
    }
    is($r->calls('evalsha') - $calls, 5,
       'a cold key (one request every 250ms): one script call each');
    is(units($ng, 'granted'), 0, 'and no lease');

    # shaped (delay=) and dry-run rules decide each request in Redis
    for my $loc (qw(shaped dry)) {
        $calls = $r->calls('evalsha');
        http_get($ng->port, "/$loc?k=hot") for 1 .. 30;
        is($r->calls('evalsha') - $calls, 30, "$loc: never leased");
    }
    is(units($ng, 'granted'), 0, 'no lease granted');

    # a block set in Redis applies within lease=
    http_get($ng->port, '/fixed?k=blocked') for 1 .. 30;
    ok(units($ng, 'granted') > 0, 'a hot key is leased');
    $r->cli('SET', 'rl:{blocked}', '1', 'EX', '60');
    my $set = now();
    ok(wait_until(sub {
        http_get($ng->port, '/fixed?k=blocked')->{code} == 429 },
        timeout => 5, interval => 0.02),
       'a block set in Redis rejects it');
    my $took = now() - $set;
    ok($took < 0.2 + a_second() - 1,
       "within lease (200ms) and a slow host's room (${took}s)");
    $ng->stop;
}

$r->stop;
done_testing();
