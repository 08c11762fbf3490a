# A fake Redis answering random RESP through a real nginx: t/031's bad
# replies, drawn at random and many (a bounded, seeded run: RL_FUZZ_SEED
# repeats one, RL_FUZZ_ROUNDS sets its length; `make fuzz` runs a longer
# one). The fake answers the handshake as Redis does, then each script
# call with a reply drawn from: the script's own (figures plausible or
# not: NaN, negative, fractional, 2^60; a trailer of overrides, valid or
# not), any RESP value (statuses, errors such as NOSCRIPT, MOVED, ASK,
# CLUSTERDOWN, integers, strings of random bytes up to 100 KB, nil,
# nested arrays), bytes that are no RESP at all, a reply cut in two
# writes, the connection closed, or no reply (the zone's timeout). A
# second port plays a Redis Cluster seed: CLUSTER SLOTS answers a map
# (of itself) or anything else, and calls meet MOVED and ASK.
#
# Requests go 1 to 4 at once (so calls carry batches and several parts)
# to locations with one rule, stacked rules on three zones (closed, open,
# failure=local), a delay= rule, a dry run, and the cluster zone.
# Every request must be answered, 200 or 429, within a bound; the worker
# never crashes (the harness fails on [alert]/[crit] or a signal); when
# the fake turns good, decisions resume.

use lib 't/lib';
use RlTest;
use RlTest::Resp qw(bulk command send_all);
use RlTest::Proc qw(make_tempdir);
use Digest::SHA qw(sha1_hex);
use IO::Select;
use IO::Socket::IP;
use Time::HiRes ();

my $seed = $ENV{RL_FUZZ_SEED} // (time ^ $$) % 1000000;
my $rounds = $ENV{RL_FUZZ_ROUNDS} // 150;
diag("random replies: RL_FUZZ_SEED=$seed RL_FUZZ_ROUNDS=$rounds");
srand($seed);

my $dir = make_tempdir('random');
my $mode_file = "$dir/mode";
sub set_mode {
    open my $fh, '>', "$mode_file.new" or die "$mode_file: $!";
    print $fh "$_[0]\n";
    close $fh;
    rename "$mode_file.new", $mode_file or die "rename: $!";
}
set_mode('random');

my ($listen, $clisten) = map {
    IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                        Listen => 64, ReuseAddr => 1)
        or die "listen: $!"
} 1 .. 2;
my ($fake_port, $cluster_port) = ($listen->sockport, $clisten->sockport);

# ------------------------------------------------------------ replies

sub pick { $_[int(rand(@_))] }
sub bytes { join '', map { chr int(rand(256)) } 1 .. $_[0] }

sub figure {
    my $r = rand();
    return $r < 0.9 ? int(rand(1000))
         : pick(9**9**9 / 9**9**9, 9**9**9, -1, 0.5, 2**60, -2**53, 1e15);
}

# the script's reply for these (request, rule) pairs, or close to it
sub script_reply {
    my ($shapes) = @_;
    my $n = @$shapes;
    $n += pick(-1, 1) if rand() < 0.05;
    $n = 0 if $n < 0;
    my $clock = rand() < 0.95 ? int(Time::HiRes::time() * 1e6) : figure();
    my @f = ($clock);
    for my $p (0 .. $n - 1) {
        # a delay for a rule that shapes (and now and then, one that
        # does not: no reply of the script's)
        my $delay = $shapes->[$p] || rand() < 0.02;
        my $verdict = rand() < 0.7 ? 0
                    : rand() < 0.5 || !$delay ? int(rand(300_000)) # a retry
                    : -int(rand(200_000));                   # a delay
        $verdict = figure() if rand() < 0.01;
        push @f, (rand() < 0.99 ? int(rand(100)) : figure()),
                 (rand() < 0.99 ? int(rand(60_000_000)) : figure()), $verdict;
    }
    if (rand() < 0.15) {      # overrides' records: index, limit
        my $i = -1;
        for (1 .. 1 + int(rand(3))) {
            $i += 1 + int(rand(2));
            push @f, (rand() < 0.9 ? $i : figure()),
                     (rand() < 0.9 ? 1 + int(rand(1000)) : figure());
        }
    }
    my $s = pack 'd<*', @f;
    $s .= bytes(1 + int(rand(7))) if rand() < 0.03;
    return bulk($s);
}

