# Redis Sentinel: `rl_zone NAME sentinel=HOST:PORT[,...] master=NAME`.
#
# Each worker asks the sentinels for the master (SENTINEL
# get-master-addr-by-name), connects, checks ROLE, and follows a
# failover: subscribed to +switch-master on one sentinel, and asking
# again (every second at most) while the master cannot be reached.
#
# First nginx -t: the errors of sentinel= and its parameters, and a
# valid zone whose sentinels are unreachable (requests then get the
# failure policy, quickly). Then one deployment (t/lib/RlTest/
# Sentinel.pm): a master with two replicas, three sentinels (quorum 2,
# down-after-milliseconds 1000), passwords on both (password= for the
# master, sentinel_password= for the sentinels), and one nginx with 2
# workers on a zone with db=2 and a prefix:
#   (a) limits enforced, the state in db 2 of the master, one connection
#       per worker to the master and none to a replica, rl_store_up 1,
#       TCP keepalive on the connections to the master and the sentinels
#   (b) one sentinel down: no effect (the watch moves to another)
#   (c) SENTINEL FAILOVER (that sentinel still down): within 2 s of the
#       sentinels naming the new master, decisions are made there (its
#       keys appear), and the old master is let go
#   (d) nginx -s reload during a failover: the new workers decide on
#       the new master, the old ones exit, no connection is left over
#   (e) the master killed: within 2 s of the sentinels naming the
#       promoted replica, decisions are made there
#   (f) every sentinel down, the master up: it keeps serving, also
#       after its connections are dropped (the last master named is
#       used, a warning says so)
# and, on a second nginx, answers that give no master: a master name no
# sentinel knows, a wrong sentinel password, a sentinel that names a
# replica (ROLE: never used). With a module built with TLS: a sentinel
# and a master reached over TLS only (the sentinel on its TLS port,
# naming the master's TLS port).
# No worker crashes, nothing is logged at alert. About 25 s.

use lib 't/lib';
use RlTest;
use RlTest::Sentinel;
use RlTest::Tls;
use RlTest::Proc qw(tcp_of);

# ------------------------------------------------------------ nginx -t


# [name, rl_zone line, what the [emerg] line must hold]
my @bad = (
    [ 'sentinel= without master=',
      'rl_zone s sentinel=127.0.0.1:26379;',
      [ '"sentinel=127.0.0.1:26379" needs "master"' ] ],
    [ 'master= without sentinel=',
      'rl_zone s redis=127.0.0.1:6379 master=m;',
      [ '"master" needs "sentinel"' ] ],
    [ 'sentinel= with redis=',
      'rl_zone s sentinel=127.0.0.1:26379 redis=127.0.0.1:6379 master=m;',
      [ 'redis=127.0.0.1:6379', 'exclude each other' ] ],
    [ 'redis= with sentinel=',
      'rl_zone s redis=127.0.0.1:6379 sentinel=127.0.0.1:26379 master=m;',
      [ 'sentinel=127.0.0.1:26379', 'exclude each other' ] ],
    [ 'cluster= with sentinel=',
      'rl_zone s cluster=127.0.0.1:7000 sentinel=127.0.0.1:26379 master=m;',
      [ 'sentinel=127.0.0.1:26379', 'exclude each other' ] ],
    [ 'sentinel_password= without sentinel=',
      'rl_zone s redis=127.0.0.1:6379 sentinel_password=x;',
      [ '"sentinel_password" needs "sentinel"' ] ],
    [ 'sentinel_username= without sentinel_password=',
      'rl_zone s sentinel=127.0.0.1 master=m sentinel_username=u;',
      [ '"sentinel_username=u" needs "sentinel_password"' ] ],
    [ 'an empty master',
      'rl_zone s sentinel=127.0.0.1 master=;', [ 'invalid master ""' ] ],
    [ 'a unix socket',
      'rl_zone s sentinel=unix:/tmp/x.sock master=m;',
      [ 'a sentinel is reached over TCP' ] ],
    [ 'an empty address',
      'rl_zone s sentinel=127.0.0.1:1,,127.0.0.1:2 master=m;',
      [ 'invalid address' ] ],
);
for my $b (@bad) {
    my ($name, $zone, $want) = @$b;
    my ($ok, $text) = zone_config_test($zone);
    ok(!$ok, "nginx -t: $name fails");
    my ($line) = grep { /\[emerg\]/ } split /\n/, $text;
    $line //= '';
    like($line, qr/\Q$_\E/, "nginx -t: $name: the error names $_")
        for @$want;
    like($line, qr/ in \S+nginx\.conf:\d+/, "nginx -t: $name: file:line");
}

