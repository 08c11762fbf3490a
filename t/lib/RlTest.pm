package RlTest;

# Integration-test harness for ngx_http_rl_module: real nginx, real
# redis-server, loopback only. Two styles:
#
# 1. Data-driven blocks in the Test::Nginx form (built on Test::Base):
#
#        use lib 't/lib';
#        use RlTest;
#        run_tests();
#        done_testing();
#        __DATA__
#        === TEST 1: name
#        --- http_config
#        rl_zone main redis=127.0.0.1:$RedisPort;
#        --- config
#        location /t { rl_rule zone=main key=k rate=3r/d; empty_gif; }
#        --- request eval
#        ["GET /t", "GET /t", "GET /t", "GET /t"]
#        --- error_code eval
#        [200, 200, 200, 429]
#
#    Sections: main_config, http_config, config (inside server{}), workers,
#    log_level, request (or request eval [...]: several in sequence),
#    more_headers, error_code, response_headers ("Name: value", "!Name"),
#    response_headers_like ("Name: regex", anchored), response_body,
#    response_body_like, error_log, no_error_log (substrings, or eval
#    [qr/.../, "..."]), must_die (nginx -t, or else startup, must fail;
#    error_log then checks the nginx -t output), syntax_only (nginx -t must
#    pass; nginx is not started), timeout (seconds per request), no_flush
#    (keep the redis data of the previous block).
#    A section given as an eval array with one element per request is
#    checked per request; a plain value applies to every request.
#    Placeholders in every section: $RedisPort $RedisSock $ServerPort
#    $ServerRoot (also usable as Perl variables inside eval sections).
#    Each block gets a fresh nginx (nginx -t first) and a FLUSHALL of the
#    file's redis; a block fails on [alert]/[crit]/[emerg]/"exited on
#    signal" in its error log.
#
# 2. Programmatic API: start_redis(%opt), start_nginx(%opt),
#    start_upstream() (a real upstream that holds requests and counts
#    them in flight: RlTest/Upstream.pm), http_get, http_request,
#    http_start, http_parallel, wait_until, free_port, spawn.
#    See RlTest/Redis.pm, RlTest/Nginx.pm, RlTest/HTTP.pm, RlTest/Proc.pm.
#
# Environment: RL_MODULE (path of the .so; empty: no load_module; default
# build/module/ngx_http_rl_module.so, the file is skipped when it is
# missing), RL_KEEP (keep temp dirs), RL_LOG_LEVEL, RL_NGINX.

use strict;
use warnings;

use Test::Base ();
BEGIN {
    # sets Test::Base's default class; its exports go to a scratch package
    package RlTest::TB;
    Test::Base->import;
}
use Test::More ();
use File::Temp ();
use POSIX ();

use RlTest::Proc qw(now a_second wait_until free_port make_tempdir spawn);
use RlTest::HTTP qw(http_get http_request http_start http_parallel);
use RlTest::Redis;
use RlTest::Nginx;
use RlTest::Upstream;
use RlTest::Quiet ();

# (a test of rates beside, in another leg, waits until this file ends)
RlTest::Quiet::beside();

our ($RedisPort, $RedisSock, $ServerPort, $ServerRoot);

BEGIN {
    # let `--- xxx eval` sections (compiled in Test::Base::Filter) see them
    no strict 'refs';
    for my $v (qw(RedisPort RedisSock ServerPort ServerRoot)) {
        *{"Test::Base::Filter::$v"} = \${"RlTest::$v"};
    }
}

our @EXPORT = qw(
    run_tests blocks
    start_redis start_nginx start_upstream
    http_get http_request http_start http_parallel
    wait_until free_port spawn now a_second module_path repo_root
    code_status status_counts metric_value zone_config_test slots_held
    next_month_day
    browser_needs browser_run
    $RedisPort $RedisSock $ServerPort $ServerRoot
);

sub import {
    my ($class, %opt) = @_;
    my $caller = caller;
    eval "package $caller; use Test::More; 1" or die $@;
    no strict 'refs';
    for my $sym (@EXPORT) {
        if ($sym =~ s/^\$//) {
            *{"${caller}::$sym"} = \${"RlTest::$sym"};
        } else {
            *{"${caller}::$sym"} = \&{"RlTest::$sym"};
        }
    }
    my $mod = module_path();
    if (length $mod && !-f $mod && !$opt{no_module}) {
        Test::More::plan(skip_all =>
            "module not built: $mod (build it or set RL_MODULE)");
    }
}

sub module_path { RlTest::Nginx::module_path() }
sub repo_root   { RlTest::Nginx::repo_root() }

sub blocks { Test::Base::blocks(@_) }

sub start_redis { RlTest::Redis->new(@_) }