sub resp_value {
    my ($depth) = @_;
    my $r = rand();
    return "+" . pick('OK', 'QUEUED', bytes(5) =~ s/[\r\n]//gr) . "\r\n"
        if $r < 0.1;
    return "-" . pick('NOSCRIPT No matching script',
                      'MOVED ' . int(rand(16384)) . " 127.0.0.1:$cluster_port",
                      'ASK ' . int(rand(16384)) . " 127.0.0.1:$cluster_port",
                      'MOVED ' . int(rand(20000)) . ' 127.0.0.1:1',
                      'MOVED x y', 'CLUSTERDOWN The cluster is down',
                      'TRYAGAIN', 'ERR boom', 'BUSY', 'OOM',
                      'WRONGTYPE', '') . "\r\n"
        if $r < 0.35;
    return ':' . int(rand(2**40) - 2**39) . "\r\n" if $r < 0.45;
    return "\$-1\r\n" if $r < 0.5;
    return "*-1\r\n" if $r < 0.52;
    if ($r < 0.8 || $depth > 2) {
        my $len = rand() < 0.97 ? int(rand(200)) : int(rand(100_000));
        return bulk(rand() < 0.5 ? bytes($len) : pack('d<*',
            map { figure() } 1 .. int($len / 8)));
    }
    my $n = int(rand(5));
    return "*$n\r\n" . join '', map { resp_value($depth + 1) } 1 .. $n;
}

# one reply to a script call of $n pairs: [bytes, how]
sub random_reply {
    my ($n) = @_;   # the pairs (pairs())
    my $r = rand();
    # (a connection lost, to bytes that are no RESP or closed, takes a
    # while to come back: meanwhile the zone's requests get its policy
    # without asking, so those are rare)
    return [script_reply($n), 'write'] if $r < 0.7;
    return [resp_value(0), 'write'] if $r < 0.9;
    return [script_reply($n), 'split'] if $r < 0.96;
    return [bytes(1 + int(rand(30))), 'write'] if $r < 0.97;  # no RESP
    return ['', 'close'] if $r < 0.98;
    return ['', 'none'];
}

sub cluster_slots {
    return resp_value(0) if rand() < 0.3;
    my @ranges;
    my $at = 0;
    while ($at < 16384) {
        my $end = rand() < 0.8 ? 16383 : $at + int(rand(16384));
        $end = 16383 if $end > 16383;
        my $host = pick('127.0.0.1', '127.0.0.1', '', '?');
        my $port = rand() < 0.9 ? $cluster_port : pick(0, 1, 70000);
        push @ranges, "*3\r\n:$at\r\n:$end\r\n*3\r\n" . bulk($host)
                      . ":$port\r\n" . bulk('id' . int(rand(1000)));
        $at = $end + 1;
    }
    @ranges = @ranges[0 .. $#ranges - 1] if @ranges > 1 && rand() < 0.1;
    return '*' . scalar(@ranges) . "\r\n" . join '', @ranges;
}

# ------------------------------------------------------------ the fake

my $fake = spawn(sub {
    srand($seed + 1);
    my $sel = IO::Select->new($listen, $clisten);
    my (%buf, %cluster);
    while (1) {
        for my $fh ($sel->can_read(1)) {
            if ($fh == $listen || $fh == $clisten) {
                my $c = $fh->accept or next;
                $sel->add($c);
                $buf{$c} = '';
                $cluster{$c} = $fh == $clisten;
                next;
            }
            my $drop = !sysread $fh, $buf{$fh}, 65536, length $buf{$fh};
            while (!$drop and my ($words, $rest) = command($buf{$fh})) {
                $buf{$fh} = $rest;
                my $cmd = uc $words->[0];
                my $good = do { open my $m, '<', $mode_file; <$m> }
                           =~ /good/;
                my ($out, $how) = ("+OK\r\n", 'write');
                if ($cmd eq 'SCRIPT') {
                    $out = bulk(sha1_hex($words->[2]));
                } elsif ($cmd eq 'PING') {
                    $out = "+PONG\r\n";
                } elsif ($cmd eq 'CLUSTER') {
                    $out = $good ? "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n"
                                   . bulk('127.0.0.1') . ":$cluster_port\r\n"
                                 : cluster_slots();
                } elsif ($cmd =~ /^EVAL/) {
                    my $n = pairs($words);
                    ($out, $how) = @{ $good ? [script_reply_good($n), 'write']
                                            : random_reply($n) };
                }
                if ($how eq 'close') {
                    $drop = 1;
                } elsif ($how eq 'split' && length $out > 1) {
                    my $cut = 1 + int rand(length($out) - 1);
                    send_all($fh, substr($out, 0, $cut));
                    Time::HiRes::sleep(0.02);
                    send_all($fh, substr($out, $cut)) or $drop = 1;
                } elsif ($how eq 'write') {
                    send_all($fh, $out) or $drop = 1;
                }
            }
            if ($drop) {
                $sel->remove($fh);
                delete $buf{$fh};
                close $fh;
            }
        }
    }
});

# The (request, rule) pairs of a script call, each true when its rule
# shapes (delay= below burst=): its head (src/core/script.hpp) holds, per
# request, its rule count and time, then per rule its key's and spec's
# indexes and its cost; a spec starts with limit, window, burst, delay.
sub pairs {
    my ($words) = @_;
    my $nk = $words->[2] // 0;
    my @d = unpack 'd<*', $words->[3 + $nk] // '';
    my (@pairs, $i);
    $i = 0;
    while ($i + 1 < @d) {
        my $n = $d[$i];
        last if $n != int($n) || $n < 1 || $n > 64;
        for my $k (0 .. $n - 1) {
            my $spec = $d[$i + 2 + 3 * $k + 1] // 0;
            my (undef, undef, $burst, $delay) =
                unpack 'd<4', $words->[3 + $nk + $spec] // '';
            push @pairs, defined $delay && $delay < $burst ? 1 : 0;
        }
        $i += 2 + 3 * $n;
    }
    return \@pairs;
}

# the script's reply, right: every pair admitted with 99 left
sub script_reply_good {
    my ($shapes) = @_;
    return bulk(pack 'd<*', int(Time::HiRes::time() * 1e6),
                map { (99, 1_000_000, 0) } @$shapes);
}

# ------------------------------------------------------------ nginx

my $ng = start_nginx(workers => 1, config => <<"CONF");
    rl_zone one redis=127.0.0.1:$fake_port timeout=300ms failure=closed;
    rl_zone open redis=127.0.0.1:$fake_port db=1 timeout=300ms;
    rl_zone local redis=127.0.0.1:$fake_port db=2 timeout=300ms
            failure=local size=1m;
    rl_zone clu cluster=127.0.0.1:$cluster_port timeout=300ms
            connect_timeout=300ms failure=closed;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /one {
            rl_rule zone=one key=\$arg_k rate=100r/s;
            empty_gif;
        }
        location /stack {
            rl_rule zone=one key=\$arg_k rate=100r/s;
            rl_rule zone=one key=x\$arg_k rate=10r/s algorithm=gcra burst=5;
            rl_rule zone=open key=\$arg_k rate=5r/s algorithm=token_bucket;
            rl_rule zone=local key=\$arg_k rate=50r/m name=local;
            empty_gif;
        }
        location /delay {
            rl_rule zone=one key=\$arg_k rate=10r/s algorithm=leaky_bucket
                    burst=5 delay=2;
            empty_gif;
        }
        location /dry {
            rl_rule zone=one key=\$arg_k rate=1r/s dry_run;
            empty_gif;
        }
        location /cluster {
            rl_rule zone=clu key=\$arg_k rate=100r/s;
            empty_gif;
        }
        location = /metrics { rl_metrics; }
    }
CONF
my $port = $ng->port;
my ($worker) = $ng->worker_pids;

# A request's bound: its zones' timeouts (300 ms, a few zones one after
# the other at most) and a refund's, plus what the fake may hold (a
# split reply), plus room for a loaded host.
my $bound = 3;
my @paths = qw(/one /stack /delay /dry /cluster);
my (%codes, @slow, @bad);
for my $round (1 .. $rounds) {
    # a few keys shared (batches of one key), most new (the deny cache
    # would answer a key a random reply rejected)
    my @req = map { pick(@paths) . '?k='
                    . (rand() < 0.3 ? pick(qw(a b c)) : 'k' . int(rand(1e6))) }
              1 .. 1 + int(rand(4));
    my @res = http_parallel($port, \@req, concurrency => scalar @req,
                            timeout => 20, full => 1);
    for my $i (0 .. $#req) {
        my $t = $res[$i];
        $codes{$t->{code}}++;
        push @bad, "$req[$i]: $t->{code}" unless $t->{code} =~ /^(200|429)$/;
        push @slow, sprintf('%s: %.2fs', $req[$i], $t->{elapsed})
            if $t->{elapsed} > $bound;
    }
}
diag('codes: ' . join(', ', map { "$_ x$codes{$_}" } sort keys %codes));
is(join('; ', @bad), '', 'every request answered 200 or 429')
    or diag("RL_FUZZ_SEED=$seed");
is(join('; ', @slow), '', "every request answered within ${bound}s")
    or diag("RL_FUZZ_SEED=$seed");
is_deeply([$ng->worker_pids], [$worker], 'the same worker throughout');

# the fake turns good: decisions resume by themselves
set_mode('good');
for my $path (qw(/one /stack /cluster)) {
    my $last;
    ok(wait_until(sub {
            my $t = http_get($port, "$path?k=after");
            $last = "$t->{code} " . ($t->{headers}{'x-rl-status'} // '-');
            $last eq '200 PASSED';
        }, timeout => 10, interval => 0.2),
       "$path: decisions resume once the replies are good")
        or diag("RL_FUZZ_SEED=$seed; last: $last; the log's last zone "
                . "lines:\n" . zone_lines(12));
}

$ng->stop;
done_testing();

# the last N lines of the error log that name a zone
sub zone_lines {
    my @l = grep { /rl_zone/ } split /^/, $ng->error_log_text;
    return join '', @l > $_[0] ? @l[-$_[0] .. -1] : @l;
}