# sentinels where nothing listens: nginx -t needs none; requests get
# the policy, quickly
my ($dead1, $dead2) = (free_port(), free_port());
{
    my $zone = "rl_zone s sentinel=127.0.0.1:$dead1,127.0.0.1:$dead2"
             . ' master=mymaster password=p sentinel_username=u'
             . ' sentinel_password=sp db=3 prefix=x: timeout=1s'
             . ' connect_timeout=1s failure=open;';
    my ($ok, $text) = zone_config_test($zone);
    ok($ok, 'nginx -t: a sentinel zone with every option and unreachable '
            . 'sentinels passes') or diag($text);
    my $ng = start_nginx(start => 0, config => <<"CONF");
    $zone
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /t { rl_rule zone=s key=\$arg_k rate=5r/d; empty_gif; }
    }
CONF
    ($ok, $text) = $ng->try_start;
    ok($ok, 'nginx starts with unreachable sentinels') or diag($text);
    for my $i ($ok ? (1 .. 3) : ()) {
        my $res = http_get($ng->port, "/t?k=x$i", -timeout => 10);
        is(code_status($res), '200 ERROR',
           "unreachable sentinels, failure=open: 200 ERROR ($i)");
        ok($res->{elapsed} < 2.5, 'within timeout + slack ('
           . sprintf('%.2fs', $res->{elapsed}) . ')');
    }
    like($ng->error_log_text,
         qr/rl_zone "s": redis master "mymaster" unavailable: cannot connect: no sentinel named the master of "mymaster" \(127\.0\.0\.1:\d+: .*\); requests get failure=open/,
         'one line says why');
    $ng->stop(name => 'nginx with unreachable sentinels');
}

# ------------------------------------------------------------ deployment

my $S = RlTest::Sentinel->new(replicas => 2, sentinels => 3,
                              password => 'pw', sentinel_password => 'spw',
                              down_after => 1000);
my @SN = $S->sentinels;
my $ng = start_nginx(workers => 2, start => 0,
                     vars => { Sentinels => $S->addrs },
                     config => <<'CONF');
    rl_zone s sentinel=$Sentinels master=mymaster password=pw
            sentinel_password=spw db=2 prefix=sx: timeout=5s
            connect_timeout=1s failure=open;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /t {
            rl_rule zone=s key=$arg_k rate=5r/d algorithm=fixed_window;
            empty_gif;
        }
        location /metrics { rl_metrics; }
    }
CONF
{
    my ($ok, $msg) = $ng->try_start;
    unless (ok($ok, 'nginx starts on the sentinels')) {
        diag($msg);
        done_testing();
        exit;
    }
}
my $port = $ng->port;

sub get { http_get($port, "/t?k=$_[0]", -timeout => 10) }

sub seven {
    my ($k) = @_;
    return status_counts(map { get($k) } 1 .. 7);
}

my $FIVE = '200 PASSED x5, 429 REJECTED x2';

# the state keys of key value $k in db 2 of server $r
sub keys_on {
    my ($r, $k) = @_;
    return 0 unless $r->pid;
    return scalar grep { /^sx.*\Q$k\E/ }
           split /\n/, $r->cli('-n', 2, 'KEYS', 'sx*');
}

# the module's subscriptions, on the live sentinels
sub watchers {
    my $n = 0;
    for my $s (grep { $_->pid } @SN) {
        $n += grep { /name=ngx_rl\b/ && /\bsub=[1-9]/ }
              split /\n/, $s->cli('CLIENT', 'LIST');
    }
    return $n;
}

sub bad_lines {
    return grep { /exited on signal|\[alert\]|\[crit\]|\[emerg\]/ }
           split /\n/, $ng->error_log_text;
}

