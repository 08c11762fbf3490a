# Self-test of the harness (t/lib/RlTest*), against plain nginx configs with
# no rl directive: the module is not loaded here.

BEGIN { $ENV{RL_MODULE} = '' }

use lib 't/lib';
use RlTest;
use IO::Socket::IP;
use IO::Select;

run_tests();

# ---------------------------------------------------------------- helpers

{
    my %seen;
    my @ports = map { free_port() } 1 .. 5;
    $seen{$_}++ for @ports;
    is(scalar(keys %seen), 5, 'free_port: distinct ports');
    ok(!grep({ $_ < 1024 || $_ > 65535 } @ports), 'free_port: in range');

    my $t0 = now();
    my $r = wait_until(sub { 0 }, timeout => 0.3);
    my $dt = now() - $t0;
    ok(!$r, 'wait_until: false at the deadline');
    ok($dt >= 0.3 && $dt < 1, "wait_until: honours the deadline ($dt s)");
    my $n = 0;
    is(wait_until(sub { ++$n >= 3 ? "yes" : 0 }, timeout => 2), 'yes',
       'wait_until: returns the true value');

    my $child = spawn(sub { "child $$ says hi" });
    like($child->wait(5), qr/^child \d+ says hi$/, 'spawn: result');
    is($child->status, 0, 'spawn: exit status');

    my @bad = RlTest::Nginx::bad_log_lines(join "\n",
        '2024/01/01 00:00:00 [notice] 1#1: signal process started',
        '2024/01/01 00:00:00 [alert] 1#1: open socket #12 left',
        '2024/01/01 00:00:00 [crit] 1#1: something',
        '2024/01/01 00:00:00 [emerg] 1#1: bind() failed',
        '2024/01/01 00:00:00 [notice] 1#1: worker process 7 exited on signal 11',
        '2024/01/01 00:00:00 [error] 1#1: plain error');
    is(scalar @bad, 4, 'bad_log_lines: alert, crit, emerg, crash');
}

# ---------------------------------------------------------------- redis

