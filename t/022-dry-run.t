# Dry run: rl_dry_run on (every rule of a place) and the rule flag
# dry_run (one rule). A dry-run rule is evaluated and counted but never
# rejects: a request it would reject passes with $rl_status
# REJECTED_DRY_RUN (REJECTED when a real rule rejects it), and such a
# dry-run rejection consumes nothing in that rule, while the other rules
# still count the request. Retry-After only on real rejections.
#
# "Consumes nothing" is observed through a twin rule: same zone, name,
# algorithm, window and key expression (hence the same state), another N
# (not part of the state), no dry run.

use lib 't/lib';
use RlTest;

run_tests();
done_testing();

__DATA__

=== TEST 1: rl_dry_run on: nothing is rejected, would-be rejections are REJECTED_DRY_RUN, no Retry-After
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_dry_run on;
    rl_rule zone=main key=k rate=2r/h algorithm=fixed_window name=q;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200, 200, 200]
--- response_headers eval
[
"X-RL-Status: PASSED\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 1\n!Retry-After",
"X-RL-Status: PASSED\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\n!Retry-After",
"X-RL-Status: REJECTED_DRY_RUN\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\n!Retry-After",
"X-RL-Status: REJECTED_DRY_RUN\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\n!Retry-After",
"X-RL-Status: REJECTED_DRY_RUN\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\n!Retry-After",
]
--- response_headers_like eval
["X-RateLimit-Reset: \\d+", "X-RateLimit-Reset: \\d+",
 "X-RateLimit-Reset: \\d+", "X-RateLimit-Reset: \\d+",
 "X-RateLimit-Reset: \\d+"]



=== TEST 2: a dry-run rejection consumes nothing in the dry rule (its twin with N=10 has 10 - 2 - 1 left)
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /dry {
    rl_dry_run on;
    rl_rule zone=main key=k rate=2r/h algorithm=fixed_window name=q;
    empty_gif;
}
location /real {
    rl_rule zone=main key=k rate=10r/h algorithm=fixed_window name=q;
    empty_gif;
}
--- request eval
["GET /dry", "GET /dry", "GET /dry", "GET /dry", "GET /dry", "GET /real"]
--- error_code eval
[200, 200, 200, 200, 200, 200]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: PASSED",
 "X-RL-Status: REJECTED_DRY_RUN", "X-RL-Status: REJECTED_DRY_RUN",
 "X-RL-Status: REJECTED_DRY_RUN",
 "X-RL-Status: PASSED\nX-RateLimit-Limit: 10\nX-RateLimit-Remaining: 7"]



=== TEST 3: the same with sliding_window, token_bucket and gcra, on Redis and on the embedded store
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_zone local;
--- config
add_header X-RL-Status $rl_status always;
rl_dry_run on;
location /dry {
    rl_rule zone=main key=k rate=2r/h name=sw;
    rl_rule zone=main key=k rate=2r/h algorithm=token_bucket name=tb;
    rl_rule zone=local key=k rate=2r/h algorithm=gcra burst=1 name=gcra;
    rl_rule zone=local key=k rate=2r/h algorithm=sliding_log name=log;
    empty_gif;
}
location /sw {
    rl_dry_run off;
    rl_rule zone=main key=k rate=10r/h name=sw;
    empty_gif;
}
location /tb {
    rl_dry_run off;
    rl_rule zone=main key=k rate=2r/h algorithm=token_bucket name=tb;
    empty_gif;
}
location /gcra {
    rl_dry_run off;
    rl_rule zone=local key=k rate=2r/h algorithm=gcra burst=1 name=gcra;
    empty_gif;
}
location /log {
    rl_dry_run off;
    rl_rule zone=local key=k rate=10r/h algorithm=sliding_log name=log;
    empty_gif;
}
--- request eval
["GET /dry", "GET /dry", "GET /dry", "GET /dry",
 "GET /sw", "GET /tb", "GET /gcra", "GET /log"]
--- error_code eval
[200, 200, 200, 200, 200, 429, 429, 200]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: PASSED",
 "X-RL-Status: REJECTED_DRY_RUN", "X-RL-Status: REJECTED_DRY_RUN",
 "X-RL-Status: PASSED\nX-RateLimit-Limit: 10\nX-RateLimit-Remaining: 7",
 "X-RL-Status: REJECTED\nX-RateLimit-Remaining: 0",
 "X-RL-Status: REJECTED\nX-RateLimit-Remaining: 0",
 "X-RL-Status: PASSED\nX-RateLimit-Limit: 10\nX-RateLimit-Remaining: 7"]



