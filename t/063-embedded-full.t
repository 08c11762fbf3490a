# The embedded store when its zone is full (src/shm/store.cpp).
#
# 1. The issue's case: a 1 MB zone holds 2000 exhausted keys of a small
#    rule; 300 new keys of a sliding_log of 4000 (32 KB a state, whole
#    pages) arrive. Before, making room for each evicted small states by
#    the thousand (up to 4096 a request, under the lock) and the 2000
#    clients were admitted again, with nothing logged. Now a large state
#    makes only states of its size go (freeing small ones seldom frees a
#    page): the 2000 stay limited, and the sliding_log states that still
#    limited a key are counted in rl_store_evictions_total and logged at
#    warn, once. nginx -t warns that size=1m holds about 31 states of
#    the sliding_log.
# 2. States that are whole again go before states that still limit a
#    key: a zone filled with exhausted keys (the least recently used)
#    and keys whose limit refilled takes new keys in the room of the
#    latter; no exhausted key is admitted again, no eviction counted.
# 3. A zone full of exhausted keys: each new key forgets at most one
#    state that still limits a key (the least recently used), so a flood
#    of M new keys admits at most M exhausted keys again, all counted.
# 4. The clock: nginx's wall clock stepped (libfaketime, nginx alone)
#    an hour back, then forward, neither holds a key longer than its
#    limit does nor refills an exhausted one. Before, the store decided
#    on CLOCK_REALTIME: the step back held a 1r/s key for an hour, the
#    step forward refilled every key.

use lib 't/lib';
use RlTest;

sub metric {
    my ($port, $name) = @_;
    return metric_value($port, $name . '{zone="e"}');
}

# ---------------------------------------------------------------- 1
{
    my $ng = start_nginx(workers => 2, start => 0, config => <<'CONF');
    rl_zone e size=1m;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /small {
            rl_rule zone=e key=$arg_k rate=3r/d algorithm=token_bucket
                    name=small cost=$arg_c;
            empty_gif;
        }
        location /log {
            rl_rule zone=e key=$arg_k rate=4000r/m algorithm=sliding_log
                    name=log;
            empty_gif;
        }
        location /metrics { rl_metrics; }
    }
CONF
    my ($ok, $text) = $ng->config_test;
    ok($ok, 'nginx -t passes');
    like($text, qr/\[warn\]\ (?:\d+\#\d+:\ )?rl_zone\ "e"\ size=1048576\ holds\ about
                   \ 31\ states\ of\ rule\ "log"\ \(\d+\ bytes\ each\):
                   \ fewer\ than\ 1000\ keys/x,
         'nginx -t warns that 1m holds about 31 states of the sliding_log');
    unlike($text, qr/rule "small"/, 'and nothing of the small rule');
    $ng->start;
    my $port = $ng->port;

    my @k = map { "c$_" } 1 .. 2000;
    my @codes = http_parallel($port, [map { "/small?k=$_&c=3" } @k],
                              concurrency => 20, timeout => 120);
    is(scalar(grep { $_ == 200 } @codes), 2000, '2000 clients use up 3r/d');
    @codes = http_parallel($port, [map { "/log?k=n$_" } 1 .. 300],
                           concurrency => 10, timeout => 120);
    is(scalar(grep { $_ == 200 } @codes), 300,
       '300 new keys on the sliding_log');
    @codes = http_parallel($port, [map { "/small?k=$_&c=1" } @k],
                           concurrency => 20, timeout => 120);
    is(scalar(grep { $_ == 429 } @codes), 2000,
       'the 2000 exhausted clients are all still rejected');
    my $ev = metric($port, 'rl_store_evictions_total');
    cmp_ok($ev, '>=', 300 - 31, "the sliding_log states forgotten for the "
           . "new ones are counted ($ev)");
    cmp_ok($ev, '<=', 300, 'no more than one for each new key');
    my @lines = grep { /states that still limited a key were forgotten/ }
                split /\n/, $ng->error_log_text;
    is(scalar @lines, 1, 'logged once (at most once a minute)');
    like($lines[0] // '', qr/\[warn\].*rl_zone "e" is full: \d+ states/,
         'at warn, naming the zone');
    $ng->stop;
}

