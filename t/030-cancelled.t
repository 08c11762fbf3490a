# A request that goes away while its call waits to leave (it was queued
# in this turn of the event loop, the batch leaves at its end) has no
# part in the batch's reply: the requests after it in the batch must
# still read their own part.
#
# HTTP/2 makes that happen on demand: one read carries a request on
# stream 1, its cancellation (RST_STREAM), and a request on stream 3.
# nginx queues stream 1's call, frees stream 1 at once, queues stream
# 3's, and the batch leaves with stream 3 alone. Zone failure=closed, so
# a misread part (an ERROR) shows as a 429.

use lib 't/lib';
use RlTest;
use IO::Socket::IP;
use Test::More;

my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 1, config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s failure=closed;
    server {
        listen 127.0.0.1:$ServerPort http2;
        add_header X-RL-Status $rl_status always;
        location /t {
            rl_rule zone=main key=$arg_k rate=100r/h;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;

sub frame {
    my ($type, $flags, $stream, $payload) = @_;
    my $len = length $payload;
    return pack('CnCCN', $len >> 16, $len & 0xffff, $type, $flags, $stream)
           . $payload;
}

# GET /t?k=KEY, HPACK without Huffman or the dynamic table: :method GET
# (static 2), :scheme http (6), :path and :authority literal (names 4, 1)
sub get {
    my ($stream, $key) = @_;
    my $path = "/t?k=$key";
    my $block = "\x82\x86" . "\x04" . chr(length $path) . $path
                . "\x01\x09localhost";
    return frame(1, 0x5, $stream, $block);    # END_STREAM | END_HEADERS
}

# The :status of the first HEADERS frame on each stream (0x88: 200 from
# the static table; else nginx sends the digits as a literal).
sub statuses {
    my ($sock, $want, $deadline) = @_;
    my ($buf, %status, %ended) = ('');
    while (keys %ended < $want && time < $deadline) {
        my $rin = '';
        vec($rin, fileno $sock, 1) = 1;
        select(my $rout = $rin, undef, undef, 0.2) or next;
        sysread($sock, $buf, 65536, length $buf) or last;
        while (length $buf >= 9) {
            my ($hi, $lo, $type, $flags, $stream) = unpack 'CnCCN', $buf;
            my $len = ($hi << 16) | $lo;
            last if length $buf < 9 + $len;
            my $payload = substr $buf, 9, $len;
            substr($buf, 0, 9 + $len) = '';
            $stream &= 0x7fffffff;
            if ($type == 1 && !exists $status{$stream}) {
                $status{$stream} = substr($payload, 0, 1) eq "\x88"
                    ? 200 : ($payload =~ /^\x48\x03(\d{3})/ ? $1 : '?');
            }
            $ended{$stream} = 1 if ($type == 0 || $type == 1) && $flags & 1;
        }
    }
    return \%status;
}

for my $round (1 .. 3) {
    my $sock = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                   PeerPort => $port, Timeout => 5)
        or die "connect: $!";
    binmode $sock;
    syswrite $sock, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" . frame(4, 0, 0, '')
        . get(1, "a$round") . frame(3, 0, 1, pack('N', 8))    # CANCEL
        . get(3, "b$round");
    my $status = statuses($sock, 1, time + 10);
    is($status->{3}, 200, "round $round: stream 3 decided, after stream 1 "
       . "was cancelled in the same batch");
    close $sock;
}

# a cancelled request counts nothing; stream 3 counted, each round
my @keys = split /\n/, $r->cli('KEYS', 'rl:*');
is(scalar(grep { /^rl:\{a\d\}/ } @keys), 0, 'the cancelled requests counted nothing');
is(scalar(grep { /^rl:\{b\d\}/ } @keys), 3, "stream 3's key, each round");

done_testing();
