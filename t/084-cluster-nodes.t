# A Redis Cluster node's calls of a turn as one call across slots
# (src/node_batch.cpp), and a slot migrating while they run.
#
# On a server that takes the script's flags (Redis 7.0 and later, Valkey)
# the requests of one turn on one node leave as one script call, whatever
# their slots; a slot the node does not serve whole (moved, or moving)
# is decided by no such call: its requests go again on their own slot,
# where MOVED, ASK and TRYAGAIN are followed as for any call. With
# RL_TEST_SCRIPT_FLAGS=refused (every server refuses the flags, as Redis 6
# refuses a shebang) the same calls go one per slot, as before.
#
# One 3-master cluster (no replica); per run (flags taken, then refused),
# one nginx of one worker, two rules on each key value (fixed windows of
# a day, limits never met: every decision passes or, while its slot moves,
# gets failure=open), and a load of 20 key values (6 on each master and
# one, v, whose slot moves from master 0 to master 1) from curl -Z, in
# rounds, while:
#   (a) nothing moves: the calls carry several slots (flags: fewer script
#       calls than slots, MGETs outnumber EVALSHAs; refused: one MGET a
#       call, the refusal logged)
#   (b) v's slot migrates under the load (MIGRATING and IMPORTING, its
#       keys moved, the source answering ASK for a while, then SETSLOT
#       NODE: MOVED): every request answered 200; every admitted request
#       counted once in both its rules, on the master that has the slot
#       at the end, and no request that got the failure policy counted;
#       the other values of master 0, in the same calls as v's, never got
#       the failure policy; with flags the log says a call across slots
#       met a slot it did not serve whole (the path this test is for)
# About 20 s.

use lib 't/lib';
use RlTest;
use RlTest::Cluster;
use POSIX ();

my $c = RlTest::Cluster->new(masters => 3, replicas => 0);
my @M = $c->masters;

sub bad_lines {
    my ($ng) = @_;
    return grep { /exited on signal|\[alert\]|\[crit\]|\[emerg\]/ }
           split /\n/, $ng->error_log_text;
}

# what one fixed_window state counts (two little-endian doubles: the
# window's index and the count), on the master serving its slot
sub fw_count {
    my ($key) = @_;
    my $raw = $c->get($key) // '';
    return 0 unless length $raw == 16;
    my (undef, $n) = unpack 'd<d<', $raw;
    return $n;
}

# every state key of value $v (both rules), wherever they are
sub states_of {
    my ($v) = @_;
    return map { $c->keys_on($_, "rl:{$v}:*") } $c->masters;
}

sub calls {
    my ($node, $cmd) = @_;
    my $info = $node->cli('INFO', 'commandstats');
    return $info =~ /^cmdstat_\Q$cmd\E:calls=(\d+)/m ? $1 : 0;
}

# Rounds of curl -Z on every value until $stop exists; each answer as
# "VALUE CODE STATUS" in $out. Returns the loader's pid.
sub start_load {
    my ($port, $values, $out, $stop) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        my $list = "$out.urls";
        open my $fh, '>', $list or POSIX::_exit(1);
        for my $round (1 .. 8) {
            print $fh "url = \"http://127.0.0.1:$port/two?k=$_\"\n"
                    . "output = \"/dev/null\"\n" for @$values;
        }
        close $fh;
        my $deadline = time + 60;
        until (-e $stop || time > $deadline) {
            system("curl -s -Z --parallel-max 48 -K '$list' "
                   . "-w '%{url_effective} %{http_code} "
                   . "%header{x-rl-status}\\n' >> '$out' 2>/dev/null");
        }
        POSIX::_exit(0);
    }
    return $pid;
}

sub run {
    my ($tag, $refused) = @_;
    local %ENV = %ENV;
    if ($refused) {
        $ENV{RL_TEST_SCRIPT_FLAGS} = 'refused';
    } else {
        delete $ENV{RL_TEST_SCRIPT_FLAGS};
    }
    my $ng = start_nginx(workers => 1, vars => { Seeds => $c->seeds },
                         config => <<'CONF');
    rl_fleet off;
    rl_zone c cluster=$Seeds timeout=5s failure=open;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /two {
            rl_rule zone=c key=$arg_k rate=1000000r/d
                    algorithm=fixed_window name=t1;
            rl_rule zone=c key=$arg_k rate=2000000r/d
                    algorithm=fixed_window name=t2;
            empty_gif;
        }
    }
