# rl_headers on | off | draft: the figures after a known sequence of
# requests, on 200s and 429s, on an upstream error and on an error_page
# served from another location; draft adds the IETF RateLimit-Policy and
# RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10): every rule
# that applied, in configuration order, and the binding rule. Windows are
# hours or days (or sliding_log, whose figures do not depend on where a
# window edge falls) so that no boundary falls inside a test.

use lib 't/lib';
use RlTest;

run_tests();

# ------------------------------------------------------------------------
# Figures that must agree with each other in one response: RateLimit's t
# is X-RateLimit-Reset, its r is X-RateLimit-Remaining.

{
    my $r = start_redis();
    my $ng = start_nginx(redis => $r, config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
    rl_zone local;
    rl_headers draft;
    server {
        listen 127.0.0.1:$ServerPort;
        location /one {
            rl_rule zone=main key=one rate=3r/h algorithm=fixed_window;
            empty_gif;
        }
        location /two {
            rl_rule zone=main key=two rate=10r/h name=hourly;
            rl_rule zone=local key=two rate=2r/d algorithm=sliding_log
                    name=daily;
            empty_gif;
        }
    }
CONF

    for my $path ('/one', '/two') {
        my @res = map { http_get($ng->port, $path) } 1 .. 4;
        my $i = 0;
        for my $res (@res) {
            $i++;
            my $h = $res->{headers};
            my ($name, $rem, $t) = ($h->{ratelimit} // '')
                =~ /^"([^"]*)";r=(\d+);t=(\d+)$/;
            ok(defined $t, "$path $i: RateLimit parses ("
                           . ($h->{ratelimit} // 'absent') . ')');
            is($rem, $h->{'x-ratelimit-remaining'},
               "$path $i: RateLimit r is X-RateLimit-Remaining");
            is($t, $h->{'x-ratelimit-reset'},
               "$path $i: RateLimit t is X-RateLimit-Reset");
            if ($res->{code} == 429) {
                like($h->{'retry-after'} // '', qr/^[1-9]\d*$/,
                     "$path $i: Retry-After on the 429");
                ok($h->{'retry-after'} <= $t + 1,
                   "$path $i: Retry-After ($h->{'retry-after'}) is about "
                   . "the binding rule's t ($t)");
            } else {
                ok(!exists $h->{'retry-after'}, "$path $i: no Retry-After");
            }
        }
    }

    $ng->stop;
    $r->stop;
}

done_testing();

__DATA__

=== TEST 1: default (on): X-RateLimit-* on every response, Retry-After on the 429s only, no draft fields
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=k rate=3r/h algorithm=fixed_window;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200, 429, 429]
--- response_headers eval
[
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 2\n!Retry-After\n!RateLimit\n!RateLimit-Policy",
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 1\n!Retry-After\n!RateLimit\n!RateLimit-Policy",
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0\n!Retry-After\n!RateLimit\n!RateLimit-Policy",
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0\n!RateLimit\n!RateLimit-Policy",
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0\n!RateLimit\n!RateLimit-Policy",
]
--- response_headers_like eval
[
"X-RateLimit-Reset: \\d+",
"X-RateLimit-Reset: \\d+",
"X-RateLimit-Reset: \\d+",
"X-RateLimit-Reset: [1-9]\\d*\nRetry-After: [1-9]\\d*",
"X-RateLimit-Reset: [1-9]\\d*\nRetry-After: [1-9]\\d*",
]



=== TEST 2: rl_headers on, written out, in the location
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_headers on;
    rl_rule zone=main key=k rate=1r/h;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- response_headers eval
["X-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0\n!Retry-After\n!RateLimit",
 "X-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0\n!RateLimit"]
--- response_headers_like eval
["X-RateLimit-Reset: \\d+", "Retry-After: [1-9]\\d*"]



=== TEST 3: rl_headers off: no header at all, the limit still applies, $rl_status still set
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_headers off;
    rl_rule zone=main key=k rate=2r/h;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
[
"X-RL-Status: PASSED\n!X-RateLimit-Limit\n!X-RateLimit-Remaining\n!X-RateLimit-Reset\n!Retry-After\n!RateLimit\n!RateLimit-Policy",
"X-RL-Status: PASSED\n!X-RateLimit-Limit\n!X-RateLimit-Remaining\n!X-RateLimit-Reset\n!Retry-After\n!RateLimit\n!RateLimit-Policy",
"X-RL-Status: REJECTED\n!X-RateLimit-Limit\n!X-RateLimit-Remaining\n!X-RateLimit-Reset\n!Retry-After\n!RateLimit\n!RateLimit-Policy",
]



=== TEST 4: draft, one rule: the X- headers plus RateLimit-Policy and RateLimit, default name the rate as written
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_headers draft;
    rl_rule zone=main key=k rate=3r/h algorithm=fixed_window;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200, 429]
