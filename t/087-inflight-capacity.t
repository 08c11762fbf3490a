# A freed slot is used at once (SPEC 9, as amended): concurrency=8 in
# front of an upstream of capacity C = 8 at S = 50 ms (t/lib/upstream.py's
# /work), 48 clients (t/lib/load.py, each refused one trying again S
# later) over 2 instances x 2 workers: the
# answers within a second reach at least 0.8 x C/S, the upstream never
# holds more than 8 at once. Before, a refusal the deny cache kept up to
# 100 ms hid every slot freed meanwhile (76 a second of 160). On Redis
# and on the embedded store (one instance).

use strict;
use warnings;
use lib 't/lib';
use RlTest;
use RlTest::Load;

my $timed = RlTest::Load::timing_critical();
my $r  = start_redis();
my $up = start_upstream();
my $UP = $up->port;
my ($C, $S) = (8, 50);
my $goal = 0.8 * $C * 1000 / $S;

sub conf {
    my ($zone) = @_;
    return <<"CONF";
    rl_zone main $zone;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /w {
            rl_rule zone=main key=backend concurrency=$C name=backend;
            proxy_pass http://127.0.0.1:$UP/work;
        }
        location = /metrics { rl_metrics; }
    }
CONF
}

# at least $goal answers a second (not under the sanitizers)
sub enough {
    my ($s, $what) = @_;
    SKIP: {
        skip "$what: the sanitizers' workers are 3x slower", 1 unless $timed;
        cmp_ok($s->{goodput}, '>=', $goal,
               "$what: $s->{goodput} answers a second of "
               . $C * 1000 / $S . " (at least $goal)")
            or diag(explain($s));
    }
}

# run(@nginx): 48 clients for 10 s; what they saw from the 3rd second
sub run {
    my (@ng) = @_;
    $up->capacity($C, $S);
    $up->reset;
    my $load = RlTest::Load->start(
        urls => [ map { 'http://127.0.0.1:' . $_->port . '/w' } @ng ],
        clients => 48, seconds => 10, deadline => 2, pause_ms => $S);
    $load->finish;
    return ($load->stats(from => 3, to => 10), $up->capacity_stats);
}

{
    my @ng = map { start_nginx(redis => $r, workers => 2, ready => 2,
                               config => conf('redis=127.0.0.1:$RedisPort '
                                              . 'timeout=5s')) } 1 .. 2;
    my ($s, $cap) = run(@ng);
    enough($s, 'Redis, 2 instances x 2 workers');
    cmp_ok($cap->{max}, '<=', $C, "never more than $C at the upstream")
        or diag(explain($cap));
    ok(wait_until(sub { slots_held($r) == 0 }, timeout => 5),
       'the slots back to 0 once the load ended');
    $_->stop for @ng;
}

{
    my $ng = start_nginx(workers => 2, config => conf('size=1m'));
    my ($s, $cap) = run($ng);
    enough($s, 'the embedded store');
    cmp_ok($cap->{max}, '<=', $C, "never more than $C at the upstream")
        or diag(explain($cap));
    $ng->stop;
}

done_testing();
