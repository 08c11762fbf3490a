# Configuration of the algorithms, burst/delay/nodelay, cost and the
# embedded store: every error nginx -t must report (in nginx's words, with
# file:line), and valid configurations.

use lib 't/lib';
use RlTest;

run_tests();
done_testing();

__DATA__

=== TEST 1: burst= for fixed_window
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/s algorithm=fixed_window burst=5;
    empty_gif;
}
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "burst=5" for algorithm "fixed_window" in \S+nginx\.conf:\d+/]



=== TEST 2: burst= before algorithm= is judged the same
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/s burst=5 algorithm=fixed_window;
    empty_gif;
}
--- must_die
--- error_log
invalid parameter "burst=5" for algorithm "fixed_window"



=== TEST 3: burst= for the default algorithm (sliding_window)
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/s burst=5; empty_gif; }
--- must_die
--- error_log
invalid parameter "burst=5" for algorithm "sliding_window"



=== TEST 4: burst= for sliding_log
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/s algorithm=sliding_log burst=5;
    empty_gif;
}
--- must_die
--- error_log
invalid parameter "burst=5" for algorithm "sliding_log"



=== TEST 5: nodelay for sliding_window
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/s algorithm=sliding_window nodelay;
    empty_gif;
}
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "nodelay" for algorithm "sliding_window" in \S+nginx\.conf:\d+/]



=== TEST 6: nodelay for the default algorithm, embedded zone
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/s nodelay; empty_gif; }
--- must_die
--- error_log
invalid parameter "nodelay" for algorithm "sliding_window"



=== TEST 7: delay= for token_bucket (it takes burst=, not delay=)
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/s algorithm=token_bucket burst=5 delay=1;
    empty_gif;
}
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "delay=1" for algorithm "token_bucket" in \S+nginx\.conf:\d+/]



=== TEST 8: delay= for fixed_window
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/s algorithm=fixed_window delay=1;
    empty_gif;
}
--- must_die
--- error_log
invalid parameter "delay=1" for algorithm "fixed_window"



=== TEST 9: non-numeric burst
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/s algorithm=gcra burst=x;
    empty_gif;
}
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid burst value "burst=x" in \S+nginx\.conf:\d+/]



=== TEST 10: negative burst
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/s algorithm=token_bucket burst=-1;
    empty_gif;
}
--- must_die
--- error_log
invalid burst value "burst=-1"



=== TEST 11: cost=0
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=5r/s cost=0; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid cost value "cost=0" in \S+nginx\.conf:\d+/]



=== TEST 12: cost= not a number nor a variable
--- http_config
rl_zone main;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/s algorithm=token_bucket cost=abc;
    empty_gif;
}
--- must_die
--- error_log
invalid cost value "cost=abc"



=== TEST 13: delay= and nodelay together
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/s algorithm=gcra burst=5 delay=2 nodelay;
    empty_gif;
}
--- must_die
--- error_log eval
[qr/\[emerg\].* "delay" and "nodelay" are mutually exclusive in \S+nginx\.conf:\d+/]



=== TEST 14: nodelay and delay= together (the other order)
--- http_config
rl_zone main;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/s algorithm=leaky_bucket burst=5 nodelay
            delay=2;
    empty_gif;
}
--- must_die
--- error_log
"delay" and "nodelay" are mutually exclusive



=== TEST 15: size= on a Redis zone
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort size=10m;
--- config
location /t { empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* "size" is for a zone without "redis" or with "failure=local" in \S+nginx\.conf:\d+/]



=== TEST 16: size= too small
--- http_config
rl_zone main size=1k;
--- config
location /t { rl_rule zone=main key=k rate=5r/s; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid size "1k" in \S+nginx\.conf:\d+/]



=== TEST 17: size= not a size
--- http_config
rl_zone main size=abc;
--- config
location /t { rl_rule zone=main key=k rate=5r/s; empty_gif; }
--- must_die
--- error_log
invalid size "abc"



=== TEST 18: unknown algorithm
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/s algorithm=foo; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid algorithm "foo" in \S+nginx\.conf:\d+/]



