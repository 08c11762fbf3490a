# Replies that are not the script's (a server that is not Redis, a proxy
# gone wrong): each request gets the failure policy, the worker neither
# crashes nor stalls, the log says so once per incident, and decisions
# resume with the first good reply.
#
# The "Redis" here is a small server in this file: it answers the
# handshake as Redis does (SCRIPT LOAD gives the script's SHA-1), then
# each EVALSHA with the next reply of @REPLIES. Requests go one at a
# time, so each call carries one request of one rule, whose good reply
# is the clock and three figures (src/core/reply.hpp).

use lib 't/lib';
use RlTest;
use Digest::SHA qw(sha1_hex);
use IO::Select;
use IO::Socket::IP;
use Time::HiRes ();

use RlTest::Resp qw(bulk command send_all);

# a reply of the script's; with overrides' records when given some
sub good {
    my $clock = int(Time::HiRes::time() * 1e6);
    return bulk(pack('d<*', $clock, 10, 1000000, 0, @_));
}

my @REPLIES = (
    [good => good()],
    [status => "+OK\r\n"],
    [integer => ":1\r\n"],
    [good => good()],
    [nil => "\$-1\r\n"],
    ['empty array' => "*0\r\n"],
    ['array of integers' => "*3\r\n:1\r\n:2\r\n:3\r\n"],
    ['short string' => bulk('hello')],
    ['NaN figures' => bulk(pack('d<4', (9**9**9 / 9**9**9) x 4))],
    ['clock -1' => bulk(pack('d<4', -1, 10, 1000000, 0))],
    ['negative left' => bulk(pack('d<4', 1e15, -5, 1000000, 0))],
    ['fractional figure' => bulk(pack('d<4', 1e15, 10, 0.5, 0))],
    ['the previous layout' => bulk(pack('d<6', 1, 9, 1000000, 0, 0, 1e15))],
    # after the figures, overrides' records: (rule index, limit) each
    [override => good(0, 50)],
    ['half a record' => bulk(pack('d<5', 1e15, 10, 1000000, 0, 0))],
    ['a record of rule 1 of 1' => good(1, 50)],
    ['an override of 0' => good(0, 0)],
    ['an override of 1.5' => good(0, 1.5)],
    ['two records of rule 0' => good(0, 50, 0, 60)],
    ['1 MB string' => bulk('x' x (1 << 20))],
    [good => good()],
    ['error reply' => "-ERR boom\r\n"],
    [good => good()],
    # a delay of 5 s for a rule without delay= (the script never asks
    # one): not waited, the failure policy (t/048 found it held)
    ['a delay the rule never asks' => bulk(pack('d<4',
        int(Time::HiRes::time() * 1e6), 10, 1000000, -5000000))],
    [good => good()],
);

my $listen = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                 Listen => 16, ReuseAddr => 1)
    or die "listen: $!";
my $fake_port = $listen->sockport;

my $fake = spawn(sub {
    my $sel = IO::Select->new($listen);
    my (%buf, $next);
    while (1) {
        for my $fh ($sel->can_read(1)) {
            if ($fh == $listen) {
                my $c = $listen->accept or next;
                $sel->add($c);
                $buf{$c} = '';
                next;
            }
            unless (sysread $fh, $buf{$fh}, 65536, length $buf{$fh}) {
                $sel->remove($fh);
                close $fh;
                next;
            }
            while (my ($words, $rest) = command($buf{$fh})) {
                $buf{$fh} = $rest;
                my $cmd = uc $words->[0];
                my $out = $cmd eq 'SCRIPT' ? bulk(sha1_hex($words->[2]))
                        : $cmd =~ /^EVAL/
                            ? $REPLIES[$next++ % @REPLIES][1]
                        : "+OK\r\n";
                send_all($fh, $out);
            }
        }
    }
});

my $ng = start_nginx(workers => 1, config => <<"CONF");
    rl_zone fake redis=127.0.0.1:$fake_port timeout=5s failure=closed;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /t {
            rl_rule zone=fake key=k rate=100r/h;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;
my ($worker) = $ng->worker_pids;

for my $i (0 .. $#REPLIES) {
    my ($what) = @{ $REPLIES[$i] };
    my $t = http_get($port, '/t', -timeout => 10);
    if ($what eq 'good') {
        is("$t->{code} $t->{headers}{'x-ratelimit-remaining'} "
           . $t->{headers}{'x-ratelimit-limit'}, '200 9 100',
           "reply $i, a good one: decided");
    } elsif ($what eq 'override') {
        is("$t->{code} $t->{headers}{'x-ratelimit-remaining'} "
           . $t->{headers}{'x-ratelimit-limit'}, '200 9 50',
           "reply $i, an override's: decided with its limit");
    } else {
        is("$t->{code} $t->{headers}{'x-rl-status'}", '429 ERROR',
           "reply $i, $what: failure=closed");
    }
    ok($t->{elapsed} < 2, "reply $i answered at once")
        or diag sprintf('%.2fs', $t->{elapsed});
}

is_deeply([$ng->worker_pids], [$worker], 'the same worker throughout');
my $log = $ng->error_log_text;
like($log, qr/rl_zone "fake": redis 127\.0\.0\.1:\d+ sent no reply of the script's: a status of 0 bytes, where 32 bytes of figures were due/,
     'the log names what came instead');
like($log, qr/rl_zone "fake": redis \S+ replied: ERR boom/,
     'an error reply is logged as such');
my $lines = () = $log =~ /sent no reply of the script's/g;
ok($lines >= 2 && $lines <= 4,
   "once per incident, not once per request ($lines lines)");

done_testing();
