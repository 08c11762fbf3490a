package RlTest::Dns;

# A small DNS server for tests: UDP on a free loopback port, answering A
# queries from a table the test changes (a name not in it: NXDOMAIN;
# AAAA and other types: no answer, NOERROR). It runs in a forked child;
# the table, the "silent" switch and the log of queries are files in its
# temp dir, so the test changes what it answers at any time.
#
#   my $dns = RlTest::Dns->new(table => { 'redis.test' => '127.0.0.2' });
#   $dns->port;
#   $dns->set('redis.test' => '127.0.0.3');   # answers that from now on
#   $dns->silent(1);       # receives, logs, answers nothing
#   $dns->silent(0);
#   $dns->queries('redis.test');              # A queries of it so far
#   $dns->stop;            # (also done at exit)
#
# Answers carry a TTL of 1 second (nginx's resolver valid= overrides it).

use strict;
use warnings;

use IO::Socket::INET;
use POSIX ();
use Socket qw(inet_aton);
use RlTest::Proc qw(make_tempdir);
use parent -norequire, 'RlTest::Proc::Owned';

sub new {
    my ($class, %opt) = @_;
    my $self = bless {
        dir   => make_tempdir('dns'),
        table => { %{ $opt{table} // {} } },
        owner => $$,
    }, $class;
    RlTest::Proc::register($self);
    $self->_write_table;
    # bound here, served by the child: no port race
    my $sock = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
                                     LocalPort => 0, Proto => 'udp')
        or die "dns: cannot bind a UDP port: $@";
    $self->{port} = $sock->sockport;
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        $SIG{$_} = 'DEFAULT' for qw(INT TERM HUP);
        eval { _serve($sock, $self->{dir}) };
        POSIX::_exit(0);
    }
    close $sock;
    $self->{pid} = $pid;
    return $self;
}

sub port { $_[0]{port} }
sub dir  { $_[0]{dir} }

sub set {
    my ($self, %pairs) = @_;
    $self->{table}{ lc $_ } = $pairs{$_} for keys %pairs;
    $self->_write_table;
}

sub silent {
    my ($self, $on) = @_;
    my $f = "$self->{dir}/silent";
    if ($on) {
        open my $fh, '>', $f or die "$f: $!";
        close $fh;
    } else {
        unlink $f;
    }
}

sub queries {
    my ($self, $name) = @_;
    open my $fh, '<', "$self->{dir}/queries" or return 0;
    return scalar grep { /^\Q$name\E A$/i } map { chomp; $_ } <$fh>;
}

sub _write_table {
    my ($self) = @_;
    my $tmp = "$self->{dir}/table.new";
    open my $fh, '>', $tmp or die "$tmp: $!";
    print $fh "$_ $self->{table}{$_}\n" for sort keys %{ $self->{table} };
    close $fh;
    rename $tmp, "$self->{dir}/table" or die "rename: $!";
}

sub _read_table {
    my ($dir) = @_;
    my %t;
    open my $fh, '<', "$dir/table" or return \%t;
    while (<$fh>) {
        my ($name, @addrs) = split;
        $t{ lc $name } = \@addrs if defined $name;
    }
    return \%t;
}

# the child: one query, one answer (or none), until killed
sub _serve {
    my ($sock, $dir) = @_;
    while (1) {
        my $peer = recv($sock, my $buf, 512, 0);
        next unless defined $peer && length $buf >= 12;
        my ($id, $flags, $qd) = unpack 'n n n', $buf;
        next unless $qd == 1;
        my $pos = 12;
        my @labels;
        while ($pos < length $buf) {
            my $len = ord substr($buf, $pos++, 1);
            last if $len == 0;
            push @labels, substr($buf, $pos, $len);
            $pos += $len;
        }
        next if $pos + 4 > length $buf;
        my ($qtype) = unpack 'n', substr($buf, $pos, 2);
        my $question = substr($buf, 12, $pos + 4 - 12);
        my $name = lc join '.', @labels;
        my $type = $qtype == 1 ? 'A' : $qtype == 28 ? 'AAAA' : $qtype;
        if (open my $log, '>>', "$dir/queries") {
            print $log "$name $type\n";
            close $log;
        }
        next if -e "$dir/silent";
        my $t = _read_table($dir);
        my @answers;
        if ($qtype == 1 && $t->{$name}) {
            @answers = map { pack('n n n N n', 0xC00C, 1, 1, 1, 4)
                             . inet_aton($_) } @{ $t->{$name} };
        }
        my $rcode = $t->{$name} ? 0 : 3;
        my $reply = pack('n n n n n n', $id, 0x8180 | $rcode, 1,
                         scalar @answers, 0, 0)
                  . $question . join '', @answers;
        send $sock, $reply, 0, $peer;
    }
}

sub stop { $_[0]->stop_child }

sub _cleanup_priority { 2 }

1;
