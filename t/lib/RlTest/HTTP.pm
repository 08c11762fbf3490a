package RlTest::HTTP;

# A small HTTP/1.1 client over Perl sockets (one request per connection,
# "Connection: close"): blocking, asynchronous (request sent, answer read
# later) and concurrent.
#
# A response is a hashref:
#   { code => 200, headers => { 'x-ratelimit-limit' => '3', ... },
#     header_lines => [ [Name, value], ... ], body => '...',
#     elapsed => seconds, error => undef | 'message' }
# code is 0 when the connection failed, timed out or the answer was not HTTP.

use strict;
use warnings;

use Exporter 'import';
use Errno ();
use IO::Select;
use IO::Socket::IP;
use Time::HiRes ();

our @EXPORT_OK = qw(http_get http_request http_start http_parallel);

sub now { Time::HiRes::time() }

# http_get($port, $path, %headers); a header named "-timeout" sets the
# read timeout (default 10s).
sub http_get {
    my ($port, $path, %headers) = @_;
    my $timeout = delete $headers{-timeout};
    return http_request($port, 'GET', $path,
                        headers => [ %headers ], timeout => $timeout);
}

# http_request($port, $method, $path, headers => [k, v, ...] | {..},
#              body => $body, timeout => $seconds)
sub http_request {
    my ($port, $method, $path, %opt) = @_;
    my $conn = RlTest::HTTP::Conn->new($port, $method, $path, %opt);
    return $conn->result($opt{timeout});
}

# http_start($port, $path, %headers): sends the request and returns at once
# with a connection object: ->done (non-blocking check), ->result($timeout).
sub http_start {
    my ($port, $path, %headers) = @_;
    return RlTest::HTTP::Conn->new($port, 'GET', $path,
                                   headers => [ %headers ]);
}

