# Redis Cluster: `rl_zone NAME cluster=HOST:PORT[,HOST:PORT...]`.
#
# The module learns the slot map (CLUSTER SLOTS) from the seeds, keeps a
# connection per worker per node, follows MOVED (and refreshes its map)
# and ASK (ASKING first), and refreshes the map while a node is
# unreachable, so decisions resume by themselves once the cluster has
# failed over. State keys are PREFIX{VALUE}:RULEID: every rule of one key
# value lives on the slot of {VALUE}, on the master serving it; rules of
# one request on key values of other slots are decided by separate calls,
# and a rejection in one gives back what the others counted (as with two
# zones).
#
# First nginx -t: the errors of cluster= (with redis=, db=1, a unix
# socket, an empty address, a prefix holding a brace), and valid zones
# whose seeds are unreachable (nginx -t never needs Redis; requests then
# get the failure policy, quickly). Then one real cluster of 3 masters
# with a replica each (t/lib/RlTest/Cluster.pm, node timeout 1 s) and one
# nginx with 2 workers serve every test, the destructive ones last:
#   (g) rl_store_up is 1 for both zones (and again after (e))
#   (a) 5 of 7 pass on each of three key values served by three masters,
#       in sequence and all at once; each state key is on its slot's
#       master and nowhere else
#   (b) stacked rules on key values of two masters: a rejection by one
#       counts nothing in the other, whichever master holds which
#   (h) leases (lease=, on the same connections): hot key values of three
#       masters spend leases, figures as in exact mode; once the leases
#       end each master counts exactly the requests served
#   (c) MOVED: a used key's slot migrated to another master; the count
#       carries over
#   (d) ASK: the slot migrating (keys moved, the source answers ASK):
#       the call follows it to the target, which refuses the script's
#       reads (keys missing there): the failure policy, at once, nothing
#       counted; then the migration ends and the count carries over
#   (e) a manual CLUSTER FAILOVER of the master of a used key: decisions
#       go on, the count carries over
#   (f) a master SIGKILLed: its keys get the failure policy at once,
#       nothing hangs; decisions resume after the replica's promotion
# Limits are per day (fixed_window, epoch-aligned): a window boundary
# must not fall inside a test. About 12 s, 4 of them making the cluster.

use lib 't/lib';
use RlTest;
use RlTest::Cluster;

# ------------------------------------------------------------ nginx -t


# [name, rl_zone line, what the [emerg] line must hold]
my @bad = (
    [ 'cluster= with redis=',
      'rl_zone c cluster=127.0.0.1:7000 redis=127.0.0.1:6379;',
      [ qr/redis/i, qr/cluster/i ] ],
    [ 'redis= with cluster=',
      'rl_zone c redis=127.0.0.1:6379 cluster=127.0.0.1:7000;',
      [ qr/redis/i, qr/cluster/i ] ],
    [ 'db=1 with cluster=',
      'rl_zone c cluster=127.0.0.1:7000 db=1;', [ 'db=1' ] ],
    [ 'db=1 before cluster=',
      'rl_zone c db=1 cluster=127.0.0.1:7000;', [ 'db=1' ] ],
    [ 'a unix socket',
      'rl_zone c cluster=unix:/tmp/x.sock;', [ 'unix:/tmp/x.sock' ] ],
    [ 'an empty address',
      'rl_zone c cluster=127.0.0.1:1,,127.0.0.1:2;', [ 'invalid address' ] ],
    [ 'a trailing comma',
      'rl_zone c cluster=127.0.0.1:1,;', [ 'invalid address' ] ],
    [ 'no address', 'rl_zone c cluster=;', [ 'invalid address' ] ],
    # quoted: a bare { would open a block in nginx's syntax
    [ 'a prefix with a brace',
      'rl_zone c cluster=127.0.0.1:7000 "prefix=a{b}:";', [ 'a{b}:' ] ],
);
for my $b (@bad) {
    my ($name, $zone, $want) = @$b;
    my ($ok, $text) = zone_config_test($zone);
    ok(!$ok, "nginx -t: $name fails");
    my ($line) = grep { /\[emerg\]/ } split /\n/, $text;
    $line //= '';
    for my $w (@$want) {
        my $re = ref $w ? $w : qr/\Q$w\E/;
        like($line, $re, "nginx -t: $name: the error names $w");
    }
    like($line, qr/ in \S+nginx\.conf:\d+/, "nginx -t: $name: file:line");
    unlike($line, qr/not supported/,
           "nginx -t: $name: an error of its own, not 'not supported'");
}

