# Configuration: every error nginx -t must report, in nginx's words and with
# the file:line, and valid configurations that need no reachable Redis.

use lib 't/lib';
use RlTest;

run_tests();
done_testing();

__DATA__

=== TEST 1: unknown parameter in rl_rule
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=1r/s foo=bar; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "foo=bar" in \S+nginx\.conf:\d+/]



=== TEST 2: unknown parameter in rl_zone
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort foo=bar;
--- config
location /t { empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "foo=bar" in \S+nginx\.conf:\d+/]



=== TEST 3: bad rate unit
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=10x/s; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid rate "10x\/s" in \S+nginx\.conf:\d+/]



=== TEST 4: zero rate
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=0r/s; empty_gif; }
--- must_die
--- error_log
invalid rate "0r/s"



=== TEST 5: rate without a number
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=r/s; empty_gif; }
--- must_die
--- error_log
invalid rate "r/s"



=== TEST 6: bad timeout
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=abc;
--- config
location /t { empty_gif; }
--- must_die
--- error_log
invalid timeout "abc"



=== TEST 7: bad connect_timeout
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort connect_timeout=abc;
--- config
location /t { empty_gif; }
--- must_die
--- error_log
invalid connect_timeout "abc"



=== TEST 8: unknown zone
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=nope key=k rate=1r/s; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* unknown rl_zone "nope" in \S+nginx\.conf:\d+/]



=== TEST 9: rule without key
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main rate=1r/s; empty_gif; }
--- must_die
--- error_log
"rl_rule" must have "key" parameter



=== TEST 10: rule without zone
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule key=k rate=1r/s; empty_gif; }
--- must_die
--- error_log
"rl_rule" must have "zone" parameter



=== TEST 11: rule without rate
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k; empty_gif; }
--- must_die
--- error_log
"rl_rule" must have "rate" or "concurrency" parameter



=== TEST 12: duplicate zone name
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* duplicate rl_zone "main" in \S+nginx\.conf:\d+/]



=== TEST 13: bad redis port
--- http_config
rl_zone main redis=127.0.0.1:99999;
--- config
location /t { empty_gif; }
--- must_die
--- error_log
invalid port in "redis=127.0.0.1:99999"



=== TEST 14: rl_status outside 400..599 (200)
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_status 200; empty_gif; }
--- must_die
--- error_log
invalid value "200" in "rl_status" directive, it must be a status from 400 to 599



=== TEST 15: rl_status outside 400..599 (600)
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
rl_status 600;
location /t { empty_gif; }
--- must_die
--- error_log
invalid value "600" in "rl_status" directive, it must be a status from 400 to 599



=== TEST 16: bad failure policy
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort failure=maybe;
--- config
location /t { empty_gif; }
--- must_die
--- error_log
invalid failure "maybe"



=== TEST 17: bad algorithm
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=1r/s algorithm=foo; empty_gif; }
--- must_die
--- error_log
invalid algorithm "foo"



=== TEST 18: rl_zone is not allowed in server
--- config
rl_zone main redis=127.0.0.1:$RedisPort;
location /t { empty_gif; }
--- must_die
--- error_log
"rl_zone" directive is not allowed here



=== TEST 19: valid: host name, unix socket, every zone parameter
--- http_config
rl_zone byname redis=localhost:$RedisPort;
rl_zone bysock redis=unix:$RedisSock;
rl_zone full redis=127.0.0.1:$RedisPort username=app password=secret db=3
        prefix=myapp: timeout=250ms connect_timeout=2s failure=closed;
rl_zone open redis=127.0.0.1:$RedisPort failure=open;
rl_status 429;
--- config
location /t {
    rl_rule zone=byname key=$binary_remote_addr rate=10r/s;
    rl_rule zone=bysock key=$arg_k rate=100r/m algorithm=fixed_window;
    rl_rule zone=full "key=$http_x_api_key:$uri" rate=5r/10s name=api;
    rl_rule zone=open key=k rate=1000r/d algorithm=sliding_window;
    rl_status 503;
    empty_gif;
}
--- syntax_only
--- no_error_log
[warn]



=== TEST 20: valid: a zone on a closed port passes nginx -t
--- http_config
rl_zone gone redis=127.0.0.1:1;
--- config
location /t { rl_rule zone=gone key=k rate=1r/s; empty_gif; }
--- syntax_only



=== TEST 21: a zone on a closed port starts and fails open
--- http_config
rl_zone gonezone redis=127.0.0.1:1 connect_timeout=200ms timeout=200ms;
--- config
add_header X-RL-Status $rl_status always;
location /t { rl_rule zone=gonezone key=k rate=1r/d; empty_gif; }
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200]
--- response_headers eval
["X-RL-Status: ERROR", "X-RL-Status: ERROR", "X-RL-Status: ERROR"]
--- error_log eval
[qr/\[error\](?=.*gonezone)(?=.*redis)/i]



=== TEST 22: a zone on a closed port, failure=closed
--- http_config
rl_zone gonezone redis=127.0.0.1:1 timeout=200ms failure=closed;
--- config
add_header X-RL-Status $rl_status always;
location /t { rl_rule zone=gonezone key=k rate=1000r/d; empty_gif; }
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[429, 429]
--- response_headers eval
["X-RL-Status: ERROR", "X-RL-Status: ERROR"]



=== TEST 23: valid: rl_rule at http and server level
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
rl_rule zone=main key=$binary_remote_addr rate=100r/s;
--- config
rl_rule zone=main key=$arg_k rate=100r/s;
location /t { empty_gif; }
--- syntax_only



=== TEST 24: a name with a control character (it goes into headers as it is)
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/m "name=x\r\nX-Injected: yes";
    empty_gif;
}
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid name "name=x.*printable ASCII characters only in \S+nginx\.conf:\d+/s]



