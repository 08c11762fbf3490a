# Calendar rules' configuration (SPEC section 12): every error nginx -t
# reports for rate=Nr/h, Nr/d, Nr/w, Nr/month, Nr/y with tz= and anchor=
# (in nginx's words, naming the value, with file:line), and valid ones:
# their figures, and plain Nr/d and Nr/h kept as they were (windows from
# the epoch, any algorithm: docs/choices.md).

use lib 't/lib';
use RlTest;

unless (-f '/usr/share/zoneinfo/Europe/Berlin') {
    plan skip_all => 'no /usr/share/zoneinfo (tzdata)';
}

run_tests();
done_testing();

__DATA__

=== TEST 1: a calendar period counted by another algorithm
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort;
--- config
location /t {
    rl_rule zone=main key=k rate=100r/month algorithm=sliding_window;
    empty_gif;
}
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid algorithm "sliding_window" for rate "100r\/month": calendar periods are counted as a fixed_window \(leave "algorithm" out\) in \S+nginx\.conf:\d+/]



=== TEST 2: a day in a zone, by a token bucket
--- http_config
rl_zone main;
--- config
location /t {
    rl_rule zone=main key=k rate=100r/d tz=Europe/Berlin
            algorithm=token_bucket;
    empty_gif;
}
--- must_die
--- error_log
invalid algorithm "token_bucket" for rate "100r/d" with tz=Europe/Berlin: calendar periods are counted as a fixed_window



=== TEST 3: an unknown time zone, named
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/d tz=Mars/Olympus; empty_gif; }
--- must_die
--- error_log eval
[qr/\[emerg\].* invalid time zone "tz=Mars\/Olympus": open\(\) "\/usr\/share\/zoneinfo\/Mars\/Olympus" failed \(2: No such file or directory\) in \S+nginx\.conf:\d+/]



=== TEST 4: a name that leaves the zoneinfo directory
--- http_config
rl_zone main;
--- config
location /t {
    rl_rule zone=main key=k rate=5r/d tz=../../../etc/passwd;
    empty_gif;
}
--- must_die
--- error_log
invalid time zone "tz=../../../etc/passwd": an IANA name such as "Europe/Berlin"



=== TEST 5: a directory of zones is no zone
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/d tz=Europe; empty_gif; }
--- must_die
--- error_log
invalid time zone "tz=Europe": "/usr/share/zoneinfo/Europe" is no zone's file



=== TEST 6: an empty tz=
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/d tz=; empty_gif; }
--- must_die
--- error_log
invalid time zone "tz="



=== TEST 7: tz= with a rate per second
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/s tz=UTC; empty_gif; }
--- must_die
--- error_log
invalid parameter "tz=UTC" with rate "5r/s": "tz" takes a rate per hour, day, week, month or year ("r/h", "r/d", "r/w", "r/month", "r/y")



=== TEST 8: tz= with a window of an nginx time (not a calendar's)
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/1d tz=UTC; empty_gif; }
--- must_die
--- error_log
invalid parameter "tz=UTC" with rate "5r/1d"



=== TEST 9: anchor= of a day
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/d anchor=mon; empty_gif; }
--- must_die
--- error_log
invalid parameter "anchor=mon": "anchor" is for rates per week ("r/w") or month ("r/month")



=== TEST 10: a month's anchor past the 28th
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/month anchor=29; empty_gif; }
--- must_die
--- error_log
invalid anchor "anchor=29": a day of the month from 1 to 28 (every month has it), or a variable



=== TEST 11: a week's day as a month's anchor
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/month anchor=mon; empty_gif; }
--- must_die
--- error_log
invalid anchor "anchor=mon": a day of the month from 1 to 28



=== TEST 12: a week's anchor is a day's name
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/w anchor=15; empty_gif; }
--- must_die
--- error_log
invalid anchor "anchor=15": a week starts on "mon", "tue", "wed", "thu", "fri", "sat" or "sun"



=== TEST 13: an empty anchor=
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/w anchor=; empty_gif; }
--- must_die
--- error_log
invalid anchor "anchor="



=== TEST 14: burst= with a calendar period (a fixed_window takes none)
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=5r/month burst=5; empty_gif; }
--- must_die
--- error_log
invalid parameter "burst=5" for algorithm "fixed_window"



=== TEST 15: tz= and anchor= with concurrency=
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k concurrency=5 tz=UTC; empty_gif; }
--- must_die
--- error_log
invalid parameter "tz=UTC" with "concurrency=5"



=== TEST 16: a bad calendar rate
--- http_config
rl_zone main;
--- config
location /t { rl_rule zone=main key=k rate=0r/month; empty_gif; }
--- must_die
--- error_log
invalid rate "0r/month"



=== TEST 17: valid calendar rules; Nr/d and Nr/h alone as they were
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_zone mem;
--- config
rl_headers draft;
location /t {
    rl_rule zone=main key=$arg_k rate=5r/month tz=Europe/Berlin anchor=15
            name=a;
    rl_rule zone=main key=$arg_k rate=6r/w anchor=sun name=b;
    rl_rule zone=mem key=$arg_k rate=7r/y tz=UTC name=c;
    rl_rule zone=mem key=$arg_k rate=8r/h tz=Asia/Kathmandu name=d;
    rl_rule zone=main key=$arg_k rate=9r/month anchor=$arg_day name=e;
    rl_rule zone=mem key=$arg_k rate=10r/d algorithm=token_bucket name=f;
    rl_rule zone=main key=$arg_k rate=11r/h algorithm=gcra name=g;
    empty_gif;
}
--- request
GET /t?k=x&day=3
--- error_code: 200
--- response_headers_like
X-RateLimit-Limit: 11
RateLimit-Policy: "a";q=5;w=\d+, "b";q=6;w=604800, "c";q=7;w=3153\d000, "d";q=8;w=3600, "e";q=9;w=\d+, "f";q=10;w=86400, "g";q=11;w=3600