--- response_headers eval
[
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 2\nRateLimit-Policy: \"3r/h\";q=3;w=3600\n!Retry-After",
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 1\nRateLimit-Policy: \"3r/h\";q=3;w=3600\n!Retry-After",
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0\nRateLimit-Policy: \"3r/h\";q=3;w=3600\n!Retry-After",
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0\nRateLimit-Policy: \"3r/h\";q=3;w=3600",
]
--- response_headers_like eval
[
"RateLimit: \"3r/h\";r=2;t=\\d+\nX-RateLimit-Reset: \\d+",
"RateLimit: \"3r/h\";r=1;t=\\d+\nX-RateLimit-Reset: \\d+",
"RateLimit: \"3r/h\";r=0;t=\\d+\nX-RateLimit-Reset: \\d+",
"RateLimit: \"3r/h\";r=0;t=[1-9]\\d*\nRetry-After: [1-9]\\d*",
]



=== TEST 5: draft, two rules: the policy lists both in configuration order, RateLimit follows the one with least remaining
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_headers draft;
    rl_rule zone=main key=k rate=10r/h name=hourly;
    rl_rule zone=main key=k rate=3r/d algorithm=fixed_window name=daily;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200, 429]
--- response_headers eval
[
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 2",
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 1",
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0",
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0",
]
--- response_headers_like eval
[
"RateLimit-Policy: \"hourly\";q=10;w=3600, ?\"daily\";q=3;w=86400\nRateLimit: \"daily\";r=2;t=\\d+",
"RateLimit-Policy: \"hourly\";q=10;w=3600, ?\"daily\";q=3;w=86400\nRateLimit: \"daily\";r=1;t=\\d+",
"RateLimit-Policy: \"hourly\";q=10;w=3600, ?\"daily\";q=3;w=86400\nRateLimit: \"daily\";r=0;t=\\d+",
"RateLimit-Policy: \"hourly\";q=10;w=3600, ?\"daily\";q=3;w=86400\nRateLimit: \"daily\";r=0;t=[1-9]\\d*\nRetry-After: [1-9]\\d*",
]



=== TEST 6: draft: the binding rule moves to the rule with least remaining
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_headers draft;
    rl_rule zone=main key=k rate=3r/h algorithm=fixed_window name=small;
    rl_rule zone=main key=$arg_big rate=5r/d algorithm=fixed_window name=big;
    empty_gif;
}
# the "big" rule alone, with the same identity: it shares its state
location /big {
    rl_headers draft;
    rl_rule zone=main key=$arg_big rate=5r/d algorithm=fixed_window name=big;
    empty_gif;
}
--- request eval
["GET /t?big=b", "GET /big?big=b", "GET /big?big=b", "GET /big?big=b",
 "GET /t?big=b", "GET /t?big=b"]
