# The embedded store never forgets a state that holds slots to make room
# (SPEC section 9; src/shm/store.cpp), against a real upstream that
# counts requests in flight (t/lib/upstream.py).
#
# 1. The reviewer's case: a 32k zone, one request of key VIP holding
#    concurrency=1 at the upstream; 400 requests of new keys on a rate
#    rule of the same zone, then two more VIP requests. Before, the
#    flood forgot VIP's state like any other limiting one (its renewal
#    does not make it recently used, so it went first) and the next VIP
#    request was admitted: the upstream saw 2 in flight. Now both are
#    rejected, also after another flood once the hold (1s) has passed
#    (renewed, the state is still kept); once VIP's request ended, VIP
#    is admitted again and new keys still make room.
# 2. A zone whose memory is all in states that hold slots (concurrency
#    =200: a page a state): the newcomer that finds no room gets the
#    failure policy, under failure=closed (429, ERROR) and under
#    failure=open (passed, ERROR), counted as an error and logged once;
#    every state held before it keeps its slot. Before, each newcomer
#    forgot the least recently used held state and was admitted.
# 3. Once the held requests end, their states are whole again and the
#    newcomer is admitted: the zone works as before.
# 4. The worker that held them SIGKILLed: their slots expire unrenewed
#    within the hold (1s), and the newcomer is admitted then (a state
#    whose slots all expired is whole: the zone takes it back).

use lib 't/lib';
use RlTest;

my $up = start_upstream();
my $UP = $up->port;

my $ng = start_nginx(workers => 2, config => <<"CONF");
    rl_zone a size=32k;
    rl_zone o size=32k;
    rl_zone c size=32k failure=closed;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /vip {
            rl_rule zone=a key=\$arg_key concurrency=1 hold=1s name=vip;
            proxy_pass http://127.0.0.1:$UP/hold;
        }
        location /flood {
            rl_rule zone=a key=\$arg_k rate=1r/d name=flood;
            empty_gif;
        }
        location /o {
            rl_rule zone=o key=\$arg_key concurrency=200 name=big_o;
            proxy_pass http://127.0.0.1:$UP/hold;
        }
        location /c {
            rl_rule zone=c key=\$arg_key concurrency=200 name=big_c;
            proxy_pass http://127.0.0.1:$UP/hold;
        }
        location = /metrics { rl_metrics; }
        location /rl/ { rl_api; }
    }
CONF
my $P = $ng->port;

# the slots a key has left in a rule, as the operator API reads them
# (a key the zone does not hold reads as a fresh one)
sub remaining {
    my ($port, $rule, $key) = @_;
    my $body = http_get($port, "/rl/1/rules/$rule/keys/$key")->{body} // '';
    return $body =~ /"remaining":(\d+)/ ? $1 : -1;
}

# $n new keys on the rate rule of zone a: how many got a state of their
# own (200 PASSED, not the failure policy's ERROR)
sub flood {
    my ($from, $n) = @_;
    my @res = http_parallel($P, [map { "/flood?k=f$_" }
                                 $from .. $from + $n - 1],
                            concurrency => 10, timeout => 60, full => 1);
    return scalar grep { code_status($_) eq '200 PASSED' } @res;
}

# ---------------------------------------------------------------- 1
# (VIP's state and the flood's are blocks of one size, 256 bytes: the
# flood makes room in the queue VIP's state was in)
{
    my $held = http_start($P, '/vip?key=VIP&until=vip');
    ok(wait_until(sub { $up->stats('VIP')->{now} == 1 }, timeout => 10),
       'VIP holds its one slot at the upstream');
    my $t0 = now();
    is(flood(1, 400), 400, '400 new keys on the rate rule of the zone');
    cmp_ok(metric_value($P, 'rl_store_evictions_total{zone="a"}'), '>', 0,
           'the zone is full: they forgot limited keys');
    my @extra = map { code_status(http_get($P, '/vip?key=VIP&ms=300')) }
                1 .. 2;
    is("@extra", '429 REJECTED 429 REJECTED',
       'the two more VIP requests are rejected: its slot is still held');
    # past the hold (1s): VIP's slot is renewed, its state still kept
    select(undef, undef, undef, 1.5 - (now() - $t0)) if now() - $t0 < 1.5;
    is(flood(401, 400), 400, '400 more new keys, past the hold');
    is(code_status(http_get($P, '/vip?key=VIP&ms=300')), '429 REJECTED',
       'and VIP is still full');
    is($up->stats('VIP')->{max}, 1,
       'the upstream never saw more than 1 VIP request at once');
    $up->release('vip');
    is($held->result(10)->{code}, 200, 'the held VIP request ends');
    my $last = '';
    ok(wait_until(sub { ($last = code_status(http_get(
                            $P, '/vip?key=VIP&ms=1'))) eq '200 PASSED' },
                  timeout => 5), 'then VIP is admitted again')
        or diag("last: $last");
    is(flood(801, 400), 400, 'and new keys still make room');
}

