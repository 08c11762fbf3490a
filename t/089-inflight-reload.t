# A reload does not end the promise of an in-flight limit (SPEC section
# 9): the old worker, shutting down gracefully while two requests of
# concurrency=2 still run through it (held at t/lib/upstream.py), keeps
# its links to Redis and renews their slots until they end. Its
# connections are closed under it (CLIENT KILL, as Redis' idle `timeout`
# or a Redis restart does): it connects again (on a single Redis, on a
# Cluster's master, and to the master the sentinels name), the slots
# stay held past their hold, and the requests sent to the new worker
# meanwhile are rejected: the upstream never sees more than 2 (before,
# the old worker stopped connecting at the reload, its slots expired,
# and 4 ran at once). On a single Redis, a restart after the reload
# (the slots lost) has them put back at once. Once the held requests
# end, the old worker releases their slots and exits within a bound:
# no worker is kept alive, no slot left.

use strict;
use warnings;
use lib 't/lib';
use RlTest;
use RlTest::Cluster;
use RlTest::Sentinel;
use RlTest::Proc qw(cmdline_of pid_alive);

my $up = start_upstream();
my $UP = $up->port;
my $HOLD = 3;       # renewed every second

sub conf {
    my ($zone) = @_;
    return <<"CONF";
    rl_zone main $zone timeout=5s;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /in {
            rl_rule zone=main key=\$arg_key concurrency=2 hold=${HOLD}s
                    name=inflight;
            proxy_pass http://127.0.0.1:$UP/hold;
        }
    }
CONF
}

# two requests of the key held at the upstream until $up->release($key)
sub held {
    my ($port, $key) = @_;
    my @c = map { http_start($port, "/in?key=$key&until=$key") } 1 .. 2;
    wait_until(sub { $up->stats($key)->{now} == 2 }, timeout => 10)
        or diag("upstream holds " . $up->stats($key)->{now} . " of 2");
    return @c;
}

# nginx -s reload, without waiting for the old worker (its requests
# keep it): returns its pid once it shuts down and the new one runs
sub reload_held {
    my ($ng) = @_;
    my ($old) = $ng->worker_pids;
    kill 'HUP', $ng->pid;
    ok(wait_until(sub {
        cmdline_of($old) =~ /shutting down/
            && grep { $_ != $old } $ng->worker_pids
    }, timeout => 10), 'reload: the old worker shuts down, a new one runs');
    return $old;
}

# %s: name, port (nginx), key, live => the slots Redis holds now,
# clients => the ngx_rl connections, kill => closes every connection of
# the module's, restart => (optional) loses the slots
sub scenario {
    my (%s) = @_;
    my ($what, $P, $key) = @s{qw(name port key)};
    my @c = held($P, $key);
    is($s{live}->(), 2, "$what: 2 slots held");
    my $old = reload_held($s{nginx});
    # both workers connected (the new one's handshake done)
    ok(wait_until(sub { $s{clients}->() >= 2 }, timeout => 5),
       "$what: both workers connected");

    $s{kill}->();
    ok(wait_until(sub { $s{clients}->() >= 2 }, timeout => a_second() + 2),
       "$what: connections closed after the reload: the old worker "
       . "connects again") or diag('connections: ' . $s{clients}->());
    # a hold and a half: the slots would have expired unless renewed
    my $lost = wait_until(sub { $s{live}->() < 2 }, timeout => $HOLD * 1.5,
                          interval => 0.1);
    ok(!$lost, "$what: the slots are renewed past their hold")
        or diag('slots: ' . $s{live}->());

    if ($s{restart}) {
        $s{restart}->();
        ok(wait_until(sub { $s{live}->() == 2 }, timeout => a_second() + 2),
           "$what: Redis restarted (the slots lost): put back by the old "
           . "worker") or diag('slots: ' . $s{live}->());
    }

    my @more = map { http_start($P, "/in?key=$key&until=$key-more") } 1 .. 2;
    wait_until(sub { (grep { $_->poll } @more)
                     + $up->stats($key)->{now} - 2 >= 2 }, timeout => 10);
    is($up->stats($key)->{max}, 2,
       "$what: the upstream saw at most 2 of the key at once");
    $up->release("$key-more");
    is(join(' ', map { $_->result(10)->{code} } @more), '429 429',
       "$what: the requests sent to the new worker are rejected");

    $up->release($key);
    is(join(' ', map { $_->result(10)->{code} } @c), '200 200',
       "$what: the held requests end");
    my $t0 = now();
    ok(wait_until(sub { !pid_alive($old) }, timeout => 5),
       "$what: the old worker exits once they end");
    cmp_ok(now() - $t0, '<', 5, sprintf("$what: within %.1f s",
                                         now() - $t0));
    ok(wait_until(sub { $s{live}->() == 0 }, timeout => 2),
       "$what: and their slots are released")
        or diag('slots: ' . $s{live}->());
    $s{nginx}->stop;
}

# ------------------------------------------------------------ one Redis

{
    my $r = start_redis();
    my $ng = start_nginx(redis => $r, workers => 1, ready => 1,
                         config => conf('redis=127.0.0.1:$RedisPort'));
    scenario(name => 'redis', nginx => $ng, port => $ng->port, key => 'one',
             live => sub { slots_held($r) },
             clients => sub { $r->client_count('ngx_rl') },
             kill => sub { $r->cli('CLIENT', 'KILL', 'TYPE', 'normal') },
             restart => sub { $r->restart });
    $r->stop;
}

# ------------------------------------------------------------ a Cluster

{
    my $c = RlTest::Cluster->new(masters => 3);
    my ($m) = $c->masters;
    my $v = $c->value_on($m, prefix => 'c');
    my $ng = start_nginx(workers => 1, vars => { Seeds => $c->seeds },
                         config => conf('cluster=$Seeds'));
    ok(wait_until(sub { $m->client_count('ngx_rl') >= 1 }, timeout => 5),
       'cluster: the worker connected to the master');
    scenario(name => 'cluster', nginx => $ng, port => $ng->port, key => $v,
             live => sub { slots_held(sub { $c->cli_on($m, @_) }) },
             clients => sub { $m->client_count('ngx_rl') },
             kill => sub {
                 $_->cli('CLIENT', 'KILL', 'TYPE', 'normal') for $c->masters;
             });
    $c->stop;
}

# ------------------------------------------------------------ Sentinel

{
    my $s = RlTest::Sentinel->new(replicas => 1, sentinels => 1,
                                  quorum => 1);
    my $m = $s->master;
    my $ng = start_nginx(workers => 1, vars => { Sentinels => $s->addrs },
                         config => conf('sentinel=$Sentinels master='
                                        . $s->name));
    ok(wait_until(sub { $m->client_count('ngx_rl') >= 1 }, timeout => 5),
       'sentinel: the worker connected to the master');
    scenario(name => 'sentinel', nginx => $ng, port => $ng->port,
             key => 'sent', live => sub { slots_held($m) },
             clients => sub { $m->client_count('ngx_rl') },
             kill => sub { $m->cli('CLIENT', 'KILL', 'TYPE', 'normal') });
    $s->stop;
}

done_testing();
