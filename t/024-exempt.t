# An empty key skips the rule: the geo + map exemption pattern.
#
#   geo $limit { default 1; 10.0.0.0/8 0; 127.0.0.1 0; }
#   map $limit $limit_key { 0 ""; 1 $binary_remote_addr; }
#   rl_rule zone=main key=$limit_key ...;
#
# With 127.0.0.1 exempted and not exempted; clients from 127.0.0.2 (the
# whole of 127/8 is loopback on Linux) are another, non-exempt address.

use lib 't/lib';
use RlTest;
use IO::Socket::IP;
use IO::Select;

run_tests();

# GET from a given local address; {code, headers}.
sub get_from {
    my ($local, $port, $path) = @_;
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                                LocalHost => $local, Timeout => 5)
        or return { code => 0, error => "connect from $local: $@" };
    print $s "GET $path HTTP/1.1\r\nHost: localhost\r\n"
             . "Connection: close\r\n\r\n";
    my $buf = '';
    my $sel = IO::Select->new($s);
    my $deadline = now() + 10;
    while (now() < $deadline) {
        next unless $sel->can_read(0.1);
        my $n = sysread $s, $buf, 65536, length $buf;
        last unless $n;
    }
    close $s;
    my ($head) = split /\r\n\r\n/, $buf, 2;
    my ($code) = ($head // '') =~ m{^HTTP/1\.\d (\d+)};
    my %h;
    for (split /\r\n/, $head // '') {
        $h{ lc $1 } = $2 if /^([^:]+):\s*(.*)$/;
    }
    return { code => $code // 0, headers => \%h };
}

SKIP: {
    my $probe = IO::Socket::IP->new(LocalHost => '127.0.0.2', LocalPort => 0,
                                    Proto => 'tcp', Listen => 1);
    skip 'cannot bind 127.0.0.2', 1 unless $probe;
    close $probe;

    my $r = start_redis();
    my $ng = start_nginx(redis => $r, config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;

    geo $limit {
        default        1;
        10.0.0.0/8     0;
        127.0.0.1      0;
    }
    map $limit $limit_key {
        0   "";
        1   $binary_remote_addr;
    }

    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /t {
            rl_rule zone=main key=$limit_key rate=2r/h name=per_ip;
            empty_gif;
        }
    }
CONF
    my $port = $ng->port;

    my @local = map { get_from('127.0.0.1', $port, '/t') } 1 .. 5;
    is(join(' ', map { $_->{code} } @local), '200 200 200 200 200',
       '127.0.0.1 is exempted: never limited');
    ok(!grep({ exists $_->{headers}{'x-ratelimit-limit'}
               || exists $_->{headers}{'x-rl-status'} } @local),
       '127.0.0.1: no rate-limit header, $rl_status empty');

    my @other = map { get_from('127.0.0.2', $port, '/t') } 1 .. 3;
    is(join(' ', map { $_->{code} } @other), '200 200 429',
       '127.0.0.2 is not exempted: 2 pass, then 429');
    is(join(' ', map { $_->{headers}{'x-rl-status'} // '-' } @other),
       'PASSED PASSED REJECTED', '127.0.0.2: $rl_status');
    is($other[0]{headers}{'x-ratelimit-limit'}, 2, '127.0.0.2: the headers');

    is(get_from('127.0.0.1', $port, '/t')->{code}, 200,
       '127.0.0.1 is still exempted after 127.0.0.2 was limited');
    $ng->stop;
    $r->stop;
}

done_testing();

__DATA__

=== TEST 1: geo + map + empty key: 127.0.0.1 exempted
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
geo $limit {
    default        1;
    10.0.0.0/8     0;
    127.0.0.1      0;
}
map $limit $limit_key {
    0   "";
    1   $binary_remote_addr;
}
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=$limit_key rate=1r/h;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200]
--- response_headers
!X-RL-Status
!X-RateLimit-Limit
!Retry-After



=== TEST 2: the same without 127.0.0.1 in the geo: limited
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
geo $limit {
    default        1;
    10.0.0.0/8     0;
}
map $limit $limit_key {
    0   "";
    1   $binary_remote_addr;
}
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=$limit_key rate=1r/h;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 429, 429]
--- response_headers eval
["X-RL-Status: PASSED\nX-RateLimit-Limit: 1",
 "X-RL-Status: REJECTED\nX-RateLimit-Limit: 1",
 "X-RL-Status: REJECTED"]



=== TEST 3: the exemption by an address from a header (geo on a variable): 10.x exempted, others limited
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
geo $http_x_client_ip $limit {
    default        1;
    10.0.0.0/8     0;
}
map $limit $limit_key {
    0   "";
    1   $http_x_client_ip;
}
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=$limit_key rate=1r/h;
    empty_gif;
}
--- more_headers eval
["X-Client-IP: 10.1.2.3", "X-Client-IP: 10.1.2.3", "X-Client-IP: 10.1.2.3",
 "X-Client-IP: 192.0.2.7", "X-Client-IP: 192.0.2.7"]
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200, 200, 429]
--- response_headers eval
["!X-RL-Status", "!X-RL-Status", "!X-RL-Status", "X-RL-Status: PASSED",
 "X-RL-Status: REJECTED"]



=== TEST 4: an exempted client is exempt from one rule only: a global rule still applies
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
geo $limit {
    default        1;
    127.0.0.1      0;
}
map $limit $limit_key {
    0   "";
    1   $binary_remote_addr;
}
--- config
add_header X-RL-Status $rl_status always;
add_header X-RL-Rule $rl_rule always;
location /t {
    rl_rule zone=main key=$limit_key rate=1r/h name=per_ip;
    rl_rule zone=main key=all rate=2r/h name=global;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
["X-RL-Status: PASSED\nX-RL-Rule: global\nX-RateLimit-Limit: 2",
 "X-RL-Status: PASSED\nX-RL-Rule: global",
 "X-RL-Status: REJECTED\nX-RL-Rule: global"]



=== TEST 5: exempted requests are not counted: the metrics show only the limited client
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
geo $arg_ip $limit {
    default        1;
    10.0.0.0/8     0;
}
map $limit $limit_key {
    0   "";
    1   $arg_ip;
}
--- config
location /t {
    rl_rule zone=main key=$limit_key rate=1r/h name=per_ip;
    empty_gif;
}
location = /metrics {
    rl_metrics;
}
--- request eval
["GET /t?ip=10.0.0.1", "GET /t?ip=10.0.0.1", "GET /t?ip=192.0.2.1",
 "GET /metrics"]
--- response_body_like eval
[qr/^GIF/, qr/^GIF/, qr/^GIF/,
 qr/^rl_requests_total\{zone="main",rule="per_ip",outcome="passed"\} 1$/m]
