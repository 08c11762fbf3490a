# The operator surface when a rejection is answered without asking Redis
# (the deny cache): the same status, headers (on and draft), variables,
# log line and metrics as a rejection Redis decided; and the cache never
# rejects what the configuration now admits: a dry-run twin of the rule,
# the same rule with a larger N (in another location, or after a reload
# that raised it).

use lib 't/lib';
use RlTest;

run_tests();

# ------------------------------------------------------------ reload raising N

{
    my $r = start_redis();
    my $conf = <<'CONF';
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /t {
            rl_rule zone=main key=k rate=2r/h algorithm=fixed_window name=q;
            empty_gif;
        }
        location = /metrics {
            rl_metrics;
        }
    }
CONF
    my $ng = start_nginx(redis => $r, workers => 2, config => $conf);
    my $port = $ng->port;
    my @res = map { http_get($port, '/t') } 1 .. 6;
    is(join(' ', map { $_->{code} } @res), '200 200 429 429 429 429',
       'rate=2r/h: 2 pass, then 429');
    my $m = http_get($port, '/metrics')->{body};
    my ($hits) = $m =~ /^rl_deny_cache_hits_total\{zone="main"\} (\d+)$/m;
    ok(($hits // 0) >= 1, 'some rejections came from the deny cache ('
                          . ($hits // 'none') . ')');

    (my $raised = $conf) =~ s/rate=2r\/h/rate=5r\/h/;
    ok($ng->reload(config => $raised), 'reload with rate=5r/h');
    @res = map { http_get($port, '/t') } 1 .. 4;
    is(join(' ', map { $_->{code} } @res), '200 200 200 429',
       'the raised limit admits 3 more at once (2 + 3 = 5), on any worker');
    is($res[0]{headers}{'x-ratelimit-limit'}, 5, 'X-RateLimit-Limit: 5');
    is($res[0]{headers}{'x-ratelimit-remaining'}, 2,
       'the usage was kept: 5 - 3 = 2 left');

    (my $lowered = $conf) =~ s/rate=2r\/h/rate=1r\/h/;
    ok($ng->reload(config => $lowered), 'reload with rate=1r/h');
    is(http_get($port, '/t')->{code}, 429, 'the lowered limit rejects');
    $ng->stop;
    $r->stop;
}

done_testing();

__DATA__

=== TEST 1: repeated rejections keep their headers, variables and log line
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
log_format rl '$rl_status $rl_rule $rl_limit $rl_remaining';
--- config
access_log $ServerRoot/logs/rl.log rl;
location /t {
    add_header X-RL "$rl_status $rl_rule $rl_limit $rl_remaining" always;
    rl_rule zone=main key=k rate=1r/h name=hourly;
    empty_gif;
}
location = /log {
    alias $ServerRoot/logs/rl.log;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t", "GET /log"]
--- error_code eval
[200, 429, 429, 429, 200]
--- response_headers eval
["X-RL: PASSED hourly 1 0\n!Retry-After",
 "X-RL: REJECTED hourly 1 0\nX-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0",
 "X-RL: REJECTED hourly 1 0\nX-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0",
 "X-RL: REJECTED hourly 1 0\nX-RateLimit-Limit: 1\nX-RateLimit-Remaining: 0",
 "!X-RL"]
--- response_headers_like eval
["X-RateLimit-Reset: \\d+",
 "X-RateLimit-Reset: [1-9]\\d*\nRetry-After: [1-9]\\d*",
 "X-RateLimit-Reset: [1-9]\\d*\nRetry-After: [1-9]\\d*",
 "X-RateLimit-Reset: [1-9]\\d*\nRetry-After: [1-9]\\d*",
 "Content-Type: .*"]
--- response_body_like eval
[qr/^GIF/, qr/429/, qr/429/, qr/429/,
 qr/\APASSED hourly 1 0\n(?:REJECTED hourly 1 0\n){3}\z/]
--- error_log eval
[qr/(?:rl: request rejected by rule "hourly" of zone "main", key "k", retry in [1-9]\d* ms, client(?s:.*?)){3}/]



=== TEST 2: repeated rejections of stacked rules in draft: the policy lists both, RateLimit the rejecting rule
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_headers draft;
    rl_rule zone=main key=k rate=10r/h name=hourly;
    rl_rule zone=main key=k rate=2r/d algorithm=fixed_window name=daily;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 429, 429, 429]
--- response_headers_like eval
["RateLimit-Policy: \"hourly\";q=10;w=3600, ?\"daily\";q=2;w=86400",
 "RateLimit-Policy: \"hourly\";q=10;w=3600, ?\"daily\";q=2;w=86400",
 "RateLimit-Policy: \"hourly\";q=10;w=3600, ?\"daily\";q=2;w=86400\nRateLimit: \"daily\";r=0;t=[1-9]\\d*\nRetry-After: [1-9]\\d*\nX-RateLimit-Limit: 2",
 "RateLimit-Policy: \"hourly\";q=10;w=3600, ?\"daily\";q=2;w=86400\nRateLimit: \"daily\";r=0;t=[1-9]\\d*\nRetry-After: [1-9]\\d*\nX-RateLimit-Limit: 2",
 "RateLimit-Policy: \"hourly\";q=10;w=3600, ?\"daily\";q=2;w=86400\nRateLimit: \"daily\";r=0;t=[1-9]\\d*\nRetry-After: [1-9]\\d*\nX-RateLimit-Limit: 2"]



=== TEST 3: repeated rejections: the other rule counts them as passed, the rejecting rule as rejected
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=k rate=10r/h name=wide;
    rl_rule zone=main key=k rate=1r/h name=narrow;
    empty_gif;
}
location = /metrics {
    rl_metrics;
}
--- request eval
["GET /t", "GET /t", "GET /t", "GET /t", "GET /t", "GET /metrics"]
--- error_code eval
[200, 429, 429, 429, 429, 200]
--- response_body_like eval
[qr/^GIF/, qr/429/, qr/429/, qr/429/, qr/429/,
 qr/^rl_requests_total\{zone="main",rule="wide",outcome="passed"\} 5\n(?s:.*)^rl_requests_total\{zone="main",rule="wide",outcome="rejected"\} 0\n(?s:.*)^rl_requests_total\{zone="main",rule="narrow",outcome="passed"\} 1\n(?s:.*)^rl_requests_total\{zone="main",rule="narrow",outcome="rejected"\} 4\n/m]



=== TEST 4: a key rejected by a rule is not rejected by its dry-run twin in another location
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /real {
    rl_rule zone=main key=k rate=1r/h algorithm=fixed_window name=q;
    empty_gif;
}
location /dry {
    rl_dry_run on;
    rl_rule zone=main key=k rate=1r/h algorithm=fixed_window name=q;
    empty_gif;
}
--- request eval
["GET /real", "GET /real", "GET /real", "GET /dry", "GET /dry"]
--- error_code eval
[200, 429, 429, 200, 200]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: REJECTED", "X-RL-Status: REJECTED",
 "X-RL-Status: REJECTED_DRY_RUN\n!Retry-After",
 "X-RL-Status: REJECTED_DRY_RUN\n!Retry-After"]



