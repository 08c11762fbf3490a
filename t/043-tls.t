# TLS to Redis: `rl_zone ... tls [tls_verify=on|off] [tls_server_name=]
# [tls_ca=] [tls_cert= tls_key=]`, against real redis-servers with a
# TLS port (the harness keeps to their plain port) and certificates made
# here with openssl (t/lib/RlTest/Tls.pm): a CA, a server certificate
# for localhost and 127.0.0.1, a client certificate, another CA.
#
# A module built without TLS (hiredis 0.14): `tls` fails nginx -t saying
# what the module needs; nothing else runs. With TLS:
#   (a) nginx -t: the errors of the tls parameters
#   (b) limits over TLS: 3 of 4 pass; the connection is on the TLS port;
#       zones share it only when their TLS settings match
#   (c) the wrong CA, the wrong name, a plain port: the failure policy at
#       once, one error line per zone naming the cause, however often
#       it reconnects; tls_verify=off connects
#   (d) Redis requiring client certificates: tls_cert/tls_key pass, a
#       zone without gets the policy and one line naming the alert
#   (e) a cluster of 3 masters over TLS: each master decides its keys,
#       its nodes checked against their addresses, or the seed's name
#   (f) reload under load over TLS: no failed request, no connection left
#   (g) SIGSTOP after the handshake, and during it: a location without
#       rules answers at once, limited ones at timeout with the policy;
#       SIGCONT: decisions resume

use lib 't/lib';
use RlTest;
use RlTest::Tls;
use RlTest::Cluster;

my ($has_tls, $probe) = RlTest::Tls::module_has_tls();
if (!$has_tls) {
    like($probe, qr/\[emerg\].*"tls" needs the module built with hiredis 1\.x and its SSL library \(this one was built with hiredis 0\.\d+\)/,
         'built without TLS: "tls" fails nginx -t, saying what it needs');
    my ($ok, $text) = zone_config_test('rl_zone z redis=127.0.0.1:6379 '
                                . 'tls_verify=off;');
    ok(!$ok && $text =~ /"tls_verify" needs "tls"/,
       'built without TLS: tls_verify= alone fails too')
        or diag($text);
    done_testing();
    exit 0;
}

my $pki = RlTest::Tls::pki();
my ($CA, $OTHER) = ($pki->{ca}, $pki->{other_ca});
my ($CERT, $KEY) = ($pki->{client_cert}, $pki->{client_key});

# ------------------------------------------------------------ (a) nginx -t

