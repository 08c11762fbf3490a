# Host names followed through nginx's resolver: where the http block has
# `resolver`, the host of redis= is looked up again through it (nginx's
# own non-blocking resolver, its valid= honoured) each time a connection
# is made; when the lookup fails, the last address stays in use, and a
# warning says so once.
#
# A small DNS server (t/lib/RlTest/Dns.pm, UDP on loopback) answers
# "localhost" from a table the test changes; two redis-servers listen on
# 127.0.0.2 and 127.0.0.3, same port. nginx (2 workers) has
# `resolver 127.0.0.1:PORT valid=1s`:
#   (a) the first connections go where the DNS server says (127.0.0.2),
#       not where the name resolved at load (127.0.0.1)
#   (b) a managed Redis failing over: the old primary becomes a replica
#       of the new one (REPLICAOF), the name resolves to the new one
#       (127.0.0.3): the requests that meet READONLY get the failure
#       policy, the module looks the name up again and decides at the
#       new address
#   (c) the DNS server stops answering, the connections are dropped:
#       the last address stays in use, one warning per worker (not one
#       per connection)
#   (d) it answers again (127.0.0.2): the module goes back there
#   (e) without `resolver`, the name resolved at load is the address
#       and the DNS server is never asked
# About 10 s.

use lib 't/lib';
use RlTest;
use RlTest::Dns;

my $dns = RlTest::Dns->new(table => { localhost => '127.0.0.2' });
my $P = free_port();
my $A = start_redis(host => '127.0.0.2', port => $P);
my $B = start_redis(host => '127.0.0.3', port => $P);

my $server = <<'CONF';
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /t {
            rl_rule zone=r key=$arg_k rate=5r/d algorithm=fixed_window;
            empty_gif;
        }
    }
CONF
my $ng = start_nginx(workers => 2, start => 0,
                     vars => { Dns => $dns->port, P => $P },
                     config => <<'CONF' . $server);
    resolver 127.0.0.1:$Dns valid=1s ipv6=off;
    resolver_timeout 1s;
    rl_zone r redis=localhost:$P timeout=5s connect_timeout=1s
            failure=open;
CONF
{
    my ($ok, $msg) = $ng->try_start;
    unless (ok($ok, 'nginx starts with a resolver')) {
        diag($msg);
        done_testing();
        exit;
    }
}
my $port = $ng->port;

sub get { http_get($port, "/t?k=$_[0]", -timeout => 10) }

# "200 PASSED x5, 429 REJECTED x2": seven requests on one key value
sub seven {
    my ($k) = @_;
    return status_counts(map { get($k) } 1 .. 7);
}

sub keys_on {
    my ($r, $k) = @_;
    return scalar grep { /\Q$k\E/ } split /\n/, $r->cli('KEYS', 'rl:*');
}

