# The error log lines of rejections, dry-run rejections and delays, at
# rl_log_level (default error; a delay one level less severe, as
# limit_req does), with the key printable: bytes outside 0x20-0x7e, '"'
# and '\' as \xHH, cut after 64 output bytes with "...", never a raw CR
# or LF.

use lib 't/lib';
use RlTest;

run_tests();
done_testing();

__DATA__

=== TEST 1: default level: a rejection is one [error] line with rule, zone, key and retry delay
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=client42 rate=1r/h algorithm=fixed_window name=hourly;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- error_log eval
[qr/\[error\] \d+#\d+: \*\d+ rl: request rejected by rule "hourly" of zone "main", key "client42", retry in [1-9]\d* ms, client: 127\.0\.0\.1, /]
--- no_error_log eval
[qr/\[(?:warn|notice|info)\].*rl: request rejected/, qr/rl: dry run/,
 qr/rl: request delayed/]



=== TEST 2: only rejected requests are logged
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=k rate=3r/h;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- no_error_log eval
[qr/rl: request/, qr/rl: dry run/]



=== TEST 3: rl_log_level warn
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_log_level warn;
    rl_rule zone=main key=k rate=1r/h name=w;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- error_log eval
[qr/\[warn\] .*rl: request rejected by rule "w" of zone "main", key "k", retry in \d+ ms/]
--- no_error_log eval
[qr/\[(?:error|notice|info)\].*rl: request rejected/]



=== TEST 4: rl_log_level notice
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_log_level notice;
    rl_rule zone=main key=k rate=1r/h name=n;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- error_log eval
[qr/\[notice\] .*rl: request rejected by rule "n" of zone "main", key "k", retry in \d+ ms/]
--- no_error_log eval
[qr/\[(?:error|warn|info)\].*rl: request rejected/]



=== TEST 5: rl_log_level info, inherited from http
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_log_level info;
--- config
location /t {
    rl_rule zone=main key=k rate=1r/h name=i;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- error_log eval
[qr/\[info\] .*rl: request rejected by rule "i" of zone "main", key "k", retry in \d+ ms/]
--- no_error_log eval
[qr/\[(?:error|warn|notice)\].*rl: request rejected/]



=== TEST 6: rl_log_level info is below an error_log at warn: nothing is written
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_log_level info;
    rl_rule zone=main key=k rate=1r/h;
    empty_gif;
}
--- log_level
warn
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- no_error_log eval
[qr/rl: request rejected/]



=== TEST 7: a binary key ($binary_remote_addr) is written as \xHH
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=$binary_remote_addr rate=1r/h name=per_ip;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- error_log eval
[qr/rl: request rejected by rule "per_ip" of zone "main", key "\\x7f\\x00\\x00\\x01", retry in \d+ ms/]



=== TEST 8: quote, backslash, control and high bytes from a header are escaped
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=$http_x_client rate=1r/h name=per_client;
    empty_gif;
}
--- more_headers eval
"X-Client: a\"b\\c\x01\x7f\xe9~ z"
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- error_log eval
[qr/rl: request rejected by rule "per_client" of zone "main", key "a\\x22b\\x5cc\\x01\\x7f\\xe9~ z", retry in \d+ ms/]



=== TEST 9: CR and LF in a key ($uri decodes %0D%0A) never reach the log raw
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /k/ {
    rl_rule zone=main key=$uri rate=1r/h name=per_uri;
    empty_gif;
}
--- log_level
info
--- request eval
["GET /k/a%0D%0Ab", "GET /k/a%0D%0Ab"]
--- error_code eval
[200, 429]
--- error_log eval
[qr/rl: request rejected by rule "per_uri" of zone "main", key "\/k\/a\\x0d\\x0ab", retry in \d+ ms, client: /]
--- no_error_log eval
[qr/\r/, qr/^b", retry/]



=== TEST 10: a key of 64 output bytes is written whole, a longer one is cut after 64 with "..."
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=$arg_k rate=1r/h name=long;
    empty_gif;
}
--- request eval
my $k64 = 'b' x 64;
my $k65 = 'c' x 65;
my $k100 = 'd' x 100;
["GET /t?k=$k64", "GET /t?k=$k64", "GET /t?k=$k65", "GET /t?k=$k65",
 "GET /t?k=$k100", "GET /t?k=$k100"]