# a zone's capacity for one small rule, as nginx -t says it
sub capacity {
    my ($ng) = @_;
    my ($ok, $text) = $ng->config_test;
    my ($n) = $text =~ /holds about (\d+) states of rule "a"/;
    return $n;
}

my $small = <<'CONF';
    rl_zone e size=64k;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        # exhausted by one request, for a day
        location /a {
            rl_rule zone=e key=$arg_k rate=1r/d algorithm=token_bucket
                    name=a;
            empty_gif;
        }
        # whole again a second after a request
        location /b {
            rl_rule zone=e key=$arg_k rate=1r/s algorithm=token_bucket
                    name=b;
            empty_gif;
        }
        location /metrics { rl_metrics; }
    }
CONF

# ---------------------------------------------------------------- 2
{
    my $ng = start_nginx(workers => 1, start => 0, config => $small);
    my $cap = capacity($ng);
    ok($cap && $cap > 100 && $cap < 1000,
       "nginx -t: a 64k zone holds about $cap states");
    $ng->start;
    my $port = $ng->port;
    my $na = int($cap * 0.3);
    my $nb = int($cap * 0.6);
    my @a = map { "/a?k=a$_" } 1 .. $na;
    is(scalar(grep { $_ == 200 } http_parallel($port, \@a)), $na,
       "$na keys use up 1r/d (the least recently used)");
    my @rej = http_parallel($port, \@a);
    is(scalar(grep { $_ == 429 } @rej), $na, 'and are rejected');
    is(scalar(grep { $_ == 200 }
              http_parallel($port, [map { "/b?k=b$_" } 1 .. $nb])),
       $nb, "$nb keys of 1r/s");
    # their buckets are full again a second after the last was admitted
    my $t0 = now();
    select(undef, undef, undef, 1.2 - (now() - $t0)) if now() - $t0 < 1.2;
    my $nc = int($cap * 0.5);
    my @new = http_parallel($port, [map { "/a?k=new$_" } 1 .. $nc]);
    is(scalar(grep { $_ == 200 } @new), $nc,
       "$nc new keys admitted: the zone made room");
    @rej = http_parallel($port, \@a);
    is(scalar(grep { $_ == 429 } @rej), $na,
       'the exhausted keys are all still rejected: the whole states went');
    is(metric($port, 'rl_store_evictions_total'), 0, 'no eviction counted');
    unlike($ng->error_log_text, qr/is full/, 'nothing logged');
    $ng->stop;
}

# ---------------------------------------------------------------- 3
{
    my $ng = start_nginx(workers => 2, start => 0, config => $small);
    my $cap = capacity($ng);
    $ng->start;
    my $port = $ng->port;
    my $na = int($cap * 0.9);
    my @a = map { "/a?k=a$_" } 1 .. $na;
    # one at a time: the keys' order of use is their order in @a (asked
    # in parallel, one finished before the one before it now and then:
    # the flood forgot it, and the one before, still there when asked
    # again below, was forgotten for a key admitted again ahead of it)
    http_parallel($port, \@a, concurrency => 1);
    my $ev0 = metric($port, 'rl_store_evictions_total');
    my $m = int($cap * 0.1) + 50;
    my @new = http_parallel($port, [map { "/a?k=new$_" } 1 .. $m]);
    is(scalar(grep { $_ == 200 } @new), $m, "$m new keys admitted");
    my $ev = metric($port, 'rl_store_evictions_total') - $ev0;
    cmp_ok($ev, '>', 0, "states that still limited a key forgotten ($ev)");
    cmp_ok($ev, '<=', $m, 'at most one for each new key');
    # asked again from the most recently used: those still there are
    # rejected (and used again), the forgotten ones admitted (taking the
    # room of the flood's keys, the least recently used now)
    my @again = http_parallel($port, [reverse @a], concurrency => 1);
    my $back = grep { $_ == 200 } @again;
    is($back, $ev0 + $ev, "the exhausted keys admitted again ($back) are "
       . 'the ones forgotten, no more');
    like($ng->error_log_text,
         qr/\[warn\].*rl_zone "e" is full: \d+ states that still limited/,
         'logged at warn');
    $ng->stop;
}