# requests on fresh key values until one's state appears on $r:
# seconds since $t, or undef
my $fresh = 0;
sub decided_on {
    my ($r, $t, $timeout) = @_;
    my $ok = wait_until(sub {
        my $k = 'n' . ++$fresh;
        get($k);
        return keys_on($r, $k) == 1;
    }, timeout => $timeout // 10, interval => 0.02);
    return $ok ? now() - $t : undef;
}

# a failover followed within 2 s (3 s under the sanitizers: a reload's
# new workers start slower there)
sub within_2s {
    my ($what, $took) = @_;
    my $bound = a_second() + 0.5;
    ok(defined $took && $took < $bound,
       sprintf('%s: decisions there within %g s (%s)', $what, $bound,
               defined $took ? sprintf('%.2fs', $took) : 'never'));
}

# ------------------------------------------------------------ (a)

my $M = $S->master;
my @last;
ok(wait_until(sub {
    @last = map { code_status(get('warm' . ++$fresh)) } 1 .. 4;
    return !grep { /ERROR/ } @last;
}, timeout => 10, interval => 0.1), '(a) decisions start') or diag("@last");
is(seven('a1'), $FIVE, '(a) 5 of 7 pass');
is(keys_on($M, 'a1'), 1, '(a) the state is in db 2 of the master');
ok(wait_until(sub { $M->client_count('ngx_rl') == 2 }, timeout => 5),
   '(a) one connection per worker to the master');
is(join(' ', map { $_->client_count('ngx_rl') }
             grep { $_ != $M } $S->servers), '0 0',
   '(a) none to a replica');
is(metric_value($port, 'rl_store_up{zone="s"}'), 1, '(a) rl_store_up 1');
ok(wait_until(sub { watchers() == 2 }, timeout => 5),
   '(a) each worker watches one sentinel');
# TCP keepalive on both: a sentinel's watch carries nothing until a
# failover, and a master or sentinel gone without a reset (a NAT's idle
# timeout, a host powered off) must be noticed meanwhile
# (a connection that is sending shows its retransmission timer instead:
# polled)
{
    my %ports = map { $_->port => 1 } $M, @SN;
    my @conns;
    ok(wait_until(sub {
        @conns = grep { $ports{ $_->{peer} } }
                 map { tcp_of($_) } $ng->worker_pids;
        return @conns >= 4 && !grep { !$_->{keepalive} } @conns;
    }, timeout => 5, interval => 0.1),
       '(a) the workers\' connections to the master and the sentinels have '
       . 'TCP keepalive')
        or diag(join ', ', map { "$_->{peer}: keepalive $_->{keepalive}" }
                                @conns);
}

# ------------------------------------------------------------ (b)

$SN[0]->stop;
is(seven('b1'), $FIVE, '(b) one sentinel down: 5 of 7 pass, no ERROR');
ok(wait_until(sub { watchers() == 2 }, timeout => 5),
   '(b) the workers watch the other sentinels');

# ------------------------------------------------------------ (c)

{
    my ($new, $t) = $S->failover;
    isnt($new->port, $M->port, '(c) SENTINEL FAILOVER: a new master');
    within_2s('(c) failover', decided_on($new, $t));
    is(seven('c1'), $FIVE, '(c) 5 of 7 pass on the new master');
    is(keys_on($new, 'c1'), 1, '(c) its state there');
    is(keys_on($M, 'c1'), 0, '(c) and not on the old master');
    ok(wait_until(sub { $M->client_count('ngx_rl') == 0
                        && $new->client_count('ngx_rl') == 2 },
                  timeout => 5),
       '(c) the old master is let go, the new one has both workers');
    like($ng->error_log_text,
         qr/the master of "mymaster" switched to 127\.0\.0\.1:${\ $new->port }/,
         '(c) the switch is logged');
    $M = $new;
}
is_deeply([ bad_lines() ], [], 'no crash or alert so far');

# ------------------------------------------------------------ (d)

$SN[0]->start;
$S->wait_ready;
{
    my $old = $S->failover(wait => 0);
    ok($ng->reload, '(d) nginx -s reload during a failover');
    my $reloaded = now();
    my ($new, $t) = $S->wait_moved($old);
    $t = $reloaded if $reloaded > $t;
    within_2s('(d) failover and reload', decided_on($new, $t));
    is(seven('d1'), $FIVE, '(d) 5 of 7 pass on the new master');
    ok(wait_until(sub { $old->client_count('ngx_rl') == 0
                        && $new->client_count('ngx_rl') == 2 },
                  timeout => 5),
       '(d) 2 connections in all: none left by the old workers');
    $M = $new;
}

# ------------------------------------------------------------ (e)

$S->wait_ready;
{
    my $old = $M;
    my ($new, $t) = $S->kill_master;
    within_2s('(e) master killed', decided_on($new, $t));
    is(seven('e1'), $FIVE, '(e) 5 of 7 pass on the promoted replica');
    $M = $new;
}
is_deeply([ bad_lines() ], [], 'no crash or alert so far');

# ------------------------------------------------------------ (f)

$_->stop for @SN;
is(seven('f1'), $FIVE, '(f) every sentinel down: the master still decides');
$M->cli('CLIENT', 'KILL', 'TYPE', 'normal');
ok(wait_until(sub { $M->client_count('ngx_rl') == 2 }, timeout => 10),
   '(f) its connections dropped: both workers connect to it again')
    or diag($ng->error_log_text);
is(seven('f2'), $FIVE, '(f) and decide there');
like($ng->error_log_text,
     qr/no sentinel named the master of "mymaster" \(.*\): the last one named, 127\.0\.0\.1:${\ $M->port }, is used/,
     '(f) a warning says the last master named is used');
ok(metric_value($port, 'rl_store_reconnects_total{zone="s"}') > 0,
   'rl_store_reconnects_total counts the failovers');

is_deeply([ bad_lines() ], [], 'no crash or alert in the error log');
diag($ng->error_log_text) if $ENV{RL_SHOW_LOG};
$ng->stop;

# ------------------------------------------------------------ (g)

# no master from the sentinels: a name none knows, a wrong password, a
# sentinel naming a replica (SENTINEL MONITOR of a replica, on one)
$_->start for @SN;
my ($R) = grep { $_ != $M && $_->pid } $S->servers;
$S->scli($SN[1], 'SENTINEL', 'MONITOR', 'fake', '127.0.0.1', $R->port, 2);
my $ng2 = start_nginx(workers => 1, start => 0,
                      vars => { Sentinels => $S->addrs },
                      config => <<'CONF');
    rl_zone nope sentinel=$Sentinels master=nope password=pw
            sentinel_password=spw timeout=1s failure=open;
    rl_zone wrong sentinel=$Sentinels master=mymaster password=pw
            sentinel_password=wrong timeout=1s failure=open;
    rl_zone fake sentinel=$Sentinels master=fake password=pw
            sentinel_password=spw timeout=1s failure=open;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /nope { rl_rule zone=nope key=k rate=5r/d; empty_gif; }
        location /wrong { rl_rule zone=wrong key=k rate=5r/d; empty_gif; }
        location /fake { rl_rule zone=fake key=k rate=5r/d; empty_gif; }
        location /metrics { rl_metrics; }
    }
