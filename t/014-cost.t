# cost=N and cost=$variable, every algorithm, both stores: a request of
# cost 3 consumes 3, a rejected one consumes nothing, a cost beyond the
# capacity is always rejected, and a variable that is not a whole number
# >= 1 counts as 1. Windows are hours or days: no refill within the test.

use lib 't/lib';
use RlTest;

# algorithm => rule parameters with a capacity of 10 (N, or 1 + burst)
my %ALG = (
    fixed_window   => [ 'rate=10r/d algorithm=fixed_window',   10 ],
    sliding_window => [ 'rate=10r/d algorithm=sliding_window', 10 ],
    sliding_log    => [ 'rate=10r/h algorithm=sliding_log',    10 ],
    token_bucket   => [ 'rate=10r/h algorithm=token_bucket',   10 ],
    leaky_bucket   => [ 'rate=1r/h algorithm=leaky_bucket burst=9', 1 ],
    gcra           => [ 'rate=1r/h algorithm=gcra burst=9',    1 ],
);

my $loc = '';
for my $store (qw(redis embedded)) {
    my $zone = $store eq 'redis' ? 'r' : 'e';
    for my $alg (sort keys %ALG) {
        my $p = $ALG{$alg}[0];
        $loc .= <<"LOC";
        location /$store/$alg/var {
            rl_rule zone=$zone key=\$arg_k $p cost=\$arg_c;
            empty_gif;
        }
        location /$store/$alg/two {
            rl_rule zone=$zone key=\$arg_k $p cost=2 name=two;
            empty_gif;
        }
LOC
    }
}

my $r = start_redis();
my $ng = start_nginx(redis => $r, config => <<"CONF");
    rl_zone r redis=127.0.0.1:\$RedisPort timeout=5s;
    rl_zone e;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
$loc
    }
CONF

sub seq {
    my ($path, @args) = @_;
    return join ' ', map {
        my $res = http_get($ng->port, "$path$_");
        "$res->{code}/" . ($res->{headers}{'x-ratelimit-remaining'} // '-')
    } @args;
}

for my $store (qw(redis embedded)) {
    for my $alg (sort keys %ALG) {
        my $n = $ALG{$alg}[1];
        my $p = "/$store/$alg";

        is(seq("$p/var", map { "?k=a&c=$_" } 3, 3, 5, 4),
           '200/7 200/4 429/4 200/0',
           "$store $alg: cost 3, 3 (7, 4 left), 5 rejected consuming "
           . 'nothing, 4 takes the rest');

        is(seq("$p/var", map { "?k=b&c=$_" } 'abc', 0, -2, '1.5', '3x', ''),
           '200/9 200/8 200/7 200/6 200/5 200/4',
           "$store $alg: c=abc, 0, -2, 1.5, 3x, empty each count as 1");
        is(seq("$p/var", '?k=b'), '200/3', "$store $alg: no c at all: 1");

        my $big = seq("$p/var", map { "?k=c&c=$_" } 11, 11, 1000000, 10, 1);
        is($big =~ s{/\S+}{}gr, '429 429 429 200 429',
           "$store $alg: a cost beyond the capacity is always rejected "
           . 'and consumes nothing; 10 fits exactly');
        is($big, '429/10 429/10 429/10 200/0 429/0',
           "$store $alg: ... and Remaining says 10 are left until the 10");

        my $res = http_get($ng->port, "$p/var?k=d&c=11");
        is($res->{headers}{'x-rl-status'}, 'REJECTED',
           "$store $alg: cost 11: rl_status REJECTED");
        is($res->{headers}{'x-ratelimit-limit'}, $n,
           "$store $alg: X-RateLimit-Limit is N ($n), not the capacity");

        is(seq("$p/two", ('?k=e') x 6),
           '200/8 200/6 200/4 200/2 200/0 429/0',
           "$store $alg: cost=2: 5 pass, then 429");
    }
}

$ng->stop;
$r->stop;
done_testing();
