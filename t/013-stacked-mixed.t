# Stacked rules of different algorithms, in one zone, across zones and
# across stores: a request rejected by one rule consumes nothing in the
# other (one script call within a Redis zone, the embedded store's
# two-phase decision within an embedded zone, a refund across zones).
#
# Rule A: rate=2r/s with a capacity of 2 (token_bucket burst=2, gcra or
# leaky_bucket burst=1); rule B: 5 per a long window (sliding_log 5r/10s,
# ...). Each scenario, on its own key:
#   1-2  two quick requests pass (A empty, B has counted 2)
#   3    a third is rejected by A (binding rule A: X-RateLimit-Limit 2)
#   4-6  polling: every request A rejects is not counted by B, so the
#        next three that A admits all pass (B: 5 counted)
#   7    B is full: rejected by B (X-RateLimit-Limit of B)
#   then, while B rejects every request, A refills to full (2 tokens);
#   the same rule A alone (another location, same state) admits exactly 2:
#   B's rejections consumed nothing in A.
# Scenarios run in child processes, a batch at a time.

use lib 't/lib';
use RlTest;

my $r = start_redis();

my %A = (
    tb    => 'rate=2r/s algorithm=token_bucket burst=2',
    gcra  => 'rate=2r/s algorithm=gcra burst=1',
    leaky => 'rate=2r/s algorithm=leaky_bucket burst=1',
);
# name => [parameters, N]
my %B = (
    log     => [ 'rate=5r/10s algorithm=sliding_log', 5 ],
    fixed   => [ 'rate=5r/d algorithm=fixed_window', 5 ],
    sliding => [ 'rate=5r/d algorithm=sliding_window', 5 ],
    tb      => [ 'rate=5r/h algorithm=token_bucket', 5 ],
    gcra    => [ 'rate=1r/h algorithm=gcra burst=4', 1 ],
);
# zone of A, zone of B
my @COMBOS = (
    [ 'r', 'r' ], [ 'e', 'e' ], [ 'r', 'r2' ], [ 'e', 'e2' ],
    [ 'e', 'r' ], [ 'r', 'e' ],
);
my %STORE = (r => 'redis', r2 => 'redis(2)', e => 'embedded',
             e2 => 'embedded(2)');

my @SCEN;
for my $c (@COMBOS) {
    push @SCEN, [ $_, 'log', @$c ] for sort keys %A;
    next unless $c->[0] =~ /^[re]$/ && $c->[1] =~ /^[re]$/;
    push @SCEN, [ 'gcra', $_, @$c ] for grep { $_ ne 'log' } sort keys %B;
}

my $loc = '';
for my $s (@SCEN) {
    my ($a, $b, $za, $zb) = @$s;
    my $id = join '_', @$s;
    $loc .= <<"LOC";
        location /s/$id {
            rl_rule zone=$za key=\$arg_k $A{$a} name=A;
            rl_rule zone=$zb key=\$arg_k $B{$b}[0] name=B;
            empty_gif;
        }
        location /a/$id {
            rl_rule zone=$za key=\$arg_k $A{$a} name=A;
            empty_gif;
        }
LOC
}

my $ng = start_nginx(redis => $r, workers => 2, config => <<"CONF");
    rl_zone r redis=127.0.0.1:\$RedisPort timeout=5s;
    rl_zone r2 redis=127.0.0.1:\$RedisPort prefix=two: timeout=5s;
    rl_zone e;
    rl_zone e2 size=1m;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        add_header X-RL-Rule \$rl_rule always;