CONF
{
    my ($ok, $msg) = $ng2->try_start;
    ok($ok, '(g) nginx starts') or diag($msg);
    my %want = (
        nope  => qr/rl_zone "nope": redis master "nope" unavailable: cannot connect: no sentinel named the master of "nope" \(127\.0\.0\.1:\d+: knows no master "nope"\)/,
        wrong => qr/rl_zone "wrong": sentinel 127\.0\.0\.1:\d+ unavailable: WRONGPASS/,
        fake  => qr/rl_zone "fake": redis 127\.0\.0\.1:${\ $R->port } unavailable: not the master: ROLE says slave/,
    );
    for my $z (sort keys %want) {
        ok(wait_until(sub { $ng2->error_log_text =~ $want{$z} },
                      timeout => 5), "(g) $z: logged")
            or diag($ng2->error_log_text);
        my @st = map { code_status(http_get($ng2->port, "/$z")) } 1 .. 3;
        is("@st", '200 ERROR 200 ERROR 200 ERROR',
           "(g) $z: the failure policy");
    }
    is(metric_value($ng2->port, 'rl_store_up{zone="fake"}'), 0,
       '(g) the zone naming a replica is never up');
    $ng2->stop;
}
$S->scli($SN[1], 'SENTINEL', 'REMOVE', 'fake');
$S->stop;

# ------------------------------------------------------------ (h) TLS

my ($has_tls) = RlTest::Tls::module_has_tls();
if ($has_tls) {
    my $pki = RlTest::Tls::pki();
    my $m = start_redis(tls => $pki);
    # the sentinel reaches the master over TLS (tls-replication) and
    # names its TLS port; nginx reaches the sentinel on its TLS port
    my $conf = 'sentinel monitor tm 127.0.0.1 ' . $m->tls_port . " 1\n";
    my $st = RlTest::Redis->new(sentinel => $conf, tls => $pki,
                                args => [ '--tls-replication', 'yes' ]);
    ok(wait_until(sub {
        ($st->cli('SENTINEL', 'get-master-addr-by-name', 'tm') // '')
            =~ /\n${\ $m->tls_port }$/
    }, timeout => 10), '(h) the sentinel names the master\'s TLS port');
    my $ng3 = start_nginx(workers => 1, start => 0,
                          vars => { ST => $st->tls_port, CA => $pki->{ca} },
                          config => <<'CONF');
    rl_zone t sentinel=127.0.0.1:$ST master=tm tls tls_ca=$CA
            timeout=5s failure=open;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /t {
            rl_rule zone=t key=$arg_k rate=5r/d algorithm=fixed_window;
            empty_gif;
        }
    }
CONF
    my ($ok, $msg) = $ng3->try_start;
    ok($ok, '(h) nginx starts') or diag($msg);
    $port = $ng3->port;
    ok(wait_until(sub { code_status(get('tw' . ++$fresh)) eq '200 PASSED' },
                  timeout => 10, interval => 0.1),
       '(h) decisions through a TLS sentinel') or diag($ng3->error_log_text);
    is(seven('h1'), $FIVE, '(h) 5 of 7 pass');
    my $T = $m->tls_port;
    is(scalar(grep { /\bname=ngx_rl\b/ && /\bladdr=\S+:$T\b/ }
              split /\n/, $m->cli('CLIENT', 'LIST')), 1,
       '(h) the connection to the master is on its TLS port');
    $ng3->stop;
    $st->stop;
    $m->stop;
}

done_testing();