# drops the module's connections to $r until $cond holds (each drop
# makes each worker connect again, and so look the name up)
sub drop_until {
    my ($r, $cond, $timeout) = @_;
    return wait_until(sub {
        return 1 if $cond->();
        $r->cli('CLIENT', 'KILL', 'TYPE', 'normal');
        return 0;
    }, timeout => $timeout // 10, interval => 0.3);
}

sub count_log {
    my ($re) = @_;
    return scalar grep { /$re/ } split /\n/, $ng->error_log_text;
}

# ------------------------------------------------------------ (a)

ok(wait_until(sub { $A->client_count('ngx_rl') == 2 }, timeout => 10),
   '(a) both workers connect to 127.0.0.2, as the resolver says')
    or diag($ng->error_log_text);
is($B->client_count('ngx_rl'), 0, '(a) none to 127.0.0.3');
is(seven('a1'), '200 PASSED x5, 429 REJECTED x2', '(a) 5 of 7 pass');
is(keys_on($A, 'a1'), 1, '(a) the state is on 127.0.0.2');
ok($dns->queries('localhost') >= 1, '(a) the DNS server was asked');

# ------------------------------------------------------------ (b)

$dns->set(localhost => '127.0.0.3');
is($A->cli('REPLICAOF', '127.0.0.3', $P), 'OK',
   '(b) 127.0.0.2 is a replica of 127.0.0.3 now');
my @seen;
ok(wait_until(sub {
    # a key value each: a decision never meets the limit
    push @seen, code_status(get('bx' . scalar @seen));
    return $B->client_count('ngx_rl') == 2;
}, timeout => 10, interval => 0.05),
   '(b) requests meet READONLY: both workers connect to 127.0.0.3')
    or diag($ng->error_log_text);
ok(!grep({ !/^200 (ERROR|PASSED)$/ } @seen),
   '(b) meanwhile, the failure policy (open) or a decision: '
   . scalar(@seen) . ' requests');
is($A->client_count('ngx_rl'), 0, '(b) none left on 127.0.0.2');
is(seven('b1'), '200 PASSED x5, 429 REJECTED x2',
   '(b) 5 of 7 pass, decided there');
is(keys_on($B, 'b1'), 1, '(b) the state is on 127.0.0.3');
is(keys_on($A, 'b1'), 0, '(b) and not on 127.0.0.2');
like($ng->error_log_text,
     qr/rl_zone "r": "localhost" resolves to 127\.0\.0\.3 now \(was 127\.0\.0\.2\)/,
     '(b) the move is logged');
like($ng->error_log_text,
     qr/rl_zone "r": redis localhost:$P unavailable: not the master: READONLY/,
     '(b) and why: READONLY');
is($A->cli('REPLICAOF', 'NO', 'ONE'), 'OK', '(b) 127.0.0.2 a master again');

# ------------------------------------------------------------ (c)

$dns->silent(1);
my $asked = $dns->queries('localhost');
my $warning = qr/the resolver did not resolve "localhost" \(.*\): its last address, 127\.0\.0\.3, stays in use/;
ok(drop_until($B, sub { count_log($warning) == 2
                        && $B->client_count('ngx_rl') == 2 }, 15),
   '(c) the resolver silent: both workers warn, and connect to the last '
   . 'address')
    or diag($ng->error_log_text);
ok($dns->queries('localhost') > $asked, '(c) the name was asked for');
is(seven('c1'), '200 PASSED x5, 429 REJECTED x2',
   '(c) decisions go on at the last address');
is(keys_on($B, 'c1'), 1, '(c) the state is on 127.0.0.3');
# more connections made while it stays silent: no more warnings
$asked = $dns->queries('localhost');
drop_until($B, sub { $dns->queries('localhost') >= $asked + 2
                     && $B->client_count('ngx_rl') == 2 }, 15);
ok($dns->queries('localhost') >= $asked + 2,
   '(c) more lookups, unanswered');
is(count_log($warning), 2, '(c) still one warning per worker');

# ------------------------------------------------------------ (d)

$dns->silent(0);
$dns->set(localhost => '127.0.0.2');
ok(drop_until($B, sub { $A->client_count('ngx_rl') == 2 }, 15),
   '(d) the resolver answers again: back to 127.0.0.2')
    or diag($ng->error_log_text);
is(seven('d1'), '200 PASSED x5, 429 REJECTED x2', '(d) decided there');
is(keys_on($A, 'd1'), 1, '(d) the state is on 127.0.0.2');
like($ng->error_log_text, qr/the resolver resolves "localhost" again/,
     '(d) logged');

my @bad = grep { /exited on signal|\[alert\]|\[crit\]|\[emerg\]/ }
          split /\n/, $ng->error_log_text;
is_deeply(\@bad, [], 'no crash or alert in the error log');
diag($ng->error_log_text) if $ENV{RL_SHOW_LOG};
$ng->stop;

# ------------------------------------------------------------ (e)

{
    my $C = start_redis();      # 127.0.0.1 (and ::1)
    my $ng2 = start_nginx(workers => 1, start => 0,
                          vars => { P => $C->port },
                          config => <<'CONF' . $server);
    rl_zone r redis=localhost:$P timeout=5s failure=open;
CONF
    $asked = $dns->queries('localhost');
    my ($ok, $msg) = $ng2->try_start;
    ok($ok, '(e) nginx starts without a resolver') or diag($msg);
    $port = $ng2->port;
    wait_until(sub { $C->client_count('ngx_rl') == 1 }, timeout => 5);
    is(seven('e1'), '200 PASSED x5, 429 REJECTED x2',
       '(e) decided at the address resolved at load');
    is(keys_on($C, 'e1'), 1, '(e) the state is there');
    is($dns->queries('localhost'), $asked, '(e) the DNS server not asked');
    $ng2->stop;
}

$A->stop;
$B->stop;
$dns->stop;
done_testing();