{
    my $r = start_redis();
    ok($r->port && $r->pid, 'redis: started');
    ok(-S $r->sock, 'redis: unix socket exists');
    is($r->cli('PING'), 'PONG', 'redis: cli PING');
    $r->cli('SET', 'k', 'v1');
    is($r->cli('GET', 'k'), 'v1', 'redis: cli SET/GET');
    is($r->client_count('ngx_rl'), 0, 'redis: no ngx_rl client');
    is($r->cli('CONFIG', 'GET', 'save'), "save\n", 'redis: no persistence');

    $r->kill('STOP');
    ok(!$r->ping, 'redis: SIGSTOP, no answer');
    $r->kill('CONT');
    ok($r->ping, 'redis: SIGCONT, answers');

    my ($port, $pid) = ($r->port, $r->pid);
    $r->kill('KILL');
    ok(!kill(0, $pid), 'redis: SIGKILL, process gone');
    ok(!$r->ping, 'redis: killed, no answer');
    $r->restart;
    is($r->port, $port, 'redis: restart on the same port');
    is($r->cli('PING'), 'PONG', 'redis: restarted answers');
    is($r->cli('GET', 'k'), '', 'redis: restarted empty');
    $pid = $r->pid;
    $r->stop;
    ok(!kill(0, $pid), 'redis: stopped');

    my $rp = start_redis(password => 's3cret');
    is($rp->cli('PING'), 'PONG', 'redis: password, cli authenticates');

    # the server make test SERVER=... chose (RL_SERVER), first in PATH
    my $info = $rp->cli('INFO', 'server');
    my ($name) = $info =~ /^server_name:(\S+)/m;
    my ($version) = $name && $name eq 'valkey'
        ? $info =~ /^valkey_version:(\d+\.\d+)/m
        : $info =~ /^redis_version:(\d+\.\d+)/m;
    my $server = ($name // 'redis') . '-' . ($version // '?');
    diag("the tests run against $server");
    is($server, $ENV{RL_SERVER}, "redis: the server is RL_SERVER's")
        if $ENV{RL_SERVER};
    $rp->stop;
}

# ---------------------------------------------------------------- nginx

{
    # an upstream that accepts and never answers until we close it
    my $hang = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                   Listen => 10, ReuseAddr => 1) or die $@;
    my $hang_port = $hang->sockport;

    my $ng = start_nginx(workers => 2, config => <<"CONF");
    server {
        listen 127.0.0.1:\$ServerPort;
        location /pid  { return 200 "\$pid"; }
        location /gif  { empty_gif; }
        location /hang {
            proxy_pass http://127.0.0.1:$hang_port;
            proxy_read_timeout 10s;
        }
    }
CONF
    ok($ng->pid, 'nginx: started');
    my @w = $ng->worker_pids;
    is(scalar @w, 2, 'nginx: two workers');

    my $res = http_get($ng->port, '/pid', 'X-Foo' => 'bar');
    is($res->{code}, 200, 'http_get: 200');
    like($res->{body}, qr/^\d+$/, 'http_get: body');
    ok(grep({ $_ == $res->{body} } @w), 'http_get: served by a worker');
    ok($res->{elapsed} < 1, 'http_get: elapsed');
    is($res->{headers}{'content-type'}, 'text/plain', 'http_get: headers');

    my $gif = http_get($ng->port, '/gif');
    is($gif->{headers}{'content-length'}, 43, 'empty_gif length');
    is(length $gif->{body}, 43, 'empty_gif body');

    my @codes = http_parallel($ng->port, [ ('/pid') x 40, '/nope' ],
                              concurrency => 10);
    is(scalar @codes, 41, 'http_parallel: all answered');
    is(scalar(grep { $_ == 200 } @codes), 40, 'http_parallel: 200s');
    is($codes[-1], 404, 'http_parallel: order kept');

    # asynchronous request: pending while another one is answered
    my $conn = http_start($ng->port, '/hang');
    my $client = wait_until(sub { $hang->accept }, timeout => 5);
    ok($client, 'http_start: upstream got the request');
    ok(!$conn->poll, 'http_start: still pending');
    my $free = http_get($ng->port, '/pid');
    is($free->{code}, 200, 'other request answered meanwhile');
    ok(!$conn->poll, 'http_start: still pending after the other one');
    close $client;
    my $hr = $conn->result(5);
    is($hr->{code}, 502, 'http_start: upstream closed, 502');

    my $dead = http_get(free_port(), '/');
    is($dead->{code}, 0, 'http_get: connection refused gives code 0');
    ok($dead->{error}, 'http_get: with an error');

    # reload: new workers, old ones gone, still serving
    ok($ng->reload, 'nginx: reload');
    my @w2 = $ng->worker_pids;
    is(scalar @w2, 2, 'nginx: two workers after reload');
    my %old = map { $_ => 1 } @w;
    ok(!grep({ $old{$_} } @w2), 'nginx: all workers new');
    ok(!grep({ kill 0, $_ } @w), 'nginx: old workers gone');
    is(http_get($ng->port, '/pid')->{code}, 200, 'nginx: serves after reload');

    ok($ng->reload(config => <<'CONF'), 'nginx: reload with a new config');
    server {
        listen 127.0.0.1:$ServerPort;
        location / { return 200 "v2"; }
    }
CONF
    is(http_get($ng->port, '/x')->{body}, 'v2', 'nginx: new config active');

    my $master = $ng->pid;
    @w2 = $ng->worker_pids;
    my @bad = $ng->stop;       # adds the error log test
    ok(!kill(0, $master), 'nginx: master gone');
    ok(!grep({ kill 0, $_ } @w2), 'nginx: workers gone');
    like($ng->error_log_text, qr/\[notice\]/, 'nginx: error log readable');
}

{
    # a reload the master refuses is reported at once
    my $ng = start_nginx(config => <<'CONF');
    server { listen 127.0.0.1:$ServerPort; location / { return 200 "v1"; } }
CONF
    my $t0 = now();
    ok(!$ng->reload(config => <<'CONF'), 'reload with a bad config: false');
    server { listen 127.0.0.1:$ServerPort; location / { foo_bar; } }
CONF
    ok(now() - $t0 < 5, 'reload with a bad config: reported quickly');
    is(http_get($ng->port, '/')->{body}, 'v1', 'old config still serving');
    my @bad = $ng->stop(check => 0);
    ok(grep({ /\[emerg\].*foo_bar/ } @bad), 'stop returns the [emerg] line');
}