=== TEST 5: a key rejected by a rule is not rejected by the same rule with a larger N in another location
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /small {
    rl_rule zone=main key=k rate=1r/h algorithm=fixed_window name=q;
    empty_gif;
}
location /big {
    rl_rule zone=main key=k rate=10r/h algorithm=fixed_window name=q;
    empty_gif;
}
--- request eval
["GET /small", "GET /small", "GET /small", "GET /big", "GET /small"]
--- error_code eval
[200, 429, 429, 200, 429]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: REJECTED", "X-RL-Status: REJECTED",
 "X-RL-Status: PASSED\nX-RateLimit-Limit: 10\nX-RateLimit-Remaining: 8",
 "X-RL-Status: REJECTED\nX-RateLimit-Limit: 1"]



=== TEST 6: a key rejected for a larger cost is not rejected for a smaller one
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Status $rl_status always;
location /t {
    rl_rule zone=main key=k rate=10r/h algorithm=fixed_window cost=$arg_cost
            name=q;
    empty_gif;
}
--- request eval
["GET /t?cost=8", "GET /t?cost=5", "GET /t?cost=5", "GET /t?cost=2",
 "GET /t?cost=1"]
--- error_code eval
[200, 429, 429, 200, 429]
--- response_headers eval
["X-RL-Status: PASSED\nX-RateLimit-Remaining: 2",
 "X-RL-Status: REJECTED", "X-RL-Status: REJECTED",
 "X-RL-Status: PASSED\nX-RateLimit-Remaining: 0",
 "X-RL-Status: REJECTED"]
