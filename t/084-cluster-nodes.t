# A Redis Cluster node's calls of a turn as one call across slots
# (src/redis/node_batch.cpp), and a slot migrating while they run.
#
# On a server that takes the script's flags (Redis 7.0 and later, Valkey)
# the requests of one turn on one node leave as one script call, whatever
# their slots, and so do the worker's own calls (here charges); a slot
# the node does not serve whole (moved, or moving) is decided by no such
# call: its calls go again on their own slot, where MOVED, ASK and
# TRYAGAIN are followed as for any call. With RL_TEST_SCRIPT_FLAGS=refused
# (every server refuses the flags, as Redis 6 refuses a shebang) the same
# calls go one per slot, as before.
#
# One 3-master cluster (no replica); per run (flags taken, then refused)
# one nginx of one worker. /two: two rules on each key value (fixed
# windows of a day, limits never met: a decision passes or, while its
# slot moves, gets failure=open), the first charging 2 as the request
# ends (one unit more: a worker's own call). /held: a concurrency= rule
# (hold=1s) before an upstream that holds requests until told: the
# slots' renewals, every hold/3, are the worker's own calls of one tick.
# Loads from curl -Z, in rounds:
#   (a) /two, 19 key values on the 3 masters, nothing moving: the calls
#       carry several slots (flags: MGETs, one a slot, outnumber
#       EVALSHAs; refused: one MGET a call, the refusal logged)
#   (b) /two, 20 key values, one of them (v) on a slot that migrates
#       from master 0 to master 1 under the load (MIGRATING and
#       IMPORTING, keys moved, the source answering ASK a while, then
#       SETSLOT NODE: MOVED): every answer 200; each value counted in
#       the second rule exactly its admitted requests, in the first
#       those and the charges sent (the values that did not move: all
#       of them), so nothing counted twice; the other values of master
#       0, in the same calls as v's, never got the failure policy; with
#       flags, the log says a call across slots met the moving slot
#   (c) /held: 14 requests on 7 values of master 0 held while one
#       value's slot migrates (ASK, then MOVED) under their renewals:
#       all served, every slot released in the end (w's on its new
#       master); with flags, the log says a call across slots of
#       renewals met the moving slot
# About 30 s.

use lib 't/lib';
use RlTest;
use RlTest::Cluster;
use POSIX ();

my $c = RlTest::Cluster->new(masters => 3, replicas => 0);
my @M = $c->masters;
my $up = start_upstream();
my $UP = $up->port;

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

# the counts of value $v's state keys, wherever they are, least first
sub counts_of {
    my ($v) = @_;
    return sort { $a <=> $b } map { fw_count($_) }
           map { $c->keys_on($_, "rl:{$v}:*") } $c->masters;
}

sub calls {
    my ($node, $cmd) = @_;
    my $info = $node->cli('INFO', 'commandstats');
    return $info =~ /^cmdstat_\Q$cmd\E:calls=(\d+)/m ? $1 : 0;
}

