# Basic limiting: N requests pass then rl_status, the headers, keys,
# algorithms, rates. Windows are hours or days so that no boundary falls
# inside a test.

use lib 't/lib';
use RlTest;

run_tests();

# ------------------------------------------------------------------------
# Figures that need arithmetic: Reset and Retry-After against Redis' clock.

{
    my $r = start_redis();
    my $ng = start_nginx(redis => $r, config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /fixed {
            rl_rule zone=main key=fixed rate=2r/d algorithm=fixed_window;
            empty_gif;
        }
        location /sliding {
            rl_rule zone=main key=sliding rate=2r/h algorithm=sliding_window;
            empty_gif;
        }
    }
CONF

    # Seconds until the next UTC day on Redis' clock.
    my $to_midnight = sub {
        my ($sec) = split /\n/, $r->cli('TIME');
        return 86400 - $sec % 86400;
    };

    my @res = map { http_get($ng->port, '/fixed') } 1 .. 3;
    my $expect = $to_midnight->();
    is_deeply([ map { $_->{code} } @res ], [ 200, 200, 429 ],
              'fixed_window 2r/d: 200, 200, 429');
    for my $i (0 .. 2) {
        my $reset = $res[$i]{headers}{'x-ratelimit-reset'} // '';
        like($reset, qr/^\d+$/, "fixed_window: Reset is an integer ($i)");
        ok(abs($reset - $expect) <= 2,
           "fixed_window: Reset $reset is the time to the window end "
           . "($expect, +-2s) ($i)");
    }
    my $ra = $res[2]{headers}{'retry-after'} // '';
    like($ra, qr/^\d+$/, 'fixed_window: Retry-After is an integer');
    ok($ra >= 1 && abs($ra - $expect) <= 2,
       "fixed_window: Retry-After $ra is the time to the window end "
       . "($expect, +-2s)");
    ok(!exists $res[$_]{headers}{'retry-after'},
       "fixed_window: no Retry-After on a 200 ($_)") for 0, 1;

    @res = map { http_get($ng->port, '/sliding') } 1 .. 3;
    is_deeply([ map { $_->{code} } @res ], [ 200, 200, 429 ],
              'sliding_window 2r/h: 200, 200, 429');
    for my $i (0 .. 2) {
        my $reset = $res[$i]{headers}{'x-ratelimit-reset'} // '';
        like($reset, qr/^\d+$/, "sliding_window: Reset is an integer ($i)");
        ok($reset >= 0 && $reset <= 7200,
           "sliding_window: Reset $reset within two windows ($i)");
    }
    $ra = $res[2]{headers}{'retry-after'} // '';
    like($ra, qr/^\d+$/, 'sliding_window: Retry-After is an integer');
    ok($ra >= 1 && $ra <= 7200,
       "sliding_window: 1 <= Retry-After $ra <= 7200");

    $ng->stop;
    $r->stop;
}

done_testing();

__DATA__

=== TEST 1: default algorithm (sliding_window): 3 pass, then 429
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k1 rate=3r/h;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200, 429, 429]
--- response_headers eval
[
"X-RateLimit-Limit: 3
X-RateLimit-Remaining: 2
X-RL-Status: PASSED
!Retry-After",
"X-RateLimit-Limit: 3
X-RateLimit-Remaining: 1
X-RL-Status: PASSED
!Retry-After",
"X-RateLimit-Limit: 3
X-RateLimit-Remaining: 0
X-RL-Status: PASSED
!Retry-After",
"X-RateLimit-Limit: 3
X-RateLimit-Remaining: 0
X-RL-Status: REJECTED",
"X-RateLimit-Limit: 3
X-RateLimit-Remaining: 0
X-RL-Status: REJECTED",
]
--- response_headers_like eval
[
"X-RateLimit-Reset: \\d+",
"X-RateLimit-Reset: \\d+",
"X-RateLimit-Reset: \\d+",
"X-RateLimit-Reset: \\d+
Retry-After: [1-9]\\d*",
"X-RateLimit-Reset: \\d+
Retry-After: [1-9]\\d*",
]
--- no_error_log eval
[qr/\[error\].*redis/i, qr/\[warn\]/]



=== TEST 2: fixed_window: 3 pass, then 429
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k1 rate=3r/d algorithm=fixed_window;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200, 429]
--- response_headers eval
[
"X-RateLimit-Limit: 3
X-RateLimit-Remaining: 2
X-RL-Status: PASSED
!Retry-After",
"X-RateLimit-Limit: 3
X-RateLimit-Remaining: 1
X-RL-Status: PASSED",
"X-RateLimit-Limit: 3
X-RateLimit-Remaining: 0
X-RL-Status: PASSED",
"X-RateLimit-Limit: 3
X-RateLimit-Remaining: 0
X-RL-Status: REJECTED",
]
--- response_headers_like eval
[
"X-RateLimit-Reset: \\d+",
"X-RateLimit-Reset: \\d+",
"X-RateLimit-Reset: \\d+",
"X-RateLimit-Reset: \\d+
Retry-After: [1-9]\\d*",
]
--- no_error_log eval
[qr/\[error\].*redis/i, qr/\[warn\]/]