my @bad = (
    [ 'tls_verify= without tls',
      "rl_zone z redis=127.0.0.1:6379 tls_verify=off;",
      '"tls_verify" needs "tls"' ],
    [ 'tls_ca= without tls',
      "rl_zone z redis=127.0.0.1:6379 tls_ca=$CA;", '"tls_ca" needs "tls"' ],
    [ 'tls without redis', 'rl_zone z tls;',
      '"tls" needs "redis", "cluster" or "sentinel"' ],
    [ 'tls to a unix socket', 'rl_zone z redis=unix:/tmp/x.sock tls;',
      '"tls" needs a TCP address, not "unix:/tmp/x.sock"' ],
    [ 'tls_cert= without tls_key=',
      "rl_zone z redis=127.0.0.1:6379 tls tls_cert=$CERT;",
      '"tls_cert" needs "tls_key"' ],
    [ 'tls_key= without tls_cert=',
      "rl_zone z redis=127.0.0.1:6379 tls tls_key=$KEY;",
      '"tls_key" needs "tls_cert"' ],
    [ 'tls_verify=maybe', 'rl_zone z redis=127.0.0.1:6379 tls tls_verify=maybe;',
      'invalid tls_verify "maybe", it must be "on" or "off"' ],
    [ 'an empty tls_server_name=',
      'rl_zone z redis=127.0.0.1:6379 tls tls_server_name=;',
      'invalid tls_server_name ""' ],
    [ 'tls twice', 'rl_zone z redis=127.0.0.1:6379 tls tls;',
      'duplicate parameter "tls"' ],
    [ 'a tls_ca= that is not there',
      'rl_zone z redis=127.0.0.1:6379 tls tls_ca=/nonexistent/ca.pem;',
      'cannot load tls_ca "/nonexistent/ca.pem"' ],
    [ 'a tls_ca= that is no certificate',
      "rl_zone z redis=127.0.0.1:6379 tls tls_ca=$KEY;",
      qq{cannot load tls_ca "$KEY"} ],
    [ 'a tls_key= of another certificate',
      "rl_zone z redis=127.0.0.1:6379 tls tls_cert=$CERT "
      . "tls_key=$pki->{server_key};",
      qq{cannot load tls_key "$pki->{server_key}"} ],
);
for my $b (@bad) {
    my ($name, $zone, $want) = @$b;
    my ($ok, $text) = zone_config_test($zone);
    ok(!$ok, "nginx -t fails: $name");
    like($text, qr/\[emerg\].*\Q$want\E/, "nginx -t names it: $name")
        or diag($text);
}
{
    my ($ok, $text) = zone_config_test('rl_zone z redis=127.0.0.1:1 tls '
        . "tls_ca=$CA tls_cert=$CERT tls_key=$KEY tls_verify=on "
        . 'tls_server_name=redis.example;');
    ok($ok, 'nginx -t passes every tls parameter (Redis not reachable)')
        or diag($text);
    ($ok, $text) = zone_config_test('rl_zone z redis=127.0.0.1:1 tls;');
    ok($ok, 'nginx -t passes tls alone: the system\'s CA bundle')
        or diag($text);
}

# ------------------------------------------------------------ one server

my $r = start_redis(tls => $pki);
my $T = $r->tls_port;

my $ng = start_nginx(redis => $r, workers => 1,
                     vars => { T => $T, CA => $CA, OTHER => $OTHER },
                     config => <<'CONF');
    rl_zone ok redis=127.0.0.1:$T tls tls_ca=$CA;
    rl_zone ok2 redis=127.0.0.1:$T tls tls_ca=$CA prefix=two:;
    rl_zone byname redis=localhost:$T tls tls_ca=$CA prefix=n:;
    rl_zone wrongca redis=127.0.0.1:$T tls tls_ca=$OTHER failure=closed;
    rl_zone wrongname redis=127.0.0.1:$T tls tls_ca=$CA
                      tls_server_name=redis.example;
    rl_zone noverify redis=127.0.0.1:$T tls tls_ca=$OTHER tls_verify=off
                     prefix=nv:;
    rl_zone plainport redis=127.0.0.1:$RedisPort tls tls_ca=$CA;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /ok { rl_rule zone=ok key=$arg_k rate=3r/d; empty_gif; }
        location /ok2 { rl_rule zone=ok2 key=$arg_k rate=3r/d; empty_gif; }
        location /byname {
            rl_rule zone=byname key=$arg_k rate=3r/d;
            empty_gif;
        }
        location /wrongca {
            rl_rule zone=wrongca key=$arg_k rate=3r/d;
            empty_gif;
        }
        location /wrongname {
            rl_rule zone=wrongname key=$arg_k rate=3r/d;
            empty_gif;
        }
        location /noverify {
            rl_rule zone=noverify key=$arg_k rate=3r/d;
            empty_gif;
        }
        location /plainport {
            rl_rule zone=plainport key=$arg_k rate=3r/d;
            empty_gif;
        }
        location /metrics { rl_metrics; }
    }
CONF
my $port = $ng->port;

# ------------------------------------------------------------ (b) limits

for my $loc (qw(ok ok2 byname noverify)) {
    my @got = map { code_status(http_get($port, "/$loc?k=a")) } 1 .. 4;
    is("@got", '200 PASSED 200 PASSED 200 PASSED 429 REJECTED',
       "$loc: 3 of 4 pass over TLS");
}
like($r->cli('KEYS', 'rl:*'), qr/\brl:/, 'ok: its state is in Redis');