# http_parallel($port, [paths...], concurrency => N, headers => {..},
#               timeout => overall_seconds, full => 0|1)
# A path may also be [port, path] to spread the load over several servers.
# Returns the status codes (or, with full => 1, the response hashrefs) in
# the order of the paths.
sub http_parallel {
    my ($port, $paths, %opt) = @_;
    my $conc     = $opt{concurrency} // 10;
    my $deadline = now() + ($opt{timeout} // 30);
    my @todo     = map { [ $_, ref $paths->[$_] ? @{ $paths->[$_] }
                                                 : ($port, $paths->[$_]) ] }
                   0 .. $#$paths;
    my (@results, %active);
    my $sel = IO::Select->new;

    while (@todo || %active) {
        while (@todo && keys(%active) < $conc) {
            my ($i, $p, $path) = @{ shift @todo };
            my $c = RlTest::HTTP::Conn->new($p, 'GET', $path,
                                            headers => $opt{headers});
            if ($c->done) {
                $results[$i] = $c->result(0);
                next;
            }
            $active{ fileno $c->{sock} } = [ $i, $c ];
            $sel->add($c->{sock});
        }
        last unless %active;
        if (now() >= $deadline) {
            for my $a (values %active) {
                $a->[1]->_fail('timeout');
                $results[ $a->[0] ] = $a->[1]->result(0);
            }
            last;
        }
        for my $fh ($sel->can_read(0.1)) {
            my $fd = fileno $fh;
            my $a = $active{$fd} or next;
            $a->[1]->_read_some;
            next unless $a->[1]->done;
            $sel->remove($fh);
            delete $active{$fd};
            $results[ $a->[0] ] = $a->[1]->result(0);
        }
    }
    return $opt{full} ? @results : map { $_->{code} } @results;
}

package RlTest::HTTP::Conn;

use strict;
use warnings;

use Errno ();
use IO::Select;
use IO::Socket::IP;

sub new {
    my ($class, $port, $method, $path, %opt) = @_;
    my $self = bless { start => RlTest::HTTP::now(), buf => '' }, $class;

    my @h = ref $opt{headers} eq 'HASH' ? %{ $opt{headers} }
          : ref $opt{headers} eq 'ARRAY' ? @{ $opt{headers} } : ();
    my $body = $opt{body};
    my $has_host = 0;
    my $req = "$method $path HTTP/1.1\r\n";
    my $extra = '';
    while (my ($k, $v) = splice @h, 0, 2) {
        $has_host = 1 if lc $k eq 'host';
        $extra .= "$k: $v\r\n";
    }
    $req .= "Host: localhost\r\n" unless $has_host;
    $req .= "Connection: close\r\n$extra";
    $req .= 'Content-Length: ' . length($body) . "\r\n"
        if defined $body && length $body;
    $req .= "\r\n";
    $req .= $body if defined $body;

    my $sock = IO::Socket::IP->new(
        PeerHost => '127.0.0.1', PeerPort => $port, Proto => 'tcp',
        Timeout => 5,
    );
    unless ($sock) {
        $self->_fail("connect to 127.0.0.1:$port failed: $@");
        return $self;
    }
    $sock->autoflush(1);
    my $off = 0;
    while ($off < length $req) {
        my $n = syswrite $sock, $req, length($req) - $off, $off;
        unless (defined $n) {
            next if $!{EINTR};
            $self->_fail("write failed: $!");
            return $self;
        }
        $off += $n;
    }
    $sock->blocking(0);
    $self->{sock} = $sock;
    return $self;
}

sub done { $_[0]{done} ? 1 : 0 }

sub _fail {
    my ($self, $err) = @_;
    $self->{error} //= $err;
    $self->{done} = 1;
    $self->{end} //= RlTest::HTTP::now();
    close $self->{sock} if $self->{sock};
    delete $self->{sock};
}

sub _read_some {
    my ($self) = @_;
    return if $self->{done};
    while (1) {
        my $n = sysread $self->{sock}, $self->{buf}, 65536,
                        length $self->{buf};
        if (!defined $n) {
            return if $!{EAGAIN} || $!{EWOULDBLOCK} || $!{EINTR};
            # a reset after a complete answer is still an answer
            $self->{rst} = "$!";
            last;
        }
        last if $n == 0;
    }
    # the socket stays open (callers may still have it in a select set);
    # result() closes it
    $self->{done} = 1;
    $self->{end} = RlTest::HTTP::now();
}

# Non-blocking progress check.
sub poll {
    my ($self) = @_;
    $self->_read_some unless $self->{done};
    return $self->done;
}

sub result {
    my ($self, $timeout) = @_;
    return $self->{result} if $self->{result};
    $timeout //= 10;
    my $deadline = RlTest::HTTP::now() + $timeout;
    while (!$self->{done}) {
        my $left = $deadline - RlTest::HTTP::now();
        if ($left <= 0) {
            $self->_fail("timeout after ${timeout}s");
            last;
        }
        my $sel = IO::Select->new($self->{sock});
        $self->_read_some if $sel->can_read($left < 0.1 ? $left : 0.1);
    }
    if ($self->{sock}) {
        close $self->{sock};
        delete $self->{sock};
    }
    return $self->{result} = $self->_parse;
}

sub _parse {
    my ($self) = @_;
    my %res = (code => 0, headers => {}, header_lines => [], body => '',
               elapsed => ($self->{end} // RlTest::HTTP::now())
                          - $self->{start},
               error => $self->{error}, raw => $self->{buf});
    return \%res if $self->{error} && !length $self->{buf};

    my ($head, $body) = split /\r\n\r\n/, $self->{buf}, 2;
    unless (defined $body && $head =~ m{\AHTTP/\d\.\d (\d{3})}) {
        $res{error} //= 'incomplete or malformed response'
                        . ($self->{rst} ? " ($self->{rst})" : '');
        return \%res;
    }
    $res{code} = $1;
    my @lines = split /\r\n/, $head;
    shift @lines;
    for my $l (@lines) {
        my ($k, $v) = $l =~ /^([^:]+):\s*(.*?)\s*$/ or next;
        push @{ $res{header_lines} }, [ $k, $v ];
        my $lk = lc $k;
        $res{headers}{$lk} = exists $res{headers}{$lk}
                           ? "$res{headers}{$lk}, $v" : $v;
    }
    my $te = $res{headers}{'transfer-encoding'} // '';
    if ($te =~ /chunked/i) {
        my $out = '';
        while ($body =~ s/\A([0-9a-fA-F]+)[^\r\n]*\r\n//) {
            my $len = hex $1;
            last if $len == 0;
            $out .= substr $body, 0, $len, '';
            $body =~ s/\A\r\n//;
        }
        $body = $out;
    } elsif (defined(my $cl = $res{headers}{'content-length'})) {
        if (length($body) < $cl) {
            $res{error} //= "short body: " . length($body) . " of $cl";
        }
        $body = substr $body, 0, $cl;
    }
    $res{body} = $body;
    return \%res;
}

sub DESTROY {
    my ($self) = @_;
    close $self->{sock} if $self->{sock};
}

1;
