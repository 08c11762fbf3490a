# In-flight limits (concurrency=, SPEC section 9) against a real upstream
# (t/lib/upstream.py) that holds requests and counts them in flight per
# key: across 2 instances x 2 workers the upstream never sees more than
# N of a key at once; slots go back to 0 after normal ends, client
# aborts, upstream errors, an error_page, and within the hold after a
# SIGKILLed worker; a request longer than the hold keeps its slot;
# stacked with a rate rule, a rejection by either takes nothing from the
# other; headers, metrics, the embedded store, failure=local, a lease=
# zone (never leased).

use strict;
use warnings;
use lib 't/lib';
use RlTest;

my $r  = start_redis();
my $up = start_upstream();
my $UP = $up->port;

sub live { slots_held($_[0]) }

sub conf {
    my (%o) = @_;
    my $zone = $o{zone} // 'redis=127.0.0.1:$RedisPort timeout=5s';
    my $n    = $o{n} // 3;
    my $hold = $o{hold} // '10s';
    my $more = $o{more} // '';
    return <<"CONF";
    rl_zone main $zone;
    rl_headers draft;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /in {
            rl_rule zone=main key=\$arg_key concurrency=$n hold=$hold
                    name=inflight;
            $more
            proxy_pass http://127.0.0.1:$UP/hold;
        }
        location /drop {
            rl_rule zone=main key=\$arg_key concurrency=$n hold=$hold
                    name=inflight;
            proxy_pass http://127.0.0.1:$UP/drop;
        }
        location /caught {
            rl_rule zone=main key=\$arg_key concurrency=$n hold=$hold
                    name=inflight;
            proxy_intercept_errors on;
            error_page 502 = \@held;
            proxy_pass http://127.0.0.1:$UP/drop;
        }
        location \@held {
            rewrite ^ /hold?key=\$arg_key&until=\$arg_tag break;
            proxy_pass http://127.0.0.1:$UP;
        }
        location /rate {
            rl_rule zone=main key=\$arg_key rate=3r/m name=per_min;
            proxy_pass http://127.0.0.1:$UP/hold;
        }
        location = /metrics { rl_metrics; }
        location /rl/ { rl_api write=on; }
    }
CONF
}

sub inflight_metric {
    my ($ng) = @_;
    return metric_value($ng->port, 'rl_inflight{zone="main",rule="inflight"}');
}

# held($ng, $key, $tag, $n): $n requests held at the upstream until
# $up->release($tag), once the upstream holds them all
sub held {
    my ($port, $key, $tag, $n) = @_;
    my @c = map { http_start($port, "/in?key=$key&until=$tag") } 1 .. $n;
    wait_until(sub { $up->stats($key)->{now} == $n }, timeout => 10)
        or diag("upstream holds " . $up->stats($key)->{now} . " of $n");
    return @c;
}

# ------------------------------------------------------------ the fleet

