# The deny cache: once Redis rejected a key, every worker of the instance
# rejects it again without asking Redis until the rule frees capacity; a
# flood of one key costs Redis nothing. What it may not do: answer for a
# dry-run rule or a variable cost, or outlive a reload that changes the
# rule.

use lib 't/lib';
use RlTest;
use Test::More;


sub hits {
    my ($port) = @_;
    my $m = http_get($port, '/metrics')->{body} // '';
    my ($n) = $m =~ /^rl_deny_cache_hits_total\{zone="r"\} (\d+)$/m;
    return $n // -1;
}

my $r = start_redis();
my $conf = <<'CONF';
    rl_zone r redis=127.0.0.1:$RedisPort timeout=5s;
    server {
        listen 127.0.0.1:$ServerPort reuseport;
        add_header X-RL-Status $rl_status always;
        location /one {
            rl_rule zone=r key=$arg_k rate=2r/h algorithm=fixed_window;
            empty_gif;
        }
        location /short {
            rl_rule zone=r key=$arg_k rate=1r/s algorithm=gcra;
            empty_gif;
        }
        location /dry {
            rl_rule zone=r key=$arg_k rate=1r/h name=dry dry_run;
            rl_rule zone=r key=$arg_k rate=1r/h name=real
                    algorithm=fixed_window;
            empty_gif;
        }
        location /cost {
            rl_rule zone=r key=$arg_k rate=3r/h algorithm=fixed_window
                    cost=$arg_c;
            empty_gif;
        }
        location /metrics { rl_metrics; }
    }
CONF
my $ng = start_nginx(redis => $r, workers => 2, config => $conf);
my $port = $ng->port;

# ------------------------------------------------ a flood costs Redis nothing
is(http_get($port, '/one?k=a')->{code}, 200, 'first passes');
is(http_get($port, '/one?k=a')->{code}, 200, 'second passes');
my $first = http_get($port, '/one?k=a');
is($first->{code}, 429, 'third: Redis rejects');
my $before = $r->calls('evalsha');
my $hits = hits($port);
my @codes = http_parallel($port, [ ('/one?k=a') x 40 ], concurrency => 8);
is(scalar(grep { $_ == 429 } @codes), 40, 'the flood is rejected');
is($r->calls('evalsha'), $before, 'and Redis got no call for it');
is(hits($port) - $hits, 40, 'every one a deny-cache hit (both workers)');

my $res = http_get($port, '/one?k=a');
is($res->{headers}{'x-rl-status'}, 'REJECTED', 'status REJECTED');
is($res->{headers}{'x-ratelimit-limit'}, 2, 'the rule\'s N');
is($res->{headers}{'x-ratelimit-remaining'}, 0, 'nothing remaining');
ok(abs($res->{headers}{'retry-after'} - $first->{headers}{'retry-after'})
   <= 1, 'Retry-After as Redis said, counting down');

is(http_get($port, '/one?k=b')->{code}, 200, 'another key still asks Redis');

# ----------------------- long values: cached by digest, each value its own
my $long = 'v' x 100;
is(http_get($port, "/one?k=${long}1")->{code}, 200, 'a long key passes')
    for 1 .. 2;
is(http_get($port, "/one?k=${long}1")->{code}, 429, 'then Redis rejects it');
$before = $r->calls('evalsha');
@codes = http_parallel($port, [ ("/one?k=${long}1") x 10 ], concurrency => 4);
is(scalar(grep { $_ == 429 } @codes), 10, 'its flood is rejected');
is($r->calls('evalsha'), $before, 'from the cache');
is(http_get($port, "/one?k=${long}2")->{code}, 200,
   'a long key that differs only past byte 64 still asks Redis');
is(http_get($port, '/one?k=' . ('v' x 64))->{code}, 200,
   'so does its 64-byte start');

# ------------------------------------------- the cache expires with the retry
is(http_get($port, '/short?k=s')->{code}, 200, '1r/s: first passes');
is(http_get($port, '/short?k=s')->{code}, 429, 'then rejected by Redis');
ok(wait_until(sub { http_get($port, '/short?k=s')->{code} == 200 },
              timeout => 3), 'admitted again once the retry time passed');

# ------------------------------------------------- never for a dry-run rule
http_get($port, '/dry?k=d') for 1 .. 2;
$before = $r->calls('evalsha');
$res = http_get($port, '/dry?k=d');
is($res->{code}, 429, 'the enforced rule rejects');
is($r->calls('evalsha'), $before, 'answered from the cache');

# --------------------------------------------- never for a variable cost
is(http_get($port, '/cost?k=c&c=3')->{code}, 200, 'cost 3 of 3 passes');
is(http_get($port, '/cost?k=c&c=2')->{code}, 429, 'cost 2 rejected');
$before = $r->calls('evalsha');
http_get($port, '/cost?k=c&c=2');
ok($r->calls('evalsha') > $before, 'a variable cost always asks Redis');

# ------------------------------------ a reload that changes the rule forgets
$conf =~ s{rate=2r/h algorithm=fixed_window}{rate=10r/h algorithm=fixed_window};
$ng->reload(config => $conf);
is(http_get($port, '/one?k=a')->{code}, 200,
   'N raised by a reload: the old rejection is not reused');

$ng->stop;
done_testing();
