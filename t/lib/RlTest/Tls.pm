package RlTest::Tls;

# Certificates for TLS tests, made with the openssl command in a temp
# dir: a CA, a server certificate it signs for "localhost" and
# 127.0.0.1, a client certificate it signs, and a second CA that signed
# none of them.
#
#   my $pki = RlTest::Tls::pki();
#   $pki->{ca} $pki->{server_cert} $pki->{server_key}
#   $pki->{client_cert} $pki->{client_key} $pki->{other_ca}
#
#   # a redis-server with a TLS port beside its plain one (the harness
#   # keeps talking plain; nginx is given the TLS port)
#   my $r = start_redis(tls => $pki);               # or
#   my $r = start_redis(tls => { %$pki, auth_clients => 'yes' });
#   $r->tls_port;
#
#   RlTest::Tls::module_has_tls(): whether the module under test was
#   built with TLS (an nginx -t probe); ($has, $nginx_t_output).

use strict;
use warnings;

use RlTest::Proc qw(make_tempdir exec_child reap_pid);

sub _openssl {
    my ($dir, @args) = @_;
    my $pid = exec_child([ 'openssl', @args ], "$dir/openssl.log",
                         append => 1);
    reap_pid($pid, 30) or die "openssl @args: did not finish\n";
    $? == 0 or die "openssl @args failed:\n" . `cat $dir/openssl.log`;
}

# A key and a certificate for $cn signed by $ca (or self-signed when
# $ca is undef), with $ext (an extensions file's lines) if given.
sub _cert {
    my ($dir, $name, $cn, $ca, $ext) = @_;
    my @key = ('-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
               '-nodes', '-keyout', "$dir/$name.key", '-subj', "/CN=$cn");
    if (!$ca) {
        _openssl($dir, 'req', '-x509', @key, '-days', 2,
                 '-out', "$dir/$name.crt");
        return;
    }
    _openssl($dir, 'req', @key, '-out', "$dir/$name.csr");
    my @ext;
    if ($ext) {
        open my $fh, '>', "$dir/$name.ext" or die "$name.ext: $!";
        print $fh $ext;
        close $fh;
        @ext = ('-extfile', "$dir/$name.ext");
    }
    _openssl($dir, 'x509', '-req', '-in', "$dir/$name.csr",
             '-CA', "$dir/$ca.crt", '-CAkey', "$dir/$ca.key",
             '-CAcreateserial', '-days', 2, @ext,
             '-out', "$dir/$name.crt");
}

sub pki {
    my $dir = make_tempdir('pki');
    _cert($dir, 'ca', 'rl test CA');
    _cert($dir, 'other-ca', 'rl test other CA');
    _cert($dir, 'server', 'localhost', 'ca',
          "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
    _cert($dir, 'client', 'rl test client', 'ca',
          "extendedKeyUsage=clientAuth\n");
    return {
        dir         => $dir,
        ca          => "$dir/ca.crt",
        other_ca    => "$dir/other-ca.crt",
        server_cert => "$dir/server.crt",
        server_key  => "$dir/server.key",
        client_cert => "$dir/client.crt",
        client_key  => "$dir/client.key",
    };
}

# redis-server's arguments for a TLS port (RlTest::Redis)
sub redis_args {
    my ($tls, $port) = @_;
    return ('--tls-port', $port,
            '--tls-cert-file', $tls->{server_cert},
            '--tls-key-file', $tls->{server_key},
            '--tls-ca-cert-file', $tls->{ca},
            '--tls-auth-clients', $tls->{auth_clients} // 'no');
}

sub module_has_tls {
    my $ng = RlTest::Nginx->new(start => 0, config => <<'CONF');
    rl_zone probe redis=127.0.0.1:6379 tls;
CONF
    my ($ok, $text) = $ng->config_test;
    return ($ok, $text);
}

1;
