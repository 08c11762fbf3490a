# What a key's first decision costs Redis, counted in INFO commandstats:
# a decision call reads Redis' clock, its keys' states and their block
# keys in one MGET, and writes each new key once (SET with its expiry):
# a new key alone in its call is 4 commands (EVALSHA, TIME, MGET, SET),
# and on a lease= zone the same 4 (a cold key asks for no lease, and
# nothing else goes to Redis for it). A hot key on the lease zone then
# costs far fewer calls than requests.
#   (a) exact zone: 20 new keys, one request each, one at a time
#   (b) lease zone: the same
#   (c) lease zone: one key, 60 requests: leased (under 20 calls)
#   (d) both zones: 64 new keys, 32 at a time, so that calls carry
#       several: one MGET a call, whatever it carries, one SET a key
#   (e) a 3-master Redis Cluster, 64 new keys each on a slot of its own:
#       one at a time, 4 commands each, as on one Redis; 32 at a time,
#       one script call per master and turn (fewer than keys), one MGET
#       a key (a slot's keys are read by a command of their own) and
#       one SET: 2 + 2/n commands a key for calls of n (issue 34)
# About 7 s.

use lib 't/lib';
use RlTest;
use RlTest::Cluster;

my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 1, ready => 1,
                     config => <<'CONF');
    rl_zone exact redis=127.0.0.1:$RedisPort;
    rl_zone leased redis=127.0.0.1:$RedisPort lease=10s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /e {
            rl_rule zone=exact key=$arg_k rate=1000r/m;
            empty_gif;
        }
        location /l {
            rl_rule zone=leased key=$arg_k rate=1000r/m;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;

my @COMMANDS = qw(evalsha time mget set);

# every command's calls since the last reset
sub commands {
    my %n;
    for (split /\r?\n/, $r->cli('INFO', 'commandstats')) {
        $n{$1} = $2 if /^cmdstat_([\w|]+):calls=(\d+)/ && $1 ne 'info'
                                                      && $1 !~ /^config/;
    }
    return \%n;
}

sub new_keys {
    my ($path, $tag) = @_;
    $r->cli('CONFIG', 'RESETSTAT');
    my %status;
    for my $i (1 .. 20) {
        my $res = http_get($port, "$path?k=$tag$i");
        $status{ code_status($res) }++;
    }
    return (\%status, commands());
}

# warm: the connection made, the script loaded
http_get($port, "/$_?k=warm") for qw(e l);

for ([ 'a', '/e', 'exact' ], [ 'b', '/l', 'lease' ]) {
    my ($step, $path, $zone) = @$_;
    my ($status, $n) = new_keys($path, $step);
    is_deeply($status, { '200 PASSED' => 20 },
              "($step) $zone zone: 20 new keys passed");
    is_deeply($n, { map { $_ => 20 } @COMMANDS },
              "($step) $zone zone: each new key cost one EVALSHA, TIME, "
              . 'MGET and SET, nothing else')
        or diag(explain($n));
}

# (c) a hot key on the lease zone: spent from leases
{
    $r->cli('CONFIG', 'RESETSTAT');
    my %status;
    $status{ code_status(http_get($port, '/l?k=hot')) }++ for 1 .. 60;
    is_deeply(\%status, { '200 PASSED' => 60 }, '(c) 60 requests passed');
    my $calls = $r->calls('evalsha');
    cmp_ok($calls, '<', 20, "(c) a hot key: $calls script calls for 60 "
                            . 'requests');
}

# (d) calls of several new keys
for my $path ('/e', '/l') {
    $r->cli('CONFIG', 'RESETSTAT');
    # curl -Z: 32 connections at once, so that a turn has several
    my $file = $ng->dir . "/urls$path";
    $file =~ s{/(\w)$}{-$1};
    open my $fh, '>', $file or die "$file: $!";
    print $fh "url = \"http://127.0.0.1:$port$path?k=d$_\"\n"
            . "output = \"/dev/null\"\n" for 1 .. 64;
    close $fh;
    my @codes = split /\n/, `curl -s -Z --parallel-max 32 -K '$file' \\
                              -w '%{http_code}\\n' 2>/dev/null`;
    is(scalar(grep { $_ == 200 } @codes), 64, "(d) $path: 64 passed");
    my $n = commands();
    my $calls = $n->{evalsha} // 0;
    is($n->{mget}, $calls, "(d) $path: one MGET a call ($calls calls for "
                           . '64 new keys)');
    is($n->{set}, 64, "(d) $path: one SET a key");
}

my @bad = grep { /exited on signal|\[alert\]|\[crit\]|\[emerg\]/ }
          split /\n/, $ng->error_log_text;
is_deeply(\@bad, [], 'no crash or alert in the error log');
$ng->stop;

# (e) a Cluster
{
    my $c = RlTest::Cluster->new(masters => 3);
    my @M = $c->masters;
    my $cn = start_nginx(workers => 1, vars => { Seeds => $c->seeds },
                         config => <<'CONF');
    rl_fleet off;
    rl_zone c cluster=$Seeds;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /c {
            rl_rule zone=c key=$arg_k rate=1000r/m;
            empty_gif;
        }
    }
CONF
    my $cport = $cn->port;
    ok(wait_until(sub { code_status(http_get($cport, '/c?k=warm'))
                        eq '200 PASSED' }, timeout => 10),
       '(e) decisions start');
    # every command's calls on the three masters since the reset, but
    # a link's own (a connection's handshake, the slot map read while a
    # master's link comes up late on a loaded host): not a decision's
    my $all = sub {
        my %n;
        for my $m (@M) {
            for (split /\r?\n/, $m->cli('INFO', 'commandstats')) {
                $n{$1} += $2 if /^cmdstat_([\w|]+):calls=(\d+)/
                    && $1 !~ /^(?:info|config|cluster|ping|auth|hello
                                 |select|client|script|role)\b/x;
            }
        }
        return \%n;
    };
    my @one = map { $c->value_on(undef, prefix => 'e') } 1 .. 20;
    $_->cli('CONFIG', 'RESETSTAT') for @M;
    my %st;
    $st{ code_status(http_get($cport, "/c?k=$_")) }++ for @one;
    is_deeply(\%st, { '200 PASSED' => 20 }, '(e) 20 new keys passed');
    is_deeply($all->(), { map { $_ => 20 } @COMMANDS },
              '(e) one at a time: EVALSHA, TIME, MGET and SET each')
        or diag(explain($all->()));

    # 64 requests at once, on 64 new keys of 64 slots: calls go across
    # slots when requests wait together, which a loaded host may not
    # give on one try (each then goes alone): the best of 3 tries, each
    # on keys of its own
    my ($n, @codes);
    for my $try (1 .. 3) {
        my @many = map { $c->value_on(undef, prefix => "p$try") } 1 .. 64;
        $_->cli('CONFIG', 'RESETSTAT') for @M;
        my $file = $cn->dir . '/urls';
        open my $fh, '>', $file or die "$file: $!";
        print $fh "url = \"http://127.0.0.1:$cport/c?k=$_\"\n"
                . "output = \"/dev/null\"\n" for @many;
        close $fh;
        @codes = split /\n/, `curl -s -Z --parallel-max 32 -K '$file' \\
                               -w '%{http_code}\\n' 2>/dev/null`;
        $n = $all->();
        last if grep({ $_ == 200 } @codes) != 64 || $n->{evalsha} < 64;
        diag("(e) try $try: each of the 64 went alone");
    }
    is(scalar(grep { $_ == 200 } @codes), 64, '(e) 64 at once passed');
    cmp_ok($n->{evalsha}, '<', 64, "(e) $n->{evalsha} script calls for "
           . '64 keys of 64 slots: calls across slots');
    is($n->{time}, $n->{evalsha}, '(e) one TIME a call');
    is($n->{mget}, 64, '(e) one MGET a key: each its own slot');
    is($n->{set}, 64, '(e) one SET a key');
    $cn->stop;
    $c->stop;
}

done_testing();