# Rounds of curl -Z on $path?k=VALUE (8 of each value a round) until
# $stop exists; each answer as "URL CODE STATUS" in $out. The loader's
# pid.
sub start_load {
    my ($port, $path, $values, $out, $stop) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        my $list = "$out.urls";
        open my $fh, '>', $list or POSIX::_exit(1);
        for my $round (1 .. 8) {
            print $fh "url = \"http://127.0.0.1:$port$path?k=$_\"\n"
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

sub stop_load {
    my ($pid, $stop) = @_;
    open my $s, '>', $stop or die "$stop: $!";
    close $s;
    waitpid $pid, 0;
}

sub pause { select undef, undef, undef, $_[0] }

# What the loads' answers say: value => admitted, value => { other
# answer => n }, and how many answers.
sub answers {
    my (@files) = @_;
    my (%passed, %other, $n);
    for my $file (@files) {
        open my $fh, '<', $file or die "$file: $!";
        while (<$fh>) {
            my ($val, $code, $st) = m{k=(\S+) (\d+) (\S*)} or next;
            $n++;
            if ("$code $st" eq '200 PASSED') {
                $passed{$val}++;
            } else {
                $other{$val}{"$code $st"}++;
            }
        }
    }
    return (\%passed, \%other, $n // 0);
}

# rl_charges_total of rule $rule once every charge is answered (the
# count stops moving)
sub charges_settled {
    my ($port, $rule) = @_;
    my $m = sub { metric_value($port, "rl_charges_total{zone=\"c\","
                                      . "rule=\"$rule\",result=\"$_[0]\"}")
                  // 0 };
    my $last = -1;
    wait_until(sub {
        my $now = $m->('sent') + $m->('lost');
        return 1 if $now == $last;
        $last = $now;
        return 0;
    }, timeout => 10, interval => 0.3);
    return ($m->('sent'), $m->('lost'));
}

# (b): each value's counts against what it was answered; the charging
# rule's against the charges sent
sub check_counts {
    my ($what, $port, $rule, $moved, $passed) = @_;
    my ($sent, $lost) = charges_settled($port, $rule);
    my (@wrong, $charged);
    for my $val (sort keys %$passed) {
        my $want = $passed->{$val};
        my @n = counts_of($val);
        # (its second rule's count, then the charging one's)
        my $t1 = $n[-1] // 0;
        $charged += $t1;
        push @wrong, "$val: admitted $want, counted @n"
            unless @n == 2 && $n[0] == $want
                && ($val eq $moved ? $t1 >= $want && $t1 <= 2 * $want
                                   : $t1 == 2 * $want);
    }
    is(join('; ', @wrong), '', "$what: each value counted its admitted "
       . 'requests once, and with the charges sent (all, but for the '
       . 'moving value) in the charging rule');
    my $admitted = 0;
    $admitted += $_ for values %$passed;
    is($charged, $admitted + $sent, "$what: the charging rule holds "
       . "$admitted admitted requests and $sent charges sent ($lost lost),"
       . ' each once');
}

sub run {
    my ($tag, $refused) = @_;
    local %ENV = %ENV;
    if ($refused) {
        $ENV{RL_TEST_SCRIPT_FLAGS} = 'refused';
    } else {
        delete $ENV{RL_TEST_SCRIPT_FLAGS};
    }
    my $ng = start_nginx(workers => 1,
                         vars => { Seeds => $c->seeds, Up => $UP },
                         config => <<'CONF');
    rl_fleet off;
    rl_zone c cluster=$Seeds timeout=5s failure=open;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /two {
            rl_rule zone=c key=$arg_k rate=1000000r/d
                    algorithm=fixed_window name=t1 charge=2;
            rl_rule zone=c key=$arg_k rate=2000000r/d
                    algorithm=fixed_window name=t2;
            empty_gif;
        }
        location /held {
            rl_rule zone=c key=$arg_k concurrency=1000 hold=1s name=h;
            proxy_pass http://127.0.0.1:$Up/hold;
        }
        location /metrics { rl_metrics; }
    }
CONF
    my $port = $ng->port;
    my $dir = $ng->dir;
    ok(wait_until(sub {
        code_status(http_get($port, "/two?k=$tag-warm")) eq '200 PASSED'
    }, timeout => 10), "$tag: decisions start");

    my ($from, $to) = @M[0, 1];
    my $v = $c->value_on($from, prefix => "$tag-v");
    my $slot = $c->slot_of_value($v);
    my @others = map { my $m = $_; map { $c->value_on($m, prefix => $tag) }
                       1 .. 6 } @M;
    my @on_from = @others[0 .. 5];

    # ------------------------------------------------------- (a) at rest
    $_->cli('CONFIG', 'RESETSTAT') for @M;
    my $load = start_load($port, '/two', \@others, "$dir/a.out",
                          "$dir/stop-a");
    pause(1.5);
    stop_load($load, "$dir/stop-a");
    my ($evals, $mgets) = (0, 0);
    for my $m (@M) {
        $evals += calls($m, 'evalsha');
        $mgets += calls($m, 'mget');
    }
    my (undef, undef, $n) = answers("$dir/a.out");
    ok($n > 0, "$tag (a): $n answers at rest");
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
    $load = start_load($port, '/two', [ $v, @others ], "$dir/b.out",
                       "$dir/stop-b");
    pause(0.4);
    $c->migrate_slot($slot, $to, stop_after_migrate => 1);
    pause(0.4);                         # the source answers ASK
    $c->finish_migration($slot);
    pause(0.6);                         # MOVED, then the new map
    stop_load($load, "$dir/stop-b");
    is($c->master_for_slot($slot)->port, $to->port,
       "$tag (b): v's slot now on master 1");
    my ($passed, $other);
    ($passed, $other, $n) = answers("$dir/a.out", "$dir/b.out");
    ok($n > 4 * @others, "$tag (b): $n answers in (a) and (b)");
    my @bad = grep { grep { $_ ne '200 ERROR' } keys %{ $other->{$_} } }
              keys %$other;
    is("@bad", '', "$tag (b): every answer 200 PASSED or 200 ERROR")
        or diag(explain $other);
    is(join(' ', grep { $other->{$_} } @on_from), '',
       "$tag (b): master 0's other values, in v's calls, never got the "
       . 'failure policy') or diag(explain $other);
    diag("$tag (b): v: " . ($passed->{$v} // 0) . ' admitted, '
         . ($other->{$v}{'200 ERROR'} // 0) . ' failure policy');
    $passed->{"$tag-warm"} = 1;
    check_counts("$tag (b)", $port, 't1', $v, $passed);
    is(scalar $c->keys_on($to, "rl:{$v}:*"), 2,
       "$tag (b): v's two states on the slot's new master");
    if ($refused) {
        unlike($ng->error_log_text, qr/does not serve the whole slot/,
               "$tag (b): no call across slots");
    } else {
        like($ng->error_log_text,
             qr/redis 127\.0\.0\.1:\d+ does not serve the whole slot of \d+ decision\(s\) of a call across slots/,
             "$tag (b): a call across slots met the moving slot, and its "
             . 'requests went again on their own slot');
    }

    # ------------------------------------------------------- (c) renewals
    # 14 requests held by the upstream on 7 values of master 0 (a slot
    # each), their slots renewed every hold/3 in one tick: calls across
    # slots of renewals; one value's slot migrates under them
    my $w = $c->value_on($M[0], prefix => "$tag-w");
    my $wslot = $c->slot_of_value($w);
    my @vals = ($w, map { $c->value_on($M[0], prefix => "$tag-n") } 1 .. 6);
    my @held = map { my $x = $_; map { http_start($port,
                         "/held?k=$x&key=$x&until=$tag-c") } 1 .. 2 } @vals;
    ok(wait_until(sub { !grep { $up->stats($_)->{now} != 2 } @vals },
                  timeout => 10), "$tag (c): 14 requests held");
    my $held = sub { my $t = 0; $t += slots_held(sub { $c->cli_on($_, @_) })
                                    for @M; $t };
    is($held->(), 14, "$tag (c): 14 slots held in Redis");
    $c->migrate_slot($wslot, $M[2], stop_after_migrate => 1);
    pause(0.8);                         # renewals meet ASK
    $c->finish_migration($wslot);
    pause(0.8);                         # and MOVED
    is($held->(), 14, "$tag (c): still 14 held after the move");
    $up->release("$tag-c");
    is(join(' ', map { code_status($_->result(10)) } @held),
       join(' ', ('200 PASSED') x 14), "$tag (c): all 14 served");
    ok(wait_until(sub { $held->() == 0 }, timeout => 5),
       "$tag (c): every slot released, w's on the slot's new master");
    if (!$refused) {
        like($ng->error_log_text,
             qr/does not serve the whole slot of \d+ renewal\(s\) of a call across slots/,
             "$tag (c): a call across slots of renewals met the moving "
             . 'slot, and they went again on their own slot');
    }

    is_deeply([ bad_lines($ng) ], [], "$tag: no crash or alert");
    $ng->stop;
    @M = $c->masters;
}

run('flags', 0);
run('refused', 1);

$c->stop;
done_testing();
