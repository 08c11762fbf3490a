# Host names of a cluster's seeds, of sentinels, and of the master
# sentinels name, through nginx's resolver: each is looked up through
# the http block's `resolver` (never a blocking lookup) when a
# connection is made. t/046-resolver.t does the same for redis=.
#
# A DNS server of the test's (t/lib/RlTest/Dns.pm) answers "localhost":
# first 127.0.0.3, where nothing listens, then 127.0.0.1, where the
# servers are. The name resolved to 127.0.0.1 when the configuration
# was loaded, so decisions that wait for the DNS server's change show
# that the resolver's answer is the one used:
#   (a) cluster=localhost:P1,localhost:P2 (3 masters): the seeds'
#       address from the resolver: no map (the failure policy) until
#       the name points at the cluster, then decisions on the slot's
#       master
#   (b) sentinel=localhost:S1,... of a deployment whose sentinels
#       announce host names (announce-hostnames yes, every server known
#       as "localhost"): decisions once the name points at them, on the
#       master the sentinels name "localhost:P" (its address from the
#       resolver too)
#   (c) numeric sentinels naming the master "localhost:P": the master's
#       name through the resolver (127.0.0.3: unavailable, then
#       127.0.0.1); a SENTINEL FAILOVER (+switch-master localhost P2)
#       followed within 2 s of the sentinels naming the new master
#   (d) the same without a resolver: the failure policy, and the log
#       says a resolver is needed
# About 20 s.

use lib 't/lib';
use RlTest;
use RlTest::Cluster;
use RlTest::Dns;
use RlTest::Sentinel;

my $dns = RlTest::Dns->new(table => { localhost => '127.0.0.3' });

my $server = <<'CONF';
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /t {
            rl_rule zone=z key=$arg_k rate=5r/d algorithm=fixed_window;
            empty_gif;
        }
    }
CONF
my $resolver = <<'CONF';
    resolver 127.0.0.1:$Dns valid=1s ipv6=off;
    resolver_timeout 1s;
CONF

my $FIVE = '200 PASSED x5, 429 REJECTED x2';

# an nginx (2 workers) with zone z as $zone, and the resolver unless
# no_resolver
sub nginx_with {
    my ($zone, %opt) = @_;
    my $ng = start_nginx(workers => 2, start => 0,
                         vars => { Dns => $dns->port, %{ $opt{vars} } },
                         config => ($opt{no_resolver} ? '' : $resolver)
                                   . $zone . $server);
    my ($ok, $msg) = $ng->try_start;
    ok($ok, "$opt{name}: nginx starts") or diag($msg);
    return $ok ? $ng : undef;
}

sub seven {
    my ($ng, $k) = @_;
    return status_counts(map { http_get($ng->port, "/t?k=$k",
                                        -timeout => 10) } 1 .. 7);
}