{
    $r->cli('FLUSHALL');
    my @ng = map { start_nginx(redis => $r, workers => 2, config => conf()) }
             1 .. 2;
    my @paths = map { [ $ng[$_ % 2]->port, '/in?key=fleet&ms=300' ] }
                1 .. 60;
    my @res = http_parallel(undef, \@paths, concurrency => 24, full => 1,
                            timeout => 60);
    my $s = $up->stats('fleet');
    my %codes;
    $codes{ $_->{code} }++ for @res;
    is($s->{max}, 3, '2 instances x 2 workers: the upstream saw at most '
                   . '3 of a key at once, and 3 under demand')
        or diag(explain($s));
    is(($codes{200} // 0) + ($codes{429} // 0), 60,
       'every request 200 or 429') or diag(explain(\%codes));
    is($s->{seen}, $codes{200} // 0, 'the upstream saw the 200s only');
    cmp_ok($codes{429} // 0, '>', 0, 'some were rejected');
    my ($no) = grep { $_->{code} == 429 } @res;
    is(join(' ', map { $no->{headers}{$_} // '-' }
                 qw(retry-after x-ratelimit-limit x-ratelimit-remaining
                    x-rl-status)),
       '1 3 0 REJECTED', 'a rejection: Retry-After 1, its N, none left');
    is($no->{headers}{'ratelimit-policy'},
       '"inflight";q=3;qu="concurrent-requests"',
       'RateLimit-Policy: the rule as concurrent requests, no window');
    ok(wait_until(sub { live($r) == 0 }, timeout => 5),
       'the key holds no slot once they ended');
    is($r->cli('KEYS', 'rl:*'), '', 'and no key is left');
    is(inflight_metric($_), 0, 'rl_inflight back to 0') for @ng;
    $_->stop for @ng;
}

# ------------------------------------------------------------ one instance

my $ng = start_nginx(redis => $r, workers => 2, config => conf(hold => '1s'));
my $P = $ng->port;

{
    my @c = held($P, 'ends', 'ends', 2);
    my $third = http_get($P, '/in?key=ends&ms=1');
    is(join(' ', map { $third->{headers}{$_} // '-' }
                 qw(x-ratelimit-remaining x-rl-status)),
       '0 PASSED', 'the third of 3: nothing left after it');
    is(live($r), 2, 'two held, in Redis');
    like(http_get($P, '/rl/1/rules/inflight/keys/ends')->{body},
         qr/"limit":3,"remaining":1\b/,
         'the operator API reads the key: 1 slot left');
    is(live($r), 2, 'and holds none');
    is(inflight_metric($ng), 2, 'rl_inflight: 2');
    $up->release('ends');
    is_deeply([ map { $_->result(10)->{code} } @c ], [200, 200],
              'they end normally');
    ok(wait_until(sub { live($r) == 0 }, timeout => 5), 'their slots go');
    is(inflight_metric($ng), 0, 'rl_inflight: 0');
}

{
    my @c = held($P, 'abort', 'abort', 3);
    is(http_get($P, '/in?key=abort&ms=1')->{code}, 429, 'full');
    close $_->{sock} for @c;    # the clients go away
    ok(wait_until(sub { live($r) == 0 }, timeout => 5),
       'aborted by their clients: their slots go');
    # (the 429 is never kept in the deny cache)
    ok(wait_until(sub { http_get($P, '/in?key=abort&ms=1')->{code} == 200 },
                  timeout => 2), 'and admit again');
    $up->release('abort');
}

{
    my @codes = map { http_get($P, '/drop?key=drop')->{code} } 1 .. 5;
    is("@codes", '502 502 502 502 502',
       'an upstream error each, more than N of them in a row');
    ok(wait_until(sub { live($r) == 0 }, timeout => 5),
       'no slot held after upstream errors');
}

{
    my @c = map { http_start($P, "/caught?key=caught&tag=caught") } 1 .. 3;
    ok(wait_until(sub { $up->stats('caught')->{now} == 3 }, timeout => 10),
       'an error_page leads 3 to a held upstream');
    is(live($r), 3, 'the error_page keeps their slots');
    is(http_get($P, '/caught?key=caught&tag=x')->{code}, 429,
       'a fourth is rejected');
    $up->release('caught');
    is_deeply([ map { $_->result(10)->{code} } @c ], [200, 200, 200],
              'served by the error_page');
    ok(wait_until(sub { live($r) == 0 }, timeout => 5), 'then released');
}

{
    # hold=1s: renewed every 333 ms, a request of 3 s keeps its slot
    my @c = held($P, 'long', 'long', 3);
    my $t0 = now();
    my @late;
    while (now() - $t0 < 3) {
        push @late, http_get($P, '/in?key=long&ms=1')->{code};
        select undef, undef, undef, 0.25;
    }
    is(join(',', grep { $_ != 429 } @late), '',
       'requests longer than the hold keep their slots (' . @late
       . ' rejected over 3 s)');
    is(live($r), 3, 'still 3 in Redis after 3 holds');
    $up->release('long');
    $_->result(10) for @c;
    ok(wait_until(sub { live($r) == 0 }, timeout => 5), 'released');
}

{
    # a SIGKILLed worker: its slots expire within the hold
    my $solo = start_nginx(redis => $r, workers => 1,
                           config => conf(hold => '2s'));
    my ($worker) = $solo->worker_pids;
    my @c = held($solo->port, 'killed', 'killed', 3);
    is(live($r), 3, '3 held by one worker');
    kill 'KILL', $worker;
    my $t0 = now();
    ok(wait_until(sub { live($r) == 0 }, timeout => 5),
       'its worker SIGKILLed: the slots expire');
    my $took = now() - $t0;
    cmp_ok($took, '<=', 2.5, sprintf('within the hold (%.2f s)', $took));
    $up->release('killed');
    my @bad = grep { !/worker process $worker exited on signal 9/ }
              $solo->stop(check => 0);
    ok(!@bad, 'no other alert or crash') or diag(join "\n", @bad);
}

{
    # stacked with a rate rule of the same zone
    my $stack = start_nginx(redis => $r, workers => 1, config => conf(
        n => 1, more => 'rl_rule zone=main key=$arg_key rate=3r/m '
                      . 'name=per_min;'));
    my $S = $stack->port;
    my @c = held($S, 'stack', 'stack', 1);
    my $no = http_get($S, '/in?key=stack&ms=1');
    is($no->{code} . ' ' . $no->{headers}{'x-ratelimit-limit'}, '429 1',
       'the slot rejects');
    is(http_get($S, '/rate?key=stack&ms=1')->{headers}
           {'x-ratelimit-remaining'}, 1,
       'its rejection took nothing from the rate (1 held, 1 now: 1 left)');
    $up->release('stack');
    $c[0]->result(10);
    ok(wait_until(sub { live($r) == 0 }, timeout => 5), 'released');
    ok(wait_until(sub { http_get($S, '/in?key=stack&ms=1')->{code} == 200 },
                  timeout => 2), 'the rate\'s last unit (once the 429 '
                                 . 'left the deny cache)');
    ok(wait_until(sub { live($r) == 0 }, timeout => 5), 'released');
    my $seen = $up->stats('stack')->{seen};
    is(http_get($S, '/in?key=stack&ms=1')->{code}, 429, 'the rate rejects');
    is(live($r), 0, 'and takes no slot');
    is($up->stats('stack')->{seen}, $seen, 'the upstream saw nothing');
    $stack->stop;
}

$ng->stop;

# ------------------------------------------------------------ late decisions

{
    # Redis stopped while decisions are out: a request whose client went
    # away, and one that got failure=open at its timeout, have their
    # calls run when Redis resumes; the slots those take are released
    my $late = start_nginx(redis => $r, workers => 1, config => conf(
        zone => 'redis=127.0.0.1:$RedisPort timeout=300ms failure=open'));
    my $L = $late->port;
    is(http_get($L, '/in?key=warm&ms=1')->{code}, 200, 'connected');
    my ($zadd, $zrem) = ($r->calls('zadd'), $r->calls('zrem'));
    $r->kill('STOP');
    my $gone = http_start($L, '/in?key=late&ms=1');
    select undef, undef, undef, 0.05;
    close $gone->{sock};
    my $open = http_get($L, '/in?key=late2&ms=1');
    is(join(' ', $open->{code}, $open->{headers}{'x-rl-status'}),
       '200 ERROR', 'timed out: failure=open');
    $r->kill('CONT');
    # (a release whose own call timed out, on a host so loaded that
    # Redis stayed stopped past it, goes again within the hold, 10 s)
    ok(wait_until(sub { live($r) == 0 && $r->cli('KEYS', 'rl:{late*')
                        eq '' }, timeout => 12),
       'the late calls ran, and what they took was released');
    is($r->calls('zadd') - $zadd, 2, 'both took a slot when Redis resumed');
    cmp_ok($r->calls('zrem') - $zrem, '>=', 2, 'and both were released');
    $late->stop;
}

# ------------------------------------------------------------ embedded

{
    my $emb = start_nginx(workers => 2, config => conf(
        zone => 'size=1m', n => 2, hold => '1s'));
    my $E = $emb->port;
    my @c = held($E, 'emb', 'emb', 2);
    is(http_get($E, '/in?key=emb&ms=1')->{code}, 429,
       'embedded zone: 2 workers share 2 slots');
    cmp_ok($up->stats('emb')->{now}, '==', 2, 'the upstream holds 2');
    sleep 2;    # renewed past the hold
    is(http_get($E, '/in?key=emb&ms=1')->{code}, 429,
       'held past the hold: renewed in shared memory');
    $up->release('emb');
    $_->result(10) for @c;
    my $code;
    ok(wait_until(sub { ($code = http_get($E, '/in?key=emb&ms=1')->{code})
                        == 200 }, timeout => 5),
       'released: admitted again');

    # a key value's override of N (rl_api): its slots in a ring of that N
    is(http_request($E, 'PUT', '/rl/1/rules/inflight/keys/embo/override',
                    headers => ['Content-Type' => 'application/json'],
                    body => '{"limit":1}')->{code}, 200,
       'an override of 1 slot for one key value');
    my @one = held($E, 'embo', 'embo', 1);
    is(http_get($E, '/in?key=embo&ms=1')->{headers}{'x-ratelimit-limit'}, 1,
       'the override decides');
    $up->release('embo');
    $one[0]->result(10);
    # released as the request ends (its log phase), where one left to
    # expire would hold on for two thirds of its hold at least
    ok(wait_until(sub { http_get($E, '/rl/1/rules/inflight/keys/embo')
                            ->{body} =~ /"remaining":1\b/ },
                  timeout => 0.4, interval => 0.02),
       'its slot released in the override\'s ring');
    $emb->stop;
}

# ------------------------------------------------------------ failure=local

{
    my $r2 = start_redis();
    my $loc = start_nginx(redis => $r2, workers => 2, config => conf(
        zone => 'redis=127.0.0.1:$RedisPort timeout=5s failure=local '
              . 'size=1m', n => 2));
    my $L = $loc->port;
    $r2->kill('KILL');
    my @c = held($L, 'local', 'local', 2);
    is(http_get($L, '/in?key=local&ms=1')->{code}, 429,
       'failure=local, Redis down: slots counted in this instance');
    $up->release('local');
    $_->result(10) for @c;
    ok(wait_until(sub { http_get($L, '/in?key=local&ms=1')->{code} == 200 },
                  timeout => 5), 'and released there');
    $loc->stop;
}

# ------------------------------------------------------------ lease=

{
    $r->cli('FLUSHALL');
    my $ls = start_nginx(redis => $r, workers => 2, config => conf(
        zone => 'redis=127.0.0.1:$RedisPort timeout=5s lease=200ms',
        more => 'rl_rule zone=main key=$arg_key rate=1000000r/d '
              . 'name=per_day;'));
    my @res = http_parallel($ls->port,
                            [ map { '/in?key=leased&ms=200' } 1 .. 30 ],
                            concurrency => 12, full => 1);
    is($up->stats('leased')->{max}, 3,
       'in a lease= zone: still at most 3 in flight (never leased)');
    is(metric_value($ls->port, 'rl_lease_units_total{zone="main",'
                               . 'use="granted"}'), 0, 'no lease granted');
    ok(wait_until(sub { live($r) == 0 }, timeout => 5), 'all released');
    $ls->stop;
}

done_testing();