# seeds where nothing listens: nginx -t needs no Redis
my ($dead1, $dead2) = (free_port(), free_port());
my $valid = "rl_zone c cluster=127.0.0.1:$dead1,127.0.0.1:$dead2"
          . ' username=u password=p prefix=x: timeout=1s'
          . ' connect_timeout=1s failure=open;';
my ($tok, $ttext) = zone_config_test($valid);
ok($tok, 'nginx -t: a cluster zone with every option and unreachable '
         . 'seeds passes') or diag($ttext);
for my $f (qw(closed local)) {
    ($tok, $ttext) = zone_config_test("rl_zone c cluster=127.0.0.1:$dead1 "
                               . "failure=$f;");
    ok($tok, "nginx -t: cluster= with failure=$f passes") or diag($ttext);
}

# ... and such a zone answers with its failure policy, without hanging
{
    my $ng = start_nginx(start => 0, config => <<"CONF");
    rl_zone c cluster=127.0.0.1:$dead1,127.0.0.1:$dead2 timeout=1s
            connect_timeout=1s failure=open;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /t { rl_rule zone=c key=\$arg_k rate=5r/d; empty_gif; }
    }
CONF
    my ($ok, $msg) = $ng->try_start;
    ok($ok, 'nginx starts with unreachable seeds') or diag($msg);
    for my $i ($ok ? (1 .. 3) : ()) {
        my $res = http_get($ng->port, "/t?k=x$i", -timeout => 10);
        is(code_status($res), '200 ERROR',
           "unreachable seeds, failure=open: 200 ERROR ($i)");
        ok($res->{elapsed} < 3, 'within timeout + slack ('
           . sprintf('%.2fs', $res->{elapsed}) . ')');
    }
    $ng->stop(name => 'nginx with unreachable seeds');
}

# ------------------------------------------------------------ the cluster

my $c = RlTest::Cluster->new(masters => 3, replicas => 1,
                             node_timeout => 1000);
my @M = $c->masters;        # $M[0] serves slot 0: the seed of zone c
is(scalar @M, 3, 'cluster: 3 masters');
is(scalar(map { $c->replicas_of($_) } @M), 3, 'cluster: a replica each');

# zone c: one seed (the rest is learned); zone ck (the kill test): every
# master, a short timeout
my $ng = start_nginx(workers => 2, start => 0,
                     vars => { Seed => $c->seed, Seeds => $c->seeds },
                     config => <<'CONF');
    rl_zone c cluster=$Seed timeout=5s failure=open;
    rl_zone cl cluster=$Seed timeout=5s failure=open lease=6s;
    rl_zone ck cluster=$Seeds timeout=1s connect_timeout=1s failure=open;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /fw {
            rl_rule zone=c key=$http_x_key rate=5r/d algorithm=fixed_window
                    name=fw;
            empty_gif;
        }
        location /fwa {
            rl_rule zone=c key=$arg_k rate=5r/d algorithm=fixed_window
                    name=fwa;
            empty_gif;
        }
        location /stack {
            rl_rule zone=c key=$http_x_a rate=3r/d algorithm=fixed_window
                    name=a;
            rl_rule zone=c key=$http_x_b rate=100r/d algorithm=fixed_window
                    name=b;
            empty_gif;
        }
        # the second rule of /stack alone: the same state
        location /b {
            rl_rule zone=c key=$http_x_b rate=100r/d algorithm=fixed_window
                    name=b;
            empty_gif;
        }
        # two rules on one key value, neither used before
        location /two {
            rl_rule zone=c key=$http_x_key rate=50r/d algorithm=fixed_window
                    name=t1;
            rl_rule zone=c key=$http_x_key rate=60r/d algorithm=fixed_window
                    name=t2;
            empty_gif;
        }
        location /k {
            rl_rule zone=ck key=$http_x_key rate=5r/d algorithm=fixed_window
                    name=k;
            empty_gif;
        }
        location /leased {
            rl_rule zone=cl key=$http_x_key rate=1000r/d
                    algorithm=fixed_window name=l;
            empty_gif;
        }
        location /metrics { rl_metrics; }
    }