# ---------------------------------------------------------------- 2, 3

# fill($port, $loc, $rule): held requests of new keys on /$loc (tag
# $loc), one at a time, until one finds no room (a state the operator API
# does not see once the upstream got it, or an answer at once): returns
# that one's connection and key, and the keys held before it with their
# connections (the clients stay)
sub fill {
    my ($port, $loc, $rule) = @_;
    my (@keys, @held);
    for my $i (1 .. 30) {
        my $key = "$loc$i";
        my $c = http_start($port, "/$loc?key=$key&until=$loc");
        wait_until(sub { $c->poll || $up->stats($key)->{now} == 1 },
                   timeout => 10);
        if ($c->done || remaining($port, $rule, $key) != 199) {
            return ($c, $key, \@keys, \@held);
        }
        push @keys, $key;
        push @held, $c;
    }
    return (undef, undef, \@keys, \@held);
}

for my $t (['c', 'big_c', '429 ERROR', 'failure=closed: rejected'],
           ['o', 'big_o', '200 ERROR', 'failure=open: passed']) {
    my ($loc, $rule, $want, $what) = @$t;
    my ($c, $key, $keys, $held) = fill($P, $loc, $rule);
    my @keys = @$keys;
    my $n = @keys;
    unless (ok(defined $c, "zone $loc: $n states holding slots fill it, "
               . 'the next new key finds no room')) {
        $up->release($loc);
        next;
    }
    cmp_ok($n, '>=', 2, 'more than one state held');
    is(join(' ', map { remaining($P, $rule, $_) } @keys),
       join(' ', (199) x $n), 'every state held before it keeps its slot');
    is(join(' ', map { $up->stats($_)->{now} } @keys), join(' ', (1) x $n),
       'and its request runs at the upstream');
    $up->release($loc);
    is(code_status($c->result(10)), $want, "the newcomer: $what");
    is(join(' ', map { $_->result(10)->{code} } @$held),
       join(' ', (200) x $n), 'the held requests end');
    is(metric_value($P, "rl_requests_total{zone=\"$loc\",rule=\"$rule\","
                        . 'outcome="error"}'), 1,
       'counted as an error');
    my $last = '';
    ok(wait_until(sub { ($last = code_status(http_get(
                            $P, "/$loc?key=$key&ms=1"))) eq '200 PASSED' },
                  timeout => 5),
       'the held requests ended: the newcomer is admitted')
        or diag("last: $last");
    my @more = map { code_status(http_get($P, "/$loc?key=new$loc$_&ms=1")) }
               1 .. $n + 2;
    is(join(', ', grep { $_ ne '200 PASSED' } @more), '',
       'and new keys beyond the held ones\' number');
}

my @full = $ng->error_log_text =~ /(\[warn\].*is full: no room for a .*)/g;
is(scalar(grep { /rl_zone "c"/ } @full), 1, 'zone c logged it once');
is(scalar(grep { /rl_zone "o"/ } @full), 1, 'zone o logged it once');
$ng->stop;

# ---------------------------------------------------------------- 4
{
    my $solo = start_nginx(workers => 1, config => <<"CONF");
    rl_zone k size=32k failure=closed;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /k {
            rl_rule zone=k key=\$arg_key concurrency=200 hold=1s
                    name=big_k;
            proxy_pass http://127.0.0.1:$UP/hold;
        }
        location /rl/ { rl_api; }
    }
CONF
    my $K = $solo->port;
    my ($worker) = $solo->worker_pids;
    my ($c, $key, $keys, $held) = fill($K, 'k', 'big_k');
    is($c ? code_status($c->result(10)) : "none of @$keys", '429 ERROR',
       'a zone full of held states: the newcomer gets the failure policy');
    $key //= 'k0';
    kill 'KILL', $worker;
    my $t0 = now();
    my $last = '';
    ok(wait_until(sub { ($last = code_status(http_get(
                            $K, "/k?key=$key&ms=1"))) eq '200 PASSED' },
                  timeout => 5),
       'their worker SIGKILLed: once their slots expired, the newcomer is '
       . 'admitted') or diag("last: $last");
    my $took = now() - $t0;
    cmp_ok($took, '<=', 2.5, sprintf('within the hold (%.2f s)', $took));
    $up->release('k');
    my @bad = grep { !/worker process $worker exited on signal 9/ }
              $solo->stop(check => 0);
    ok(!@bad, 'no other alert or crash') or diag(join "\n", @bad);
}

done_testing();
