#!/usr/bin/perl
# Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/TARGET/
# seed-*): what the module meets when things go right, and the usual
# ways they go wrong. Run again after changing a target's input layout;
# inputs kept as regressions (crash-*, fail-*) are left alone.
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Path qw(make_path);

my $dir = dirname(__FILE__) . '/corpus';
my %seeds;

sub d { pack 'd<*', @_ }                 # the script's little-endian doubles
sub bulk { '$' . length($_[0]) . "\r\n$_[0]\r\n" }

# ---------------------------------------------------------------- reply
# head: bit 7 raw string (bit 6: as an error), bits 0-1 calls - 1; then
# per call a byte (bits 0-2: rules - 1) and per rule a byte (bits 0-3:
# cost - 1, bit 4: dry run); then the reply.
my $one = "\x00" . "\x00" . "\x00";         # 1 call, 1 rule, cost 1
my $clock = 1_700_000_000_000_000;
my %reply = (
    'pass'          => $one . bulk(d($clock, 9, 60_000_000, 0)),
    'reject'        => $one . bulk(d($clock, 0, 60_000_000, 1_500_000)),
    'delay'         => $one . bulk(d($clock, 3, 1_000_000, -250_000)),
    'raw-pass'      => "\x80\x00\x00" . d($clock, 9, 60_000_000, 0),
    'raw-error'     => "\xc0\x00\x00" . 'NOSCRIPT No matching script',
    'two-calls'     => "\x01\x01\x00\x10\x00\x03"
                       . bulk(d($clock, 5, 1e6, 0, 0, 1e6, 2e6, 7, 1e6, 0)),
    'trailer'       => $one . bulk(d($clock, 9, 60e6, 0) . d(0, 50)),
    'grant'         => $one . bulk(d($clock, 9, 60e6, 0) . d(0, 50, -1, 8)),
    'trailer-bad'   => $one . bulk(d($clock, 9, 60e6, 0) . d(3, 50)),
    'noscript'      => $one . "-NOSCRIPT No matching script. Please use EVAL.\r\n",
    'error'         => $one . "-ERR Error running script\r\n",
    'moved'         => $one . "-MOVED 3999 127.0.0.1:6381\r\n",
    'nil'           => $one . "\$-1\r\n",
    'integer'       => $one . ":42\r\n",
    'status'        => $one . "+OK\r\n",
    'array'         => $one . "*2\r\n:1\r\n" . bulk('abc'),
    'short'         => $one . bulk(d($clock, 9)),
    'nan'           => $one . bulk(d($clock, 9**9**9 / 9**9**9, 0, 0)),
    'negative'      => $one . bulk(d($clock, -1, 60e6, 0)),
    'fraction'      => $one . bulk(d($clock, 1.5, 60e6, 0)),
    'huge'          => $one . bulk(d($clock, 2**60, 2**60, 2**60)),
    'clock-zero'    => $one . bulk(d(0, 9, 60e6, 0)),
    'pipelined'     => $one . bulk(d($clock, 9, 60e6, 0)) . "-ERR x\r\n",
);
$seeds{reply} = \%reply;

# -------------------------------------------------------------- trailer
# calls - 1, per call its rules - 1 (mod 64), then 16-byte records
$seeds{trailer} = {
    'one'        => "\x00\x03" . d(0, 50),
    'two-calls'  => "\x01\x01\x01" . d(0, 10, 3, 1_000_000_000),
    'unordered'  => "\x00\x07" . d(2, 5, 1, 6),
    'limit-zero' => "\x00\x00" . d(0, 0),
    'past'       => "\x00\x00" . d(1, 5),
    'odd'        => "\x00\x00" . d(0, 5) . 'x',
    'empty'      => "\x00\x00",
    'grant'      => "\x00\x03" . d(-4, 10),
    'both'       => "\x01\x01\x01" . d(0, 10, -2, 7, 3, 50, -4, 1),
    'grant-mid'  => "\x00\x03" . d(-2, 10),
};

# -------------------------------------------------------------- cluster
# prefix length, then a key value or an error's text
$seeds{cluster} = {
    'moved'      => "\x03MOVED 3999 127.0.0.1:6381",
    'ask'        => "\x03ASK 12182 10.0.0.7:7002",
    'ipv6'       => "\x03MOVED 1 ::1:7000",
    'no-host'    => "\x03MOVED 5 :6379",
    'bad-slot'   => "\x03MOVED 16384 127.0.0.1:6381",
    'bad-port'   => "\x03ASK 1 h:65536",
    'value'      => "\x03" . '192.168.0.1',
    'braces'     => "\x03" . 'user{42}',
    'tilde'      => "\x03~abc",
    'empty'      => "\x03",
    'long'       => "\x03" . ('k' x 100),
};

# ----------------------------------------------------------------- rate
$seeds{rate} = { map { my $s = $_; (s/\W/_/gr => $s) } qw(
    10r/s 100r/m 5r/h 1r/d 100r/15m 5r/10s 1000000000r/d 0r/s 1r/366d
    1r/367d 1h30m 500ms 10 1y2M3w4d5h6m7s8ms 30m1h 10y 11y r/s 1r/
) };

# ------------------------------------------------------------ state_key
# prefix length, rule id length, printable cap, then the value
$seeds{state_key} = {
    'ip'        => "\x03\x10\x40" . '203.0.113.9',
    'empty'     => "\x03\x10\x40",
    'tilde'     => "\x03\x10\x40~plain",
    'braces'    => "\x03\x10\x40{a}",
    'sixty-four'=> "\x03\x10\x40" . ('v' x 64),
    'long'      => "\x03\x10\x08" . ('v' x 65),
    'binary'    => "\x03\x10\x10" . join('', map { chr } 0 .. 40),
    'quotes'    => "\x00\x00\x05" . 'a"b\\c',
};

