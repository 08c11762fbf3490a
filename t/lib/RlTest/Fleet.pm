package RlTest::Fleet;

# Instances of a fleet made up: their records written into Redis as
# lua/fleet.lua's publish writes them (the record and identity of
# src/fleet/publish.cpp, in the format of src/core/fleet_record.hpp),
# thousands at once through redis-cli --pipe.
#
#   RlTest::Fleet::fake($redis, zone => 'main', instances => [ {
#       id => 'f0001', name => 'edge-1',   # (an id of 16 hex digits else)
#       ago => 0,                # ms since its last publication
#       record => 1,             # 0: its record expired (gone)
#       interval => 600000,      # the interval its identity says (ms)
#       rules => [ { name => 'per', digest => 'aaaaaaaaaaaa', limit => 4,
#                    window => 60, counts => [P, R, D, DL, E],
#                    usage => [U0 .. U6] }, ... ],
#   }, ... ]);
#   RlTest::Fleet::escape($bytes)   # a record's text field

use strict;
use warnings;

use File::Temp ();
use Time::HiRes ();

# bytes below '!', '%' and above '~' as %XX (fleet::escape)
sub escape {
    my ($s) = @_;
    $s =~ s/([\x00-\x20%\x7f-\xff])/sprintf '%%%02X', ord $1/ge;
    return $s;
}

sub record {
    my ($in) = @_;
    my $text = "rl-fleet 1\nzone\t" . ($in->{zone} // 'main') . "\t1\n";
    for my $r (@{ $in->{rules} // [] }) {
        my @counts = @{ $r->{counts} // [0, 0, 0, 0, 0] };
        my @usage = @{ $r->{usage} // [0, 0, 0, 0, 0, 0, 0] };
        $text .= join("\t", 'rule', escape($r->{name}),
                      $r->{digest} // 'aaaaaaaaaaaa',
                      $r->{algorithm} // 'sliding_window', $r->{limit} // 4,
                      ($r->{window} // 60) * 1000000, 0, 1, 0, 0, 0,
                      escape($r->{key} // '$http_x_key'), @counts, @usage)
               . "\n";
    }
    $text .= $in->{more} // '';
    return $text;
}

sub identity {
    my ($in, $now) = @_;
    return join "\t", $in->{id}, escape($in->{name}), '0.2.0', '1.22.1',
                      $now - 60000, 1, $in->{interval} // 600000;
}

# RESP of one command
sub resp {
    return '*' . @_ . "\r\n"
         . join('', map { '$' . length($_) . "\r\n$_\r\n" } @_);
}

# Writes the instances; returns their ids.
sub fake {
    my ($redis, %opt) = @_;
    my $base = ($opt{prefix} // 'rl:') . '{fleet}:' . ($opt{zone} // 'main')
             . ':';
    my $now = int(Time::HiRes::time() * 1000);
    my $out = File::Temp->new;
    binmode $out;
    my $n = 0;
    my @ids;
    for my $in (@{ $opt{instances} }) {
        my $id = $in->{id} // sprintf 'fa4e%012x', $n++;
        push @ids, $id;
        local $in->{id} = $id;
        local $in->{zone} = $opt{zone} // 'main';
        print $out resp('ZADD', "${base}seen", $now - ($in->{ago} // 0), $id),
                   resp('HSET', "${base}who", $id, identity($in, $now));
        print $out resp('SET', "${base}i:$id", record($in), 'PX', 600000)
            if $in->{record} // 1;
    }
    print $out resp('PEXPIRE', "${base}seen", 900000),
               resp('PEXPIRE', "${base}who", 900000);
    close $out;
    my $cmd = sprintf 'redis-cli -h %s -p %s --pipe < %s 2>&1', $redis->host,
                      $redis->port, $out->filename;
    my $reply = `$cmd`;
    die "redis-cli --pipe: $reply" unless $reply =~ /errors: 0, replies: \d+/;
    return @ids;
}

1;