CONF
my $port = $ng->port;
{
    my ($ok, $msg) = $ng->try_start;
    unless (ok($ok, 'nginx starts on the cluster')) {
        diag($msg);
        $c->stop;
        done_testing();
        exit;
    }
}

sub get_as {
    my ($path, $key, %h) = @_;
    $h{'X-Key'} = $key if defined $key;
    return http_get($port, $path, -timeout => 10, %h);
}

# "200 PASSED 4": status, $rl_status and X-RateLimit-Remaining
sub csr {
    my ($res) = @_;
    return code_status($res) . ' '
         . ($res->{headers}{'x-ratelimit-remaining'} // '-');
}

# what one fixed_window state counts: its string is two little-endian
# doubles, the window's index and the count
sub fw_count {
    my ($node, $key) = @_;
    my $raw = $c->cli_on($node, 'GET', $key);
    return 'no state' unless length $raw == 16;
    my (undef, $n) = unpack 'd<d<', $raw;
    return $n;
}

sub state_keys {
    my ($node, $v) = @_;
    return $c->keys_on($node, "rl:{$v}:*");
}

sub bad_lines {
    return grep { /exited on signal|\[alert\]|\[crit\]|\[emerg\]/ }
           split /\n/, $ng->error_log_text;
}

# both workers load the map and connect: decisions start (fresh key
# values each time; a worker still starting may answer ERROR)
my $w = 0;
my @last;
ok(wait_until(sub {
    @last = map { code_status(get_as($_, 'warm' . ++$w)) }
            ('/fw', '/k') x 4;
    return !grep { /ERROR/ } @last;
}, timeout => 10, interval => 0.1), 'decisions start within 10 s')
    or diag("last: @last");

# ------------------------------------------------------------ (g) metrics

for my $z (qw(c ck)) {
    my $up;
    wait_until(sub { ($up = metric_value($port, "rl_store_up{zone=\"$z\"}"))
                     == 1 }, timeout => 5);
    is($up, 1, "rl_store_up{zone=\"$z\"} 1 with every node up");
}

# one connection per worker per master and store (c and ck differ in
# timeouts: a store each): 2 x 2 on each master; none on a replica (zone
# c learned them all from one seed, and keeps no replica)
for my $i (0 .. 2) {
    my $n;
    wait_until(sub { ($n = $M[$i]->client_count('ngx_rl')) == 4 },
               timeout => 5);
    is($n, 4, "master $i: 4 connections (2 workers x 2 stores)");
    my @r = map { $_->client_count('ngx_rl') } $c->replicas_of($M[$i]);
    is("@r", '0', "replica of master $i: no connection");
}

# ------------------------------------------------------------ (a) 5 of 7

my @FW = ('200 PASSED 4', '200 PASSED 3', '200 PASSED 2', '200 PASSED 1',
          '200 PASSED 0', '429 REJECTED 0', '429 REJECTED 0');

my @va = map { $c->value_on($_, prefix => 'a') } @M;
my %got;
for my $round (1 .. 7) {
    push @{ $got{$_} }, csr(get_as('/fw', $_)) for @va;
}
for my $i (0 .. 2) {
    is_deeply($got{ $va[$i] }, \@FW,
              "(a) key value $va[$i] on master $i: 5 of 7 pass")
        or diag(explain $got{ $va[$i] });
}
for my $i (0 .. 2) {
    my $v = $va[$i];
    for my $j (0 .. 2) {
        my @k = state_keys($M[$j], $v);
        if ($i == $j) {
            is(scalar @k, 1, "(a) $v: its state key is on master $j");
            like($k[0] // '', qr/^rl:\{\Q$v\E\}:[0-9a-f]{16}$/,
                 "(a) $v: named PREFIX{VALUE}:RULEID");
            is(fw_count($M[$j], $k[0] // ''), 5, "(a) $v: it counts 5");
        } else {
            is(scalar @k, 0, "(a) $v: no state key on master $j")
                or diag("@k");
        }
    }
}

# all at once: batches mix key values of three masters
my @vp = map { $c->value_on($_, prefix => 'p') } @M;
my @paths = map { map { "/fwa?k=$_" } @vp } 1 .. 7;
my @res = http_parallel($port, \@paths, concurrency => scalar @paths,
                        full => 1);
for my $i (0 .. 2) {
    my @mine = map { $res[$_] }
               grep { $paths[$_] eq "/fwa?k=$vp[$i]" } 0 .. $#paths;
    is(status_counts(@mine), '200 PASSED x5, 429 REJECTED x2',
       "(a) 7 at once on $vp[$i] (master $i): 5 pass");
}

# many slots in one turn: a flush puts each call in its slot's batch in
# one pass (src/redis/batch.cpp SlotBuckets), each slot's calls in order
my @many = map { "m$_" } 1 .. 30;
@paths = map { my $v = $_; map { "/fwa?k=$v" } 1 .. 7 } @many;
@res = http_parallel($port, \@paths, concurrency => 70, full => 1);
my @wrong = grep {
    my $v = $_;
    status_counts(map { $res[$_] } grep { $paths[$_] eq "/fwa?k=$v" }
                  0 .. $#paths) ne '200 PASSED x5, 429 REJECTED x2'
} @many;
is("@wrong", '', '(a) 30 key values (30 slots), 7 requests each at '
   . 'once: 5 of each pass');

# ------------------------------------------------------------ (b) stacked

# the tight rule's key value on one master, the loose one's on another,
# then the other way round
for my $case ([ 0, 1 ], [ 1, 0 ]) {
    my ($ma, $mb) = @$case;
    my $a = $c->value_on($M[$ma], prefix => 'sa');
    my $b = $c->value_on($M[$mb], prefix => 'sb');
    my @st = map { code_status(get_as('/stack', undef, 'X-A' => $a,
                                      'X-B' => $b)) } 1 .. 6;
    is_deeply(\@st, [ ('200 PASSED') x 3, ('429 REJECTED') x 3 ],
              "(b) a on master $ma, b on master $mb: 3 pass, then 429")
        or diag(explain \@st);
    my $res = get_as('/b', undef, 'X-B' => $b);
    is(csr($res), '200 PASSED 96',
       "(b) b counted only the 3 admitted requests (100 - 3 - this one)");
    is(scalar state_keys($M[$mb], $b), 1, "(b) b's state on master $mb");
    is(scalar state_keys($M[$ma], $b), 0, "(b) and not on master $ma");
}

# ------------------------------------------------------------ (h) leases

{
    # (a lease of 6 s outlives the 120 requests on a loaded host: one
    # that ended meanwhile on the other worker, its return a moment late
    # on that worker's connection, would make one figure read less,
    # docs/leases.md)
    my @vl = map { $c->value_on($_, prefix => 'l') } @M;
    my %left;
    for my $round (1 .. 40) {
        push @{ $left{$_} },
             get_as('/leased', $_)->{headers}{'x-ratelimit-remaining'} // '-'
            for @vl;
    }
    for my $i (0 .. 2) {
        is_deeply($left{ $vl[$i] }, [ map { 1000 - $_ } 1 .. 40 ],
                  "(h) $vl[$i] on master $i, leased: figures as in exact "
                  . 'mode');
    }
    my $units = sub { metric_value($port,
                          "rl_lease_units_total{zone=\"cl\",use=\"$_[0]\"}") };
    ok($units->('spent') > 0, '(h) leases were spent ('
       . $units->('spent') . ' units)');
    ok(wait_until(sub { $units->('granted') ==
                        $units->('spent') + $units->('returned') },
                  timeout => 20),
       '(h) every lease ended: granted = spent + returned');
    for my $i (0 .. 2) {
        my ($k) = state_keys($M[$i], $vl[$i]);
        is(fw_count($M[$i], $k // ''), 40,
           "(h) master $i counts exactly the 40 requests served");
    }
}

is_deeply([ bad_lines() ], [], 'no crash or alert so far');

# ------------------------------------------------------------ (c) MOVED

{
    my $v = $c->value_on($M[0], prefix => 'm');
    my $slot = $c->slot_of_value($v);
    my @st = map { csr(get_as('/fw', $v)) } 1 .. 3;
    is_deeply(\@st, [ @FW[0 .. 2] ], "(c) $v: 3 pass on master 0")
        or diag(explain \@st);

    $c->migrate_slot($slot, $M[1]);
    is($c->master_for_slot($slot)->port, $M[1]->port,
       "(c) slot $slot now on master 1");
    like($c->cli_on($M[0], 'GET', "rl:{$v}:x"), qr/^MOVED $slot /,
         '(c) master 0 answers MOVED for it');

    @st = map { csr(get_as('/fw', $v)) } 4 .. 7;
    is_deeply(\@st, [ @FW[3 .. 6] ],
              '(c) after MOVED: decided, and the count carried over')
        or diag(explain \@st);
    is(scalar state_keys($M[1], $v), 1, '(c) the state is on master 1');
    is(scalar state_keys($M[0], $v), 0, '(c) and no longer on master 0');
    # a fresh value in the moved slot's old neighbourhood still works
    my $o = $c->value_on($M[0], prefix => 'mo');
    is(csr(get_as('/fw', $o)), $FW[0], '(c) master 0 still decides its own');
    is_deeply([ bad_lines() ], [], '(c) no crash or alert in the error log');
}

# ------------------------------------------------------------ (d) ASK

{
    my $v = $c->value_on($M[1], prefix => 'q');
    my $slot = $c->slot_of_value($v);
    my @st = map { csr(get_as('/fw', $v)) } 1 .. 2;
    is_deeply(\@st, [ @FW[0 .. 1] ], "(d) $v: 2 pass on master 1")
        or diag(explain \@st);
    my ($key) = state_keys($M[1], $v);

    $c->migrate_slot($slot, $M[2], stop_after_migrate => 1);
    like($c->cli_on($M[1], 'GET', $key), qr/^ASK $slot /,
         '(d) the source answers ASK');
    is($c->master_for_slot($slot)->port, $M[1]->port,
       '(d) the slot is still the source\'s in the map');

    # the call follows the ASK to the target, with ASKING; but Redis
    # refuses a call of several keys of a slot being imported when some
    # are missing there (the value's block key always is): the request
    # gets the failure policy, at once, and counts nothing (the block key
    # is among the call's keys: TRYAGAIN; a script that read it
    # undeclared was refused as "non local key" by Redis, "undeclared
    # keys were accessed during rehashing of the slot" by Valkey 8)
    my $t0 = now();
    my @during = map { code_status(get_as('/fw', $v)) } 1 .. 2;
    is_deeply(\@during, [ '200 ERROR', '200 ERROR' ],
              '(d) during the migration: the failure policy (open)')
        or diag(explain \@during);
    cmp_ok(now() - $t0, '<', 2, '(d) at once, not at timeout=5s');
    my $target = $M[2]->port;
    like($ng->error_log_text,
         qr/redis 127\.0\.0\.1:$target replied: .*(?:TRYAGAIN|non local key|undeclared keys were accessed during rehashing)/,
         '(d) the ASK was followed to the target, which refused');

    $c->finish_migration($slot);
    is($c->master_for_slot($slot)->port, $M[2]->port,
       "(d) slot $slot now on master 2");
    @st = map { csr(get_as('/fw', $v)) } 3 .. 7;
    is_deeply(\@st, [ @FW[2 .. 6] ],
              '(d) after the migration: the count carried over')
        or diag(explain \@st);
}

# ------------------------------------------------------------ (e) failover

{
    my $old = $M[2];
    my $v = $c->value_on($old, prefix => 'f');
    my @st = map { csr(get_as('/fw', $v)) } 1 .. 2;
    is_deeply(\@st, [ @FW[0 .. 1] ], "(e) $v: 2 pass on master 2")
        or diag(explain \@st);

    my $new = $c->failover($old);
    ok(!$c->is_master($old), '(e) master 2 is a replica now');

    my ($res, @errors);
    my $ok = wait_until(sub {
        $res = get_as('/fw', $v);
        return 1 if code_status($res) ne '200 ERROR';
        push @errors, $res;
        return 0;
    }, timeout => 10, interval => 0.1);
    ok($ok, '(e) decisions go on after the failover')
        or diag('last: ' . csr($res));
    diag(scalar(@errors) . ' ERROR answer(s) before that') if @errors;
    @st = (csr($res), map { csr(get_as('/fw', $v)) } 4 .. 6);
    is_deeply(\@st, [ @FW[2 .. 5] ],
              '(e) the count carried over to the promoted replica')
        or diag(explain \@st);
    is(scalar state_keys($new, $v), 1, '(e) the state is on the new master');
    # each store (per worker, per zone) learns the failover from the
    # first MOVED its requests meet: requests to both zones, on values
    # of the new master, until both workers' stores have moved
    my ($n, $m);
    wait_until(sub {
        for my $path ('/fw', '/k') {
            get_as($path, $c->value_on($new, prefix => 'm')) for 1 .. 2;
        }
        $n = $old->client_count('ngx_rl');
        $m = $new->client_count('ngx_rl');
        return $n == 0 && $m == 4;
    }, timeout => 10, interval => 0.05);
    is($n, 0, '(e) the old master, a replica now, is let go');
    is($m, 4, '(e) the new master has the connections');

    my $up;
    wait_until(sub { ($up = metric_value($port, 'rl_store_up{zone="c"}'))
                     == 1 }, timeout => 5);
    is($up, 1, '(e) rl_store_up{zone="c"} 1 after the failover');
    $M[2] = $new;
}

# ------------------------------------------------------------ (f) kill

{
    my $dead = $M[1];
    my $v = $c->value_on($dead, prefix => 'x');
    is(code_status(get_as('/k', $v)), '200 PASSED', "(f) $v: passes");

    $c->kill_master($dead, wait => 0);
    my $max = 0;
    my $res = get_as('/k', $v);
    is(code_status($res), '200 ERROR',
       '(f) master killed: failure=open, 200 ERROR');
    $max = $res->{elapsed};
    for (1 .. 3) {
        $res = get_as('/k', $v);
        $max = $res->{elapsed} if $res->{elapsed} > $max;
    }

    my $prom = $c->wait_promoted($dead, timeout => 20);
    my $t_prom = now();
    my $ok = wait_until(sub {
        $res = get_as('/k', $v);
        $max = $res->{elapsed} if $res->{elapsed} > $max;
        return code_status($res) ne '200 ERROR';
    }, timeout => 10, interval => 0.1);
    my $after = now() - $t_prom;
    ok($ok, '(f) decisions resume after the promotion')
        or diag('last: ' . csr($res));
    ok($after < 5, sprintf('(f) within about 2 s of it (%.2fs)', $after));
    like(csr($res), qr/^200 PASSED [34]$/,
         '(f) the first decision passes (the count replicated or not)');
    ok($max < 2.5, sprintf('(f) every answer within timeout=1s + slack '
                           . '(slowest %.2fs)', $max));
    is(scalar state_keys($prom, $v), 1, '(f) the state is on the promoted '
                                        . 'replica');
    my $o = $c->value_on($M[0], prefix => 'xo');
    is(code_status(get_as('/k', $o)), '200 PASSED',
       '(f) another master decides as before');
}

is_deeply([ bad_lines() ], [], 'no crash or alert in the error log');
$ng->stop;
$c->stop;

done_testing();
