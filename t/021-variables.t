# $rl_status, $rl_rule, $rl_limit, $rl_remaining, $rl_reset: every
# $rl_status value reached (PASSED, REJECTED, REJECTED_DRY_RUN, DELAYED,
# ERROR, empty), in an access log written to a file and read back, in
# add_header and through a map. The rewrite phase (set, if, return) runs
# before the limiter decides (PREACCESS): there the variables are empty,
# and a location answered by `return` is not limited at all.

use lib 't/lib';
use RlTest;

run_tests();

my $r = start_redis();
my $ng = start_nginx(redis => $r, config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
    rl_zone down redis=127.0.0.1:1 connect_timeout=200ms timeout=200ms
            failure=open;

    log_format rl '$uri|$status|$rl_status|$rl_rule|$rl_limit|'
                  '$rl_remaining|$rl_reset|$in_rewrite|$rl_class';

    map $rl_status $rl_class {
        ""                 unlimited;
        PASSED             ok;
        DELAYED            ok;
        REJECTED           limited;
        REJECTED_DRY_RUN   would_limit;
        default            other;
    }

    server {
        listen 127.0.0.1:$ServerPort;
        access_log logs/rl.log rl;

        # runs in the server's rewrite phase, before any decision
        set $in_rewrite "[$rl_status]";

        add_header X-RL-Status $rl_status always;
        add_header X-RL-Rule $rl_rule always;
        add_header X-RL-Limit $rl_limit always;
        add_header X-RL-Remaining $rl_remaining always;
        add_header X-RL-Reset $rl_reset always;
        add_header X-RL-Class $rl_class always;

        location /limited {
            rl_rule zone=main key=l rate=1r/h algorithm=fixed_window
                    name=one_an_hour;
            empty_gif;
        }
        location /dry {
            rl_rule zone=main key=d rate=1r/h name=dry dry_run;
            empty_gif;
        }
        location /shaped {
            rl_rule zone=main key=s rate=2r/s algorithm=gcra burst=1 delay=0
                    name=shaped;
            empty_gif;
        }
        location /broken {
            rl_rule zone=down key=b rate=1r/h name=broken;
            empty_gif;
        }
        location /free {
            empty_gif;
        }
        location /exempt {
            rl_rule zone=main key=$arg_k rate=1r/h name=exempt;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;
my $log = $ng->dir . '/logs/rl.log';

sub log_lines {
    open my $fh, '<', $log or return ();
    return map { chomp; $_ } <$fh>;
}

my @plan = (
    # path,        code, $rl_status,          rule,          limit, class
    [ '/limited',  200, 'PASSED',             'one_an_hour', 1, 'ok' ],
    [ '/limited',  429, 'REJECTED',           'one_an_hour', 1, 'limited' ],
    [ '/dry',      200, 'PASSED',             'dry',         1, 'ok' ],
    [ '/dry',      200, 'REJECTED_DRY_RUN',   'dry',         1, 'would_limit' ],
    [ '/shaped',   200, 'PASSED',             'shaped',      2, 'ok' ],
    [ '/shaped',   200, 'DELAYED',            'shaped',      2, 'ok' ],
    [ '/broken',   200, 'ERROR',              undef,     undef, 'other' ],
    [ '/free',     200, '',                   '',           '', 'unlimited' ],
    [ '/exempt',   200, '',                   '',           '', 'unlimited' ],
);

my @res;
for my $p (@plan) {
    my ($path, $code, $st, $rule, $limit, $class) = @$p;
    my $res = http_get($port, $path);
    push @res, $res;
    my $h = $res->{headers};
    my $tag = "$path -> " . (length $st ? $st : 'empty');
    is($res->{code}, $code, "$tag: status $code");
    is($h->{'x-rl-status'} // '', $st, "$tag: \$rl_status in add_header");
    is($h->{'x-rl-rule'} // '', $rule, "$tag: \$rl_rule") if defined $rule;
    is($h->{'x-rl-limit'} // '', $limit, "$tag: \$rl_limit")
        if defined $limit;
    is($h->{'x-rl-class'} // '', $class, "$tag: a map of \$rl_status");
    if (length($limit // 'x')) {
        # the variables are the headers' figures
        is($h->{'x-rl-limit'}, $h->{'x-ratelimit-limit'},
           "$tag: \$rl_limit is X-RateLimit-Limit");
        is($h->{'x-rl-remaining'}, $h->{'x-ratelimit-remaining'},
           "$tag: \$rl_remaining is X-RateLimit-Remaining");
        is($h->{'x-rl-reset'}, $h->{'x-ratelimit-reset'},
           "$tag: \$rl_reset is X-RateLimit-Reset");
    } else {
        ok(!exists $h->{'x-rl-remaining'} && !exists $h->{'x-rl-reset'},
           "$tag: no figures");
    }
}
is($res[1]{headers}{'x-rl-reset'}, $res[1]{headers}{'retry-after'},
   'REJECTED: $rl_reset is Retry-After');
is($res[1]{headers}{'x-rl-remaining'}, 0, 'REJECTED: $rl_remaining is 0');
is($res[0]{headers}{'x-rl-remaining'}, 0, 'PASSED 1r/h: $rl_remaining is 0');

# the access log, read back: one line per request, the same values
ok(wait_until(sub { log_lines() >= @plan }, timeout => 5),
   'the access log has a line per request');
my @lines = log_lines();
is(scalar @lines, scalar @plan, 'and no more');
for my $i (0 .. $#plan) {
    my ($path, $code, $st, $rule) = @{ $plan[$i] };
    my $h = $res[$i]{headers};
    my @f = split /\|/, $lines[$i] // '', -1;
    my $tag = "access log line " . ($i + 1) . " ($path "
              . (length $st ? $st : 'empty') . ')';
    is($f[0], $path, "$tag: uri");
    is($f[1], $code, "$tag: status");
    is($f[2], $st, "$tag: \$rl_status");
    # an absent value is not found: the access log writes "-"
    my $absent = sub { my ($v, $what) = @_;
                       is($v, '-', "$tag: $what absent (logged as -)") };
    if (defined $rule && length $rule) {
        is($f[3], $rule, "$tag: \$rl_rule");
    } elsif (defined $rule) {
        $absent->($f[3], '$rl_rule');
    }
    for ([4, 'x-ratelimit-limit', '$rl_limit'],
         [5, 'x-ratelimit-remaining', '$rl_remaining'],
         [6, 'x-ratelimit-reset', '$rl_reset']) {
        my ($k, $hdr, $var) = @$_;
        if (defined $h->{$hdr}) {
            is($f[$k], $h->{$hdr}, "$tag: $var");
        } else {
            $absent->($f[$k], $var);
        }
    }
    is($f[7], '[]', "$tag: empty in the rewrite phase (set)");
    is($f[8], $plan[$i][5], "$tag: the map");
}
my %seen = map { (split /\|/, $_, -1)[2] => 1 } @lines;
is(join(',', sort keys %seen),
   ',DELAYED,ERROR,PASSED,REJECTED,REJECTED_DRY_RUN',
   'every $rl_status value was logged');

$ng->stop;
$r->stop;
done_testing();

__DATA__

=== TEST 1: set in the location's rewrite phase sees empty variables; the same variables after the decision do not
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=k rate=2r/h name=two;
    set $early "[$rl_status|$rl_rule|$rl_limit|$rl_remaining]";
    add_header X-Early $early always;
    add_header X-Late "[$rl_status|$rl_rule|$rl_limit|$rl_remaining]" always;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
["X-Early: [|||]\nX-Late: [PASSED|two|2|1]",
 "X-Early: [|||]\nX-Late: [PASSED|two|2|0]",
 "X-Early: [|||]\nX-Late: [REJECTED|two|2|0]"]



=== TEST 2: `if` runs before the decision: conditions on $rl_status see it empty
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=k rate=1r/h;
    # never true: in the rewrite phase nothing is decided yet
    if ($rl_status = REJECTED) {
        return 503;
    }
    if ($rl_status != "") {
        return 500;
    }
    add_header X-RL-Status $rl_status always;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 429, 429]
--- response_headers eval
["X-RL-Status: PASSED", "X-RL-Status: REJECTED", "X-RL-Status: REJECTED"]



=== TEST 3: a location answered by `return` is never limited: return ends the request in the rewrite phase
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=k rate=1r/h;
    return 200 "[$rl_status]";
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 200]
--- response_body eval
["[]", "[]", "[]"]
--- response_headers
!X-RateLimit-Limit
!X-RateLimit-Remaining
!Retry-After



=== TEST 4: map on $rl_status to a header, with several rules: $rl_rule names the binding one
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
map $rl_status $rl_verdict {
    REJECTED   "slow down";
    default    "";
}
--- config
location /t {
    rl_rule zone=main key=k rate=5r/h name=hourly;
    rl_rule zone=main key=k rate=2r/d algorithm=fixed_window name=daily;
    add_header X-Verdict $rl_verdict always;
    add_header X-RL-Rule $rl_rule always;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
["!X-Verdict\nX-RL-Rule: daily", "!X-Verdict\nX-RL-Rule: daily",
 "X-Verdict: slow down\nX-RL-Rule: daily"]



=== TEST 5: $rl_rule is the rule's name=, by default the rate as written
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
add_header X-RL-Rule $rl_rule always;
location /named { rl_rule zone=main key=k rate=5r/h name=per_client; empty_gif; }
location /plain { rl_rule zone=main key=k rate=5r/90s; empty_gif; }
--- request eval
["GET /named", "GET /plain"]
--- response_headers eval
["X-RL-Rule: per_client", "X-RL-Rule: 5r/90s"]



=== TEST 6: $rl_rejected lists every enforced rule that rejected, the binding one first, never a dry run's
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /t {
    rl_rule zone=main key=k rate=2r/m name=minute;
    rl_rule zone=main key=k rate=2r/y name=year;
    rl_rule zone=main key=k rate=1r/h name=dry dry_run;
    rl_rule zone=main key=k rate=10r/m name=loose;
    add_header X-Rejected $rl_rejected always;
    add_header X-RL-Rule $rl_rule always;
    empty_gif;
}
--- request eval
["GET /t", "GET /t", "GET /t"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
["!X-Rejected", "!X-Rejected",
 "X-Rejected: \"year\", \"minute\"\nX-RL-Rule: year"]
