# A Cluster slot in migration never loses a release or a charge (SPEC
# section 9): a call of the worker's own that did not run goes again,
# within the hold. Every call declares its keys' block key PREFIX{VALUE}
# (which does not exist), so while a slot is MIGRATING on its master and
# IMPORTING on another, Redis answers TRYAGAIN ("some keys missing") on
# the source before any key moved, and on the target after ASKING once
# they did. Two requests of concurrency=2 held at t/lib/upstream.py, the
# charge of a rule beside it (X-Tokens-Used) in the same call:
#   (a) the migration started, their requests end: releases and charges
#       meet TRYAGAIN; the migration aborted (SETSLOT STABLE), they go
#       again: the source holds no slot long before the hold, and the
#       charges are counted there once each (before, both were dropped:
#       the slots stayed until the hold, the charges lost)
#   (b) the keys moved to the target, their requests end: ASK, then
#       TRYAGAIN on the target; the migration finished (SETSLOT NODE):
#       released and charged on the new master
# And a decision whose reply is lost with its connection (a proxy in
# front of Redis closes it instead of passing the reply on): the
# request gets the failure policy (open: served), the script ran and
# took its slot; when the request ends, that slot is released, once the
# link is made again if it is not yet (before, it stayed until the hold).

use strict;
use warnings;
use lib 't/lib';
use RlTest;
use RlTest::Cluster;
use RlTest::Proc qw(make_tempdir);
use IO::Select;
use IO::Socket::IP;

my $up = start_upstream();
my $UP = $up->port;

sub conf {
    my ($zone) = @_;
    return <<"CONF";
    rl_zone main $zone;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /in {
            rl_rule zone=main key=\$arg_key concurrency=2 hold=20s
                    name=inflight;
            rl_rule zone=main key=\$arg_key rate=1000000r/d
                    algorithm=fixed_window name=tokens
                    charge=\$upstream_http_x_tokens_used;
            proxy_pass http://127.0.0.1:$UP/hold;
        }
        location = /metrics { rl_metrics; }
    }
CONF
}

sub held {
    my ($port, $key) = @_;
    my @c = map { http_start($port, "/in?key=$key&until=$key&tokens=5") }
            1 .. 2;
    wait_until(sub { $up->stats($key)->{now} == 2 }, timeout => 10)
        or diag("upstream holds " . $up->stats($key)->{now} . " of 2");
    return @c;
}

sub charges_sent {
    metric_value($_[0], 'rl_charges_total{zone="main",rule="tokens",'
                        . 'result="sent"}');
}

# the fixed window's usage of key value $v on one node (the only
# 16-byte state of its keys: its count and window)
sub usage_on {
    my ($c, $node, $v) = @_;
    return $c->cli_on($node, 'EVAL', <<'LUA', 0, "rl:{$v}:*");
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
    if redis.call('TYPE', k).ok == 'string' then
        local s = redis.call('GET', k)
        if #s == 16 then
            return string.format('%.0f', select(2, struct.unpack('<dd', s)))
        end
    end
end
return -1
LUA
}

