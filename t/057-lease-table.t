# The lease table full: a flood of new keys fills its 16 MB (zone
# rl_leases_2, src/shm/lease.cpp) faster than idle entries are freed (an
# entry is idle after two lease= periods), so the least recently used
# entries make room. What must hold then: hot keys keep their leases,
# a key that turns hot after the flood gets one, and nothing leaks:
# what leases held comes back (granted = spent + returned once they
# end), Redis counts every request served of each hot key, and the
# workers' own memory does not grow with a second flood.
#
# One nginx, 2 workers, a zone with lease=10s (entries of the flood are
# not idle for 20 s: they fill the table); the location stacks 5
# rules on a key value of 64 bytes (the longest kept as it is), so an
# entry is a 1 KB slab block and a lease a 2 KB one: about 15,000 keys
# fill the table, and a lease needs room of another size than the
# entries evicted. A cold key is counted in a slot (two of 16,384 are
# its, each a key's for its first period) and makes no entry: the
# floods that fill the table are of keys of cost 4, hot at once (an
# entry each, and a lease asked). curl (-Z, 16 at a time) sends each
# flood: 40,000 new keys, a hot key's request every 20th, in about 5 s.
#   (a) hot key H0 gets a lease, then goes quiet; hot key H1 warms up
#   (a2) a flood of 20,000 new keys of cost 1, which made an entry each
#       before slots: none makes one, the table is not full
#   (b) flood 1: every request 200; the table is full (the notice, once
#       per worker at most); H1's requests during it spend its leases;
#       no group is left without an entry
#   (c) H2, new after the flood (its slots held by the cold flood's
#       keys, for 10 s): leased (few script calls)
#   (d) flood 2, H2 hot during it: leased; the workers' RssAnon grew by
#       less than 2 MB since flood 1 (not under SANITIZE=1: ASan keeps
#       what is freed a while)
#   (e) nginx -s reload (the old workers give back what they hold, the
#       floods' 80,000 leases too: written, and their replies read, as
#       they exit): granted = spent + returned; Redis' count of H0, H1
#       and H2 is the requests each got through
# About 20 s.

use lib 't/lib';
use RlTest;

my $N = 1000000;    # each rule's limit a day: nothing is rejected
my $FLOOD = 40000;  # new keys a flood
my $r = start_redis();
my $rules = join "\n", map {
    "            rl_rule zone=l key=\$arg_k rate=${N}r/d"
    . " algorithm=fixed_window name=r$_ cost=\$arg_c;"
} 1 .. 5;
my $ng = start_nginx(redis => $r, workers => 2, config => <<"CONF");
    rl_zone l redis=127.0.0.1:\$RedisPort lease=10s timeout=5s;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /t {
$rules
            empty_gif;
        }
        location /metrics { rl_metrics; }
    }
CONF
my $port = $ng->port;

# a key value of 64 bytes
sub value { my ($s) = @_; return $s . ('.' x (64 - length $s)) }

sub units {
    return metric_value($port, "rl_lease_units_total{zone=\"l\",use=\"$_[0]\"}");
}

my %served;     # of each hot key: 200s
sub hot {
    my ($k, $n) = @_;
    for (1 .. $n) {
        my $res = http_get($port, '/t?c=1&k=' . value($k), -timeout => 10);
        $served{$k}++ if $res->{code} == 200;
    }
}

sub log_count {
    my ($re) = @_;
    return scalar grep { /$re/ } split /\n/, $ng->error_log_text;
}

# kB of private memory (heap) of each worker
sub rss_anon {
    my %kb;
    for my $pid ($ng->worker_pids) {
        open my $fh, '<', "/proc/$pid/status" or next;
        ($kb{$pid}) = map { /^RssAnon:\s+(\d+)/ ? $1 : () } <$fh>;
    }
    return \%kb;
}