$loc
        location /first {
            rl_rule zone=e key=\$arg_k rate=1r/h name=local;
            rl_rule zone=r key=\$arg_k rate=100r/h name=shared;
            empty_gif;
        }
        location /shared {
            rl_rule zone=r key=\$arg_k rate=100r/h name=shared;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;

sub hit {
    my $res = http_get($port, shift);
    return { code => $res->{code},
             lim  => $res->{headers}{'x-ratelimit-limit'} // '-',
             rule => $res->{headers}{'x-rl-rule'} // '-',
             st   => $res->{headers}{'x-rl-status'} // '-',
             at   => now() };
}

# "200", "429A" (binding rule A), "429B"
sub tag {
    my ($e, $na, $nb) = @_;
    return "$e->{code}" unless $e->{code} == 429;
    return '429' . ($e->{lim} eq $na && $e->{rule} eq 'A' ? 'A'
                  : $e->{lim} eq $nb && $e->{rule} eq 'B' ? 'B'
                  : "?lim=$e->{lim},rule=$e->{rule}");
}

sub scenario {
    my ($id, $nb) = @_;
    my $na = 2;
    # the first three must come within a token of A (500 ms): a host
    # that stalls this process longer breaks the scenario's premise, not
    # the rule, so it starts again on a fresh key (three tries at most)
    my ($k, $s, @out);
    for my $try (1 .. 3) {
        ($k, $s) = ("$id-$try", "/s/$id?k=$id-$try");
        my $t0 = now();
        @out = map { tag(hit($s), $na, $nb) } 1 .. 3;
        last if now() - $t0 < 0.45;
    }
    my ($rej_a, $rej_b, $last_ok) = (0, 0, 0);
    for my $i (1 .. 4) {
        my $got;
        wait_until(sub {
            my $e = hit($s);
            if ($e->{code} == 429 && tag($e, $na, $nb) eq '429A') {
                $rej_a++;
                return 0;
            }
            $got = $e;
            return 1;
        }, timeout => 3, interval => 0.01);
        push @out, $got ? tag($got, $na, $nb) : 'timeout';
        $last_ok = $got->{at} if $got && $got->{code} == 200;
    }
    # B rejects everything while A refills (2 tokens take 1 s), and
    # while a slow host lets fewer than five of its polls through
    wait_until(sub {
        my $e = hit($s);
        $rej_b++ if tag($e, $na, $nb) eq '429B';
        return now() - $last_ok > 1.1 && $rej_b >= 5;
    }, timeout => 3, interval => 0.01);
    # A alone: its two tokens, then a rejection, if the three come within
    # a token (500 ms); a host that stalls longer has refilled one
    my $ta = now();
    push @out, map { 'a:' . hit("/a/$id?k=$k")->{code} } 1 .. 3;
    my $slow = now() - $ta >= 0.45 ? ' | slow' : '';
    return join(' ', @out) . " | rejected by A: $rej_a, by B: $rej_b$slow";
}

my @todo = @SCEN;
# six at a time: each scenario's first three requests must come within
# a token's 500 ms, which twelve at once on a 2-core VM sometimes missed
# (and missed 250 ms, at 4r/s, under heavy steal)
while (my @batch = splice @todo, 0, 6) {
    my @kids = map {
        my $s = $_;
        my $id = join '_', @$s;
        [ $s, spawn(sub { scenario($id, $B{ $s->[1] }[1]) }) ];
    } @batch;
    for my $k (@kids) {
        my ($s, $child) = @$k;
        my ($a, $b, $za, $zb) = @$s;
        my $out = $child->wait(20);
        my ($seq, $counts, $slow) = split / \| /, $out;
        my $want = '200 200 429A 200 200 200 429B a:200 a:200 a:429';
        $want =~ s/a:429\z/a:200/ if $slow && $seq =~ /a:200\z/;
        is($seq, $want,
           "A $a on $STORE{$za}, B $b on $STORE{$zb}: "
           . "rejections by one rule consume nothing in the other")
            or diag($out);
        my ($ra, $rb) = ($counts // '') =~ /A: (\d+), by B: (\d+)/;
        ok(($ra // 0) >= 3 && ($rb // 0) >= 5,
           "A $a on $STORE{$za}, B $b on $STORE{$zb}: many rejections "
           . "by each rule were exercised (" . ($counts // '') . ")");
    }
}

# The embedded store decides first: a request it rejects is not sent to
# Redis at all (neither a decision nor a refund).
{
    my $first = http_get($port, '/first?k=emb');
    is($first->{code}, 200, 'embedded + Redis: the first request passes');
    my $calls = $r->calls('evalsha') + $r->calls('eval');
    my @codes = map { http_get($port, '/first?k=emb')->{code} } 1 .. 5;
    is("@codes", '429 429 429 429 429', 'embedded + Redis: then the '
       . 'embedded rule rejects');
    is($r->calls('evalsha') + $r->calls('eval') - $calls, 0,
       'embedded + Redis: Redis was not asked for the rejected requests');
    is(http_get($port, '/shared?k=emb')->{headers}{'x-ratelimit-remaining'},
       98, 'embedded + Redis: the Redis rule counted the first request only');
}

# No Redis key of the rule B (sliding_log 5r/10s) counts more than the 5
# admitted requests.
my @logs = grep { $r->cli('TYPE', $_) eq 'zset' }
           grep { length } split /\n/, $r->cli('KEYS', '*');
my @over = grep { $r->cli('ZCARD', $_) > 5 } @logs;
ok(@logs && !@over, 'sliding_log keys of B hold at most 5 entries ('
                    . scalar(@logs) . ' keys)') or diag("@over");

$ng->stop;
$r->stop;
done_testing();
