# Rules at http, server and location levels: a level without rl_rule
# inherits all of the enclosing level's, a level with one inherits none
# (as limit_req). RateLimit-Policy (rl_headers draft) lists exactly the
# rules that applied, so it shows which ones a location got. Several zones
# (Redis, another Redis prefix, the embedded store) in one location. The
# plain directives (rl_status, rl_headers, rl_dry_run, rl_log_level) are
# inherited and overridden level by level.

use lib 't/lib';
use RlTest;

run_tests();
done_testing();

__DATA__

=== TEST 1: which rules a location gets, from http, server and enclosing locations
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_headers draft;
rl_rule zone=main key=k rate=100r/h name=h1;
rl_rule zone=main key=k rate=200r/h name=h2;
server {
    listen 127.0.0.1:$ServerPort;
    server_name own.test;
    rl_rule zone=main key=k rate=300r/h name=s;
    location /x {
        empty_gif;
    }
    location /y {
        rl_rule zone=main key=k rate=400r/h name=y;
        empty_gif;
    }
}
--- config
location /inherit {
    empty_gif;
}
location /own {
    rl_rule zone=main key=k rate=500r/h name=l;
    location /own/nested {
        empty_gif;
    }
    location /own/nested_own {
        rl_rule zone=main key=k rate=600r/h name=n;
        empty_gif;
    }
    empty_gif;
}
--- more_headers eval
["", "", "", "", "Host: own.test", "Host: own.test"]
--- request eval
["GET /inherit", "GET /own", "GET /own/nested", "GET /own/nested_own",
 "GET /x", "GET /y"]
--- response_headers_like eval
["RateLimit-Policy: \"h1\";q=100;w=3600, ?\"h2\";q=200;w=3600",
 "RateLimit-Policy: \"l\";q=500;w=3600",
 "RateLimit-Policy: \"l\";q=500;w=3600",
 "RateLimit-Policy: \"n\";q=600;w=3600",
 "RateLimit-Policy: \"s\";q=300;w=3600",
 "RateLimit-Policy: \"y\";q=400;w=3600"]



=== TEST 2: inherited rules share their state between the locations that inherit them
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
rl_rule zone=main key=k rate=3r/h name=srv;
location /a { empty_gif; }
location /b { empty_gif; }
--- request eval
["GET /a", "GET /b", "GET /a", "GET /b"]
--- error_code eval
[200, 200, 200, 429]
--- response_headers eval
["X-RateLimit-Remaining: 2", "X-RateLimit-Remaining: 1",
 "X-RateLimit-Remaining: 0", "X-RateLimit-Remaining: 0"]



=== TEST 3: three zones in one location (Redis, Redis with another prefix, embedded): the policy in configuration order, the binding rule across zones
--- http_config
rl_zone r1 redis=127.0.0.1:$RedisPort timeout=5s;
rl_zone r2 redis=127.0.0.1:$RedisPort prefix=other: timeout=5s;
rl_zone mem;
--- config
add_header X-RL-Rule $rl_rule always;
add_header X-RL-Status $rl_status always;
location /t {
    rl_headers draft;
    rl_rule zone=r1 key=k rate=5r/h name=a;
    rl_rule zone=mem key=k rate=3r/h name=b;
    rl_rule zone=r2 key=k rate=4r/h name=c;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200, 429]
--- response_headers eval
["X-RL-Rule: b\nX-RateLimit-Limit: 3\nX-RateLimit-Remaining: 2\nX-RL-Status: PASSED",
 "X-RL-Rule: b\nX-RateLimit-Remaining: 1",
 "X-RL-Rule: b\nX-RateLimit-Remaining: 0",
 "X-RL-Rule: b\nX-RateLimit-Remaining: 0\nX-RL-Status: REJECTED"]
--- response_headers_like eval
["RateLimit-Policy: \"a\";q=5;w=3600, ?\"b\";q=3;w=3600, ?\"c\";q=4;w=3600",
 "RateLimit: \"b\";r=1;t=\\d+",
 "RateLimit: \"b\";r=0;t=\\d+",
 "RateLimit: \"b\";r=0;t=[1-9]\\d*\nRetry-After: [1-9]\\d*"]