# Sends $n new keys (their names from $tag), each of cost $c, and hot
# key $k every 20th, with curl -Z: ({code => count}, seconds, requests
# of $k).
my $flood_seq = 0;
sub flood {
    my ($tag, $n, $k, $c) = @_;
    my $file = $ng->dir . '/flood' . ++$flood_seq;
    open my $fh, '>', $file or die "$file: $!";
    my $hot = 0;
    for my $i (1 .. $n) {
        print $fh "url = \"http://127.0.0.1:$port/t?c=$c&k=", value("$tag$i"),
                  "\"\noutput = \"/dev/null\"\n";
        next if $i % 20;
        print $fh "url = \"http://127.0.0.1:$port/t?c=1&k=", value($k),
                  "\"\noutput = \"/dev/null\"\n";
        $hot++;
    }
    close $fh;
    my $t0 = now();
    my $out = `curl -s -Z --parallel-max 16 -K '$file' \\
               -w '%{http_code}\\n' 2>/dev/null`;
    my $took = now() - $t0;
    my %codes;
    $codes{$_}++ for split /\n/, $out;
    $served{$k} += $hot if ($codes{200} // 0) == $n + $hot;
    return (\%codes, $took, $hot);
}

my $FULL = qr/rl: the lease table is full: the least recently used groups make room/;
my $NO_ROOM = qr/the lease table is full: new groups are decided by Redis alone/;

# ------------------------------------------------------------ (a)

hot('H0', 30);
hot('H1', 30);
ok(units('spent') > 20, '(a) the hot keys spend leases (' . units('spent')
   . ' units)');
is(log_count($FULL), 0, '(a) the table is not full');

# ------------------------------------------------------------ (a2)

{
    my ($codes, $took, $hot) = flood('c', 20000, 'H1', 1);
    is_deeply($codes, { 200 => 20000 + $hot },
              sprintf('(a2) 20000 cold keys, every one 200 (%.1fs)', $took));
    is(log_count($FULL), 0, '(a2) cold keys take slots: the table is not '
                          . 'full');
}

# ------------------------------------------------------------ (b)

{
    my $spent = units('spent');
    my ($codes, $took, $hot) = flood('a', $FLOOD, 'H1', 4);
    is_deeply($codes, { 200 => $FLOOD + $hot },
              sprintf("(b) flood 1: $FLOOD new keys and %d of H1, every one "
                      . '200 (%.1fs)', $hot, $took));
    # (a worker that took none of the flood's connections says nothing)
    my $said = log_count($FULL);
    ok($said >= 1 && $said <= 2,
       "(b) the table was full: said once per worker at most ($said)")
        or diag($ng->error_log_text);
    my $leased = units('spent') - $spent;
    ok($leased >= 0.8 * $hot,
       "(b) H1 kept its leases: $leased of its $hot requests leased");
    is(log_count($NO_ROOM), 0, '(b) every new key found room');
}

# ------------------------------------------------------------ (c)

my $calls = $r->calls('evalsha');
my $spent = units('spent');
hot('H2', 100);
my $leased = units('spent') - $spent;
my $asked = $r->calls('evalsha') - $calls;
ok($leased >= 80 && $asked <= 20,
   "(c) H2, new in the full table: $leased of 100 requests leased, "
   . "$asked script calls");

# ------------------------------------------------------------ (d)

{
    my $before = rss_anon();
    $spent = units('spent');
    my ($codes, $took, $hot) = flood('b', $FLOOD, 'H2', 4);
    is_deeply($codes, { 200 => $FLOOD + $hot },
              sprintf('(d) flood 2: every request 200 (%.1fs)', $took));
    $leased = units('spent') - $spent;
    ok($leased >= 0.8 * $hot,
       "(d) H2 kept its leases: $leased of its $hot requests leased");
    my $after = $ENV{RL_SANITIZE} ? {} : rss_anon();
    for my $pid (sort keys %$after) {
        next unless defined $before->{$pid};
        my $grew = $after->{$pid} - $before->{$pid};
        ok($grew < 2048, "(d) worker $pid: RssAnon grew by $grew kB "
                         . "(from $before->{$pid} kB)");
    }
}

# ------------------------------------------------------------ (e)

# the workers' connections to Redis (CLIENT LIST's ids)
sub rl_clients {
    return map { /\bid=(\d+)\b.*\bname=ngx_rl(?:\s|$)/ ? $1 : () }
           split /\n/, $r->cli('CLIENT', 'LIST');
}
my %old = map { $_ => 1 } rl_clients();
ok($ng->reload, '(e) nginx -s reload: the old workers gave back their '
                . 'leases');
# what they gave back as they exited is written, not awaited: Redis has
# read it all once it has closed their connections (the floods' leases,
# 80,000 returns, take it a moment)
ok(wait_until(sub { !grep { $old{$_} } rl_clients() }, timeout => 20),
   "(e) Redis has read the old workers' returns (their connections closed)");
my ($g, $s, $b) = map { units($_) } qw(granted spent returned);
is($g, $s + $b, "(e) granted $g = spent $s + returned $b");
for my $k (qw(H0 H1 H2)) {
    my $res = http_get($port, '/t?c=1&k=' . value($k), -timeout => 10);
    is($res->{headers}{'x-ratelimit-remaining'}, $N - $served{$k} - 1,
       "(e) $k: Redis counted its $served{$k} requests, and this one");
}

my @bad = grep { /exited on signal|\[alert\]|\[crit\]|\[emerg\]/ }
          split /\n/, $ng->error_log_text;
is_deeply(\@bad, [], 'no crash or alert in the error log');
$ng->stop;
done_testing();
