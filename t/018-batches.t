# Batches: the requests a worker sends one zone during one turn of its
# event loop leave as one script call (src/redis/batch.cpp). Concurrent
# requests therefore take fewer EVALSHA calls than there are requests,
# and a batch changes no decision: requests on one key in one call are
# decided one after the other, each atomically, so exactly N pass.

use lib 't/lib';
use RlTest;
use Test::More;
use IO::Socket::IP;
use Socket qw(SOL_SOCKET SO_RCVTIMEO);


my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 1, config => <<'CONF');
    rl_zone r redis=127.0.0.1:$RedisPort timeout=5s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /many {
            rl_rule zone=r key=$arg_k rate=1000r/s;
            empty_gif;
        }
        location /wide {
            rl_rule zone=r key=$arg_k rate=1000r/s name=a;
            rl_rule zone=r key=$arg_k rate=1001r/s name=b;
            rl_rule zone=r key=$arg_k rate=1002r/s name=c;
            rl_rule zone=r key=$arg_k rate=1003r/s name=d;
            rl_rule zone=r key=$arg_k rate=1004r/s name=e
                    algorithm=gcra burst=10;
            empty_gif;
        }
        location /one {
            rl_rule zone=r key=one rate=7r/h algorithm=fixed_window;
            rl_rule zone=r key=one rate=9r/h algorithm=token_bucket
                    name=bucket;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;

# ------------------------------------------------------------ fewer calls

# Keep-alive connections, as clients under load have (a new connection
# is accepted in one turn and read in the next, so fresh ones never
# meet): 40 of them, each with a request answered.
sub request { my ($path) = @_; "GET $path HTTP/1.1\r\nHost: t\r\n\r\n" }

sub response {
    my ($sock) = @_;
    my $buf = '';
    my $deadline = now() + 10;
    while (now() < $deadline) {
        if ($buf =~ /\A(HTTP\/1\.1 (\d+).*?\r\n\r\n)/s) {
            my ($head, $code) = ($1, $2);
            my ($len) = $head =~ /^Content-Length: (\d+)/mi;
            return $code if length($buf) >= length($head) + ($len // 0);
        }
        my $n = sysread($sock, $buf, 4096, length $buf);
        return 0 unless $n;
    }
    return 0;
}

my $requests = 40;
my $wide = 130;   # requests of 5 rules: more than one call can take
my @socks = map {
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                                Proto => 'tcp', Timeout => 5)
        or BAIL_OUT("connect: $@");
    # reads give up after 10 s rather than hang the suite
    $s->setsockopt(SOL_SOCKET, SO_RCVTIMEO, pack('l!l!', 10, 0));
    $s;
} 1 .. $wide;
for my $i (0 .. $#socks) {
    syswrite $socks[$i], request("/many?k=w$i");
    response($socks[$i]);
}

# The worker stopped, one more request on each, let go: it reads them
# all in one turn of its loop. Returns the status codes and the script
# calls Redis got.
sub at_once {
    my (@paths) = @_;
    my ($worker) = $ng->worker_pids;
    my $before = $r->calls('evalsha');
    kill 'STOP', $worker;
    syswrite $socks[$_], request($paths[$_]) for 0 .. $#paths;
    kill 'CONT', $worker;
    my @codes = map { response($socks[$_]) } 0 .. $#paths;
    return (\@codes, $r->calls('evalsha') - $before);
}

my ($codes, $calls) = at_once(map { "/many?k=c$_" } 1 .. $requests);
is(scalar(grep { $_ == 200 } @$codes), $requests,
   "$requests requests read at once all passed")
    or diag("@$codes");
cmp_ok($calls, '>=', 1, 'through Redis');
cmp_ok($calls, '<=', $requests / 4,
       "in at most a quarter as many script calls ($calls)");

# The slow log (every command, with its first arguments; commands run by
# scripts too) shows what each call carried: the key counts of the
# EVALSHA calls while `code` runs.
sub numkeys_of {
    my ($code) = @_;
    $r->cli('CONFIG', 'SET', 'slowlog-max-len', '100000');
    $r->cli('CONFIG', 'SET', 'slowlog-log-slower-than', '0');
    $r->cli('SLOWLOG', 'RESET');
    my @out = $code->();
    my @log = split /\n/, $r->cli('SLOWLOG', 'GET', '-1');
    $r->cli('CONFIG', 'SET', 'slowlog-log-slower-than', '10000');
    # EVALSHA sha numkeys keys... block-keys... head specs...: the
    # state keys of each call (numkeys counts each one's block key too)
    my @numkeys = map { $log[$_ + 2] / 2 } grep { $log[$_] eq 'EVALSHA' }
                  0 .. $#log;
    return (\@numkeys, @out);
}

# ------------------------------------------------------------ the limits

# 130 requests of 5 rules each, all keys distinct, read at once: 650
# keys, more than a call takes (128 requests, 512 keys), so at least two
# calls, each key sent once, every request decided
my $numkeys;
($numkeys, $codes, $calls) =
    numkeys_of(sub { at_once(map { "/wide?k=x$_" } 1 .. $wide) });
is(scalar(grep { $_ == 200 } @$codes), $wide,
   "$wide requests of 5 rules read at once all passed")
    or diag("@$codes");
cmp_ok($calls, '>=', 2, "in more than one call ($calls)");
my $keys = 0;
$keys += $_ for @$numkeys;
is($keys, 5 * $wide, 'every key sent once') or diag("numkeys: @$numkeys");
ok(!grep({ $_ > 512 } @$numkeys), 'no call over 512 keys')
    or diag("numkeys: @$numkeys");

# ------------------------------------------------------------ exact in a call

# 30 at once on one key, two stacked rules, decided in one or two calls:
# exactly 7 pass (the tighter rule)
($numkeys, $codes, $calls) = numkeys_of(sub { at_once(('/one') x 30) });
is(scalar(grep { $_ == 200 } @$codes), 7,
   "30 requests on one key read at once ($calls calls): exactly 7 passed")
    or diag("@$codes");
is(scalar(grep { $_ == 429 } @$codes), 23, 'and 23 were rejected');
is(http_get($port, '/one')->{code}, 429, 'the window stays full');

ok(@$numkeys >= 1, 'the calls are in the slow log');
is_deeply([grep { $_ ne '2' } @$numkeys], [],
          'each call sends the two keys once, whatever its requests')
    or diag("numkeys: @$numkeys");

close $_ for @socks;

done_testing();
