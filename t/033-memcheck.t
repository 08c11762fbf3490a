# The module under valgrind's memcheck: nginx in one process (no master)
# serves the paths where a request waits and comes back (a decision from
# Redis, a 429, a delay=, a refund to another zone, a decision of
# failure=local with Redis down and its refund, a lease granted, spent,
# given back to by a rejected request, and returned at exit; slots of
# concurrency= held, renewed during a delay= and released, charges, in
# Redis and in shared memory; calendar rules, their bounds in a refund
# and a charge, and credits through the operator API) and an embedded
# sliding_log state shared by rules of two N, then exits; valgrind
# must report no invalid read or write and no use of uninitialised
# memory. (A parked request's phases can finish it and free its pool:
# what runs after them must not touch it.)

use lib 't/lib';
use RlTest;
use RlTest::Proc qw(make_tempdir wait_until free_port);
use POSIX ();

my ($valgrind) = map { "$_/valgrind" } grep { -x "$_/valgrind" }
                 split /:/, $ENV{PATH};
plan(skip_all => 'valgrind is not installed') unless $valgrind;
plan(skip_all => 'the module is built with ASan (make test SANITIZE=1), '
               . 'which valgrind cannot run') if $ENV{RL_SANITIZE};

my $rx = start_redis();
my $ry = start_redis();
my ($xport, $yport) = ($rx->port, $ry->port);
my $dir = make_tempdir('memcheck');
mkdir "$dir/logs";
my $port = free_port();
my $gone = free_port();     # nothing listens: failure=local decides
my $module = module_path();

open my $fh, '>', "$dir/nginx.conf" or die $!;
print $fh <<"CONF";
load_module $module;
master_process off;
daemon off;
worker_processes 1;
error_log logs/error.log info;
pid nginx.pid;
events { worker_connections 64; }
http {
    access_log off;
    # valgrind runs nginx 20-50 times slower: a handshake that took
    # longer than the default connect_timeout=1s would give the zone's
    # requests the failure policy, not the paths this test walks
    rl_zone x redis=127.0.0.1:$xport timeout=30s connect_timeout=30s;
    rl_zone y redis=127.0.0.1:$yport timeout=30s connect_timeout=30s;
    rl_zone e size=1m;
    rl_zone z redis=127.0.0.1:$xport timeout=30s connect_timeout=30s
            lease=10s;
    rl_zone l redis=127.0.0.1:$gone timeout=30s connect_timeout=30s
            failure=local size=1m;
    server {
        listen 127.0.0.1:$port;
        location /plain { empty_gif; }
        location /metrics { rl_metrics; }
        location /limited {
            rl_rule zone=x key=k rate=1000r/s;
            empty_gif;
        }
        location /reject {
            rl_rule zone=x key=r rate=1r/h cost=\$arg_c;
            empty_gif;
        }
        location /delay {
            rl_rule zone=x key=d rate=20r/s algorithm=gcra burst=5 delay=1;
            empty_gif;
        }
        location /log3 {
            rl_rule zone=e key=k rate=3r/h algorithm=sliding_log name=log;
            empty_gif;
        }
        location /log50 {
            rl_rule zone=e key=k rate=50r/h algorithm=sliding_log name=log;
            empty_gif;
        }
        location /both {
            rl_rule zone=x key=b rate=100r/h name=x;
            rl_rule zone=y key=b rate=1r/h name=y cost=\$arg_c;
            empty_gif;
        }
        location /leased {
            rl_rule zone=z key=hot rate=1000r/h;
            empty_gif;
        }
        location /leasedboth {
            rl_rule zone=z key=hot rate=1000r/h;
            rl_rule zone=y key=lb rate=1r/h cost=\$arg_c;
            empty_gif;
        }
        location /inflight {
            rl_rule zone=x key=i concurrency=1 hold=1s;
            rl_rule zone=x key=i rate=100r/h name=ix charge=\$arg_t;
            empty_gif;
        }
        location /inflocal {
            rl_rule zone=e key=i concurrency=1 hold=1s;
            rl_rule zone=e key=i rate=100r/h name=ex charge=\$arg_t;
            empty_gif;
        }
        location /inflong {
            rl_rule zone=x key=il concurrency=2 hold=1s;
            rl_rule zone=x key=il rate=1r/s algorithm=gcra burst=5 delay=0;
            empty_gif;
        }
        location /month {
            rl_rule zone=x key=m rate=3r/month tz=UTC anchor=\$arg_day
                    name=month_x charge=\$arg_t;
            rl_rule zone=y key=m rate=5r/w name=week cost=\$arg_c;
            empty_gif;
        }
        location /monthe {
            rl_rule zone=e key=m rate=3r/month tz=UTC name=month_e
                    charge=\$arg_t;
            empty_gif;
        }
        location /rl/ { rl_api write=on; }
        location /local {
            rl_rule zone=l key=l rate=100r/h name=first;
            rl_rule zone=l key=l rate=100r/h name=second;
            rl_rule zone=x key=l rate=1r/h name=x;
            empty_gif;
        }
    }
}
CONF
close $fh;