# The dashboard's browser tests: skip unless Debian's headless Chromium,
# its driver and python3-selenium are there.
sub browser_needs {
    for my $need ('/usr/bin/chromium', '/usr/bin/chromedriver',
                  '/usr/bin/python3') {
        Test::More::plan(skip_all => "no $need") unless -x $need;
    }
    Test::More::plan(skip_all => 'no python3-selenium')
        if system('/usr/bin/python3', '-c', 'import selenium') != 0;
}

# Runs a Selenium driver of t/lib (its TAP lines passed on as this
# test's) with its arguments; checks it ended well and ran at least
# $least steps. Returns how many it ran.
sub browser_run {
    my ($script, $least, @args) = @_;
    # its stderr (a traceback) kept, and told as diagnostics if it fails
    my $err = File::Temp->new;
    open my $stderr, '>&', \*STDERR or die "dup: $!";
    open STDERR, '>', $err->filename or die "$err: $!";
    my $started = open my $fh, '-|', '/usr/bin/python3',
        repo_root() . "/t/lib/$script", @args;
    open STDERR, '>&', $stderr or die "dup: $!";
    die "python3: $!" unless $started;
    my $steps = 0;
    while (my $line = <$fh>) {
        chomp $line;
        if ($line =~ /^(not )?ok \d+ - (.*)$/) {
            Test::More::ok(!$1, $2);
            $steps++;
        } elsif ($line =~ /^# (.*)/) {
            Test::More::diag($1);
        }
    }
    close $fh;
    my $status = $?;
    open my $in, '<', $err->filename;
    my @err = grep { !/^#\d+ 0x[0-9a-f]+ <unknown>$/ } <$in>;
    print STDERR @err;
    Test::More::is($status, 0, 'the browser run ends well')
        or Test::More::diag(join '', @err[($#err > 15 ? $#err - 15 : 0)
                                          .. $#err]);
    Test::More::ok($steps >= $least, "every step of it ran ($steps)");
    return $steps;
}

# start_nginx(config => $http_contents, workers => N, redis => $redis, ...)
sub start_nginx { RlTest::Nginx->new(@_) }

sub start_upstream { RlTest::Upstream->new(@_) }

# "200 PASSED": a response's code and its X-RL-Status header (the tests'
# `add_header X-RL-Status $rl_status always;`)
sub code_status {
    my ($res) = @_;
    return "$res->{code} " . ($res->{headers}{'x-rl-status'} // '');
}

# ($ok, $text) of `nginx -t` on an rl_zone line and a rule of that zone
# (the nginx -t tests of rl_zone's parameters)
sub zone_config_test {
    my ($zone) = @_;
    my ($name) = $zone =~ /rl_zone\s+(\S+)/;
    my $ng = RlTest::Nginx->new(start => 0, config => <<"CONF");
    $zone
    server {
        listen 127.0.0.1:\$ServerPort;
        location /t { rl_rule zone=$name key=\$arg_k rate=5r/d; empty_gif; }
    }
CONF
    return $ng->config_test;
}

# "200 PASSED x5, 429 REJECTED x2": how many responses had each
# code_status, in order
sub status_counts {
    my (@res) = @_;
    my %n;
    $n{ code_status($_) }++ for @res;
    return join ', ', map { "$_ x$n{$_}" } sort keys %n;
}

# slots_held($redis): the concurrency= slots Redis holds now (not
# expired), over every key of the prefix rl: (lua/concurrency.lua);
# slots_held(sub { $cluster->cli_on($node, @_) }) on one node
my $SLOTS_HELD = <<'LUA';
local t = redis.call('TIME')
local now = string.format('%.0f', t[1] * 1e6 + t[2])
local n = 0
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
    if redis.call('TYPE', k).ok == 'zset' then
        n = n + redis.call('ZCOUNT', k, '(' .. now, '+inf')
    end
end
return n
LUA
sub slots_held {
    my ($redis) = @_;
    my @args = ('EVAL', $SLOTS_HELD, 0, 'rl:*');
    return ref $redis eq 'CODE' ? $redis->(@args) : $redis->cli(@args);
}

# next_month_day($tz, $day): the epoch of the next DAY-th of a month,
# 00:00 in that time zone, after now (where a monthly quota from that
# billing day ends)
sub next_month_day {
    my ($tz, $day) = @_;
    my $e;
    {
        local $ENV{TZ} = $tz;
        POSIX::tzset();
        my @t = localtime(time);
        my ($mon, $year) = ($t[4], $t[5]);
        $mon++ if $t[3] >= $day;
        ($mon, $year) = (0, $year + 1) if $mon > 11;
        $e = POSIX::mktime(0, 0, 0, $day, $mon, $year, 0, 0, -1);
    }
    POSIX::tzset();
    return $e;
}

# metric_value($port, 'rl_store_up{zone="a"}'): that series' value on the
# page of /metrics (or $path), -1 when it is not there
sub metric_value {
    my ($port, $series, $path) = @_;
    my $body = http_get($port, $path // '/metrics')->{body} // '';
    return $body =~ /^\Q$series\E (\d+)$/m ? $1 : -1;
}

# ------------------------------------------------------------ data-driven

my $FileRedis;

sub run_tests {
    my (%opt) = @_;
    $FileRedis  = start_redis();
    $RedisPort  = $FileRedis->port;
    $RedisSock  = $FileRedis->sock;
    $ServerPort = free_port();
    $ServerRoot = make_tempdir('servroot');

    for my $block (Test::Base::blocks()) {
        run_block($block);
    }
    $FileRedis->stop;
}

# Section value with placeholders substituted: undef, a string, or an
# array ref (eval sections).
sub _sect {
    my ($block, $name) = @_;
    return undef unless exists $block->{$name};
    my @v = @{ $block->{$name} };
    my $v = @v == 1 ? $v[0] : join '', @v;
    return _subst($v);
}

sub _subst {
    my ($v) = @_;
    return $v unless defined $v;
    if (ref $v eq 'ARRAY') {
        return [ map { _subst($_) } @$v ];
    }
    return $v if ref $v;
    my %p = (RedisPort => $RedisPort, RedisSock => $RedisSock,
             ServerPort => $ServerPort, ServerRoot => $ServerRoot);
    $v =~ s/\$(RedisPort|RedisSock|ServerPort|ServerRoot)\b/$p{$1}/g;
    return $v;
}

# Per-request value: a plain value applies to every request; an array ref
# gives one value per request.
sub _nth {
    my ($v, $i, $n, $what, $name) = @_;
    return $v unless ref $v eq 'ARRAY';
    die "$name: --- $what has " . @$v . " values for $n requests\n"
        if @$v != $n;
    return $v->[$i];
}

sub _patterns {
    my ($v) = @_;
    return () unless defined $v;
    my @p = ref $v eq 'ARRAY' ? @$v : ($v);
    return map {
        ref $_ eq 'Regexp' ? $_ : (grep { length } map { s/^\s+|\s+$//gr }
                                   split /\n/, $_)
    } @p;
}

sub _match {
    my ($text, $pat) = @_;
    return ref $pat eq 'Regexp' ? $text =~ $pat : index($text, $pat) >= 0;
}

sub _check_log {
    my ($name, $text, $want, $dont) = @_;
    for my $p (_patterns($want)) {
        Test::More::ok(_match($text, $p), "$name - error_log has: $p")
            or Test::More::diag("error log:\n" . _tail($text));
    }
    for my $p (_patterns($dont)) {
        my @hit = grep { _match($_, $p) } split /\n/, $text;
        Test::More::ok(!@hit, "$name - no_error_log: $p")
            or Test::More::diag(join "\n", @hit[0 .. ($#hit > 9 ? 9 : $#hit)]);
    }
}

sub _word {
    my ($block, $name) = @_;
    my $v = _sect($block, $name);
    return undef unless defined $v;
    $v =~ s/^\s+|\s+$//g;
    return length $v ? $v : undef;
}

sub _tail {
    my ($text) = @_;
    my @l = grep { !/\[debug\]/ } split /\n/, $text;
    @l = @l[-40 .. -1] if @l > 40;
    return join "\n", @l;
}

sub run_block {
    my ($block) = @_;
    my $name = $block->name;

    $FileRedis->cli('FLUSHALL') unless exists $block->{no_flush};

    my $config = _sect($block, 'config') // '';
    my $ng = RlTest::Nginx->new(
        dir         => $ServerRoot,
        port        => $ServerPort,
        redis       => $FileRedis,
        workers     => _word($block, 'workers') // 1,
        log_level   => _word($block, 'log_level')
                       // $ENV{RL_LOG_LEVEL} // 'debug',
        main_config => _sect($block, 'main_config') // '',
        access_log  => 1,
        config      => (_sect($block, 'http_config') // '') . <<"SERVER",

    server {
        listen 127.0.0.1:$ServerPort;
        server_name localhost;

$config
    }
SERVER
        start => 0,
    );

    my $want_log = _sect($block, 'error_log');
    my $dont_log = _sect($block, 'no_error_log');

    if (exists $block->{must_die}) {
        my ($tok, $text) = $ng->config_test;
        my $died = !$tok;
        unless ($tok) {
            Test::More::pass("$name - nginx -t fails");
        } else {
            # nginx -t passed: startup itself must fail
            my ($ok, $msg) = $ng->launch;
            $text .= $msg;
            $ng->stop(check => 0) if $ok;
            Test::More::ok(!$ok, "$name - nginx -t or startup fails")
                or Test::More::diag("nginx -t output:\n$text");
        }
        _check_log($name, $text . $ng->error_log_text, $want_log, $dont_log);
        return;
    }

    if (exists $block->{syntax_only}) {
        my ($tok, $text) = $ng->config_test;
        Test::More::ok($tok, "$name - nginx -t passes")
            or Test::More::diag($text);
        _check_log($name, $text, $want_log, $dont_log);
        return;
    }

    my ($ok, $msg) = $ng->try_start;
    unless ($ok) {
        Test::More::fail("$name - nginx starts");
        Test::More::diag($msg);
        return;
    }

    # each worker connects to Redis as it starts: let the handshake end
    # (up to 3 s, asserting nothing) before the first request, whose
    # timeout= (100 ms by default) a busy host's slow start would eat
    my $http = _sect($block, 'http_config') // '';
    if ($http =~ /redis=(?:127\.0\.0\.1:$RedisPort|unix:\Q$RedisSock\E)\b/) {
        my $want = _word($block, 'workers') // 1;
        wait_until(sub { $FileRedis->client_count('ngx_rl') >= $want },
                   timeout => 3, interval => 0.02);
    }

    my $reqs = _sect($block, 'request');
    $reqs = [ $reqs ] if defined $reqs && !ref $reqs;
    $reqs //= [];
    my $n = @$reqs;
    my $timeout = _word($block, 'timeout') // 10;

    my $codes     = _sect($block, 'error_code');
    my $hdrs      = _sect($block, 'response_headers');
    my $hdrs_like = _sect($block, 'response_headers_like');
    my $body      = _sect($block, 'response_body');
    my $body_like = _sect($block, 'response_body_like');
    my $more      = _sect($block, 'more_headers');

    eval {
        for my $i (0 .. $n - 1) {
            my $tag = $n > 1 ? "$name - req " . ($i + 1) : $name;
            my $req = $reqs->[$i];
            $req =~ s/^\s+//;
            my ($line, $rbody) = split /\r?\n/, $req, 2;
            my ($method, $uri) = split ' ', $line;
            my @h;
            for my $l (split /\n/, _nth($more, $i, $n, 'more_headers', $name)
                                   // '') {
                next unless $l =~ /^\s*([^:\s]+)\s*:\s*(.*?)\s*$/;
                push @h, $1, $2;
            }
            my $res = http_request($ServerPort, $method, $uri, headers => \@h,
                                   body => $rbody, timeout => $timeout);

            my $want = _nth($codes, $i, $n, 'error_code', $name) // 200;
            $want =~ s/\s+//g;
            Test::More::is($res->{code}, $want, "$tag - status code")
                or Test::More::diag($res->{error} // $res->{raw});

            _check_headers($tag, $res,
                           _nth($hdrs, $i, $n, 'response_headers', $name), 0);
            _check_headers($tag, $res,
                           _nth($hdrs_like, $i, $n, 'response_headers_like',
                                $name), 1);
            my $b = _nth($body, $i, $n, 'response_body', $name);
            Test::More::is($res->{body}, $b, "$tag - response body")
                if defined $b;
            my $bl = _nth($body_like, $i, $n, 'response_body_like', $name);
            if (defined $bl) {
                $bl = qr/$bl/s unless ref $bl eq 'Regexp';
                Test::More::like($res->{body}, $bl, "$tag - response body like");
            }
        }
        1;
    } or Test::More::fail("$name - died: $@");

    # error_log lines may be written just after the response: poll briefly
    if (defined $want_log) {
        my @p = _patterns($want_log);
        wait_until(sub {
            my $t = $ng->error_log_text;
            !grep { !_match($t, $_) } @p;
        }, timeout => 2);
    }
    $ng->stop(name => "$name - nginx");
    _check_log($name, $ng->error_log_text, $want_log, $dont_log);
}

sub _check_headers {
    my ($tag, $res, $spec, $like) = @_;
    return unless defined $spec;
    for my $l (split /\n/, $spec) {
        next unless $l =~ /\S/;
        $l =~ s/^\s+|\s+$//g;
        if ($l =~ /^!\s*(\S+)$/) {
            my $h = lc $1;
            Test::More::ok(!exists $res->{headers}{$h},
                           "$tag - header $1 absent")
                or Test::More::diag("$1: $res->{headers}{$h}");
            next;
        }
        my ($k, $v) = $l =~ /^([^:]+):\s*(.*)$/
            or do { Test::More::fail("$tag - bad header spec: $l"); next };
        my $got = $res->{headers}{ lc $k };
        if ($like) {
            Test::More::like($got // '<absent>', qr/^(?:$v)$/,
                             "$tag - header $k like /$v/");
        } else {
            Test::More::is($got, $v, "$tag - header $k");
        }
    }
}

1;
