# Batches: the requests of one event-loop turn go to Redis as one script
# call, each still decided on its own. Under concurrent load the calls
# are fewer than the requests, and the decisions as exact as one by one,
# also when Redis lost the script meanwhile (NOSCRIPT: each request of
# the batch goes again alone, as EVAL).

use lib 't/lib';
use RlTest;
use Test::More;

sub evals {
    my ($r) = @_;
    my $stats = $r->cli('INFO', 'commandstats');
    my $n = 0;
    $n += $1 while $stats =~ /cmdstat_eval(?:sha)?:calls=(\d+)/g;
    return $n;
}

my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 1, config => <<'CONF');
    rl_zone r redis=127.0.0.1:$RedisPort;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /shared {
            rl_rule zone=r key=one rate=20r/d algorithm=fixed_window;
            empty_gif;
        }
        location /fresh {
            rl_rule zone=r key=two rate=20r/d algorithm=fixed_window;
            empty_gif;
        }
        location /each {
            rl_rule zone=r key=$arg_k rate=2r/d algorithm=fixed_window
                    name=per_key;
            rl_rule zone=r key=$arg_k rate=10r/d name=wide;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;
http_get($port, '/each?k=warm'); # connected, script loaded

my $before = evals($r);
my @res = http_parallel($port, [ ('/shared') x 60 ], concurrency => 30,
                        full => 1);
my %codes;
$codes{ $_->{code} }++ for @res;
is($codes{200} // 0, 20, 'exactly the limit admitted');
is($codes{429} // 0, 40, 'the rest rejected');
my $calls = evals($r) - $before;
cmp_ok($calls, '<', 60, "fewer script calls ($calls) than requests (60)");

# many keys, two rules each, in batches: every key gets exactly 2
my @paths = map { "/each?k=k$_" } map { ($_) x 3 } 1 .. 15;
@res = http_parallel($port, \@paths, concurrency => 30, full => 1);
my %per;
for my $x (@res) {
    $per{ok}++ if $x->{code} == 200;
    $per{error}++ if ($x->{headers}{'x-rl-status'} // '') eq 'ERROR';
}
is($per{ok} // 0, 30, '15 keys x 2 admitted');
ok(!$per{error}, 'no ERROR');

# the script is gone: a batch meets NOSCRIPT, each request goes alone
$r->cli('SCRIPT', 'FLUSH');
@res = http_parallel($port, [ ('/fresh') x 40 ], concurrency => 20,
                     full => 1);
%codes = ();
my $errors = 0;
for (@res) {
    $codes{ $_->{code} }++;
    $errors++ if ($_->{headers}{'x-rl-status'} // '') eq 'ERROR';
}
is($codes{200} // 0, 20, 'after SCRIPT FLUSH: exactly the limit admitted');
is($errors, 0, 'and no request saw the NOSCRIPT');

$ng->stop;
done_testing();