=== TEST 25: two rules of one place on one state
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=$remote_addr rate=10r/m name=api;
    rl_rule zone=main key=$remote_addr rate=100r/m name=api;
    empty_gif;
}
--- must_die
--- error_log eval
[qr/\[emerg\].* "rl_rule" shares its state with the one in \S+nginx\.conf:\d+ \(same zone, name, algorithm, window and key\): give one of them another "name=" in \S+nginx\.conf:\d+/]



=== TEST 26: rules by their rates alone differ in their windows
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=$remote_addr rate=10r/s;
    rl_rule zone=main key=$remote_addr rate=100r/m;
    rl_rule zone=main key=$remote_addr rate=1000r/h algorithm=gcra;
    empty_gif;
}
--- syntax_only



=== TEST 27: a username without a password
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort username=app;
--- config
location /t { empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* "username=app" needs "password" in \S+nginx\.conf:\d+/]



=== TEST 28: a rule parameter given twice
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=5r/s rate=50r/s; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* duplicate parameter "rate=50r\/s" in \S+nginx\.conf:\d+/]



=== TEST 29: a zone parameter given twice
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=1s timeout=2s;
--- config
location /t { empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* duplicate parameter "timeout=2s" in \S+nginx\.conf:\d+/]



=== TEST 30: dry_run twice
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=5r/s dry_run dry_run; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* duplicate parameter "dry_run"/]



=== TEST 31: a zone name longer than 120 characters
--- http_config
rl_zone zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz redis=127.0.0.1:$RedisPort;
--- config
location /t { empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid zone name "z{121}": at most 120 characters in \S+nginx\.conf:\d+/]



=== TEST 32: a rule name longer than 120 characters
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=1r/s name=nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid name "n{121}": at most 120 characters in \S+nginx\.conf:\d+/]



=== TEST 33: names of 120 characters
--- http_config
rl_zone zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz key=k rate=1r/s name=nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn; empty_gif; }
--- syntax_only



=== TEST 34: concurrency=0
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k concurrency=0; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid concurrency "concurrency=0": a number of requests from 1 to 100000 in \S+nginx\.conf:\d+/]



=== TEST 35: concurrency above 100000
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k concurrency=100001; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid concurrency "concurrency=100001": a number of requests from 1 to 100000 in \S+nginx\.conf:\d+/]



=== TEST 36: concurrency that is no number
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k concurrency=many; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid concurrency "concurrency=many": a number of requests from 1 to 100000 in \S+nginx\.conf:\d+/]



=== TEST 37: a bad hold
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k concurrency=4 hold=abc; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid hold "hold=abc": a time from 1s to 1d in \S+nginx\.conf:\d+/]



=== TEST 38: a hold under a second
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k concurrency=4 hold=500ms; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid hold "hold=500ms": a time from 1s to 1d in \S+nginx\.conf:\d+/]



=== TEST 39: a hold over a day
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k concurrency=4 hold=2d; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid hold "hold=2d": a time from 1s to 1d in \S+nginx\.conf:\d+/]



=== TEST 40: hold without concurrency
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=1r/s hold=10s; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "hold=10s": "hold" needs "concurrency" in \S+nginx\.conf:\d+/]



=== TEST 41: concurrency with rate
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k concurrency=4 rate=5r/s; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "rate=5r\/s" with "concurrency=4" in \S+nginx\.conf:\d+/]



=== TEST 42: concurrency with algorithm
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k algorithm=gcra concurrency=4; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "algorithm=gcra" with "concurrency=4" in \S+nginx\.conf:\d+/]



=== TEST 43: concurrency with cost
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k concurrency=4 cost=2; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "cost=2" with "concurrency=4" in \S+nginx\.conf:\d+/]



=== TEST 44: concurrency with burst
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k concurrency=4 burst=2; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "burst=2" with "concurrency=4" in \S+nginx\.conf:\d+/]



=== TEST 45: concurrency with nodelay
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k concurrency=4 nodelay; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "nodelay" with "concurrency=4" in \S+nginx\.conf:\d+/]



=== TEST 46: charge on a concurrency rule
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k concurrency=4 charge=$upstream_http_x_tokens; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "charge=\$upstream_http_x_tokens" with "concurrency=4" in \S+nginx\.conf:\d+/]



=== TEST 47: charge on sliding_log
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=5r/s algorithm=sliding_log charge=$upstream_http_x_tokens; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid parameter "charge=\$upstream_http_x_tokens" for algorithm "sliding_log" in \S+nginx\.conf:\d+/]



=== TEST 48: an empty charge
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=5r/s charge=; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid charge "charge=" in \S+nginx\.conf:\d+/]



=== TEST 49: charge given twice
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t { rl_rule zone=main key=k rate=5r/s charge=1 charge=2; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* duplicate parameter "charge=2" in \S+nginx\.conf:\d+/]



=== TEST 50: concurrency= and charge= on every algorithm that takes it
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
rl_zone local;
--- config
location /t {
    rl_rule zone=main key=k concurrency=4;
    rl_rule zone=main key=k concurrency=100000 hold=1d name=wide dry_run;
    rl_rule zone=local key=k concurrency=1 hold=1s;
    rl_rule zone=main key=k rate=5r/s charge=$upstream_http_x_tokens;
    rl_rule zone=main key=k rate=5r/s algorithm=fixed_window charge=7;
    rl_rule zone=main key=k rate=5r/s algorithm=token_bucket cost=$arg_c charge=$arg_t;
    rl_rule zone=main key=k rate=5r/s algorithm=leaky_bucket burst=3 charge=$arg_t;
    rl_rule zone=local key=k rate=5r/s algorithm=gcra burst=3 delay=1 charge=$arg_t;
    empty_gif;
}
--- syntax_only