# ---------------------------------------------------------------- cleanup

# a test script that dies, or is killed, with nginx and redis running
# leaves no process behind
for my $end ('die "deliberate\n";', 'kill "TERM", $$; sleep 5;',
             'kill "INT", $$; sleep 5;') {
    my $lib = repo_root() . '/t/lib';
    my $script = <<'PERL' . $end . "\n";
use RlTest;
my $r = start_redis();
my $ng = start_nginx(config => "server { listen 127.0.0.1:\$ServerPort; }",
                     workers => 2);
$r->kill('STOP');
$| = 1;
print "PIDS ", join(' ', $r->pid, $ng->pid, $ng->worker_pids), "\n";
PERL
    my $file = RlTest::Proc::make_tempdir('script') . '/die.pl';
    open my $fh, '>', $file or die $!;
    print $fh $script;
    close $fh;
    my $t0 = now();
    my $out = `RL_MODULE= $^X -I$lib $file 2>&1`;
    my ($pids) = $out =~ /^PIDS ([\d ]+)$/m;
    ok($pids, "script ending with '$end' started redis and nginx")
        or diag($out);
    my @pids = split ' ', $pids // '';
    is(scalar @pids, 4, 'redis, master, 2 workers');
    ok(!grep({ kill 0, $_ } @pids), 'all gone after the script ended')
        or diag(`ps -o pid,ppid,stat,cmd -p @{[join ',', @pids]}`);
    ok(now() - $t0 < 5, 'and quickly');
}

done_testing();

__DATA__

=== TEST 1: plain response, headers present and absent
--- config
location /t {
    add_header X-Foo bar;
    return 200 "ok";
}
--- request
GET /t
--- response_headers
X-Foo: bar
!X-Bar
--- response_body chomp
ok
--- no_error_log
[error]



=== TEST 2: several requests, per-request codes and bodies
--- config
location /a { return 200 "a"; }
--- request eval
["GET /a", "GET /missing", "GET /a?x=1"]
--- error_code eval
[200, 404, 200]
--- response_body_like eval
[qr/^a$/, qr/404 Not Found/, qr/^a$/]



=== TEST 3: more_headers
--- config
location /h { return 200 "[$http_x_test]"; }
--- request
GET /h
--- more_headers
X-Test: hello
--- response_body chomp
[hello]



=== TEST 4: placeholders in config and in eval sections
--- config
location /p { return 200 "$RedisPort $ServerPort $ServerRoot $RedisSock"; }
--- request
GET /p
--- response_body eval
"$RedisPort $ServerPort $ServerRoot $RedisSock"



=== TEST 5: response_headers_like and main_config
--- main_config
worker_rlimit_nofile 2048;
--- config
location /pid {
    add_header X-Pid $pid;
    return 200 "x";
}
--- request
GET /pid
--- response_headers_like
X-Pid: \d+
Content-Type: text/.*



=== TEST 6: error_log of this block
--- config
location /f { root $ServerRoot/html; }
--- request
GET /f/nothing.html
--- error_code: 404
--- error_log
No such file or directory
--- no_error_log eval
[qr/\[warn\].*nothing/]



=== TEST 7: must_die with the nginx -t message
--- config
location /x { foo_bar on; }
--- must_die
--- error_log
unknown directive "foo_bar"



=== TEST 8: two workers, empty_gif content handler
--- workers: 2
--- config
location /g { empty_gif; }
--- request eval
["GET /g", "GET /g"]
--- response_headers
Content-Type: image/gif
Content-Length: 43



=== TEST 9: http_config
--- http_config
map $arg_v $mapped { default "none"; 1 "one"; }
--- config
location /m { return 200 $mapped; }
--- request
GET /m?v=1
--- response_body chomp
one