CONF
    my $port = $ng->port;
    # the connections made, the scripts loaded
    ok(wait_until(sub {
        code_status(http_get($port, "/two?k=$tag-warm")) eq '200 PASSED'
    }, timeout => 10), "$tag: decisions start");

    my ($from, $to) = @M[0, 1];
    my $v = $c->value_on($from, prefix => "$tag-v");
    my $slot = $c->slot_of_value($v);
    my @others = map { my $m = $_; map { $c->value_on($m, prefix => $tag) }
                       1 .. 6 } @M;
    my @on_from = grep { $c->master_for_slot($c->slot_of_value($_)) == $from }
                  @others;
    my @values = ($v, @others);

    # ------------------------------------------------------- (a) at rest
    $_->cli('CONFIG', 'RESETSTAT') for @M;
    my $dir = $ng->dir;
    my $stop = "$dir/stop-a";
    my $load = start_load($port, \@values, "$dir/a.out", $stop);
    select undef, undef, undef, 1.5;
    open my $s, '>', $stop or die;
    close $s;
    waitpid $load, 0;
    my ($evals, $mgets) = (0, 0);
    for my $m (@M) {
        $evals += calls($m, 'evalsha');
        $mgets += calls($m, 'mget');
    }
    my $answers = () = do { open my $fh, '<', "$dir/a.out"; <$fh> };
    ok($answers > 0, "$tag (a): $answers answers at rest");
    if ($refused) {
        is($mgets, $evals, "$tag (a): refused flags: one MGET a call "
                           . "($evals calls, one slot each)");
        like($ng->error_log_text,
             qr/refused the script's flags \(ERR[^)]*rl-test-no-such-flag/,
             "$tag (a): the refusal is logged");
    } else {
        cmp_ok($mgets, '>', $evals, "$tag (a): calls across slots: "
               . "$mgets MGETs (one a slot) in $evals calls");
        unlike($ng->error_log_text, qr/refused the script's flags/,
               "$tag (a): the server took the flags");
    }

    # ------------------------------------------------------- (b) migrating
    $stop = "$dir/stop-b";
    $load = start_load($port, \@values, "$dir/b.out", $stop);
    select undef, undef, undef, 0.4;
    $c->migrate_slot($slot, $to, stop_after_migrate => 1);
    select undef, undef, undef, 0.4;    # the source answers ASK
    $c->finish_migration($slot);
    select undef, undef, undef, 0.6;    # MOVED, then the new map
    open $s, '>', $stop or die;
    close $s;
    waitpid $load, 0;
    is($c->master_for_slot($slot)->port, $to->port,
       "$tag (b): v's slot now on master 1");

    # what (a) and (b) admitted, and what else (b) answered
    my (%passed, %other, $lines);
    for my $part (qw(a b)) {
        open my $fh, '<', "$dir/$part.out" or die;
        while (<$fh>) {
            $lines++ if $part eq 'b';
            my ($val, $code, $st) = m{k=(\S+) (\d+) (\S*)} or next;
            if ("$code $st" eq '200 PASSED') {
                $passed{$val}++;
            } else {
                $other{$val}{"$code $st"}++;
            }
        }
        close $fh;
    }
    ok($lines > 2 * @values, "$tag (b): $lines answers during the move");
    my @bad = grep { my $o = $other{$_};
                     grep { $_ ne '200 ERROR' } keys %{ $o // {} } }
              keys %other;
    is("@bad", '', "$tag (b): every answer 200 PASSED or 200 ERROR")
        or diag(explain \%other);
    is(join(' ', grep { $_ ne $v && $other{$_} } @on_from), '',
       "$tag (b): master 0's other values, in v's calls, never got the "
       . 'failure policy') or diag(explain \%other);
    diag("$tag (b): v: " . ($passed{$v} // 0) . ' passed, '
         . ($other{$v}{'200 ERROR'} // 0) . ' failure policy');
    my @wrong;
    for my $val (@values) {
        my @k = sort(states_of($val));
        my $want = $passed{$val} // 0;
        my @n = map { fw_count($_) } @k;
        push @wrong, "$val: passed $want, counted @n"
            unless @k == 2 && $n[0] == $want && $n[1] == $want;
    }
    is(join('; ', @wrong), '', "$tag (b): each of the 20 values counted "
       . 'exactly its admitted requests, once, in both rules');
    is(scalar $c->keys_on($to, "rl:{$v}:*"), 2,
       "$tag (b): v's two states on the slot's new master");
    if ($refused) {
        unlike($ng->error_log_text, qr/does not serve the whole slot/,
               "$tag (b): no call across slots");
    } else {
        like($ng->error_log_text,
             qr/redis 127\.0\.0\.1:\d+ does not serve the whole slot of \d+ call\(s\) of a call across slots/,
             "$tag (b): a call across slots met the moving slot, and its "
             . 'requests went again on their own slot');
    }
    is_deeply([ bad_lines($ng) ], [], "$tag: no crash or alert");
    $ng->stop;
    @M = $c->masters;
}

run('flags', 0);
run('refused', 1);

$c->stop;
done_testing();