=== TEST 4: three zones: the rejection by the embedded zone consumed nothing in the Redis ones
--- http_config
rl_zone r1 redis=127.0.0.1:$RedisPort timeout=5s;
rl_zone r2 redis=127.0.0.1:$RedisPort prefix=other: timeout=5s;
rl_zone mem;
--- config
location /t {
    rl_rule zone=r1 key=k rate=5r/h name=a;
    rl_rule zone=mem key=k rate=1r/h name=b;
    rl_rule zone=r2 key=k rate=4r/h name=c;
    empty_gif;
}
location /a {
    rl_rule zone=r1 key=k rate=5r/h name=a;
    empty_gif;
}
location /c {
    rl_rule zone=r2 key=k rate=4r/h name=c;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /a", "GET /c"]
--- error_code eval
[200, 429, 429, 200, 200]
--- response_headers eval
["X-RateLimit-Limit: 1", "X-RateLimit-Limit: 1", "X-RateLimit-Limit: 1",
 "X-RateLimit-Limit: 5\nX-RateLimit-Remaining: 3",
 "X-RateLimit-Limit: 4\nX-RateLimit-Remaining: 2"]



=== TEST 5: the plain directives level by level: http sets, server overrides, location overrides again
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_status 503;
rl_headers off;
rl_dry_run on;
rl_log_level notice;
server {
    listen 127.0.0.1:$ServerPort;
    server_name srv.test;
    rl_status 418;
    rl_headers draft;
    rl_dry_run off;
    rl_log_level warn;
    add_header X-RL-Status $rl_status always;
    location /srv {
        rl_rule zone=main key=srv rate=1r/h name=srv;
        empty_gif;
    }
    location /loc {
        rl_status 429;
        rl_headers on;
        rl_log_level info;
        rl_rule zone=main key=loc rate=1r/h name=loc;
        empty_gif;
    }
}
--- config
add_header X-RL-Status $rl_status always;
location /http {
    rl_rule zone=main key=http rate=1r/h name=http;
    empty_gif;
}
location /http_dry_off {
    rl_dry_run off;
    rl_rule zone=main key=hdo rate=1r/h name=hdo;
    empty_gif;
}
--- more_headers eval
["", "", "", "",
 "Host: srv.test", "Host: srv.test", "Host: srv.test", "Host: srv.test"]
--- request eval
["GET /http", "GET /http", "GET /http_dry_off", "GET /http_dry_off",
 "GET /srv", "GET /srv", "GET /loc", "GET /loc"]
--- error_code eval
[200, 200, 200, 503, 200, 418, 200, 429]
--- response_headers eval
["X-RL-Status: PASSED\n!X-RateLimit-Limit",
 "X-RL-Status: REJECTED_DRY_RUN\n!X-RateLimit-Limit",
 "X-RL-Status: PASSED\n!X-RateLimit-Limit",
 "X-RL-Status: REJECTED\n!X-RateLimit-Limit\n!Retry-After",
 "X-RL-Status: PASSED\nRateLimit-Policy: \"srv\";q=1;w=3600",
 "X-RL-Status: REJECTED\nRateLimit-Policy: \"srv\";q=1;w=3600",
 "X-RL-Status: PASSED\nX-RateLimit-Limit: 1\n!RateLimit-Policy",
 "X-RL-Status: REJECTED\nX-RateLimit-Limit: 1\n!RateLimit-Policy"]
--- error_log eval
[qr/\[notice\] .*rl: dry run: request would be rejected by rule "http"/,
 qr/\[notice\] .*rl: request rejected by rule "hdo"/,
 qr/\[warn\] .*rl: request rejected by rule "srv"/,
 qr/\[info\] .*rl: request rejected by rule "loc"/]



=== TEST 6: nested locations inherit the enclosing location's plain directives and rules
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /outer {
    rl_headers draft;
    rl_dry_run on;
    rl_rule zone=main key=k rate=1r/h name=outer;
    location /outer/inner {
        empty_gif;
    }
    location /outer/strict {
        rl_dry_run off;
        empty_gif;
    }
}
--- request eval
["GET /outer/inner", "GET /outer/inner", "GET /outer/strict"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
["X-RL-Status: PASSED\nRateLimit-Policy: \"outer\";q=1;w=3600",
 "X-RL-Status: REJECTED_DRY_RUN\nRateLimit-Policy: \"outer\";q=1;w=3600",
 "X-RL-Status: REJECTED\nRateLimit-Policy: \"outer\";q=1;w=3600"]
