# A request is decided once, by the rules of the location where the
# access phases first run: internal redirects (error_page, try_files,
# rewrite ... last, named locations) never count it twice and do not
# apply the target's rules again; the headers and variables survive the
# redirect. Subrequests (auth_request, SSI include) are not limited.
# rl_metrics counts each request once.

use lib 't/lib';
use RlTest;

run_tests();
done_testing();

__DATA__

=== TEST 1: try_files to a fallback location with the same (server) rule: counted once
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
root $ServerRoot/html;
rl_rule zone=main key=k rate=3r/h name=srv;
location /t {
    try_files $uri /fallback;
}
location = /fallback {
    empty_gif;
}
location = /metrics {
    rl_rule zone=main key=m rate=100r/h name=scrape;
    rl_metrics;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t", "GET /metrics"]
--- error_code eval
[200, 200, 200, 429, 200]
--- response_headers eval
["X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 2",
 "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 1",
 "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0",
 "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0",
 "X-RateLimit-Limit: 100"]
--- response_body_like eval
[qr/^GIF/, qr/^GIF/, qr/^GIF/, qr/429/,
 qr/^rl_requests_total\{zone="main",rule="srv",outcome="passed"\} 3$(?s:.*)^rl_requests_total\{zone="main",rule="srv",outcome="rejected"\} 1$/m]



=== TEST 2: try_files to a named location with its own rule: the target's rule does not apply
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
root $ServerRoot/html;
add_header X-RL-Status $rl_status always;
add_header X-RL-Rule $rl_rule always;
location /t {
    rl_rule zone=main key=k rate=5r/h name=first;
    try_files $uri @app;
}
location @app {
    rl_rule zone=main key=k rate=1r/h name=second;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200]
--- response_headers eval
["X-RL-Status: PASSED\nX-RL-Rule: first\nX-RateLimit-Limit: 5\nX-RateLimit-Remaining: 4",
 "X-RL-Status: PASSED\nX-RL-Rule: first\nX-RateLimit-Limit: 5\nX-RateLimit-Remaining: 3",
 "X-RL-Status: PASSED\nX-RL-Rule: first\nX-RateLimit-Limit: 5\nX-RateLimit-Remaining: 2"]



=== TEST 3: rewrite ... last: the rewrite runs before any decision; the target decides, once
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Rule $rl_rule always;
location /old {
    rl_rule zone=main key=k rate=1r/h name=old;
    rewrite ^ /new last;
}
location /new {
    rl_rule zone=main key=k rate=3r/h name=new;
    empty_gif;
}
--- request eval
["GET /old", "GET /old", "GET /new", "GET /old"]
--- error_code eval
[200, 200, 200, 429]
--- response_headers eval
["X-RL-Rule: new\nX-RateLimit-Remaining: 2",
 "X-RL-Rule: new\nX-RateLimit-Remaining: 1",
 "X-RL-Rule: new\nX-RateLimit-Remaining: 0",
 "X-RL-Rule: new\nX-RateLimit-Remaining: 0"]



=== TEST 4: error_page 404 to a location with another rule: counted once, by the first location
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
root $ServerRoot/html;
add_header X-RL-Rule $rl_rule always;
location /missing {
    rl_rule zone=main key=k rate=5r/h name=page;
    error_page 404 /not_found;
}
location = /not_found {
    rl_rule zone=main key=k rate=1r/h name=error_page;
    empty_gif;
}
--- request eval
["GET /missing", "GET /missing", "GET /missing"]
--- error_code eval
[404, 404, 404]
--- response_headers eval
["X-RL-Rule: page\nX-RateLimit-Limit: 5\nX-RateLimit-Remaining: 4",
 "X-RL-Rule: page\nX-RateLimit-Limit: 5\nX-RateLimit-Remaining: 3",
 "X-RL-Rule: page\nX-RateLimit-Limit: 5\nX-RateLimit-Remaining: 2"]
--- response_body_like eval
[qr/^GIF/, qr/^GIF/, qr/^GIF/]



=== TEST 5: error_page 429 = @json: the variables and figures survive, the request counts once
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=k rate=1r/h name=per_client;
    rl_rule zone=main key=k rate=10r/h name=wide;
    error_page 429 = @json;
    empty_gif;
}
location @json {
    default_type application/json;
    add_header X-RL-Status $rl_status always;
    return 429 '{"status":"$rl_status","rule":"$rl_rule","limit":$rl_limit,"remaining":$rl_remaining,"retry_after":$rl_reset}';
}
location = /metrics {
    rl_metrics;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /metrics"]
--- error_code eval
[200, 429, 429, 200]
--- response_headers eval
["X-RateLimit-Limit: 1",
 "X-RL-Status: REJECTED\nContent-Type: application/json\nX-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0",
 "X-RL-Status: REJECTED\nContent-Type: application/json\nX-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0",
 "!X-RateLimit-Limit"]
--- response_headers_like eval
["X-RateLimit-Reset: \\d+", "Retry-After: [1-9]\\d*", "Retry-After: [1-9]\\d*",
 "Content-Type: text/plain; version=0\\.0\\.4.*"]
--- response_body_like eval
[qr/^GIF/,
 qr/^\{"status":"REJECTED","rule":"per_client","limit":1,"remaining":0,"retry_after":[1-9]\d*\}\z/,
 qr/^\{"status":"REJECTED","rule":"per_client","limit":1,"remaining":0,"retry_after":[1-9]\d*\}\z/,
 qr/^rl_requests_total\{zone="main",rule="per_client",outcome="passed"\} 1\n(?s:.*)^rl_requests_total\{zone="main",rule="per_client",outcome="rejected"\} 2\n(?s:.*)^rl_requests_total\{zone="main",rule="wide",outcome="passed"\} 3\n/m]



=== TEST 6: auth_request: the subrequest to a limited location is not limited; the location itself is
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    auth_request /auth;
    empty_gif;
}
location = /auth {
    rl_rule zone=main key=k rate=1r/h name=auth;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /auth", "GET /auth", "GET /t"]
--- error_code eval
[200, 200, 200, 200, 429, 200]
--- response_headers eval
["!X-RL-Status\n!X-RateLimit-Limit", "!X-RL-Status\n!X-RateLimit-Limit",
 "!X-RL-Status\n!X-RateLimit-Limit",
 "X-RL-Status: PASSED\nX-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0",
 "X-RL-Status: REJECTED", "!X-RL-Status\n!X-RateLimit-Limit"]



=== TEST 7: auth_request from a limited location: only the main request's rules count, its headers only
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Rule $rl_rule always;
location /t {
    rl_rule zone=main key=k rate=5r/h name=main;
    auth_request /auth;
    empty_gif;
}
location = /auth {
    rl_rule zone=main key=k rate=1r/h name=auth;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200]
--- response_headers eval
["X-RL-Rule: main\nX-RateLimit-Limit: 5\nX-RateLimit-Remaining: 4",
 "X-RL-Rule: main\nX-RateLimit-Limit: 5\nX-RateLimit-Remaining: 3",
 "X-RL-Rule: main\nX-RateLimit-Limit: 5\nX-RateLimit-Remaining: 2"]



=== TEST 8: SSI include virtual of a limited location is not limited
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location = /page {
    default_type text/html;
    ssi on;
    return 200 '[<!--# include virtual="/inc" -->]';
}
location = /inc {
    rl_rule zone=main key=k rate=1r/h name=inc;
    empty_gif;
}
--- request eval
["GET /page", "GET /page", "GET /page", "GET /inc", "GET /inc"]
--- error_code eval
[200, 200, 200, 200, 429]
--- response_body_like eval
[qr/^\[GIF89a.*\]\z/s, qr/^\[GIF89a.*\]\z/s, qr/^\[GIF89a.*\]\z/s, qr/^GIF/,
 qr/429/]
--- response_headers eval
["!X-RateLimit-Limit", "!X-RateLimit-Limit", "!X-RateLimit-Limit",
 "X-RateLimit-Remaining: 0", "X-RateLimit-Remaining: 0"]



=== TEST 9: the access log of a redirected request has the decision
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
log_format rl '$uri $status $rl_status $rl_rule';
--- config
access_log $ServerRoot/logs/rl.log rl;
location /t {
    rl_rule zone=main key=k rate=1r/h name=per_client;
    error_page 429 /limited.txt;
    empty_gif;
}
location = /limited.txt {
    internal;
    return 429 "limited\n";
}
location = /log {
    alias $ServerRoot/logs/rl.log;
    default_type text/plain;
}
--- request eval
["GET /t", "GET /t", "GET /log"]
--- error_code eval
[200, 429, 200]
--- response_body_like eval
[qr/^GIF/, qr/^limited\n\z/,
 qr{\A/t 200 PASSED per_client\n/limited\.txt 429 REJECTED per_client\n\z}]