--- error_code eval
[200, 200, 200, 200, 200, 429]
--- response_headers eval
[
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 2",
"RateLimit-Policy: \"big\";q=5;w=86400\nX-RateLimit-Remaining: 3",
"RateLimit-Policy: \"big\";q=5;w=86400\nX-RateLimit-Remaining: 2",
"RateLimit-Policy: \"big\";q=5;w=86400\nX-RateLimit-Remaining: 1",
"X-RateLimit-Limit: 5\nX-RateLimit-Remaining: 0",
"X-RateLimit-Limit: 5\nX-RateLimit-Remaining: 0",
]
--- response_headers_like eval
[
"RateLimit: \"small\";r=2;t=\\d+\nRateLimit-Policy: \"small\";q=3;w=3600, ?\"big\";q=5;w=86400",
"RateLimit: \"big\";r=3;t=\\d+",
"RateLimit: \"big\";r=2;t=\\d+",
"RateLimit: \"big\";r=1;t=\\d+",
"RateLimit: \"big\";r=0;t=\\d+\nRateLimit-Policy: \"small\";q=3;w=3600, ?\"big\";q=5;w=86400",
"RateLimit: \"big\";r=0;t=[1-9]\\d*\nRetry-After: [1-9]\\d*",
]



=== TEST 7: draft: a rule whose key is empty did not apply and is not in the policy
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_headers draft;
    rl_rule zone=main key=$arg_user rate=5r/h name=per_user;
    rl_rule zone=main key=all rate=100r/h name=global;
    empty_gif;
}
--- request eval
["GET /t", "GET /t?user=u1"]
--- response_headers eval
["RateLimit-Policy: \"global\";q=100;w=3600\nX-RateLimit-Limit: 100\nX-RateLimit-Remaining: 99",
 "X-RateLimit-Limit: 5\nX-RateLimit-Remaining: 4"]
--- response_headers_like eval
["RateLimit: \"global\";r=99;t=\\d+",
 "RateLimit-Policy: \"per_user\";q=5;w=3600, ?\"global\";q=100;w=3600\nRateLimit: \"per_user\";r=4;t=\\d+"]



=== TEST 8: draft, a rejection by two rules: RateLimit names the one that frees capacity last
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_headers draft;
    rl_rule zone=main key=k rate=1r/m algorithm=sliding_log name=minute;
    rl_rule zone=main key=k rate=1r/h algorithm=sliding_log name=hour;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- response_headers eval
["X-RateLimit-Remaining: 0", "X-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0"]
--- response_headers_like eval
["RateLimit-Policy: \"minute\";q=1;w=60, ?\"hour\";q=1;w=3600",
 "RateLimit: \"hour\";r=0;t=3[56]\\d\\d\nRetry-After: 3[56]\\d\\d\nX-RateLimit-Reset: 3[56]\\d\\d"]



=== TEST 9: draft: w is the window in whole seconds, rounded up; names as written
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
rl_headers draft;
location /ms {
    rl_rule zone=main key=k rate=2r/1500ms;
    empty_gif;
}
location /mixed {
    rl_rule zone=main key=k rate=7r/1h30m;
    empty_gif;
}
location /s90 {
    rl_rule zone=main key=k rate=5r/90s algorithm=fixed_window;
    empty_gif;
}
location /day {
    rl_rule zone=main key=k rate=1000r/d algorithm=token_bucket;
    empty_gif;
}
location /sub {
    rl_rule zone=main key=k rate=100r/999ms algorithm=gcra burst=10;
    empty_gif;
}
--- request eval
["GET /ms", "GET /mixed", "GET /s90", "GET /day", "GET /sub"]
--- response_headers eval
["RateLimit-Policy: \"2r/1500ms\";q=2;w=2",
 "RateLimit-Policy: \"7r/1h30m\";q=7;w=5400",
 "RateLimit-Policy: \"5r/90s\";q=5;w=90",
 "RateLimit-Policy: \"1000r/d\";q=1000;w=86400",
 "RateLimit-Policy: \"100r/999ms\";q=100;w=1"]



=== TEST 10: draft: the name is a structured-field string, quote and backslash escaped
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_headers draft;
    rl_rule zone=main key=k rate=2r/h "name=a\"b\\c d";
    empty_gif;
}
--- request
GET /t
--- response_headers
RateLimit-Policy: "a\"b\\c d";q=2;w=3600
--- response_headers_like
RateLimit: "a\\"b\\\\c d";r=1;t=\d+