# every ngx_rl connection is on the TLS port: ok and ok2 share one (same
# TLS settings), byname (another name) and noverify have their own
sub tls_clients {
    return scalar grep { /\bname=ngx_rl\b/ && /\bladdr=\S+:$T\b/ }
        split /\n/, $r->cli('CLIENT', 'LIST');
}
is(tls_clients(), 3, 'three TLS connections: ok and ok2 share one');

# Redis drops the connections (CLIENT KILL): connected again, deciding
$r->cli('CLIENT', 'KILL', 'LADDR', "127.0.0.1:$T");
my $last = '';
ok(wait_until(sub {
    $last = code_status(http_get($port, '/ok?k=b'));
    return $last eq '200 PASSED';
}, timeout => 5, interval => 0.05), 'ok: decides again after CLIENT KILL')
    or diag("last: $last");

# ------------------------------------------------------------ (c) failures

my %want = (
    wrongca   => [ '429 ERROR', qr/certificate verify failed: (?:unable to get local issuer certificate|self-signed certificate in certificate chain)/ ],
    wrongname => [ '200 ERROR',
                   qr/certificate verify failed: hostname mismatch/ ],
    # a plain Redis waits for the end of a line that never comes: the
    # request's timeout or connect_timeout says so, whichever is first
    plainport => [ '200 ERROR', qr/TLS handshake failed: no answer within/ ],
);
for my $zone (sort keys %want) {
    my @got = map { code_status(http_get($port, "/$zone?k=a")) } 1 .. 4;
    is("@got", join(' ', ($want{$zone}[0]) x 4),
       "$zone: the failure policy, every request");
}
# several attempts later (reconnects counted), still one line per zone
for my $zone (sort keys %want) {
    ok(wait_until(sub {
        metric_value($port, qq{rl_store_reconnects_total{zone="$zone"}})
            >= 3 }, timeout => 5),
       "$zone: connected again, and again") or next;
    is(metric_value($port, qq{rl_store_up{zone="$zone"}}), 0,
       "$zone: rl_store_up 0");
    my @err = grep { /\[error\]/ && /rl_zone "$zone"/ }
              split /\n/, $ng->error_log_text;
    is(scalar @err, 1, "$zone: one error line for the incident")
        or diag(join "\n", @err);
    like($err[0] // '', $want{$zone}[1], "$zone: the line names the cause");
    like($err[0] // '', qr/TLS handshake failed/,
         "$zone: ... as a TLS handshake failure");
    diag("$zone: $err[0]") if $ENV{RL_VERBOSE};
}
$ng->stop;

# ------------------------------------------------------------ (d) client cert

{
    my $rc = start_redis(tls => { %$pki, auth_clients => 'yes' });
    my $ngc = start_nginx(redis => $rc, workers => 1,
                          vars => { T => $rc->tls_port, CA => $CA,
                                    CERT => $CERT, KEY => $KEY },
                          config => <<'CONF');
    rl_zone cert redis=127.0.0.1:$T tls tls_ca=$CA tls_cert=$CERT
                 tls_key=$KEY;
    rl_zone nocert redis=127.0.0.1:$T tls tls_ca=$CA;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /cert { rl_rule zone=cert key=k rate=3r/d; empty_gif; }
        location /nocert { rl_rule zone=nocert key=k rate=3r/d; empty_gif; }
        location /metrics { rl_metrics; }
    }
CONF
    my $p = $ngc->port;
    my @got = map { code_status(http_get($p, '/cert')) } 1 .. 4;
    is("@got", '200 PASSED 200 PASSED 200 PASSED 429 REJECTED',
       'client certificate required: tls_cert/tls_key pass');
    @got = map { code_status(http_get($p, '/nocert')) } 1 .. 3;
    is("@got", '200 ERROR 200 ERROR 200 ERROR',
       'client certificate required, none given: the failure policy');
    ok(wait_until(sub {
        metric_value($p, 'rl_store_reconnects_total{zone="nocert"}') >= 2
    }, timeout => 5), 'nocert: connected again');
    my @err = grep { /\[error\]/ && /rl_zone "nocert"/ }
              split /\n/, $ngc->error_log_text;
    is(scalar @err, 1, 'nocert: one error line') or diag(join "\n", @err);
    # the server's alert, unless its reset overtook it
    like($err[0] // '', qr/TLS handshake failed: (?:tlsv13 alert certificate required|the server closed the connection as the handshake ended)/,
         'nocert: the line names the server\'s refusal')
        or diag($err[0]);
    is(scalar(grep { /rl_zone "cert"/ && /\[error\]/ }
                   split /\n/, $ngc->error_log_text), 0,
       'cert: no error');
    $ngc->stop;
    $rc->stop;
}

