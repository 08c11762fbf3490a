# The example configuration (docker/nginx.conf) as `make run` starts it
# (docker/run-local): it loads, limits as it says, and stopping it leaves
# no process behind. The compose file is checked where docker-compose is
# (two nginx services from docker/Dockerfile on one redis).

use lib 't/lib';
use RlTest;
use RlTest::Proc qw(make_tempdir);
use Test::More;

my $root = repo_root();
my $dir = make_tempdir('example');
my $port = free_port();
my $rport = free_port();
local $ENV{RL_MODULE} = module_path();
local $ENV{RUN_DIR} = $dir;
local $ENV{RUN_PORT} = $port;
local $ENV{REDIS_PORT} = $rport;

sub pids {
    my @p;
    for my $f ("$dir/nginx.pid", "$dir/redis.pid") {
        next unless open my $fh, '<', $f;
        my $pid = <$fh>;
        chomp $pid;
        push @p, $pid if $pid;
    }
    return @p;
}

my $out = `$root/docker/run-local start 2>&1`;
is($?, 0, 'run-local start succeeds') or diag($out);
like($out, qr/curl/, 'it prints how to see the limit at work');
like($out, qr{dashboard: http://127\.0\.0\.1:\d+/rl/}, 'and where the dashboard is');
my @pids = pids();
is(scalar @pids, 2, 'nginx and redis-server wrote their pid files');

ok(wait_until(sub { (http_get($port, '/health')->{code} // 0) == 200 },
              timeout => 10), 'the example answers');

# the workers name their connections in the handshake: poll for it,
# before the requests that would queue behind it (timeout=100ms)
my $n = 0;
wait_until(sub {
    my $clients = `redis-cli -p $rport client list`;
    $n = () = $clients =~ /name=ngx_rl/g;
    $n == 2;
}, timeout => 5);
is($n, 2, 'one connection per worker');

my @codes = map { http_get($port, '/')->{code} } 1 .. 7;
is_deeply(\@codes, [ (200) x 5, 429, 429 ], '5r/m: 5 pass, then 429');
my $r = http_get($port, '/');
is($r->{headers}{'x-ratelimit-limit'}, 5, 'X-RateLimit-Limit is N');
ok(($r->{headers}{'retry-after'} // 0) >= 1, 'Retry-After on a 429');
ok(length($r->{headers}{'x-served-by'} // ''),
   'X-Served-By names the instance (docker-compose.yml runs two)');

$r = http_get($port, '/api/x');
is($r->{code}, 200, 'no API key: the rules do not apply');
ok(!defined $r->{headers}{'x-ratelimit-limit'}, 'and there is no header');

$r = http_get($port, '/api/x', 'X-Api-Key' => 'k1');
is($r->{code}, 200, 'with an API key: limited');
is($r->{headers}{'x-ratelimit-limit'}, 10,
   'the binding rule is the one with least remaining');
$r = http_get($port, '/rl/1/rules');
is($r->{code}, 200, 'the operator API answers');
like($r->{body}, qr/"name":"daily"/, 'with the rules');

$out = `$root/docker/run-local stop 2>&1`;
is($?, 0, 'run-local stop succeeds');
ok(wait_until(sub { !grep { kill 0, $_ } @pids }, timeout => 10),
   'no process left behind');

my $log = do { local (@ARGV, $/) = ("$dir/logs/error.log"); <> } // '';
ok(!($log =~ /\[(?:alert|crit|emerg)\]|exited on signal/),
   'no alert in the error log') or diag($log);

SKIP: {
    skip 'docker-compose is not installed', 3
        unless system('command -v docker-compose >/dev/null 2>&1') == 0;
    my $cfg = `docker-compose -f $root/docker/docker-compose.yml config 2>&1`;
    is($?, 0, 'docker-compose.yml is valid') or diag($cfg);
    my @built = $cfg =~ /^\s+dockerfile: docker\/Dockerfile$/mg;
    is(scalar @built, 2, 'two nginx services built from docker/Dockerfile');
    like($cfg, qr/^  redis:\n(?:    .*\n)*    image: redis:/m, 'on one redis');
}

my $ignore = do { local (@ARGV, $/) = ("$root/.dockerignore"); <> } // '';
like($ignore, qr{^/?build/?$}m, '.dockerignore keeps build/ out of the image');

done_testing();
