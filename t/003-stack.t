# Stacked rules (all must pass, the binding rule is the one with least
# remaining, a rejection consumes nothing) and inheritance between levels
# (a level with no rl_rule inherits all, a level with any inherits none).

use lib 't/lib';
use RlTest;

run_tests();
done_testing();

__DATA__

=== TEST 1: 2r/h and 5r/d on one key: the 3rd is rejected and consumes nothing
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /s {
    rl_rule zone=main key=k1 rate=2r/h name=short;
    rl_rule zone=main key=k1 rate=5r/d algorithm=fixed_window name=long;
    empty_gif;
}
# the same "long" rule alone: it shares its state with /s
location /long {
    rl_rule zone=main key=k1 rate=5r/d algorithm=fixed_window name=long;
    empty_gif;
}
--- request eval
["GET /s", "GET /s", "GET /s", "GET /s", "GET /long"]
--- error_code eval
[200, 200, 429, 429, 200]
--- response_headers eval
[
"X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 1\nX-RL-Status: PASSED",
"X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\nX-RL-Status: PASSED",
"X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\nX-RL-Status: REJECTED",
"X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\nX-RL-Status: REJECTED",
"X-RateLimit-Limit: 5\nX-RateLimit-Remaining: 2\nX-RL-Status: PASSED",
]



=== TEST 2: the daily rule binds: the hourly one is not consumed by rejections
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /s {
    rl_rule zone=main key=k1 rate=5r/h name=wide;
    rl_rule zone=main key=k1 rate=2r/d algorithm=fixed_window name=narrow;
    empty_gif;
}
location /wide {
    rl_rule zone=main key=k1 rate=5r/h name=wide;
    empty_gif;
}
--- request eval
["GET /s", "GET /s", "GET /s", "GET /s", "GET /s", "GET /wide"]
--- error_code eval
[200, 200, 429, 429, 429, 200]
--- response_headers eval
[
"X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 1",
"X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0",
"X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\nX-RL-Status: REJECTED",
"X-RateLimit-Limit: 2\nX-RL-Status: REJECTED",
"X-RateLimit-Limit: 2\nX-RL-Status: REJECTED",
"X-RateLimit-Limit: 5\nX-RateLimit-Remaining: 2\nX-RL-Status: PASSED",
]



=== TEST 3: per-user and global rules stacked
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=$arg_u rate=2r/d algorithm=fixed_window name=user;
    rl_rule zone=main key=global rate=3r/d algorithm=fixed_window name=all;
    empty_gif;
}
--- request eval
["GET /t?u=a", "GET /t?u=a", "GET /t?u=a", "GET /t?u=b", "GET /t?u=c"]
--- error_code eval
[200, 200, 429, 200, 429]
--- response_headers eval
[
"X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 1",
"X-RateLimit-Remaining: 0",
"X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\nX-RL-Status: REJECTED",
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0\nX-RL-Status: PASSED",
"X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0\nX-RL-Status: REJECTED",
]



=== TEST 4: identical rules in two locations share state, another name does not
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /a {
    rl_rule zone=main key=k1 rate=3r/d algorithm=fixed_window name=shared;
    empty_gif;
}
location /b {
    rl_rule zone=main key=k1 rate=3r/d algorithm=fixed_window name=shared;
    empty_gif;
}
location /c {
    rl_rule zone=main key=k1 rate=3r/d algorithm=fixed_window name=other;
    empty_gif;
}
--- request eval
["GET /a", "GET /b", "GET /a", "GET /b", "GET /c"]
--- error_code eval
[200, 200, 200, 429, 200]
--- response_headers eval
["X-RateLimit-Remaining: 2", "X-RateLimit-Remaining: 1",
 "X-RateLimit-Remaining: 0", "X-RL-Status: REJECTED",
 "X-RateLimit-Remaining: 2"]



=== TEST 5: rules in two zones stacked: a rejection consumes nothing in either
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_zone other redis=unix:$RedisSock prefix=other: timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /s {
    rl_rule zone=main key=k1 rate=3r/d algorithm=fixed_window name=m;
    rl_rule zone=other key=k1 rate=1r/d algorithm=fixed_window name=o;
    empty_gif;
}
location /m {
    rl_rule zone=main key=k1 rate=3r/d algorithm=fixed_window name=m;
    empty_gif;
}
--- request eval
["GET /s", "GET /s", "GET /s", "GET /m"]
--- error_code eval
[200, 429, 429, 200]
--- response_headers eval
["X-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0\nX-RL-Status: PASSED",
 "X-RateLimit-Limit: 1\nX-RL-Status: REJECTED",
 "X-RateLimit-Limit: 1\nX-RL-Status: REJECTED",
 "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 1\nX-RL-Status: PASSED"]



=== TEST 6: server rules apply to a location without rules, not to one with its own
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
rl_rule zone=main key=k1 rate=2r/d algorithm=fixed_window name=srv;
location /inh {
    empty_gif;
}
location /own {
    rl_rule zone=main key=k1 rate=10r/d algorithm=fixed_window name=own;
    empty_gif;
}
--- request eval
["GET /inh", "GET /inh", "GET /inh", "GET /own", "GET /own", "GET /own"]
--- error_code eval
[200, 200, 429, 200, 200, 200]
--- response_headers eval
[
"X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 1",
"X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0",
"X-RateLimit-Limit: 2\nX-RL-Status: REJECTED",
"X-RateLimit-Limit: 10\nX-RateLimit-Remaining: 9\nX-RL-Status: PASSED",
"X-RateLimit-Limit: 10\nX-RateLimit-Remaining: 8",
"X-RateLimit-Limit: 10\nX-RateLimit-Remaining: 7",
]



=== TEST 7: http rules reach a server and location without rules
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_rule zone=main key=k1 rate=1r/d algorithm=fixed_window name=global;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- response_headers eval
["X-RateLimit-Limit: 1\nX-RL-Status: PASSED",
 "X-RateLimit-Limit: 1\nX-RL-Status: REJECTED"]



=== TEST 8: a server with its own rule does not get the http one
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_rule zone=main key=k1 rate=1r/d algorithm=fixed_window name=global;
--- config
add_header X-RL-Status $rl_status always;
rl_rule zone=main key=k1 rate=3r/d algorithm=fixed_window name=srv;
location /t {
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200, 429]
--- response_headers eval
["X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 2",
 "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 1",
 "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 0",
 "X-RateLimit-Limit: 3\nX-RL-Status: REJECTED"]



=== TEST 9: rl_status inherited from the server, overridden in a location
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
rl_status 503;
location /a {
    rl_rule zone=main key=a rate=1r/d;
    empty_gif;
}
location /b {
    rl_rule zone=main key=b rate=1r/d;
    rl_status 418;
    empty_gif;
}
--- request eval
["GET /a", "GET /a", "GET /b", "GET /b"]
--- error_code eval
[200, 503, 200, 418]



=== TEST 10: nested location inherits the rules of the enclosing one
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /outer {
    rl_rule zone=main key=k1 rate=1r/d algorithm=fixed_window;
    location /outer/inner {
        empty_gif;
    }
    empty_gif;
}
--- request eval
["GET /outer/inner", "GET /outer/inner"]
--- error_code eval
[200, 429]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: REJECTED"]