# ------------------------------------------------------------------ api
# a byte (bits 7 and 6: a key's state read, bit 0 its reply as the
# script writes it; bit 7 alone: a write's body; bit 0: the path decoded
# by nginx), then the path and query below the location, or the body;
# or a state read's count of states less 1 (two bytes, little-endian)
# then its figures (two bytes a state) or its reply's bytes
$seeds{api} = {
    'page'        => "\x00/",
    'rules'       => "\x00/1/rules",
    'top'         => "\x00/1/rules/per_ip/top?n=20&zone=main",
    'trial-top'   => "\x00/1/rules/per_ip/top?trial=1&n=5",
    'limit'       => "\x00/1/rules/per_ip/limit?zone=main",
    'trial'       => "\x00/1/rules/per%2Fip/trial",
    'fleet'       => "\x00/1/fleet?zone=main",
    'fleet-rules' => "\x00/1/fleet/rules",
    'fleet-top'   => "\x00/1/fleet/rules/per_ip/top?n=50",
    'audit'       => "\x00/1/audit?n=500&zone=main",
    'credit'      => "\x00/1/rules/monthly/key/credit?value=k1&anchor=15",
    'key'         => "\x00/1/rules/5r%2Fm/keys/203.0.113.7",
    'block'       => "\x00/1/rules/a/keys/k%00%ff/block",
    'in-query'    => "\x00/1/rules/a/keys//override?key=a%00b",
    'decoded'     => "\x01/1/rules/a%41/keys/%zz",
    'bad-escape'  => "\x00/1/rules/a/keys/%4",
    'long'        => "\x00/1/rules/a/keys/" . ('%41' x 4097),
    'unknown'     => "\x00/1/rules/a/keys/v/x/y",
    'body-block'  => "\x80" . '{"ttl": 600, "reason": "abuse \u00e9\ud83d\ude00"}',
    'body-over'   => "\x80" . '{"limit": 50, "ttl": null}',
    'body-nested' => "\x80" . '{"a": {"b": 1}}',
    'body-escape' => "\x80" . '{"a": "\x01"}',
    'body-utf8'   => "\x80" . "{\"a\": \"\xc3\xa9\xff\"}",
    'states-70'   => "\xc1\x45\x00" . ("\x03\x01" x 69) . "\x00\x00",
    'states-raw'  => "\xc0\x45\x00" . d(1.7e15, (5, 1e6, 0) x 70),
    'states-short'=> "\xc0\x45\x00" . d(1.7e15, (5, 1e6, 0) x 64),
};

# ---------------------------------------------------------------- fleet
# an instance's record as another reads it from Redis
$seeds{fleet} = {
    'record'  => "rl-fleet 1\nzone\tmain\t1\n"
                 . "rule\tper\t0123456789ab\tsliding_window\t4\t60000000"
                 . "\t0\t1\t0\t0\t0\t%24http_x_key" . ("\t5" x 12) . "\n"
                 . "trial\tper\t2\t1795900000000\t1795890000000\t3\t4\n"
                 . "top\tper\t6\tk%00%FF%09x\ncut\t1\t2\n",
    'escapes' => "top\tp\t1\t%\ntop\tp\t1\t%4\ntop\tp\t1\t%zz%41",
    'numbers' => "trial\tp\t9007199254740993\t-1\t1.5\t\t01",
    'fields'  => join("\t", 1 .. 40) . "\n\n\t\n",
};
# ------------------------------------------------------------ time_zone
# a byte (bit 0: a TZ string, else a TZif file; bits 1-3: the unit; bits
# 4-7: the anchor), then the bytes: the zones the unit tests read (from
# the system's zoneinfo, when it has them) and TZ strings
sub zonefile {
    local (@ARGV, $/) = ("/usr/share/zoneinfo/$_[0]");
    return -e $ARGV[0] ? <> : undef;
}
$seeds{time_zone} = {
    'tz-berlin'   => "\x01CET-1CEST,M3.5.0,M10.5.0/3",
    'tz-howe'     => "\x01<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
    'tz-chatham'  => "\x01<+1245>-12:45<+1345>,M9.5.0/2:45,M4.1.0/3:45",
    'tz-ext'      => "\x01EST5EDT,0/0,J365/25",
    'tz-bad'      => "\x01CET-1CEST,M3.5.0",
    'tzif-empty'  => "\x00TZif2",
};
for my $z (['berlin', 'Europe/Berlin', "\x06"], ['howe',
           'Australia/Lord_Howe', "\x04"], ['kathmandu', 'Asia/Kathmandu',
           "\x00"], ['chatham', 'Pacific/Chatham', "\xf6"]) {
    my $bytes = zonefile($z->[1]) // next;
    $seeds{time_zone}{"tzif-$z->[0]"} = $z->[2] . $bytes;
}

for my $target (sort keys %seeds) {
    make_path("$dir/$target");
    for my $name (sort keys %{ $seeds{$target} }) {
        open my $fh, '>:raw', "$dir/$target/seed-$name" or die $!;
        print $fh $seeds{$target}{$name};
        close $fh;
    }
    printf "%s: %d seeds\n", $target, scalar keys %{ $seeds{$target} };
}
