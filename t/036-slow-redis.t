# A Redis that answers, but later than the zone's timeout=, and a Redis
# that closes idle connections (its `timeout` setting).
#
# Slow: a proxy in front of a real Redis holds every reply for 500 ms
# (timeout=100ms: a host that freezes nginx for less than 400 ms, with
# the reply arriving meanwhile, still sees it late). Each request gets the failure policy at its timeout;
# the replies that come late must not close the incident (before: one
# "unavailable" and one "available again" line per late reply, and
# rl_store_up 1 between them). When the delay goes, a reply in time (a
# PING, sent again each second while Redis is slow) closes it, without
# traffic: one line each way for the whole episode.
#
# Lost probe: Redis refuses every call and the probe that would see it
# serve again gets no reply: past connect_timeout the connection is
# made again (before, the zone stayed down until that reply came).
#
# Idle: Redis closes the module's connection after 1 s without traffic.
# No request was waiting: no incident, no error line; the link connects
# again at once and decisions go on.

use lib 't/lib';
use RlTest;
use RlTest::Proc qw(make_tempdir);
use IO::Select;
use IO::Socket::IP;

my $r = start_redis();

my $listen = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                 Listen => 16, ReuseAddr => 1)
    or die "listen: $!";
my $proxy_port = $listen->sockport;
my $dir = make_tempdir('slow');
my $delay_file = "$dir/delay";

sub set_delay {
    open my $fh, '>', "$delay_file.new" or die "$delay_file: $!";
    print $fh "$_[0]\n";
    close $fh;
    rename "$delay_file.new", $delay_file or die "rename: $!";
}
set_delay(0);

# Forwards both ways; what Redis sends waits the delay the file says
# (read when the bytes arrive).
my $proxy = spawn(sub {
    my $sel = IO::Select->new($listen);
    my (%peer, %last, @held);
    while (1) {
        my $wait = @held ? $held[0][0] - now() : 0.5;
        for my $fh ($sel->can_read($wait > 0 ? $wait : 0)) {
            if ($fh == $listen) {
                my $c = $listen->accept or next;
                my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                            PeerPort => $r->port)
                    or do { close $c; next };
                $peer{$c} = [$s, 0];
                $peer{$s} = [$c, 1];
                $sel->add($c, $s);
                next;
            }
            my $p = $peer{$fh} or next;
            my $buf = '';
            unless (sysread $fh, $buf, 65536) {
                for my $h ($fh, $p->[0]) {
                    $sel->remove($h);
                    delete $peer{$h};
                    delete $last{$h};
                    close $h;
                }
                next;
            }
            my $d = 0;
            if ($p->[1] && open my $in, '<', $delay_file) {
                $d = <$in> + 0;
            }
            # a connection's bytes in order; another's do not wait
            # behind them
            my $at = now() + $d;
            $at = $last{$p->[0]} if ($last{$p->[0]} // 0) > $at;
            $last{$p->[0]} = $at;
            @held = sort { $a->[0] <=> $b->[0] } @held, [$at, $p->[0], $buf];
        }
        while (@held && $held[0][0] <= now()) {
            my (undef, $to, $buf) = @{ shift @held };
            next unless $peer{$to};
            my $off = 0;
            while ($off < length $buf) {
                my $w = syswrite $to, $buf, length($buf) - $off, $off;
                last unless defined $w;
                $off += $w;
            }
        }
    }
});

my $ng = start_nginx(redis => $r, workers => 1, config => <<"CONF");
    rl_zone slow redis=127.0.0.1:$proxy_port timeout=100ms
            connect_timeout=3s failure=closed;
    rl_zone idle redis=127.0.0.1:\$RedisPort db=1 timeout=5s;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /slow { rl_rule zone=slow key=k rate=1000r/h; empty_gif; }
        location /idle { rl_rule zone=idle key=k rate=1000r/h; empty_gif; }
        location = /metrics { rl_metrics; }
    }
CONF
my $port = $ng->port;


sub up {
    my ($zone) = @_;
    my ($v) = http_get($port, '/metrics')->{body}
        =~ /^rl_store_up\{zone="\Q$zone\E"\} (\d+)/m;
    return $v // -1;
}