=== TEST 19: valid: every algorithm with the parameters it takes, both stores
--- http_config
rl_zone r redis=127.0.0.1:$RedisPort;
rl_zone e;
rl_zone small size=512k;
rl_zone big size=32m;
--- config
location /t {
    rl_rule zone=r key=a rate=5r/s algorithm=fixed_window cost=2;
    rl_rule zone=r key=a rate=5r/s algorithm=sliding_window cost=$arg_c;
    rl_rule zone=r key=a rate=5r/s algorithm=sliding_log name=log;
    rl_rule zone=r key=a rate=5r/s algorithm=token_bucket burst=10;
    rl_rule zone=r key=a rate=5r/s algorithm=leaky_bucket burst=5 delay=2;
    rl_rule zone=r key=a rate=5r/s algorithm=gcra burst=5 nodelay;
    rl_rule zone=e key=a rate=5r/s algorithm=fixed_window;
    rl_rule zone=e key=a rate=5r/s algorithm=sliding_window cost=3;
    rl_rule zone=e key=a rate=5r/s algorithm=sliding_log cost=$arg_c;
    rl_rule zone=e key=a rate=5r/s algorithm=token_bucket;
    rl_rule zone=e key=a rate=5r/s algorithm=leaky_bucket burst=5 nodelay;
    rl_rule zone=small key=a rate=5r/s algorithm=gcra burst=5 delay=0;
    rl_rule zone=big key=a rate=5r/s algorithm=gcra;
    empty_gif;
}
--- syntax_only
--- no_error_log
[warn]



=== TEST 20: valid: an embedded zone alone, no Redis anywhere, starts and limits
--- http_config
rl_zone main;
--- config
add_header X-RL-Status $rl_status always;
location /t { rl_rule zone=main key=k rate=2r/d; empty_gif; }
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
["X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 1\nX-RL-Status: PASSED",
 "X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\nX-RL-Status: PASSED",
 "X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0\nX-RL-Status: REJECTED"]
--- no_error_log
[warn]



=== TEST 90: sliding_log keeps N times per key: N is bounded
--- http_config
rl_zone main;
--- config
location /t {
    rl_rule zone=main key=k rate=100001r/h algorithm=sliding_log;
    empty_gif;
}
--- must_die
--- error_log
rate "100001r/h" is too large for "sliding_log" (at most 100000 requests per window)



=== TEST 91: sliding_log at the bound is accepted
--- http_config
rl_zone main;
--- config
location /t {
    rl_rule zone=main key=k rate=100000r/h algorithm=sliding_log;
    empty_gif;
}
--- syntax_only



=== TEST 92: a constant cost beyond what the rule holds
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=3r/3s algorithm=fixed_window cost=5;
    empty_gif;
}
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid cost value "cost=5": the rule holds at most 3, so no request would ever pass in \S+nginx\.conf:\d+/]



=== TEST 93: a bucket's cost beyond its burst
--- http_config
rl_zone main;
--- config
location /t {
    rl_rule zone=main key=k rate=10r/h algorithm=token_bucket burst=4 cost=5;
    empty_gif;
}
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid cost value "cost=5": the rule holds at most 4/]



=== TEST 94: a cost of exactly the capacity (gcra: 1 + burst)
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=1r/h algorithm=gcra burst=9 cost=10;
    rl_rule zone=main key=k rate=3r/s algorithm=sliding_log cost=3;
    empty_gif;
}
--- syntax_only



=== TEST 95: failure=local without redis=
--- http_config
rl_zone main failure=local;
--- config
location /t { rl_rule zone=main key=k rate=5r/s; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* "failure=local" needs "redis": a zone without it is local already in \S+nginx\.conf:\d+/]



=== TEST 96: size= on a Redis zone with failure=local
--- http_config
rl_zone main redis=127.0.0.1:1 failure=local size=1m;
--- config
location /t { rl_rule zone=main key=k rate=5r/s; empty_gif; }
--- syntax_only



=== TEST 97: a size= that holds fewer than 1000 states of a rule: a warning, once a rule
--- http_config
rl_zone main redis=127.0.0.1:1 failure=local size=256k;
rl_zone e size=64k;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/s name=five;
    rl_rule zone=main key=k rate=600r/m algorithm=sliding_log name=log;
    rl_rule zone=e key=k rate=1r/s;
    empty_gif;
}
location /u {
    rl_rule zone=main key=k rate=5r/s name=five;
    empty_gif;
}
--- syntax_only
--- error_log eval
[qr/\[warn\] .*rl_zone "main" size=262144 holds about 976 states of rule "five" \(\d+ bytes each\): fewer than 1000 keys can be limited at once, a larger "size" holds more, in \S+nginx\.conf:\d+/,
 qr/\[warn\] .*rl_zone "main" size=262144 holds about 30 states of rule "log" \(\d+ bytes each\)/,
 qr/\[warn\] .*rl_zone "e" size=65536 holds about 208 states of rule "1r\/s"/]
--- no_error_log eval
[qr/rule "five".*\n(.*\n)*.*rule "five"/]
