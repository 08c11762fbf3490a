# HTTP/2 request bodies of requests that waited for Redis.
#
# A request waits for its decision in the preaccess phase; meanwhile its
# body's first DATA frames arrive, and nginx keeps them in the stream's
# preread buffer (up to the 64k window it advertised) until a content
# handler reads the body: then nginx takes the preread bytes first and
# opens the window for the rest. Redis is paused (CLIENT PAUSE WRITE)
# around each request, so the whole window's worth of body is there
# before the decision, every time.
#
# The bodies go through proxy_pass (buffered and unbuffered) and, as in
# nginx's grpc_request_buffering.t, through proxy_pass to a 404,
# `error_page 404 = @fallback` and grpc_pass, the body kept for the
# second upstream. Each backend keeps the body it got in a file
# (client_body_in_file_only) and names it in X-Body-File; the file must
# hold exactly what the client sent. The client is curl, which keeps to
# the flow-control window (nginx's own test client sends a 66000-byte
# DATA frame past it, which nginx refuses with RST_STREAM whenever the
# request waits, with stock limit_req's delay as with this module: see
# t/nginx-suite).

use lib 't/lib';
use RlTest;
use RlTest::Proc qw(make_tempdir);
use Digest::MD5 qw(md5_hex);
use Test::More;

my $r = start_redis();
my $back = free_port();
my $grpc = free_port();
my $ng = start_nginx(redis => $r, workers => 1,
                     vars => { BackPort => $back, GrpcPort => $grpc },
                     config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s failure=closed;
    client_max_body_size 10m;

    server {
        listen 127.0.0.1:$ServerPort http2;
        add_header X-RL-Status $rl_status always;

        location /buffered {
            rl_rule zone=main key=k rate=1000r/h;
            proxy_pass http://127.0.0.1:$BackPort/keep;
        }
        location /unbuffered {
            rl_rule zone=main key=k rate=1000r/h;
            proxy_request_buffering off;
            proxy_http_version 1.1;
            proxy_pass http://127.0.0.1:$BackPort/keep;
        }
        location /fallback {
            rl_rule zone=main key=k rate=1000r/h;
            proxy_pass http://127.0.0.1:$BackPort/missing;
            proxy_intercept_errors on;
            error_page 404 = @grpc;
        }
        location @grpc {
            grpc_pass 127.0.0.1:$GrpcPort;
        }
    }

    # the upstreams: each keeps the body it got
    server {
        listen 127.0.0.1:$BackPort;
        location /keep {
            client_body_in_file_only on;
            add_header X-Body-File $request_body_file;
            proxy_pass http://127.0.0.1:$BackPort/ok;
        }
        location /missing { return 404; }
        location /ok { return 200 "ok\n"; }
    }
    server {
        listen 127.0.0.1:$GrpcPort http2;
        location / {
            client_body_in_file_only on;
            add_header X-Body-File $request_body_file;
            proxy_pass http://127.0.0.1:$BackPort/ok;
        }
    }
CONF
my $port = $ng->port;
my $dir = make_tempdir('h2body');

# POST $body to $path over h2c with Redis paused for $pause ms: the
# status, X-RL-Status, and the digest of what the backend kept
sub post {
    my ($path, $body, $pause) = @_;
    open my $fh, '>', "$dir/body" or die "$dir/body: $!";
    binmode $fh;
    print $fh $body;
    close $fh;
    $r->cli('CLIENT', 'PAUSE', $pause, 'WRITE') if $pause;
    my $out = `curl -sS --http2-prior-knowledge --max-time 10 -o /dev/null -D - --data-binary \@$dir/body http://127.0.0.1:$port$path 2>&1`;
    my ($code) = $out =~ m{^HTTP/2 (\d+)}m;
    my ($status) = $out =~ /^x-rl-status: (\S+)/mi;
    my ($file) = $out =~ /^x-body-file: (\S+)/mi;
    my $kept;
    if (defined $file && open my $in, '<', $file) {
        binmode $in;
        local $/;
        $kept = <$in>;
    }
    return (($code // '?') . ' ' . ($status // ''),
            defined $kept ? length($kept) . ' ' . md5_hex($kept) : 'none');
}

# bytes that show a shifted or repeated chunk
sub body {
    my ($len) = @_;
    my $s = '';
    $s .= sprintf '%07d,', length $s while length $s < $len;
    return substr $s, 0, $len;
}

for my $case (
    [ 'buffered', '/buffered', 200000 ],
    [ 'unbuffered', '/unbuffered', 200000 ],
    [ 'error_page to grpc_pass', '/fallback', 66000 ],
    [ 'error_page to grpc_pass, 1 MB', '/fallback', 1 << 20 ],
    [ 'small, in the HEADERS\' read', '/buffered', 5 ],
) {
    my ($name, $path, $len) = @$case;
    my $body = body($len);
    my $want = length($body) . ' ' . md5_hex($body);
    for my $pause (0, 300) {
        my ($code, $kept) = post($path, $body, $pause);
        my $how = $pause ? 'Redis paused' : 'Redis at once';
        is($code, '200 PASSED', "$name ($how): 200 PASSED");
        is($kept, $want, "$name ($how): the upstream got the whole body");
    }
}

$ng->stop;
done_testing();