# the slots key value $v holds on a node that imports its slot: ZCARD
# of its sorted set, each after ASKING (a script may not read there)
sub members_on {
    my ($c, $node, $v) = @_;
    my $n = 0;
    for my $k ($c->keys_on($node, "rl:{$v}:*")) {
        open my $fh, '-|', 'sh', '-c',
            'printf "ASKING\nZCARD %s\n" "$1" | redis-cli -p "$2"', '-',
            $k, $node->port or die "redis-cli: $!";
        my @out = <$fh>;
        close $fh;
        $n += $1 if ($out[1] // '') =~ /^(\d+)$/;
    }
    return $n;
}

sub tryagain_on {
    my ($node) = @_;
    return ($node->cli('INFO', 'errorstats')
            =~ /^errorstat_TRYAGAIN:count=(\d+)/m)[0] // 0;
}

# ------------------------------------------------------------ a Cluster

{
    my $c = RlTest::Cluster->new(masters => 3);
    my @M = $c->masters;
    my $ng = start_nginx(workers => 1, vars => { Seeds => $c->seeds },
                         config => conf('cluster=$Seeds timeout=5s'));
    my $P = $ng->port;
    ok(wait_until(sub { $M[0]->client_count('ngx_rl') >= 1 }, timeout => 5),
       'the worker connected');
    my $held_on = sub { my $n = shift; slots_held(sub { $c->cli_on($n, @_) }) };

    # (a) aborted
    my $v = $c->value_on($M[0], prefix => 'a');
    my $slot = $c->slot_of_value($v);
    my @c = held($P, $v);
    is($held_on->($M[0]), 2, '(a) 2 slots held on the source');
    my ($from, $to) = map { $c->node_id($_) } $M[0], $M[1];
    is($M[1]->cli('CLUSTER', 'SETSLOT', $slot, 'IMPORTING', $from), 'OK',
       '(a) IMPORTING on the target');
    is($M[0]->cli('CLUSTER', 'SETSLOT', $slot, 'MIGRATING', $to), 'OK',
       '(a) MIGRATING on the source');
    my $tries = tryagain_on($M[0]);
    $up->release($v);
    is(join(' ', map { $_->result(10)->{code} } @c), '200 200',
       '(a) the held requests end');
    ok(wait_until(sub { tryagain_on($M[0]) >= $tries + 4 }, timeout => 5),
       '(a) their releases and charges meet TRYAGAIN, again and again');
    is($held_on->($M[0]), 2, '(a) the slots are still held meanwhile');
    is(charges_sent($P), 0, '(a) no charge counted yet');
    $M[$_]->cli('CLUSTER', 'SETSLOT', $slot, 'STABLE') for 0, 1;
    my $t0 = now();
    ok(wait_until(sub { $held_on->($M[0]) == 0 }, timeout => 5),
       '(a) the migration aborted: the slots are released');
    cmp_ok(now() - $t0, '<', a_second(),
           sprintf('(a) at once, not at the hold (%.2f s)', now() - $t0));
    ok(wait_until(sub { charges_sent($P) == 2 }, timeout => 5),
       '(a) and both charges sent') or diag('sent: ' . charges_sent($P));
    is(usage_on($c, $M[0], $v), 10,
       '(a) counted once each: 2 decisions and 2 x (5 - 1) charged');

    # (b) finished, the keys moved first
    my $w = $c->value_on($M[0], prefix => 'b');
    my $wslot = $c->slot_of_value($w);
    @c = held($P, $w);
    $c->migrate_slot($wslot, $M[1], stop_after_migrate => 1);
    is(members_on($c, $M[1], $w), 2, '(b) the slots moved to the target');
    $tries = tryagain_on($M[1]);
    $up->release($w);
    is(join(' ', map { $_->result(10)->{code} } @c), '200 200',
       '(b) the held requests end');
    ok(wait_until(sub { tryagain_on($M[1]) >= $tries + 4 }, timeout => 5),
       '(b) ASK, then TRYAGAIN on the target, again and again');
    is(members_on($c, $M[1], $w), 2,
       '(b) the slots are still held meanwhile');
    $c->finish_migration($wslot);
    ok(wait_until(sub { $held_on->($M[1]) == 0 }, timeout => 5),
       '(b) the migration finished: released on the new master');
    ok(wait_until(sub { charges_sent($P) == 4 }, timeout => 5),
       '(b) and both charges sent') or diag('sent: ' . charges_sent($P));
    is(usage_on($c, $M[1], $w), 10, '(b) counted once each, there');
    $ng->stop;
    $c->stop;
}

# ------------------------------------------------------------ a lost reply

{
    my $r = start_redis();
    my $listen = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                     Listen => 16, ReuseAddr => 1)
        or die "listen: $!";
    my $port = $listen->sockport;
    my $dir = make_tempdir('lost');
    # Forwards both ways; once the file "drop" exists, a connection
    # whose request names the key value "lost" is closed instead of
    # given the reply (and the file goes: once). While the file "shut"
    # exists, a new connection is closed at once (a line in "refused").
    my $proxy = spawn(sub {
        $SIG{TERM} = 'DEFAULT';
        my $sel = IO::Select->new($listen);
        my (%peer, %drop);
        while (1) {
            for my $fh ($sel->can_read(0.5)) {
                if ($fh == $listen) {
                    my $cl = $listen->accept or next;
                    if (-e "$dir/shut") {
                        close $cl;
                        open my $log, '>>', "$dir/refused" or die $!;
                        print $log "refused\n";
                        close $log;
                        next;
                    }
                    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                                PeerPort => $r->port)
                        or do { close $cl; next };
                    $peer{$cl} = [$s, 0];
                    $peer{$s} = [$cl, 1];
                    $sel->add($cl, $s);
                    next;
                }
                my $p = $peer{$fh} or next;
                my $buf = '';
                my $gone = !sysread $fh, $buf, 65536;
                if (!$gone && !$p->[1] && $buf =~ /\{lost\}/
                    && unlink "$dir/drop") {
                    $drop{ $p->[0] } = 1;   # its reply is not passed on
                }
                if ($gone || ($p->[1] && $drop{$fh})) {
                    for my $h ($fh, $p->[0]) {
                        $sel->remove($h);
                        delete $peer{$h};
                        delete $drop{$h};
                        close $h;
                    }
                    next;
                }
                syswrite $p->[0], $buf;
            }
        }
    });
    my $ng = start_nginx(redis => $r, workers => 1, ready => 1,
                         config => conf("redis=127.0.0.1:$port timeout=5s "
                                        . 'failure=open'));
    my $P = $ng->port;
    my $refused = sub {
        open my $log, '<', "$dir/refused" or return 0;
        my @l = <$log>;
        return scalar @l;
    };
    for my $f ('drop', 'shut') {
        open my $fh, '>', "$dir/$f" or die "$dir/$f: $!";
        close $fh;
    }
    my $lost = http_start($P, '/in?key=lost&until=lost');
    ok(wait_until(sub { $up->stats('lost')->{now} == 1 }, timeout => 10),
       'lost: the request, its reply lost, is served (failure=open)');
    ok(!-e "$dir/drop", 'lost: its decision reached Redis, the reply '
                        . 'did not come back');
    is(slots_held($r), 1, 'lost: the script ran and took its slot');
    $up->release('lost');
    is($lost->result(10)->{code}, 200, 'lost: the request ends');
    # its release meets a link that cannot connect again yet: it waits
    # (before, it was dropped, and the slot stayed until the hold)
    my $n = $refused->();
    ok(wait_until(sub { $refused->() > $n }, timeout => 5),
       'lost: the link tries to connect again, in vain, after the end');
    unlink "$dir/shut";
    # (within 10 s, half the hold, is a release, not the expiry)
    ok(wait_until(sub { slots_held($r) == 0 }, timeout => 10),
       'lost: once the link is made again, its slot is released (the '
       . 'hold is 20 s)')
        or diag('slots: ' . slots_held($r));
    $ng->stop;
    $proxy->_cleanup;
}

done_testing();
