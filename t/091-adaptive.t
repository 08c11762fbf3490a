# Limits that follow the upstream (concurrency=auto, SPEC section 13),
# against an upstream of capacity C = 8 at S = 50 ms (t/lib/upstream.py
# /work: C at once, the rest queued) and 48 closed-loop clients with a
# deadline (t/lib/load.py; a refused one tries again S later), over 2
# instances x 2 workers on one Redis: within 10 s the admitted
# requests' p90 is at most 2 S and the answers at least 0.8 x C/S a
# second; C halved, both hold again within 5 s; C doubled, the answers
# follow within 10 s; N within [min, max]. 4 clients at priority 0 and
# 44 at 3: priority 0 succeeds 99% or more, the refusals fall on 3,
# which uses the capacity left. The slots go back to 0. The embedded
# store learns alike, per instance. Refusals: 503 and Retry-After: 1,
# rl_status wins; Redis down: the failure policy; /1/rules and the
# metrics; a live limit pins N. A timed scenario whose figures miss a
# bound runs once more (once_more(): a CI host's stall is not the
# module's; twice is).

use strict;
use warnings;
use lib 't/lib';
use RlTest;
use RlTest::Api;
use RlTest::Load;
use JSON::PP ();

my $timed = RlTest::Load::timing_critical();
my $r  = start_redis();
my $up = start_upstream();
my $UP = $up->port;
my ($C, $S) = (8, 50);
my $JSON = JSON::PP->new;

sub conf {
    my (%o) = @_;
    my $zone = $o{zone} // 'redis=127.0.0.1:$RedisPort timeout=2s';
    my $rule = $o{rule} // 'concurrency=auto min=2 max=64';
    return <<"CONF";
    rl_zone main $zone;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /w {
            rl_rule zone=main key=backend $rule
                    priority=\$http_x_priority name=auto;
            proxy_pass http://127.0.0.1:$UP/work;
        }
        location /status {
            rl_rule zone=main key=backend $rule name=auto;
            rl_status 429;
            proxy_pass http://127.0.0.1:$UP/work;
        }
        location /rl/ { rl_api write=on; }
        location = /metrics { rl_metrics; }
    }
CONF
}

sub urls { [ map { 'http://127.0.0.1:' . $_->port . '/w' } @_ ] }

# the fleet's N, as Redis keeps it beside the slots
sub fleet_n {
    my ($key) = grep { /:a$/ } split /\n/, $r->cli('KEYS', 'rl:*');
    return $key ? $r->cli('HGET', $key, 'n') : -1;
}

sub rules_of {
    my ($ng) = @_;
    my $body = http_get($ng->port, '/rl/1/rules')->{body};
    my ($auto) = grep { $_->{name} eq 'auto' } @{ $JSON->decode($body) };
    return $auto;
}

# A run of a timed scenario whose figures missed a bound runs once more,
# from the start (the first run's figures said): on a CI host a stall
# that is not the module's (the hypervisor's steal, work beside at nice
# 10) can put the latency the law reads past its objective at N below C,
# and a noisy interval's cut then costs the seconds a window measures.
# Twice is the module's.
sub once_more {
    my ($what, $run, $met, $said) = @_;
    my @got = $run->();
    return @got if !$timed || $met->(@got);
    diag("$what: a first run missed a bound, once more. It saw: "
         . $said->(@got));
    $_->stop for @{ $got[-1] };
    return $run->();
}

# ------------------------------------------------------------ the fleet
sub fleet_run {
    $r->cli('FLUSHALL');
    my @ng = map { start_nginx(redis => $r, workers => 2, ready => 2,
                               config => conf()) } 1 .. 2;
    $up->capacity($C, $S);
    $up->reset;
    my $load = RlTest::Load->start(urls => urls(@ng), clients => 48,
                                   seconds => 32, deadline => 2,
                                   pause_ms => $S,
                                   groups => ['48:X-Priority=0']);
    # C halved at 12 s, doubled at 20 s; N read meanwhile
    my $t0 = now();
    my @seen;
    while (now() - $t0 < 31) {
        my $t = now() - $t0;
        $up->capacity($C / 2) if $t >= 12 && $t < 20;
        $up->capacity($C * 2) if $t >= 20;
        push @seen, fleet_n();
        select undef, undef, undef, 0.25;
    }
    $load->finish;
    return ($load, \@seen, \@ng);
}

# its windows: from, to, C
my @WINDOWS = ([8, 12, $C],         # within 10 s of the start (and after)
               [17, 20, $C / 2],    # halved at 12: within 5 s
               [28, 31, $C * 2]);   # doubled at 20: within 10 s

sub fleet_met {
    my ($load) = @_;
    for my $w (@WINDOWS) {
        my $s = $load->stats(from => $w->[0], to => $w->[1]);
        return 0 if $s->{goodput} < 0.8 * $w->[2] * 1000 / $S
                    || $s->{p90} > 2 * $S / 1000;
    }
    return 1;
}

