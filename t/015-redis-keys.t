# What each algorithm leaves in Redis: keys PREFIX{VALUE}:RULEID, one per
# rule and key value, a ZSET for sliding_log (never more than N members,
# whatever the traffic) and a string of two or three packed numbers
# otherwise, every key with a TTL no longer than the rule needs, and
# nothing left once the client is idle.
# Refunds (another zone rejected) leave no key without a TTL either.

use lib 't/lib';
use RlTest;

# name => [rule parameters, type, horizon in ms: the longest the state can
#          matter after a request]
my %RULE = (
    fixed   => [ 'rate=10r/s algorithm=fixed_window',   'string', 1000 ],
    sliding => [ 'rate=10r/s algorithm=sliding_window', 'string', 2000 ],
    log     => [ 'rate=5r/2s algorithm=sliding_log',    'zset', 2000 ],
    tb      => [ 'rate=10r/s algorithm=token_bucket burst=4', 'string', 400 ],
    leaky   => [ 'rate=10r/s algorithm=leaky_bucket burst=4', 'string', 500 ],
    gcra    => [ 'rate=10r/s algorithm=gcra burst=4',  'string', 500 ],
    gcra0   => [ 'rate=100r/m algorithm=gcra',          'string', 600 ],
    tbday   => [ 'rate=24r/d algorithm=token_bucket',   'string', 86400000 ],
);

my $loc = '';
for my $name (sort keys %RULE) {
    $loc .= <<"LOC";
        location /$name {
            rl_rule zone=r key=\$arg_k $RULE{$name}[0];
            empty_gif;
        }
LOC
}

my $r = start_redis();
my $ng = start_nginx(redis => $r, config => <<"CONF");
    rl_zone r redis=127.0.0.1:\$RedisPort timeout=5s;
    rl_zone r2 redis=127.0.0.1:\$RedisPort prefix=two: timeout=5s;
    rl_zone e;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