# ---------------------------------------------------------------- 4
SKIP: {
    my ($lib) = grep { -f } map { "/usr/lib/$_/faketime/libfaketime.so.1" }
                (`gcc -print-multiarch 2>/dev/null` =~ /(\S+)/, 'x86_64-linux-gnu');
    skip 'libfaketime not installed', 4 unless $lib;
    # (nginx -t hangs with both libfaketime and the ASan runtime loaded)
    skip 'not with the sanitizers (make test SANITIZE=1)', 4
        if $ENV{RL_SANITIZE};
    my $dir = RlTest::Proc::make_tempdir('clock');
    chmod 0755, $dir;   # the workers (nobody) read it
    my $file = "$dir/faketime";
    my $step = sub {
        open my $fh, '>', $file or die "$file: $!";
        print $fh "$_[0]\n";
        close $fh;
    };
    # nginx's wall clock at half past an hour when its zone is made: the
    # 1-hour window the store aligns to the epoch then holds the whole
    # test, whatever the real time (run at 23:59:58, it did not)
    my $base = 1800 - time() % 3600;
    my $at = sub { $step->(sprintf '%+d', $base + $_[0]) };
    $at->(0);
    local $ENV{LD_PRELOAD} = join ' ', grep { defined && length }
                                       $ENV{LD_PRELOAD}, $lib;
    local $ENV{FAKETIME_TIMESTAMP_FILE} = $file;
    local $ENV{FAKETIME_NO_CACHE} = 1;
    local $ENV{DONT_FAKE_MONOTONIC} = 1;
    # (nginx clears its workers' environment but for these)
    my $ng = start_nginx(workers => 1, main_config => join('',
        map { "env $_;\n" } qw(FAKETIME_TIMESTAMP_FILE FAKETIME_NO_CACHE
                                DONT_FAKE_MONOTONIC)), config => <<'CONF');
    rl_zone e;
    server {
        listen 127.0.0.1:$ServerPort;
        location /tb {
            rl_rule zone=e key=k rate=2r/h algorithm=token_bucket;
            empty_gif;
        }
        location /fw {
            rl_rule zone=e key=k rate=2r/h algorithm=fixed_window;
            empty_gif;
        }
        location /s1 {
            rl_rule zone=e key=$arg_k rate=1r/s algorithm=token_bucket;
            empty_gif;
        }
    }
CONF
    delete @ENV{qw(LD_PRELOAD FAKETIME_TIMESTAMP_FILE)};
    my $port = $ng->port;
    my @c = map { http_get($port, $_)->{code} }
            ('/tb', '/tb', '/tb', '/fw', '/fw', '/fw', '/s1?k=a', '/s1?k=a');
    is("@c", '200 200 429 200 200 429 200 429', 'keys used up');
    $at->(-3600);
    my $t0 = now();
    my $ok = wait_until(sub { http_get($port, '/s1?k=a')->{code} == 200 },
                        timeout => 5, interval => 0.1);
    ok($ok, 'the wall clock an hour back: a 1r/s key is admitted again '
       . 'within its second') or diag(sprintf 'still rejected after %.1f s',
                                      now() - $t0);
    $at->(3600);
    @c = map { http_get($port, $_)->{code} } ('/tb', '/fw');
    is("@c", '429 429', 'an hour forward: the others still rejected');
    $at->(0);
    $ng->stop;
    ok(1, 'nginx stopped');
}

done_testing();