# requests on fresh key values until one is decided (PASSED): seconds
# it took, or undef
my $fresh = 0;
sub until_decided {
    my ($ng, $timeout) = @_;
    my $t0 = now();
    my $ok = wait_until(sub {
        code_status(http_get($ng->port, '/t?k=w' . ++$fresh,
                             -timeout => 10)) eq '200 PASSED';
    }, timeout => $timeout // 10, interval => 0.1);
    return $ok ? now() - $t0 : undef;
}

sub bad_lines {
    my ($ng) = @_;
    return grep { /exited on signal|\[alert\]|\[crit\]|\[emerg\]/ }
           split /\n/, $ng->error_log_text;
}

# while the DNS server says 127.0.0.3: 3 requests, each the failure
# policy (open)
sub refused_meanwhile {
    my ($ng, $what) = @_;
    my @st = map { code_status(http_get($ng->port, "/t?k=x$_",
                                        -timeout => 10)) } 1 .. 3;
    is("@st", '200 ERROR 200 ERROR 200 ERROR',
       "$what: the name at 127.0.0.3: the failure policy");
}

# ------------------------------------------------------------ (a)

{
    my $c = RlTest::Cluster->new(masters => 3);
    my @m = $c->masters;
    my $seeds = join ',', map { 'localhost:' . $_->port } @m[0, 1];
    $dns->set(localhost => '127.0.0.3');
    my $ng = nginx_with(<<'CONF', name => '(a)', vars => { Seeds => $seeds });
    rl_zone z cluster=$Seeds timeout=5s connect_timeout=1s failure=open;
CONF
    if ($ng) {
        refused_meanwhile($ng, '(a) cluster seeds');
        my $asked = $dns->queries('localhost');
        ok($asked >= 1, "(a) the DNS server was asked ($asked)");
        $dns->set(localhost => '127.0.0.1');
        my $took = until_decided($ng);
        ok(defined $took, '(a) the name at 127.0.0.1: decisions ('
           . (defined $took ? sprintf('%.2fs', $took) : 'never') . ')')
            or diag($ng->error_log_text);
        my $v = $c->value_on($m[2], prefix => 'a');
        is(seven($ng, $v), $FIVE, "(a) $v: 5 of 7 pass");
        ok(scalar(grep { /\Q{$v}\E/ } $c->keys_on($m[2], 'rl:*')) == 1,
           "(a) its state on the slot's master, learnt from the seeds");
        is_deeply([ bad_lines($ng) ], [], '(a) no crash or alert');
        $ng->stop;
    }
    $c->stop;
}

# ------------------------------------------------------------ (b)

my $S = RlTest::Sentinel->new(replicas => 1, sentinels => 3,
                              hostnames => 1, down_after => 1000);
my @SN = $S->sentinels;
is(($SN[0]->cli('SENTINEL', 'get-master-addr-by-name', 'mymaster')
    =~ /^(\S+)/)[0], 'localhost',
   'the sentinels name the master by host name');

{
    $dns->set(localhost => '127.0.0.3');
    my $names = join ',', map { 'localhost:' . $_->port } @SN;
    my $ng = nginx_with(<<'CONF', name => '(b)', vars => { S => $names });
    rl_zone z sentinel=$S master=mymaster timeout=5s connect_timeout=1s
            failure=open;
CONF
    if ($ng) {
        refused_meanwhile($ng, '(b) sentinels');
        like($ng->error_log_text,
             qr/rl_zone "z": redis master "mymaster" unavailable: cannot connect: no sentinel named the master of "mymaster" \(127\.0\.0\.3:\d+: Connection refused\)/,
             '(b) the log names the address the resolver gave');
        $dns->set(localhost => '127.0.0.1');
        my $took = until_decided($ng);
        ok(defined $took, '(b) the name at 127.0.0.1: decisions ('
           . (defined $took ? sprintf('%.2fs', $took) : 'never') . ')')
            or diag($ng->error_log_text);
        my $M = $S->master;
        # (both workers connected before the seven: one that decided
        # says nothing of the other, later on a loaded host)
        ok(wait_until(sub { $M->client_count('ngx_rl') == 2 }, timeout => 5),
           '(b) both workers on the master the sentinels name');
        is(seven($ng, 'b1'), $FIVE, '(b) 5 of 7 pass');
        is_deeply([ bad_lines($ng) ], [], '(b) no crash or alert');
        $ng->stop;
    }
}

# ------------------------------------------------------------ (c)

my $numeric = join ',', map { '127.0.0.1:' . $_->port } @SN;
{
    $dns->set(localhost => '127.0.0.3');
    my $ng = nginx_with(<<'CONF', name => '(c)', vars => { S => $numeric });
    rl_zone z sentinel=$S master=mymaster timeout=5s connect_timeout=1s
            failure=open;
CONF
    if ($ng) {
        my $P = $S->master->port;
        refused_meanwhile($ng, '(c) the master\'s name');
        like($ng->error_log_text,
             qr/rl_zone "z": redis localhost:$P unavailable: cannot connect/,
             '(c) the log names the master as the sentinels do');
        my $asked = $dns->queries('localhost');
        $dns->set(localhost => '127.0.0.1');
        my $took = until_decided($ng);
        ok(defined $took, '(c) the name at 127.0.0.1: decisions ('
           . (defined $took ? sprintf('%.2fs', $took) : 'never') . ')')
            or diag($ng->error_log_text);
        ok($dns->queries('localhost') > $asked,
           '(c) the master\'s name was asked of the DNS server');
        my $old = $S->master;
        ok(wait_until(sub { $old->client_count('ngx_rl') == 2 },
                      timeout => 5), '(c) both workers on the master');
        is(seven($ng, 'c1'), $FIVE, '(c) 5 of 7 pass');

        my ($new, $t) = $S->failover;
        my $moved = wait_until(sub {
            code_status(http_get($ng->port, '/t?k=n' . ++$fresh)) ne ''
                && $new->client_count('ngx_rl') == 2;
        }, timeout => 10, interval => 0.02);
        my $bound = a_second() + 0.5;     # 2 s; 3 s under the sanitizers
        ok($moved && now() - $t < $bound,
           sprintf('(c) SENTINEL FAILOVER: both workers on the new master '
                   . 'within %g s (%s)', $bound,
                   $moved ? sprintf('%.2fs', now() - $t) : 'never'))
            or diag($ng->error_log_text);
        is(seven($ng, 'c2'), $FIVE, '(c) 5 of 7 pass on the new master');
        my $np = $new->port;
        like($ng->error_log_text,
             qr/the master of "mymaster" switched to localhost:$np \(was localhost:$P\)/,
             '(c) the switch is logged with the names');
        is_deeply([ bad_lines($ng) ], [], '(c) no crash or alert');
        $ng->stop;
    }
}

# ------------------------------------------------------------ (d)

{
    my $ng = nginx_with(<<'CONF', name => '(d)', no_resolver => 1,
    rl_zone z sentinel=$S master=mymaster timeout=5s connect_timeout=1s
            failure=open;
CONF
                        vars => { S => $numeric });
    if ($ng) {
        my @st = map { code_status(http_get($ng->port, "/t?k=d$_",
                                            -timeout => 10)) } 1 .. 3;
        is("@st", '200 ERROR 200 ERROR 200 ERROR',
           '(d) no resolver: the failure policy');
        like($ng->error_log_text,
             qr/rl_zone "z": redis master "mymaster" unavailable: cannot connect: the sentinels name the master of "mymaster" by host name, localhost:\d+ \(announce-hostnames\): following it needs a resolver in the http block/,
             '(d) the log says a resolver is needed');
        is_deeply([ bad_lines($ng) ], [], '(d) no crash or alert');
        $ng->stop;
    }
}

$S->stop;
$dns->stop;
done_testing();