$loc
        location /bigcost {
            rl_rule zone=r key=\$arg_k rate=5r/10s algorithm=sliding_log
                    cost=\$arg_c;
            empty_gif;
        }
        # refunds: the second rule rejects, the first is given back
        location /refund_redis {
            rl_rule zone=r key=\$arg_k rate=5r/2s algorithm=sliding_log;
            rl_rule zone=r2 key=\$arg_k rate=2r/s algorithm=gcra;
            empty_gif;
        }
        location /refund_embedded {
            rl_rule zone=r key=\$arg_k rate=10r/s algorithm=token_bucket;
            rl_rule zone=e key=\$arg_k rate=1r/m algorithm=gcra;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;

sub keys_of { grep { length } split /\n/, $r->cli('KEYS', shift // '*') }

# a key's type, PTTL and size (ZCARD or STRLEN), read at one instant (a
# script: Redis' clock stands still while it runs), so a key expiring
# meanwhile cannot give a type and then no TTL; ('none', -2, 0) if gone
sub inspect {
    my ($key) = @_;
    my $lua = q{local k = KEYS[1] local t = redis.call('TYPE', k).ok }
            . q{local n = 0 }
            . q{if t == 'zset' then n = redis.call('ZCARD', k) }
            . q{elseif t == 'string' then n = redis.call('STRLEN', k) end }
            . q{return {t, redis.call('PTTL', k), n}};
    return split /\n/, $r->cli('EVAL', $lua, 1, $key);
}

# ------------------------------------------------------------ per algorithm

for my $name (sort keys %RULE) {
    my ($params, $type, $horizon) = @{ $RULE{$name} };
    # a short-lived key (a 1 s window) can expire between the requests
    # and its inspection on a busy machine: then traffic again, at most
    # three times, on a fresh key value
    my (@codes, @k, $key, $seen, $pttl, $n);
    for my $try (1 .. 3) {
        my $value = "c$name" . ($try > 1 ? "t$try" : '');
        @codes = http_parallel($port, [ ("/$name?k=$value") x 40 ],
                               concurrency => 4);
        @k = keys_of("*{$value}*");
        $key = $k[0];
        ($seen, $pttl, $n) = defined $key ? inspect($key) : ('none', -2, 0);
        last if $seen ne 'none';
    }
    ok((grep { $_ == 200 } @codes) >= 1 && (grep { $_ == 429 } @codes) >= 1,
       "$name: some admitted, some rejected")
        or diag("@codes");
    is(scalar @k, 1, "$name ($params): one key per rule and key value")
        or diag("@k");
    next unless defined $key;
    like($key, qr/^rl:\{c$name(?:t\d)?\}:[0-9a-f]{16}$/,
         "$name: key is PREFIX{VALUE}:RULEID ($key)");
    is($seen, $type, "$name: a $type");
    # 0: in its last millisecond (a fixed window's key ends on a second)
    ok($pttl >= 0 && $pttl <= $horizon + 1,
       "$name: PTTL $pttl in [0, $horizon] ms");
    if ($type eq 'zset') {
        ok($n >= 1 && $n <= 5, "$name: ZCARD $n <= N (5)");
    } else {
        ok($n == 16 || $n == 24, "$name: two or three packed numbers ($n bytes)");
    }
}

# ------------------------------------------------------------ sliding_log

# many requests, over more than a window: the log never holds more than N
{
    my $key;
    my $max = 0;
    my $t0 = now();
    my $sent = 0;
    while (now() < $t0 + 2.5) {
        my @c = http_parallel($port, [ ('/log?k=many') x 20 ],
                              concurrency => 5);
        $sent += @c;
        ($key) = keys_of('*{many}*') unless $key;
        next unless $key;
        my $n = $r->cli('ZCARD', $key);
        $max = $n if $n > $max;
    }
    ok($sent >= 100, "sliding_log 5r/2s: $sent requests over 2.5s");
    ok($max >= 1 && $max <= 5, "sliding_log: ZCARD never above N ($max)");
    my $pttl = $r->cli('PTTL', $key);
    ok($pttl > 0 && $pttl <= 2001, "sliding_log: PTTL $pttl <= 2000 ms");

    my @c = map { http_get($port, "/bigcost?k=big&c=$_")->{code} } 3, 3, 2, 9;
    is("@c", '200 429 200 429', 'sliding_log 5r/10s: cost 3, 3, 2, 9');
    ($key) = keys_of('*{big}*');
    my $n = $key ? $r->cli('ZCARD', $key) : -1;
    ok($n >= 1 && $n <= 5, "sliding_log with cost: ZCARD $n <= N (5)");
}

# ------------------------------------------------------------ refunds

{
    my @c = map { http_get($port, '/refund_redis?k=rf')->{code} } 1 .. 3;
    is("@c", '200 429 429', 'two Redis zones: the second rejects');
    @c = map { http_get($port, '/refund_embedded?k=rf2')->{code} } 1 .. 3;
    is("@c", '200 429 429', 'Redis and embedded: the embedded rule rejects');
    my ($lkey) = keys_of('rl:{rf}:*');
    is($lkey ? $r->cli('ZCARD', $lkey) : -1, 1,
       'the sliding_log of the Redis zone counts only the admitted request');
}

my @all = keys_of();
# -2: gone since KEYS listed it (it had a TTL, and it ended); 0: ending
# within this millisecond (a refunded bucket full again, read late under
# the sanitizers); -1 would be a key that never expires
my %pttl = map { $_ => $r->cli('PTTL', $_) } @all;
my @bad = grep {
    my $t = $pttl{$_};
    my $horizon = /\{ctbday(?:t\d)?\}/ ? 86400000 : 10000;
    $t !~ /^-?\d+\z/ || $t == -1 || $t > $horizon
} @all;
ok(@all && !@bad, 'every key has a TTL within its rule\'s horizon ('
                  . scalar(@all) . ' keys)')
    or diag(join "\n", map { "$_: PTTL $pttl{$_}, now "
                                . $r->cli('PTTL', $_) } @bad);

# ------------------------------------------------------------ idle

# the client goes away: within the longest horizon (bigcost's 10s is not
# waited for; all others are at most 2s) nothing is left but it and tbday
ok(wait_until(sub {
    !grep { !/\{(?:big|ctbday(?:t\d)?)\}/ } keys_of();
}, timeout => 5, interval => 0.1), 'idle: keys expire by themselves')
    or diag(join ' ', keys_of());

$ng->stop;
$r->stop;
done_testing();