=== TEST 11: rl_headers is inherited: off at http, draft in a server, on in one location
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_headers off;
server {
    listen 127.0.0.1:$ServerPort;
    server_name draft.test;
    rl_headers draft;
    location /t {
        rl_rule zone=main key=k1 rate=5r/h name=d;
        empty_gif;
    }
    location /on {
        rl_headers on;
        rl_rule zone=main key=k2 rate=5r/h name=o;
        empty_gif;
    }
}
--- config
location /t {
    rl_rule zone=main key=k3 rate=5r/h;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /on"]
--- more_headers eval
["", "Host: draft.test", "Host: draft.test"]
--- response_headers eval
["!X-RateLimit-Limit\n!RateLimit\n!RateLimit-Policy",
 "X-RateLimit-Limit: 5\nRateLimit-Policy: \"d\";q=5;w=3600",
 "X-RateLimit-Limit: 5\n!RateLimit\n!RateLimit-Policy"]



=== TEST 12: the headers are on an upstream error (502), for on and draft
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /on {
    rl_rule zone=main key=on rate=2r/h;
    proxy_pass http://127.0.0.1:1;
}
location /draft {
    rl_headers draft;
    rl_rule zone=main key=draft rate=2r/h;
    proxy_pass http://127.0.0.1:1;
}
--- request eval
["GET /on", "GET /on", "GET /on", "GET /draft"]
--- error_code eval
[502, 502, 429, 502]
--- response_headers eval
["X-RL-Status: PASSED\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 1\n!Retry-After",
 "X-RL-Status: PASSED\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\n!Retry-After",
 "X-RL-Status: REJECTED\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0",
 "X-RL-Status: PASSED\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 1\nRateLimit-Policy: \"2r/h\";q=2;w=3600"]
--- response_headers_like eval
["X-RateLimit-Reset: \\d+", "X-RateLimit-Reset: \\d+",
 "Retry-After: [1-9]\\d*", "RateLimit: \"2r/h\";r=1;t=\\d+"]
--- error_log
connect() failed (111: Connection refused) while connecting to upstream



=== TEST 13: error_page 429 = @json: a JSON body from a named location, the headers survive the redirect
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_headers draft;
    rl_rule zone=main key=k rate=1r/h name=per_client;
    error_page 429 = @json;
    empty_gif;
}
location @json {
    default_type application/json;
    add_header X-RL-Status $rl_status always;
    add_header X-RL-Rule $rl_rule always;
    return 429 '{"error":"rate_limited","rule":"$rl_rule","retry_after":$rl_reset}\n';
}
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- response_headers eval
["X-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0\n!X-RL-Status",
 "Content-Type: application/json\nX-RL-Status: REJECTED\nX-RL-Rule: per_client\nX-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0\nRateLimit-Policy: \"per_client\";q=1;w=3600"]
--- response_headers_like eval
["X-RateLimit-Reset: \\d+",
 "Retry-After: [1-9]\\d*\nX-RateLimit-Reset: [1-9]\\d*\nRateLimit: \"per_client\";r=0;t=[1-9]\\d*"]
--- response_body_like eval
[qr/^GIF/, qr/^\{"error":"rate_limited","rule":"per_client","retry_after":[1-9]\d*\}\n\z/]



=== TEST 14: error_page 429 /429.json: a JSON body from an internal location, the headers survive
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=k rate=1r/h;
    error_page 429 /429.json;
    empty_gif;
}
location = /429.json {
    internal;
    default_type application/json;
    return 429 '{"error":"too many requests"}\n';
}
--- request eval
["GET /t", "GET /t", "GET /429.json"]
--- error_code eval
[200, 429, 404]
--- response_headers eval
["X-RateLimit-Remaining: 0\n!Retry-After",
 "Content-Type: application/json\nX-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0",
 "!X-RateLimit-Limit"]
