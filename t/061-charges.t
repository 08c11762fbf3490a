# Charges after the response (charge=, SPEC section 10) against a real
# upstream (t/lib/upstream.py) that answers X-Tokens-Used: with 2
# instances x 2 workers Redis' usage is the sum of the charges; a key
# over its budget is rejected on every instance; a charge counts when
# the request ends; below the cost it gives back; invalid values are
# counted and logged a minute apart; an embedded zone, a lease= zone,
# Redis down (lost).

use strict;
use warnings;
use lib 't/lib';
use RlTest;

my $r  = start_redis();
my $up = start_upstream();
my $UP = $up->port;

# The fixed window's count and index of each state key of a key value
# (lua/fixed_window.lua: two packed doubles), as "INDEX:COUNT".
my $WINDOW = <<'LUA';
local out = {}
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
    local v = redis.call('GET', k)
    if #v == 16 then
        local w, c = struct.unpack('<dd', v)
        out[#out + 1] = string.format('%.0f:%.0f', w, c)
    end
end
return table.concat(out, ' ')
LUA
sub window { my ($redis, $v) = @_; $redis->cli('EVAL', $WINDOW, 0, "rl:{$v}:*") }
sub usage  { (split /:/, window(@_))[1] // 0 }

sub conf {
    my (%o) = @_;
    my $zone = $o{zone} // 'redis=127.0.0.1:$RedisPort timeout=5s';
    my $rule = $o{rule} // 'rate=1000000r/d algorithm=fixed_window';
    return <<"CONF";
    rl_zone main $zone;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /c {
            rl_rule zone=main key=\$arg_key $rule name=tokens
                    charge=\$upstream_http_x_tokens_used;
            proxy_pass http://127.0.0.1:$UP/hold;
        }
        location = /metrics { rl_metrics; }
    }
CONF
}

sub charges {
    my ($ng, $result) = @_;
    return metric_value($ng->port, 'rl_charges_total{zone="main",'
                                   . "rule=\"tokens\",result=\"$result\"}");
}

# waits until the instances sent $n charges in all
sub sent {
    my ($n, @ng) = @_;
    my $got;
    wait_until(sub {
        $got = 0;
        $got += charges($_, 'sent') for @ng;
        $got >= $n;
    }, timeout => 10);
    return $got;
}

# ------------------------------------------------------------ conservation

{
    my @ng = map { start_nginx(redis => $r, workers => 2, config => conf()) }
             1 .. 2;
    srand(54);
    my @tokens = map { int rand 500 } 1 .. 40;
    $tokens[0] = 0;     # a charge of 0 gives the request's cost back
    my @paths = map { [ $ng[$_ % 2]->port,
                        "/c?key=fleet&ms=20&tokens=$tokens[$_]" ] } 0 .. 39;
    my @codes = http_parallel(undef, \@paths, concurrency => 12);
    is(join(',', grep { $_ != 200 } @codes), '', '40 requests served');
    is(sent(40, @ng), 40, 'rl_charges_total{result="sent"}: 40');
    my $sum = 0;
    $sum += $_ for @tokens;
    is(usage($r, 'fleet'), $sum,
       "2 instances x 2 workers: Redis' usage is the sum of the charges "
       . "($sum)");
    is($up->stats('fleet')->{tokens}, $sum, 'what the upstream reported');

    # over budget on one instance: rejected on both
    my $cfg = conf(rule => 'rate=100r/d algorithm=fixed_window');
    $_->reload(config => $cfg) for @ng;
    is(http_get($ng[0]->port, '/c?key=budget&ms=1&tokens=150')->{code}, 200,
       'a request that used 150 of 100');
    sent(41, @ng);
    is(usage($r, 'budget'), 150, 'usage 150: in debt');
    for my $i (0, 1) {
        my $res = http_get($ng[$i]->port, '/c?key=budget&ms=1&tokens=1');
        is(join(' ', $res->{code}, $res->{headers}{'x-ratelimit-remaining'},
                     $res->{headers}{'retry-after'} ? 'retry' : '-'),
           '429 0 retry', "over budget: rejected on instance " . ($i + 1));
    }
    is(usage($r, 'budget'), 150, 'a rejected request charges nothing');
    is(charges($ng[0], 'sent') + charges($ng[1], 'sent'), 41,
       'no charge for the rejections');

    # a bucket in debt: its retry is longer than one request's ever is
    $_->reload(config => conf(rule => 'rate=10r/s algorithm=token_bucket'))
        for @ng;
    is(http_get($ng[0]->port, '/c?key=debt&ms=1&tokens=1000')->{code}, 200,
       'a bucket of 10 charged 1000');
    sent(42, @ng);
    for my $i (0, 1) {
        my $res = http_get($ng[$i]->port, '/c?key=debt&ms=1&tokens=1');
        is($res->{code} . ' ' . $res->{headers}{'x-rl-status'},
           '429 REJECTED', 'in debt: rejected on instance ' . ($i + 1));
        cmp_ok($res->{headers}{'retry-after'} // 0, '>=', 95,
               'until the debt is refilled (990 at 10 a second)');
    }
    $_->stop for @ng;
}

# ------------------------------------------------------------ one instance

my $ng = start_nginx(redis => $r, workers => 1, config => conf(
    rule => 'rate=1000r/2s algorithm=fixed_window cost=$arg_cost'));
my $P = $ng->port;

{
    # a request admitted in one window and ended in the next: its charge
    # counts in the window it ended in
    my $at = sub {   # the 2 s window and us into it, on Redis' clock
        my ($s, $us) = split /\n/, $r->cli('TIME');
        return (int($s / 2), ($s % 2) * 1000000 + $us);
    };
    wait_until(sub { ($at->())[1] < 300000 }, timeout => 3,
               interval => 0.01);
    my $c = http_start($P, '/c?key=end&until=end&tokens=40');
    wait_until(sub { $up->stats('end')->{now} == 1 }, timeout => 5);
    my ($w0) = split /:/, window($r, 'end');
    ok(wait_until(sub { my ($w, $t) = $at->();
                        $w == $w0 + 1 && $t > 200000 && $t < 600000 },
                  timeout => 4, interval => 0.01),
       'the next window has begun');
    $up->release('end');
    $c->result(5);
    sent(1, $ng);
    my ($w1, $count) = split /:/, window($r, "end");
    is($w1 - $w0, 1, 'the charge went to the window the request ended in');
    is($count, 39, 'C - cost there (40 - 1)');
}

{
    my $res = http_get($P, '/c?key=back&cost=10&ms=1&tokens=3');
    is($res->{headers}{'x-ratelimit-remaining'}, 990, 'cost=10 counted');
    sent(2, $ng);
    is(usage($r, 'back'), 3, 'a charge of 3 gave 7 back');
}

{
    my $before = $ng->error_log_text;
    http_get($P, "/c?key=bad&ms=1$_") for ('', '&tokens=abc', '&tokens=-5');
    ok(wait_until(sub { charges($ng, 'invalid') == 3 }, timeout => 5),
       'no value, abc, -5: invalid, counted');
    my $log = substr $ng->error_log_text, length $before;
    my $lines = () = $log =~ /\[warn\].*rl: charge "[^"]*" of rule "tokens" of zone "main" is no whole number/g;
    ok($lines >= 1 && $lines <= 2,
       "logged at warn, a minute apart at most ($lines line(s) for 3)");
    is(usage($r, 'bad'), 3, 'each counted its cost only');
}