=== TEST 4: per-rule dry_run: the other rules still count the request that passes
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k rate=1r/h algorithm=fixed_window name=new dry_run;
    rl_rule zone=main key=k rate=10r/h algorithm=fixed_window name=old;
    empty_gif;
}
location /old {
    rl_rule zone=main key=k rate=10r/h algorithm=fixed_window name=old;
    empty_gif;
}
location /new {
    rl_rule zone=main key=k rate=5r/h algorithm=fixed_window name=new;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /old", "GET /new"]
--- error_code eval
[200, 200, 200, 200, 200]
--- response_headers eval
["X-RL-Status: PASSED\n!Retry-After",
 "X-RL-Status: REJECTED_DRY_RUN\n!Retry-After",
 "X-RL-Status: REJECTED_DRY_RUN\n!Retry-After",
 "X-RL-Status: PASSED\nX-RateLimit-Limit: 10\nX-RateLimit-Remaining: 6",
 "X-RL-Status: PASSED\nX-RateLimit-Limit: 5\nX-RateLimit-Remaining: 3"]



=== TEST 5: a real rule rejects: REJECTED (not REJECTED_DRY_RUN), Retry-After, and nothing consumed anywhere
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k rate=1r/h algorithm=fixed_window name=dry dry_run;
    rl_rule zone=main key=k rate=2r/h algorithm=fixed_window name=real;
    empty_gif;
}
location /dry {
    rl_rule zone=main key=k rate=10r/h algorithm=fixed_window name=dry;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t", "GET /dry"]
--- error_code eval
[200, 200, 429, 429, 200]
--- response_headers eval
["X-RL-Status: PASSED\n!Retry-After",
 "X-RL-Status: REJECTED_DRY_RUN\n!Retry-After",
 "X-RL-Status: REJECTED\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0",
 "X-RL-Status: REJECTED\nX-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0",
 "X-RL-Status: PASSED\nX-RateLimit-Limit: 10\nX-RateLimit-Remaining: 8"]
--- response_headers_like eval
["X-RateLimit-Reset: \\d+", "X-RateLimit-Reset: \\d+",
 "Retry-After: [1-9]\\d*", "Retry-After: [1-9]\\d*",
 "X-RateLimit-Reset: \\d+"]



=== TEST 6: a dry-run rule that counted a request gets it back when a real rule of another zone rejects it
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_zone local;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k rate=5r/h algorithm=fixed_window name=dry dry_run;
    rl_rule zone=local key=k rate=1r/h algorithm=fixed_window name=real;
    empty_gif;
}
location /dry {
    rl_rule zone=main key=k rate=10r/h algorithm=fixed_window name=dry;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /dry"]
--- error_code eval
[200, 429, 429, 200]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: REJECTED\nX-RateLimit-Limit: 1",
 "X-RL-Status: REJECTED\nX-RateLimit-Limit: 1",
 "X-RL-Status: PASSED\nX-RateLimit-Remaining: 8"]



=== TEST 7: rl_dry_run is inherited from http and server, and a location turns it off
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_dry_run on;
--- config
add_header X-RL-Status $rl_status always;
location /inherited {
    rl_rule zone=main key=a rate=1r/h;
    empty_gif;
}
location /off {
    rl_dry_run off;
    rl_rule zone=main key=b rate=1r/h;
    empty_gif;
}
--- request eval
["GET /inherited", "GET /inherited", "GET /off", "GET /off"]
--- error_code eval
[200, 200, 200, 429]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: REJECTED_DRY_RUN",
 "X-RL-Status: PASSED", "X-RL-Status: REJECTED"]



=== TEST 8: rl_dry_run at server level reaches rules inherited from http
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_rule zone=main key=k rate=1r/h name=global;
--- config
rl_dry_run on;
add_header X-RL-Status $rl_status always;
location /t {
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: REJECTED_DRY_RUN",
 "X-RL-Status: REJECTED_DRY_RUN\n!Retry-After"]



=== TEST 9: a dry-run rejection with draft headers: no Retry-After, the figures of the dry rule
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_headers draft;
    rl_dry_run on;
    rl_rule zone=main key=k rate=1r/h name=soon;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- response_headers eval
["X-RL-Status: PASSED\nRateLimit-Policy: \"soon\";q=1;w=3600",
 "X-RL-Status: REJECTED_DRY_RUN\nRateLimit-Policy: \"soon\";q=1;w=3600\n!Retry-After"]
--- response_headers_like eval
["RateLimit: \"soon\";r=0;t=\\d+", "RateLimit: \"soon\";r=0;t=\\d+"]



=== TEST 10: rl_dry_run takes on or off; dry_run takes no value
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t { rl_dry_run maybe; rl_rule zone=main key=k rate=1r/h; empty_gif; }
--- must_die
--- error_log
invalid value "maybe"



=== TEST 11: dry_run=on is not a parameter of rl_rule
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t { rl_rule zone=main key=k rate=1r/h dry_run=on; empty_gif; }
--- must_die
--- error_log
invalid parameter "dry_run=on"