sub fleet_said {
    my ($load, $seen) = @_;
    return 'N ' . join(' ', @$seen) . '; each second, answers/p90 '
           . join ' ', map { sprintf '%d/%s', $_->{goodput}, $_->{p90} // '-' }
                         $load->series;
}

{
    my ($load, $seen, $ngs) = once_more('the fleet', \&fleet_run,
                                        \&fleet_met, \&fleet_said);
    my @seen = @$seen;
    my @ng = @$ngs;
    # what the clients saw each second and N four times a second, said
    # once if a figure missed its bound
    my $told;
    my $tell = sub {
        return if $told++;
        diag('N: ' . join ' ', @seen);
        diag('load average: ' . `cat /proc/loadavg`);
        diag('each second, answers/p90: ' . join ' ', map {
            sprintf '%d/%s', $_->{goodput}, $_->{p90} // '-' }
            $load->series);
    };
    my $at = sub {
        my ($from, $to, $c) = @_;
        my $s = $load->stats(from => $from, to => $to);
        my $goal = 0.8 * $c * 1000 / $S;
        SKIP: {
            skip "the sanitizers' workers are 3x slower", 2 unless $timed;
            cmp_ok($s->{goodput}, '>=', $goal,
                   "C = $c, seconds $from to $to: $s->{goodput} answers a "
                   . "second (at least $goal)") or $tell->();
            cmp_ok($s->{p90}, '<=', 2 * $S / 1000,
                   "and the admitted requests' p90 $s->{p90} s within 2 S")
                or $tell->();
        }
    };
    $at->(@$_) for @WINDOWS;
    my @n = grep { $_ >= 0 } @seen;
    my ($lo, $hi) = (sort { $a <=> $b } @n)[0, -1];
    ok($lo >= 2 && $hi <= 64, "N stayed within [2, 64]: $lo to $hi");
    cmp_ok($up->capacity_stats->{max}, '>', 0, 'the upstream served');

    ok(wait_until(sub { slots_held($r) == 0 }, timeout => 5),
       'the slots back to 0 once the load ended');

    my $auto = rules_of($ng[0]);
    my $ad = $auto->{adaptive};
    is(join(' ', @$ad{qw(min max key)}, $auto->{algorithm}),
       '2 64 backend concurrency', '/1/rules: the rule is adaptive');
    # (an instance hears the fleet's N in the reply to its samples: the
    # last interval may have closed on another's; one request, and it
    # hears it within a tick)
    http_get($ng[0]->port, '/w?ms=1');
    my $heard;
    ok(wait_until(sub { ($heard = rules_of($ng[0])->{limit}) == fleet_n() },
                  timeout => 5),
       '"limit": the fleet\'s N') or diag("$heard, in Redis " . fleet_n());
    cmp_ok($ad->{latency}{p90}, '>', 0, 'the last interval\'s p90');
    cmp_ok($ad->{baseline}, '>=', 0.04, 'the baseline near S')
        or diag(explain($ad));
    cmp_ok(scalar @{ $ad->{history} }, '>=', 20,
           'a history point an interval') or diag(explain($ad));
    is(scalar(grep { $_->[1] < 2 || $_->[1] > 64 } @{ $ad->{history} }), 0,
       'every point within [min, max]');
    my %p = map { $_->{level} => $_ } @{ $auto->{priorities} };
    cmp_ok($p{0}{passed}, '>', 0, 'the level 0 outcomes counted');
    SKIP: {
        skip 'no headless Chromium with Selenium', 1
            unless -x '/usr/bin/chromium' && -x '/usr/bin/chromedriver'
                && system('/usr/bin/python3', '-c', 'import selenium') == 0;
        browser_run('dashboard_adaptive.py', 5, '--page',
                    'http://127.0.0.1:' . $ng[0]->port . '/rl/',
                    '--rule', 'auto',
                    $ENV{RL_SCREENSHOT} ? ('--screenshot',
                                           $ENV{RL_SCREENSHOT}) : ());
    }
    my $m = http_get($ng[0]->port, '/metrics')->{body};
    like($m, qr/^rl_adaptive_limit\{zone="main",rule="auto"\} \d+$/m,
         'rl_adaptive_limit');
    like($m, qr/^rl_adaptive_latency_seconds\{zone="main",rule="auto",quantile="0\.9"\} 0\.\d+$/m,
         'rl_adaptive_latency_seconds');
    like($m, qr/^rl_adaptive_requests_total\{zone="main",rule="auto",priority="0",outcome="rejected"\} [1-9]\d*$/m,
         'rl_adaptive_requests_total by priority');
    $_->stop for @ng;
}

# ------------------------------------------------------------ priorities
sub priorities_run {
    $r->cli('FLUSHALL');
    my @ng = map { start_nginx(redis => $r, workers => 2, ready => 2,
                               config => conf()) } 1 .. 2;
    $up->capacity($C, $S);
    $up->reset;
    my $load = RlTest::Load->start(
        urls => urls(@ng), clients => 48, seconds => 14, deadline => 2,
        pause_ms => $S, groups => ['4:X-Priority=0', '44:X-Priority=3']);
    my @n;
    while (!$load->done) {
        push @n, fleet_n();
        select undef, undef, undef, 0.25;
    }
    $load->finish;
    return ($load, \@n, \@ng);
}

sub priorities_met {
    my ($load) = @_;
    my $p0 = $load->stats(from => 4, to => 14, group => 0);
    my $p3 = $load->stats(from => 4, to => 14, group => 1);
    return ($p0->{codes}{200} // 0) >= 0.99 * $p0->{requests}
           && $p3->{goodput} >= 0.7 * ($C * 1000 / $S - $p0->{goodput});
}

sub priorities_said {
    my ($load, $n) = @_;
    my $p3 = $load->stats(from => 4, to => 14, group => 1);
    return "level 3's $p3->{goodput} answers a second; N @$n";
}

{
    my ($load, $n, $ngs) = once_more('priorities', \&priorities_run,
                                     \&priorities_met, \&priorities_said);
    my @n = @$n;
    my @ng = @$ngs;
    my $p0 = $load->stats(from => 4, to => 14, group => 0);
    my $p3 = $load->stats(from => 4, to => 14, group => 1);
    my $ok0 = ($p0->{codes}{200} // 0) / ($p0->{requests} || 1);
    cmp_ok($ok0, '>=', 0.99,
           "priority 0: $p0->{codes}{200} of $p0->{requests} served")
        or diag(explain($p0), "N: @n");
    cmp_ok($p3->{codes}{503} // 0, '>', 0, 'the refusals fell on 3');
    my $left = $C * 1000 / $S - $p0->{goodput};
    SKIP: {
        skip "the sanitizers' workers are 3x slower", 1 unless $timed;
        cmp_ok($p3->{goodput}, '>=', 0.7 * $left,
               "3 used the capacity left: $p3->{goodput} a second of $left")
            or diag(explain($p3), "N: @n");
    }
    $_->stop for @ng;
}

# ------------------------------------------------------------ the fleet's view
{
    $r->cli('FLUSHALL');
    my @ng = map { start_nginx(redis => $r, workers => 1, ready => 1,
                               config => <<"CONF") } 1 .. 2;
    rl_fleet name=i$_ interval=1s;
    rl_zone main redis=127.0.0.1:\$RedisPort timeout=2s;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /w {
            rl_rule zone=main key=backend concurrency=auto
                    priority=\$arg_p name=auto;
            proxy_pass http://127.0.0.1:$UP/work;
        }
        location /rl/ { rl_api; }
    }
CONF
    http_get($_->port, '/w?ms=1&p=1') for @ng;
    http_get($ng[0]->port, '/w?ms=1&p=2');
    my $fleet;
    ok(wait_until(sub {
        ($fleet) = grep { $_->{name} eq 'auto' } @{ $JSON->decode(
            http_get($ng[1]->port, '/rl/1/fleet/rules')->{body} || '[]') };
        $fleet && $fleet->{instances} == 2
            && $fleet->{priorities}[1]{passed} == 2
            && @{ $fleet->{adaptive}{history} } >= 1;
    }, timeout => 3 * a_second()),
       '/1/fleet/rules: the levels summed over the instances, the '
       . 'adaptive block') or diag(explain($fleet));
    is($fleet->{limit}, fleet_n(), 'and "limit" the fleet\'s N');
    $_->stop for @ng;
}

# ------------------------------------------------------------ a Cluster
{
    require RlTest::Cluster;
    my $c = RlTest::Cluster->new(masters => 3);
    my $seeds = $c->seeds;
    my $ng = start_nginx(workers => 2, config => <<"CONF");
    rl_zone main cluster=$seeds timeout=2s;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /w { rl_rule zone=main key=\$arg_k concurrency=auto
                              name=auto;
                      proxy_pass http://127.0.0.1:$UP/work; }
        location /rl/ { rl_api; }
    }
CONF
    $up->capacity($C, $S);
    my $load = RlTest::Load->start(urls => [ 'http://127.0.0.1:' . $ng->port
                                             . '/w?k=be' ],
                                   clients => 16, seconds => 4,
                                   deadline => 2, pause_ms => $S);
    $load->finish;
    my $m = $c->master_for_key('rl:{be}');
    my ($key) = grep { /:a$/ } split /\n/, $c->cli_on($m, 'KEYS', 'rl:*');
    ok($key, 'a Cluster: N kept on the master of the key value\'s slots');
    my $n = $key ? $c->cli_on($m, 'HGET', $key, 'n') : -1;
    ok(wait_until(sub { rules_of($ng)->{limit} == $n }, timeout => 3),
       "and read by the instance (N $n)");
    $ng->stop;
    $c->stop;
}

# ------------------------------------------------------------ answers
{
    $r->cli('FLUSHALL');
    my $ng = start_nginx(redis => $r, workers => 1, ready => 1,
                         config => conf(rule => 'concurrency=auto min=1 '
                                                . 'max=1'));
    $up->capacity(1, 2000);
    my $held = http_start($ng->port, '/w');
    ok(wait_until(sub { $up->capacity_stats->{now} == 1 }, timeout => 5),
       'min=1 max=1: one held');
    my $no = http_get($ng->port, '/w');
    is(join(' ', $no->{code}, map { $no->{headers}{$_} // '-' }
                                  qw(retry-after x-ratelimit-limit
                                     x-ratelimit-remaining)),
       '503 1 1 0', 'refused: 503, Retry-After: 1, the N it was decided '
       . 'with');
    is(http_get($ng->port, '/status')->{code}, 429, 'rl_status wins');
    # a live limit pins N
    my $api = RlTest::Api->new($ng->port, '/rl/');
    my ($code) = $api->call('PUT', '1/rules/auto/limit', { limit => 3 });
    is($code, 200, 'a live limit of 3');
    ok(wait_until(sub { http_get($ng->port, '/w?ms=1')->{code} == 200 },
                  timeout => 3), 'pins N: a second request admitted');
    $held->result(10);
    $ng->stop;
    $up->capacity($C, $S);
}

# ------------------------------------------------------------ Redis down
{
    # (nothing listens on port 1)
    for my $policy (qw(open closed)) {
        my $ng = start_nginx(workers => 1,
                             config => conf(zone => 'redis=127.0.0.1:1 '
                                            . 'timeout=200ms '
                                            . "failure=$policy"));
        my $res = http_get($ng->port, '/w?ms=1');
        is($res->{code}, $policy eq 'open' ? 200 : 429,
           "Redis down, failure=$policy: the failure policy");
        $ng->stop;
    }
}

# ------------------------------------------------------------ embedded
{
    my $ng = start_nginx(workers => 2, config => conf(zone => 'size=1m'));
    $up->capacity($C, $S);
    $up->reset;
    my $load = RlTest::Load->start(urls => urls($ng), clients => 48,
                                   seconds => 12, deadline => 2,
                                   pause_ms => $S,
                                   groups => ['48:X-Priority=0']);
    $load->finish;
    my $s = $load->stats(from => 8, to => 12);
    SKIP: {
        skip "the sanitizers' workers are 3x slower", 2 unless $timed;
        cmp_ok($s->{goodput}, '>=', 0.8 * $C * 1000 / $S,
               "the embedded store learns alike: $s->{goodput} a second")
            or diag(explain($s));
        cmp_ok($s->{p90}, '<=', 2 * $S / 1000,
               "p90 $s->{p90} s within 2 S");
    }
    my $auto = rules_of($ng);
    cmp_ok($auto->{limit}, '>=', $C / 2, "its N: $auto->{limit}");
    cmp_ok(scalar @{ $auto->{adaptive}{history} }, '>=', 8,
           'and its history');
    $ng->stop;
}

# ------------------------------------------------------------ nginx -t
for my $case (
    ['concurrency=auto min=0', 'invalid parameter "min=0"'],
    ['concurrency=auto min=9 max=4', 'invalid parameter "min=9": above "max=4"'],
    ['concurrency=auto max=100001', 'invalid parameter "max=100001"'],
    ['concurrency=auto rate=5r/s', 'invalid parameter "rate=5r/s" with "concurrency=auto"'],
    ['concurrency=4 min=2', 'invalid parameter "min=2": it needs "concurrency=auto"'],
    ['rate=5r/s max=9', 'invalid parameter "max=9": it needs "concurrency=auto"'],
    ['concurrency=auto priority=', 'invalid parameter "priority="'],
    ['concurrency=auto priority=7', 'invalid parameter "priority=7"'],
    ['concurrency=auto target=0', 'invalid parameter "target=0"'],
) {
    my ($rule, $error) = @$case;
    my $ng = start_nginx(start => 0, config => <<"CONF");
    rl_zone main redis=127.0.0.1:1;
    server {
        listen 127.0.0.1:\$ServerPort;
        location / { rl_rule zone=main key=k $rule; empty_gif; }
    }
CONF
    my ($ok, $text) = $ng->config_test;
    ok(!$ok && index($text, $error) >= 0, "nginx -t: $rule: $error")
        or diag($text);
}

done_testing();