# ------------------------------------------------------------ (e) cluster

{
    my $c = RlTest::Cluster->new(masters => 3, tls => $pki);
    # c: seeds by address, each node checked against its own; n: a seed
    # by name, every node checked against it
    (my $named = $c->tls_seeds) =~ s/^127\.0\.0\.1:/localhost:/;
    my $ngc = start_nginx(workers => 1,
                          vars => { SEEDS => $c->tls_seeds, NAMED => $named,
                                    CA => $CA },
                          config => <<'CONF');
    rl_zone c cluster=$SEEDS tls tls_ca=$CA timeout=1s;
    rl_zone n cluster=$NAMED tls tls_ca=$CA timeout=1s prefix=n:;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /c {
            rl_rule zone=c key=$arg_k rate=3r/d algorithm=fixed_window;
            empty_gif;
        }
        location /n {
            rl_rule zone=n key=$arg_k rate=3r/d algorithm=fixed_window;
            empty_gif;
        }
    }
CONF
    my $p = $ngc->port;
    for my $m ($c->masters) {
        my $v = $c->value_on($m, prefix => 'tls');
        for my $z (qw(c n)) {
            my @got = map { code_status(http_get($p, "/$z?k=$v")) } 1 .. 4;
            is("@got", '200 PASSED 200 PASSED 200 PASSED 429 REJECTED',
               "cluster over TLS, zone $z: master " . $m->port
               . ' decides its key');
        }
        my $tp = $m->tls_port;
        ok(scalar(grep { /\bname=ngx_rl\b/ && /\bladdr=\S+:$tp\b/ }
                       split /\n/, $m->cli('CLIENT', 'LIST')) >= 1,
           'master ' . $m->port . ': nginx is on its TLS port');
    }
    is(scalar(grep { /\[error\].*redis/ } split /\n/, $ngc->error_log_text),
       0, 'cluster over TLS: no error');
    $ngc->stop;
    $c->stop;
}

# ------------------------------------------------------------ (f) reload

{
    my $conf = <<'CONF';
    rl_zone rz redis=127.0.0.1:$T tls tls_ca=$CA timeout=1s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /l { rl_rule zone=rz key=$arg_c rate=1000000r/d; empty_gif; }
    }
