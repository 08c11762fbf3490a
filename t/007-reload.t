# Reload under load drops nothing and leaks no Redis connection: after the
# old workers exit, CLIENT LIST shows workers x servers ngx_rl connections
# (the two zones are on two addresses of one Redis: two connections).

use lib 't/lib';
use RlTest;

my $WORKERS = 2;
my $ZONES   = 2;

my $r = start_redis();
my $conf = <<'CONF';
    rl_zone za redis=127.0.0.1:$RedisPort timeout=1s;
    rl_zone zb redis=unix:$RedisSock timeout=1s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /l {
            rl_rule zone=za key=$arg_c rate=1000000r/d;
            rl_rule zone=zb key=all rate=1000000r/d algorithm=fixed_window;
            empty_gif;
        }
        location /q {
            rl_rule zone=za key=q rate=5r/d algorithm=fixed_window name=q;
            empty_gif;
        }
    }
CONF
my $ng = start_nginx(redis => $r, workers => $WORKERS, config => $conf);
my $port = $ng->port;
my $want = $WORKERS * $ZONES;

# Polls, with some traffic (a worker may connect on its first request),
# until the ngx_rl connection count is the expected one twice in a row.
sub settles {
    my ($n, $hits) = (0, 0);
    wait_until(sub {
        http_parallel($port, [ map { "/l?c=warm$_" } 1 .. 10 ],
                      concurrency => 10);
        $n = $r->client_count('ngx_rl');
        $hits = $n == $want ? $hits + 1 : 0;
        return $hits >= 2;
    }, timeout => 5, interval => 0.1);
    return $n;
}

is(settles(), $want, "before: $want ngx_rl connections ($WORKERS x $ZONES)");

# ---------------------------------------------------------------- load

my $dir = RlTest::Proc::make_tempdir('load');
my @kids = map {
    my $id = $_;
    spawn(sub {
        my %n = (total => 0, ok => 0, error => 0, fail => 0);
        my $first_fail = '';
        my $deadline = now() + 30;
        while (!-e "$dir/stop" && $n{total} < 50000 && now() < $deadline) {
            my $res = http_get($port, "/l?c=kid$id", -timeout => 5);
            $n{total}++;
            my $st = $res->{headers}{'x-rl-status'} // '';
            if ($res->{code} == 200) {
                $n{ok}++;
            } else {
                $n{fail}++;
                $first_fail ||= "code=$res->{code} "
                                . ($res->{error} // '');
            }
            $n{error}++ if $st eq 'ERROR';
            if ($n{total} == 1) {
                open my $fh, '>', "$dir/started$id";
                close $fh;
            }
        }
        return join(' ', map { "$_=$n{$_}" } sort keys %n)
               . " first_fail=$first_fail";
    });
} 1 .. 2;

ok(wait_until(sub { -e "$dir/started1" && -e "$dir/started2" },
              timeout => 5), 'load running');

for my $i (1 .. 3) {
    ok($ng->reload, "reload $i under load: old workers exited");
}
open my $fh, '>', "$dir/stop";
close $fh;

for my $k (0 .. $#kids) {
    my $out = $kids[$k]->wait(40);
    my %n = $out =~ /(\w+)=(\d+)/g;
    ok(($n{total} // 0) > 0, "load $k: sent requests ($out)");
    is($n{fail}, 0, "load $k: no failed request");
    is($n{ok}, $n{total}, "load $k: all 200");
    is($n{error}, 0, "load $k: no ERROR decision during the reloads");
}

is(settles(), $want,
   "after 3 reloads: $want ngx_rl connections, none leaked");

# ---------------------------------------------------------------- new limit

# the limit N is not part of a rule's identity: usage survives a change
my @st = map { http_get($port, '/q')->{headers}{'x-ratelimit-remaining'} }
         1 .. 3;
is("@st", '4 3 2', 'q 5r/d: Remaining 4 3 2');
(my $conf2 = $conf) =~ s{rate=5r/d algorithm=fixed_window name=q}
                        {rate=10r/d algorithm=fixed_window name=q};
ok($ng->reload(config => $conf2), 'reload with q at 10r/d');
my $res = http_get($port, '/q');
is($res->{headers}{'x-ratelimit-limit'}, 10, 'q: new limit 10');
is($res->{headers}{'x-ratelimit-remaining'}, 6,
   'q: usage kept across the reload (10 - 4 = 6)');
is(settles(), $want, "after the 4th reload: $want ngx_rl connections");

$ng->stop;
wait_until(sub { $r->client_count('ngx_rl') == 0 }, timeout => 3);
is($r->client_count('ngx_rl'), 0, 'nginx stopped: no ngx_rl connection left')
    or diag($r->cli('CLIENT', 'LIST'));
$r->stop;
done_testing();