--- response_headers_like eval
["X-RateLimit-Reset: \\d+", "Retry-After: [1-9]\\d*", "Content-Type: .*"]
--- response_body_like eval
[qr/^GIF/, qr/^\{"error":"too many requests"\}\n\z/, qr/404/]



=== TEST 15: no figures when Redis failed (failure=open): no header, also in draft
--- http_config
rl_zone gone redis=127.0.0.1:1 connect_timeout=200ms timeout=200ms;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_headers draft;
    rl_rule zone=gone key=k rate=1r/h;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- response_headers
X-RL-Status: ERROR
!X-RateLimit-Limit
!X-RateLimit-Remaining
!Retry-After
!RateLimit
!RateLimit-Policy



=== TEST 16: rl_headers takes on, off or draft
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t { rl_headers yes; rl_rule zone=main key=k rate=1r/h; empty_gif; }
--- must_die
--- error_log
invalid value "yes" in "rl_headers" directive, it must be "off", "on" or "draft"



=== TEST 17: rl_headers is valid at http, server and location level
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_headers draft;
--- config
rl_headers off;
location /t { rl_headers on; rl_rule zone=main key=k rate=1r/h; empty_gif; }
--- syntax_only



=== TEST 18: one zone failed, another decided: still no figures (ERROR), nothing counted
--- http_config
rl_zone local size=1m;
rl_zone gone redis=127.0.0.1:1 connect_timeout=200ms timeout=200ms failure=closed;
--- config
add_header X-RL-Status $rl_status always;
add_header X-RL-Remaining "$rl_remaining" always;
location /t {
    rl_headers draft;
    rl_rule zone=local key=k rate=5r/h name=local;
    rl_rule zone=gone key=k rate=5r/h name=gone;
    empty_gif;
}
location /local {
    rl_rule zone=local key=k rate=5r/h name=local;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /local"]
--- error_code eval
[429, 429, 200]
--- response_headers eval
["X-RL-Status: ERROR\n!X-RL-Remaining\n!X-RateLimit-Limit\n!X-RateLimit-Remaining\n!Retry-After\n!RateLimit\n!RateLimit-Policy",
 "X-RL-Status: ERROR\n!X-RL-Remaining\n!X-RateLimit-Limit\n!X-RateLimit-Remaining\n!Retry-After\n!RateLimit\n!RateLimit-Policy",
 "X-RL-Status: PASSED\nX-RateLimit-Remaining: 4"]



=== TEST 19: nothing left after an admission: X-RateLimit-Reset is until one more fits (a token, 20 s), not until the bucket is full (60 s)
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=k rate=3r/m algorithm=token_bucket;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200, 429]
--- response_headers eval
["X-RateLimit-Remaining: 2\nX-RateLimit-Reset: 20",
 "X-RateLimit-Remaining: 1\nX-RateLimit-Reset: 40",
 "X-RateLimit-Remaining: 0\nX-RateLimit-Reset: 20\n!Retry-After",
 "X-RateLimit-Remaining: 0\nX-RateLimit-Reset: 20\nRetry-After: 20"]



=== TEST 20: the same with stacked rules, the bucket binding (one script call)
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=k rate=100r/m name=wide;
    rl_rule zone=main key=k rate=3r/m algorithm=token_bucket name=bucket;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200, 429]
--- response_headers eval
["X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 2\nX-RateLimit-Reset: 20",
 "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 1\nX-RateLimit-Reset: 40",
 "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0\nX-RateLimit-Reset: 20",
 "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0\nX-RateLimit-Reset: 20"]



=== TEST 21: the same on the embedded store
--- http_config
rl_zone main size=1m;
--- config
location /t {
    rl_rule zone=main key=k rate=100r/m name=wide;
    rl_rule zone=main key=k rate=3r/m algorithm=token_bucket name=bucket;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200, 429]
--- response_headers eval
["X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 2\nX-RateLimit-Reset: 20",
 "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 1\nX-RateLimit-Reset: 40",
 "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0\nX-RateLimit-Reset: 20",
 "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0\nX-RateLimit-Reset: 20"]
