# The embedded store (rl_zone without redis=): one limit shared by every
# worker of the instance, kept across nginx -s reload, separate per
# instance, and a tiny zone that evicts the least recently used keys
# instead of failing (new keys are admitted, nothing crashes, no error).

use lib 't/lib';
use RlTest;

sub st { $_[0]{headers}{'x-rl-status'} // '-' }
sub rem { $_[0]{headers}{'x-ratelimit-remaining'} // '-' }

# Every algorithm with a capacity of 20 and no refill within the test.
my %ALG = (
    fixed_window   => 'rate=20r/d algorithm=fixed_window',
    sliding_window => 'rate=20r/d algorithm=sliding_window',
    sliding_log    => 'rate=20r/h algorithm=sliding_log',
    token_bucket   => 'rate=20r/h algorithm=token_bucket',
    leaky_bucket   => 'rate=1r/h algorithm=leaky_bucket burst=19',
    gcra           => 'rate=1r/h algorithm=gcra burst=19',
);
my $loc = join '', map { <<"LOC" } sort keys %ALG;
        location /$_ {
            rl_rule zone=e key=\$arg_k $ALG{$_};
            empty_gif;
        }
LOC

my $conf = <<"CONF";
    rl_zone e;
    server {
        listen 127.0.0.1:\$ServerPort reuseport;
        add_header X-RL-Status \$rl_status always;
        add_header X-Pid \$pid always;
$loc
        location /q {
            rl_rule zone=e key=q rate=5r/d algorithm=fixed_window name=q;
            empty_gif;
        }
        location /ql {
            rl_rule zone=e key=q rate=5r/h algorithm=sliding_log name=ql;
            empty_gif;
        }
    }
CONF

# ---------------------------------------------------------------- 2 workers

my $ng = start_nginx(workers => 2, config => $conf);
my %workers = map { $_ => 1 } $ng->worker_pids;
for my $alg (sort keys %ALG) {
    my @res = http_parallel($ng->port, [ ("/$alg?k=shared") x 60 ],
                            concurrency => 30, full => 1);
    my (%codes, %pids, %st);
    for (@res) {
        $codes{ $_->{code} }++;
        $st{ st($_) }++;
        $pids{ $_->{headers}{'x-pid'} // '-' }++;
    }
    is($codes{200} // 0, 20, "$alg, 2 workers, 60 at once: exactly 20 "
                             . 'admitted') or diag(explain(\%codes));
    is($codes{429} // 0, 40, "$alg: 40 rejected");
    is($st{ERROR} // 0, 0, "$alg: no ERROR");
    is(scalar(grep { $workers{$_} } keys %pids), 2,
       "$alg: both workers served") or diag(explain(\%pids));
}

# ---------------------------------------------------------------- reload

{
    my @s = map { rem(http_get($ng->port, '/q')) } 1 .. 2;
    my @l = map { rem(http_get($ng->port, '/ql')) } 1 .. 3;
    is("@s @l", '4 3 4 3 2', 'before reload: q 4 3, ql 4 3 2');
    ok($ng->reload, 'reload');
    my $res = http_get($ng->port, '/q');
    is(rem($res), 2, 'fixed_window usage kept across the reload (2 left)');
    is(rem(http_get($ng->port, '/ql')), 1,
       'sliding_log usage kept across the reload (1 left)');

    # the limit N is not part of a rule's state: raising it keeps usage
    (my $conf2 = $conf) =~ s{rate=5r/d algorithm=fixed_window name=q}
                            {rate=10r/d algorithm=fixed_window name=q};
    ok($ng->reload(config => $conf2), 'reload with q at 10r/d');
    $res = http_get($ng->port, '/q');
    is($res->{headers}{'x-ratelimit-limit'}, 10, 'q: new limit 10');
    is(rem($res), 6, 'q: usage kept (10 - 4 = 6)');
    my @shared = map { $_->{code} }
                 http_parallel($ng->port, [ ('/gcra?k=shared') x 3 ],
                               full => 1);
    is("@shared", '429 429 429',
       'gcra state of the 2-worker test kept across two reloads');
}
$ng->stop;

# ---------------------------------------------------------------- instances

# each instance has its own embedded store
{
    my @ng = map { start_nginx(workers => 1, config => $conf) } 1 .. 2;
    for my $i (0, 1) {
        my @c = map { http_get($ng[$i]->port, '/q')->{code} } 1 .. 6;
        is("@c", '200 200 200 200 200 429',
           'instance ' . ($i + 1) . ': its own 5 of 5r/d');
    }
    $_->stop for @ng;
}

# ---------------------------------------------------------------- tiny zone

{
    my $tiny = start_nginx(workers => 2, config => <<'CONF');
    rl_zone tiny size=32k;
    server {
        listen 127.0.0.1:$ServerPort reuseport;
        add_header X-RL-Status $rl_status always;
        location /t {
            rl_rule zone=tiny key=$arg_k rate=5r/h algorithm=sliding_log;
            rl_rule zone=tiny key=$arg_k rate=10r/h algorithm=gcra burst=9;
            empty_gif;
        }
        location /hot {
            rl_rule zone=tiny key=hot rate=100000r/d algorithm=fixed_window;
            empty_gif;
        }
    }
CONF
    my $port = $tiny->port;

    # a key used up, then left alone
    my @c = map { http_get($port, '/t?k=old')->{code} } 1 .. 6;
    is("@c", '200 200 200 200 200 429', 'tiny zone: key "old" used up');

    # 3000 new keys, a recently used one ("hot") every 5 of them
    my @paths = map { ($_ % 5 ? () : '/hot'), "/t?k=new$_" } 1 .. 3000;
    my @res = http_parallel($port, \@paths, concurrency => 8, full => 1,
                            timeout => 120);
    my @new = grep { $paths[$_] =~ /new/ } 0 .. $#paths;
    my @bad = grep { $res[$_]{code} != 200 || st($res[$_]) ne 'PASSED' }
              @new;
    is(scalar @bad, 0, 'tiny zone: all 3000 new keys admitted (200 PASSED)')
        or diag(scalar(@bad) . ' not: first ' . $paths[ $bad[0] ] . ' -> '
                . $res[ $bad[0] ]{code} . ' ' . st($res[ $bad[0] ]));
    my $hot = http_get($port, '/hot');
    my $nhot = grep { $_ eq '/hot' } @paths;
    is(rem($hot), 100000 - $nhot - 1,
       "tiny zone: the recently used key kept its count ($nhot + 1 used)");
    my $old = http_get($port, '/t?k=old');
    is("$old->{code} " . st($old), '200 PASSED',
       'tiny zone: the least recently used key was evicted, admitted again');
    my @again = map { http_get($port, "/t?k=new3000")->{code} } 1 .. 5;
    is("@again", '200 200 200 200 429',
       'tiny zone: a key just used keeps its state (4 more, then 429)');
    my @err = grep { /\[(error|crit|alert)\]/
                     && /alloc|memory|slab|space|evict/i }
              split /\n/, $tiny->error_log_text;
    ok(!@err, 'tiny zone: no error logged by eviction')
        or diag(join "\n", @err[0 .. ($#err > 4 ? 4 : $#err)]);
    $tiny->stop;
}

done_testing();