{
    # Redis goes while a request runs: its charge is lost
    my $r2 = start_redis();
    my $ng2 = start_nginx(redis => $r2, workers => 1, config => conf());
    my $c = http_start($ng2->port, '/c?key=lost&until=lost&tokens=9');
    ok(wait_until(sub { $up->stats('lost')->{now} == 1 }, timeout => 5),
       'a request held');
    $r2->kill('KILL');
    ok(wait_until(sub { metric_value($ng2->port, 'rl_store_up{zone="main"}')
                        == 0 }, timeout => 5), 'Redis gone');
    $up->release('lost');
    $c->result(5);
    ok(wait_until(sub { charges($ng2, 'lost') == 1 }, timeout => 5),
       'its charge: lost');
    $ng2->stop;
}

$ng->stop;

# ------------------------------------------------------------ embedded

{
    my $emb = start_nginx(workers => 2, config => conf(
        zone => 'size=1m', rule => 'rate=100r/d algorithm=token_bucket'));
    my $E = $emb->port;
    is(http_get($E, '/c?key=emb&ms=1&tokens=30')->{code}, 200, 'embedded');
    ok(wait_until(sub { charges($emb, 'sent') == 1 }, timeout => 5),
       'charged in shared memory');
    is(http_get($E, '/c?key=emb&ms=1&tokens=1')->{headers}
           {'x-ratelimit-remaining'}, 69, 'the bucket: 100 - 30 - 1');
    $emb->stop;
}

# ------------------------------------------------------------ lease=

{
    $r->cli('FLUSHALL');
    my $ls = start_nginx(redis => $r, workers => 2, config => conf(
        zone => 'redis=127.0.0.1:$RedisPort timeout=5s lease=100ms'));
    my @paths = map { '/c?key=leased&ms=1&tokens=' . ($_ % 7) } 1 .. 60;
    my @codes = http_parallel($ls->port, \@paths, concurrency => 6);
    is(join(',', grep { $_ != 200 } @codes), '', 'a hot key, leased');
    my $sum = 0;
    $sum += $_ % 7 for 1 .. 60;
    cmp_ok(metric_value($ls->port, 'rl_lease_units_total{zone="main",'
                                   . 'use="spent"}'), '>', 0,
           'requests spent from leases');
    is(sent(60, $ls), 60, 'each charged');
    my $unit = sub { metric_value($ls->port, 'rl_lease_units_total{zone='
                                             . "\"main\",use=\"$_[0]\"}") };
    ok(wait_until(sub { $unit->('granted') ==
                        $unit->('spent') + $unit->('returned') },
                  timeout => 5), 'leases ended');
    is(usage($r, 'leased'), $sum,
       "leased rules charge through Redis: usage is the sum ($sum)");
    $ls->stop;
}

done_testing();