--- error_code eval
[200, 429, 200, 429, 200, 429]
--- error_log eval
[qr/key "b{64}", retry/, qr/key "c{64}\.\.\.", retry/,
 qr/key "d{64}\.\.\.", retry/]
--- no_error_log eval
[qr/key "b{64}\.\.\./, qr/key "c{65}/,
 qr/key "d{65}/]



=== TEST 11: escaped bytes count as their 4 output bytes: 16 are written whole, 17 are cut
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=$http_x_client rate=1r/h name=bin;
    empty_gif;
}
--- more_headers eval
["X-Client: " . ("\x01" x 16), "X-Client: " . ("\x01" x 16),
 "X-Client: " . ("\x02" x 17), "X-Client: " . ("\x02" x 17)]
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 429, 200, 429]
--- error_log eval
[qr/key "(?:\\x01){16}", retry/, qr/key "(?:\\x02){16}\.\.\.", retry/]



=== TEST 12: a dry-run rejection is logged as such, at rl_log_level
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /error {
    rl_rule zone=main key=k rate=1r/h name=dry_e dry_run;
    empty_gif;
}
location /notice {
    rl_log_level notice;
    rl_dry_run on;
    rl_rule zone=main key=k rate=1r/h name=dry_n;
    empty_gif;
}
--- request eval
["GET /error", "GET /error", "GET /notice", "GET /notice"]
--- error_code eval
[200, 200, 200, 200]
--- error_log eval
[qr/\[error\] .*rl: dry run: request would be rejected by rule "dry_e" of zone "main", key "k", retry in [1-9]\d* ms/,
 qr/\[notice\] .*rl: dry run: request would be rejected by rule "dry_n" of zone "main", key "k", retry in [1-9]\d* ms/]
--- no_error_log eval
[qr/rl: request rejected/, qr/\[(?:warn|info)\].*rl: dry run/,
 qr/\[error\].*rl: dry run.*dry_n/]



=== TEST 13: a delayed request is logged one level less severe: error -> warn
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k rate=2r/s algorithm=gcra burst=1 delay=0 name=shaped;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: DELAYED"]
--- error_log eval
[qr/\[warn\] .*rl: request delayed by [1-9]\d* ms by rule "shaped" of zone "main", key "k"/]
--- no_error_log eval
[qr/\[(?:error|notice|info)\].*rl: request delayed/, qr/rl: request rejected/]



=== TEST 14: delays at rl_log_level warn -> notice
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_log_level warn;
    rl_rule zone=main key=k rate=2r/s algorithm=leaky_bucket burst=1 delay=0 name=shaped;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: DELAYED"]
--- error_log eval
[qr/\[notice\] .*rl: request delayed by [1-9]\d* ms by rule "shaped" of zone "main", key "k"/]
--- no_error_log eval
[qr/\[(?:error|warn|info)\].*rl: request delayed/]



=== TEST 15: delays at rl_log_level info stay at info (as limit_req's)
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_log_level info;
    rl_rule zone=main key=k rate=2r/s algorithm=gcra burst=1 delay=0 name=shaped;
    empty_gif;
}
--- request eval
["GET /t", "GET /t"]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: DELAYED"]
--- error_log eval
[qr/\[info\] .*rl: request delayed by [1-9]\d* ms by rule "shaped" of zone "main", key "k"/]



=== TEST 16: rl_log_level takes info, notice, warn or error
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t { rl_log_level debug; rl_rule zone=main key=k rate=1r/h; empty_gif; }
--- must_die
--- error_log
invalid value "debug" in "rl_log_level" directive, it must be "info", "notice", "warn" or "error"



=== TEST 17: rl_log_level is valid at http, server and location level
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
rl_log_level notice;
--- config
rl_log_level warn;
location /t { rl_log_level info; rl_rule zone=main key=k rate=1r/h; empty_gif; }
--- syntax_only



=== TEST 18: an escape that would cross the 64 bytes is not split: the key is cut before it
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=$http_x_client rate=1r/h name=edge;
    empty_gif;
}
--- more_headers eval
"X-Client: " . ('a' x 62) . "\x01b"
--- request eval
["GET /t", "GET /t"]
--- error_code eval
[200, 429]
--- error_log eval
[qr/key "a{62}\.\.\.", retry/]
