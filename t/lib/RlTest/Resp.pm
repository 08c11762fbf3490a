package RlTest::Resp;

# What the tests' fake Redis servers (t/031, t/048) speak: commands read
# as RESP arrays of bulk strings, replies written whole.

use strict;
use warnings;

use Exporter 'import';

our @EXPORT_OK = qw(bulk command send_all);

# a bulk string reply
sub bulk { my ($s) = @_; return '$' . length($s) . "\r\n$s\r\n" }

# one command at the head of $buf: an array of bulk strings; returns its
# words and the rest, or nothing while it is incomplete
sub command {
    my ($buf) = @_;
    return unless $buf =~ /^\*(\d+)\r\n/;
    my ($n, $at, @words) = ($1, length $&);
    for (1 .. $n) {
        return unless substr($buf, $at) =~ /^\$(\d+)\r\n/;
        my $len = $1;
        $at += length $&;
        return if length($buf) < $at + $len + 2;
        push @words, substr($buf, $at, $len);
        $at += $len + 2;
    }
    return (\@words, substr($buf, $at));
}

# writes all of $out to $fh; false when the peer went away
sub send_all {
    my ($fh, $out) = @_;
    my $off = 0;
    while ($off < length $out) {
        my $w = syswrite $fh, $out, length($out) - $off, $off;
        return 0 unless defined $w;
        $off += $w;
    }
    return 1;
}

1;