sub lines {
    my ($re) = @_;
    return scalar grep { /$re/ } split /\n/, $ng->error_log_text;
}

# ------------------------------------------------------------ slow

ok(wait_until(sub { code_status(http_get($port, '/slow')) eq '200 PASSED' },
              timeout => 5, interval => 0.1),
   'slow: decisions through the proxy at first');

set_delay(0.5);
my @got;
for (1 .. 8) {
    push @got, code_status(http_get($port, '/slow', -timeout => 5));
    select undef, undef, undef, 0.5;    # the late reply comes meanwhile
}
is(join(',', @got), join(',', ('429 ERROR') x 8),
   'slow: every request gets the failure policy (closed)');
is(up('slow'), 0, 'slow: rl_store_up stays 0 after late replies');
is(lines(qr/\[error\].*"slow".*unavailable/), 1,
   'slow: one "unavailable" line for the episode');
is(lines(qr/"slow".*available again/), 0,
   'slow: late replies do not close the incident');

# Redis fast again, and no request for the zone: a PING each second
# (each late one asks again) closes the incident by itself
set_delay(0);
ok(wait_until(sub { up('slow') == 1 }, timeout => 4, interval => 0.1),
   'slow: without traffic, rl_store_up 1 again once Redis answers in time');
is(lines(qr/"slow".*available again/), 1,
   'slow: one "available again" line');
is(code_status(http_get($port, '/slow')), '200 PASSED', 'slow: decisions resume');

# ------------------------------------------------------------ lost probe

# Redis refuses (OOM), and the probe that would see it serve again gets
# no reply (a reply lost, a network that drops without a reset: here
# held for a minute). The probe is bounded as a call is: past
# connect_timeout (3 s) the connection is made again, and its handshake
# finds Redis serving. Before, the link sent nothing more: the zone
# stayed down until the reply came (t/048 saw it, with a reply its fake
# never sent).
$r->cli('CONFIG', 'SET', 'maxmemory', '1');
is(code_status(http_get($port, '/slow')), '429 ERROR',
   'lost probe: Redis refuses (OOM): the failure policy');
ok(wait_until(sub { up('slow') == 0 }, timeout => 5, interval => 0.1),
   'lost probe: rl_store_up 0');
set_delay(60);
my $seen = $r->calls('evalsha', rejected => 1);
ok(wait_until(sub { $r->calls('evalsha', rejected => 1) > $seen },
              timeout => 5, interval => 0.1),
   'lost probe: the probe reached Redis (its reply is held)');
$r->cli('CONFIG', 'SET', 'maxmemory', '0');
set_delay(0);
ok(wait_until(sub { up('slow') == 1 }, timeout => 8, interval => 0.1),
   'lost probe: rl_store_up 1 again, past connect_timeout');
is(code_status(http_get($port, '/slow')), '200 PASSED',
   'lost probe: decisions resume');

# ------------------------------------------------------------ idle

is(code_status(http_get($port, '/idle')), '200 PASSED', 'idle: a decision');
# its connection: the one in db 1 (the slow zone's, through the proxy,
# is in db 0)
sub idle_ids {
    return map { /\bid=(\d+)/ ? $1 : () }
           grep { /name=ngx_rl\b/ && /\bdb=1\b/ }
           split /\n/, $r->cli('CLIENT', 'LIST');
}
my ($id) = idle_ids();
ok($id, 'idle: its connection is there');
$r->cli('CONFIG', 'SET', 'timeout', '1');
# Redis closes it after 1 s without traffic; the module connects again
ok(wait_until(sub {
    my @ids = idle_ids();
    return @ids == 1 && $ids[0] != $id;
}, timeout => 10, interval => 0.2), 'idle: Redis closed the connection and '
   . 'the module connected again');
$r->cli('CONFIG', 'SET', 'timeout', '0');
is(code_status(http_get($port, '/idle')), '200 PASSED', 'idle: decisions go on');
is(lines(qr/\[error\].*"idle"/), 0, 'idle: no error line');
is(up('idle'), 1, 'idle: rl_store_up 1');
like($ng->error_log_text, qr/"idle": redis \S+ closed an idle connection/,
     'idle: the close is noted (info)');

$ng->stop;
$proxy->_cleanup;
$r->stop;
done_testing();