my $vg = spawn(sub {
    open STDOUT, '>', '/dev/null';
    open STDERR, '>', '/dev/null';
    exec $valgrind, '--error-exitcode=9', "--log-file=$dir/valgrind.log",
         $RlTest::Nginx::NGINX, '-p', $dir, '-c', "$dir/nginx.conf";
});
ok(wait_until(sub { (http_get($port, '/plain')->{code} // 0) == 200 },
              timeout => 60, interval => 0.5),
   'nginx runs under valgrind');

my @want = (
    ['/limited', 200], ['/limited', 200],
    ['/reject?c=1', 200], ['/reject?c=1', 429], ['/reject?c=1', 429],
    ['/both?c=1', 200], ['/both?c=1', 429], ['/both?c=1', 429],
    ['/local', 200], ['/local', 429], ['/local', 429],
);
push @want, map { ['/delay', 200] } 1 .. 8;
# hot: a lease is granted, then spent; a request y rejects gives back
push @want, (map { ['/leased', 200] } 1 .. 10),
            ['/leasedboth?c=1', 200], ['/leasedboth?c=1', 429],
            ['/leased', 200];
# slots held and released, charged (a value that is no number too); the
# second /inflong waits a second on its delay=, its slot renewed meanwhile
push @want, ['/inflight?t=5', 200], ['/inflight?t=x', 200],
            ['/inflocal?t=3', 200], ['/inflocal', 200],
            ['/inflong', 200], ['/inflong', 200];
# one state, two N: its ring is made again at each change of N
push @want, ['/log3', 200], ['/log50', 200], ['/log50', 200],
            ['/log3', 429], ['/log50', 200], ['/log3', 429];
# calendar rules: a request y rejects (a cost above its week's) gives x's
# period back; charges carry bounds; credits on Redis and in memory
push @want, ['/month?day=5&t=2&c=1', 200], ['/month?day=5&c=9', 429],
            ['/monthe?t=3', 200], ['/monthe', 429];
for my $w (@want) {
    my $t = http_get($port, $w->[0], -timeout => 30);
    is($t->{code}, $w->[1], "$w->[0]: $w->[1]");
}
for my $zone ('x', 'e') {
    my $res = RlTest::HTTP::http_request($port, 'POST',
        "/rl/1/rules/month_$zone/keys/m/credit?anchor=5",
        headers => ['Content-Type' => 'application/json'],
        body => '{"units": 2}', timeout => 30);
    is($res->{code}, 200, "a credit of month_$zone");
}
is(http_get($port, '/monthe', -timeout => 30)->{code}, 200,
   'the credit counts');

ok(metric_value($port, 'rl_lease_units_total{zone="z",use="spent"}') > 0,
   'a lease was spent');

kill 'QUIT', $vg->pid;
$vg->wait(60);
open my $log, '<', "$dir/valgrind.log" or die "valgrind.log: $!";
my $text = do { local $/; <$log> };
like($text, qr/ERROR SUMMARY: 0 errors/, 'valgrind: no memory errors')
    or diag join "\n", grep { /Invalid|uninitialised|at 0x|by 0x/ }
                       (split /\n/, $text)[0 .. 80];

done_testing();
