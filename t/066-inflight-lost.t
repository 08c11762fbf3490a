# Slots Redis loses while their requests run (SPEC section 9): two of
# concurrency=2 held at a real upstream (t/lib/upstream.py), then Redis
# restarted without persistence, FLUSHALL, and SCRIPT FLUSH with
# FLUSHALL: the instance that holds them puts them back (at its
# reconnection, at its next renewal, the renewal sent again with the
# script's text), with the key's TTL, so that the requests sent after
# that are rejected and the upstream never sees more than 2; once the
# requests end, no slot is left behind, even when they end just as
# their slots are put back.

use strict;
use warnings;
use lib 't/lib';
use RlTest;

my $r  = start_redis();     # --save '' --appendonly no: a restart is empty
my $up = start_upstream();
my $UP = $up->port;

sub live { slots_held($_[0]) }

sub conf {
    my ($hold) = @_;
    return <<"CONF";
    rl_zone main redis=127.0.0.1:\$RedisPort timeout=5s;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /in {
            rl_rule zone=main key=\$arg_key concurrency=2 hold=$hold
                    name=inflight;
            proxy_pass http://127.0.0.1:$UP/hold;
        }
    }
CONF
}

# two requests of the key held at the upstream until $up->release($tag)
sub held {
    my ($port, $key, $tag) = @_;
    my @c = map { http_start($port, "/in?key=$key&until=$tag") } 1 .. 2;
    wait_until(sub { $up->stats($key)->{now} == 2 }, timeout => 10)
        or diag("upstream holds " . $up->stats($key)->{now} . " of 2");
    return @c;
}

# the key's state in Redis (one key: its slots' sorted set)
sub state_key { (split /\n/, $r->cli('KEYS', 'rl:*'))[0] // '' }

# $what lost the key's two slots at $t0: they are back within $within
# seconds, with the key's TTL (a hold: $hold s at most), and 4 requests
# more are all rejected
sub put_back {
    my ($port, $key, $what, $t0, $within, $hold) = @_;
    my $back = wait_until(sub { live($r) == 2 }, timeout => 2 * $within);
    my $took = now() - $t0;
    ok($back, "$what: the 2 slots are put back") or diag('slots: ' . live($r));
    cmp_ok($took, '<=', $within,
           sprintf("$what: within %.1f s (%.2f s)", $within, $took));
    my $k = state_key();
    is($r->cli('ZCARD', $k), 2, "$what: once each");
    my $pttl = $r->cli('PTTL', $k);
    ok($pttl > 0 && $pttl <= $hold * 1000 + 1, "$what: the key expires ($pttl ms)");
    my @more = map { http_start($port, "/in?key=$key&until=$key-more") }
               1 .. 4;
    # each answered (429) or held at the upstream (admitted)
    wait_until(sub { (grep { $_->poll } @more)
                     + $up->stats($key)->{now} - 2 >= 4 }, timeout => 10);
    is($up->stats($key)->{max}, 2,
       "$what: the upstream saw at most 2 at once");
    $up->release("$key-more");
    is(join(' ', map { $_->result(10)->{code} } @more), '429 429 429 429',
       "$what: the 4 requests after it are rejected");
}

# the held requests end: no slot, no key left
sub ends {
    my ($key, $what, @c) = @_;
    $up->release($key);
    is(join(' ', map { $_->result(10)->{code} } @c), '200 200',
       "$what: the held requests end");
    ok(wait_until(sub { live($r) == 0 && state_key() eq '' }, timeout => 1),
       "$what: their slots go, and the key");
}

# ------------------------------------------------------------ restart

{
    # hold=30s: renewed every 10 s; a restart is followed at reconnection
    my $ng = start_nginx(redis => $r, workers => 2, config => conf('30s'));
    my $P = $ng->port;
    my @c = held($P, 'restart', 'restart');
    is(live($r), 2, 'restart: 2 slots held');
    ok($r->cli('CONFIG', 'GET', 'save') =~ /^save\s*\z/
       && $r->cli('CONFIG', 'GET', 'appendonly') eq "appendonly\nno",
       'restart: Redis persists nothing (a restart is empty)');
    my $t0 = now();
    $r->restart;
    put_back($P, 'restart', 'restart', $t0, a_second() + 1.5, 30);
    ends('restart', 'restart', @c);
    $ng->stop;
}

# ------------------------------------------------------------ FLUSHALL

my $ng = start_nginx(redis => $r, workers => 2, config => conf('3s'));
my $P = $ng->port;

{
    # hold=3s: renewed every second, the connection stays
    my @c = held($P, 'flush', 'flush');
    my $t0 = now();
    $r->cli('FLUSHALL');
    put_back($P, 'flush', 'FLUSHALL', $t0, a_second(), 3);
    ends('flush', 'FLUSHALL', @c);
}

{
    # the renewal meets NOSCRIPT: sent again with the script's text
    my @c = held($P, 'noscript', 'noscript');
    my $t0 = now();
    $r->cli('SCRIPT', 'FLUSH');
    $r->cli('FLUSHALL');
    put_back($P, 'noscript', 'SCRIPT FLUSH, FLUSHALL', $t0, a_second(),
             3);
    ends('noscript', 'SCRIPT FLUSH, FLUSHALL', @c);
}

{
    # Redis stopped after FLUSHALL: a renewal goes out (a tick), then the
    # requests end and their releases follow it on its connection; once
    # Redis resumes, it puts the slots back, and the releases take them
    my @c = held($P, 'behind', 'behind');
    $r->cli('FLUSHALL');
    my $zadd = $r->calls('zadd');
    $r->kill('STOP');
    # a tick (1 s) passed (the renewal waits in the socket, unseen)
    select undef, undef, undef, a_second();
    $up->release('behind');
    my @codes = map { $_->result(10)->{code} } @c;
    $r->kill('CONT');
    is("@codes", '200 200', 'Redis stopped: the held requests end');
    ok(wait_until(sub { $r->calls('zadd') > $zadd }, timeout => 2),
       'Redis resumed: the renewal put their slots back');
    ok(wait_until(sub { live($r) == 0 && state_key() eq '' }, timeout => 1),
       'and the releases behind it took them');
}

{
    # requests that end while their slots are put back leave none
    for my $ms (0, 200, 400, 600, 800, 1000) {
        my @c = held($P, "race$ms", "race$ms");
        $r->cli('FLUSHALL');
        select undef, undef, undef, $ms / 1000;
        ends("race$ms", "ended $ms ms after FLUSHALL", @c);
    }
}

$ng->stop;

done_testing();