CONF
    my $ngr = start_nginx(redis => $r, workers => 2,
                          vars => { T => $T, CA => $CA }, config => $conf);
    my $p = $ngr->port;
    my $settled = sub {
        my $hits = 0;
        return wait_until(sub {
            http_parallel($p, [ map { "/l?c=w$_" } 1 .. 10 ],
                          concurrency => 10);
            $hits = tls_clients() == 2 ? $hits + 1 : 0;
            return $hits >= 2;
        }, timeout => 5, interval => 0.1);
    };
    ok($settled->(), 'reload: 2 workers, 2 TLS connections');
    my $dir = RlTest::Proc::make_tempdir('load');
    my $kid = spawn(sub {
        my ($total, $bad, $first) = (0, 0, '');
        while (!-e "$dir/stop" && $total < 20000) {
            my $res = http_get($p, '/l?c=kid', -timeout => 5);
            $total++;
            my $cs = code_status($res);
            if ($cs ne '200 PASSED') {
                $bad++;
                $first ||= $cs;
            }
            if ($total == 1) { open my $fh, '>', "$dir/started"; close $fh }
        }
        return "total=$total bad=$bad first=$first";
    });
    ok(wait_until(sub { -e "$dir/started" }, timeout => 5), 'load running');
    ok($ngr->reload, "reload $_ under load over TLS") for 1 .. 2;
    open my $fh, '>', "$dir/stop";
    close $fh;
    my $out = $kid->wait(30) // '';
    my %n = $out =~ /(\w+)=(\d+)/g;
    ok(($n{total} // 0) > 0 && ($n{bad} // 1) == 0,
       "reload under load: every request 200 PASSED ($out)");
    ok($settled->(), 'after the reloads: 2 TLS connections, none leaked')
        or diag($r->cli('CLIENT', 'LIST'));
    $ngr->stop;
}

# ------------------------------------------------------------ (g) SIGSTOP

my $stop_conf = <<'CONF';
    rl_zone st redis=127.0.0.1:$T tls tls_ca=$CA timeout=1s
               connect_timeout=1s failure=closed;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /t { rl_rule zone=st key=$arg_k rate=1000r/d; empty_gif; }
        location /free { return 200 "free"; }
    }
CONF

sub stalled_ok {
    my ($p, $when) = @_;
    my $lim = http_start($p, '/t?k=s');
    my $free = http_get($p, '/free', -timeout => 5);
    ok($free->{code} == 200 && $free->{elapsed} < 0.5,
       sprintf('%s: /free answers at once (%.2fs)', $when, $free->{elapsed}));
    my $res = $lim->result(6);
    is(code_status($res), '429 ERROR', "$when: limited: the policy");
    ok($res->{elapsed} >= 0.8 && $res->{elapsed} < 3,
       sprintf('%s: ... at timeout=1s (%.2fs)', $when, $res->{elapsed}));
}

sub resumes_ok {
    my ($p, $when) = @_;
    my $last = '';
    ok(wait_until(sub {
        $last = code_status(http_get($p, '/t?k=s', -timeout => 5));
        return $last eq '200 PASSED';
    }, timeout => 8, interval => 0.1), "$when: decisions resume") or
        diag("last: $last");
}

{
    # after the handshake: connected, then stopped
    my $ngs = start_nginx(redis => $r, workers => 1,
                          vars => { T => $T, CA => $CA },
                          config => $stop_conf);
    my $p = $ngs->port;
    is(code_status(http_get($p, '/t?k=s')), '200 PASSED',
       'after the handshake: connected over TLS');
    $r->kill('STOP');
    stalled_ok($p, 'stopped after the handshake');
    $r->kill('CONT');
    resumes_ok($p, 'SIGCONT after the handshake');
    $ngs->stop;

    # during it: nginx starts while Redis is stopped (TCP connects, the
    # server's TLS answer never comes)
    $r->kill('STOP');
    $ngs = start_nginx(redis => $r, workers => 1,
                       vars => { T => $T, CA => $CA }, config => $stop_conf);
    $p = $ngs->port;
    stalled_ok($p, 'stopped during the handshake');
    my @err = grep { /\[error\]/ } split /\n/, $ngs->error_log_text;
    is(scalar @err, 1, 'during the handshake: one error line');
    like($err[0] // '', qr/TLS handshake failed: no answer within/,
         'during the handshake: ... saying where it stalled');
    $r->kill('CONT');
    resumes_ok($p, 'SIGCONT during the handshake');
    $ngs->stop;
}

$r->stop;
done_testing();