=== TEST 3: explicit sliding_window, daily window
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k1 rate=2r/d algorithm=sliding_window;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
[
"X-RateLimit-Remaining: 1
X-RL-Status: PASSED",
"X-RateLimit-Remaining: 0
X-RL-Status: PASSED",
"X-RateLimit-Remaining: 0
X-RL-Status: REJECTED",
]
--- response_headers_like eval
["X-RateLimit-Limit: 2", "X-RateLimit-Limit: 2",
 "X-RateLimit-Limit: 2\nRetry-After: [1-9]\\d*"]



=== TEST 4: custom rl_status 503
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k1 rate=2r/d algorithm=fixed_window;
    rl_status 503;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 503]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: PASSED",
 "X-RL-Status: REJECTED\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0"]
--- response_headers_like eval
["X-RateLimit-Reset: \\d+", "X-RateLimit-Reset: \\d+",
 "Retry-After: [1-9]\\d*"]



=== TEST 5: another key is independent
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=$arg_k rate=2r/d algorithm=fixed_window;
    empty_gif;
}
--- request eval
["GET /t?k=a", "GET /t?k=a", "GET /t?k=a", "GET /t?k=b", "GET /t?k=b",
 "GET /t?k=b", "GET /t?k=a", "GET /t?k=c"]
--- error_code eval
[200, 200, 429, 200, 200, 429, 429, 200]
--- response_headers eval
["X-RateLimit-Remaining: 1", "X-RateLimit-Remaining: 0",
 "X-RateLimit-Remaining: 0\nX-RL-Status: REJECTED",
 "X-RateLimit-Remaining: 1\nX-RL-Status: PASSED",
 "X-RateLimit-Remaining: 0", "X-RL-Status: REJECTED",
 "X-RL-Status: REJECTED", "X-RateLimit-Remaining: 1"]



=== TEST 6: an empty key skips the rule
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=$arg_k rate=1r/d algorithm=fixed_window;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t?k=x", "GET /t?k=x", "GET /t"]
--- error_code eval
[200, 200, 200, 200, 429, 200]
--- response_headers eval
["!X-RL-Status", "!X-RL-Status", "!X-RL-Status",
 "X-RL-Status: PASSED\nX-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0",
 "X-RL-Status: REJECTED", "!X-RL-Status"]
--- no_error_log eval
[qr/\[error\].*redis/i, qr/\[warn\]/]



=== TEST 7: name= is accepted and limits as usual
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k1 rate=2r/d algorithm=fixed_window name=per_client;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
["X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 1",
 "X-RateLimit-Remaining: 0", "X-RL-Status: REJECTED"]



=== TEST 8: rate with an nginx time: 2r/12h
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k1 rate=2r/12h algorithm=fixed_window;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
["X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 1",
 "X-RateLimit-Remaining: 0", "X-RL-Status: REJECTED"]



=== TEST 9: r/s and r/m rates are accepted
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /s {
    rl_rule zone=main key=k1 rate=100r/s;
    empty_gif;
}
location /m {
    rl_rule zone=main key=k1 rate=1000r/m algorithm=fixed_window;
    empty_gif;
}
--- request eval
["GET /s", "GET /m"]
--- response_headers eval
["X-RateLimit-Limit: 100\nX-RL-Status: PASSED",
 "X-RateLimit-Limit: 1000\nX-RL-Status: PASSED"]



=== TEST 10: a location without rules is not limited and has no headers
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k1 rate=1r/d;
    empty_gif;
}
location /free {
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /free", "GET /free"]
--- error_code eval
[200, 429, 200, 200]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: REJECTED",
 "!X-RL-Status\n!X-RateLimit-Limit\n!X-RateLimit-Remaining\n!X-RateLimit-Reset\n!Retry-After",
 "!X-RL-Status\n!X-RateLimit-Limit"]



=== TEST 11: the zone over the unix socket
--- http_config
rl_zone main redis=unix:$RedisSock timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k1 rate=2r/d algorithm=fixed_window;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: PASSED", "X-RL-Status: REJECTED"]



=== TEST 12: the zone by host name
--- http_config
rl_zone main redis=localhost:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k1 rate=2r/d algorithm=fixed_window;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: PASSED", "X-RL-Status: REJECTED"]



=== TEST 13: rl_status set at http level is inherited
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_status 403;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k1 rate=1r/d;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 403]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: REJECTED"]



=== TEST 14: a rejection is logged with zone, rule, key and retry delay
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=$http_x_client rate=1r/d algorithm=fixed_window
            name=daily;
    empty_gif;
}
--- more_headers
X-Client: client42
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- error_log eval
[qr/\[error\].*rejected(?=.*\bmain\b)(?=.*\bdaily\b)(?=.*client42)(?=.*retry)/]

