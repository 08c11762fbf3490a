# Calendar quotas on the embedded store (SPEC section 12): nginx started
# with its wall clock set a few seconds before a boundary (libfaketime,
# nginx alone; the zone reads the wall clock once, when it is made, then
# runs on the monotonic clock: each case is an nginx of its own), then
# real seconds pass. A monthly quota in Europe/Berlin resets at local
# midnight on the 1st, not a second before, with the day's and the
# Tuesday week's, where the one from the 15th does not; on the anchor day
# and each key's billing day; a daily one lasts 23 hours on the spring
# change and 25 on the fall one (X-RateLimit-Reset, w=) and resets at the
# local midnight after the 23-hour day.

use lib 't/lib';
use RlTest;
use RlTest::FakeClock;
use Time::HiRes ();
use Time::Local qw(timegm);

sub utc { my ($y, $mo, $d, $h, $mi, $s) = @_; timegm($s // 0, $mi // 0, $h // 0, $d, $mo - 1, $y) }

my $clock = RlTest::FakeClock->new;
unless ($clock) {
    plan skip_all => 'libfaketime not installed';
}
if ($ENV{RL_SANITIZE}) {
    plan skip_all => 'not with the sanitizers (make test SANITIZE=1)';
}
unless (-f '/usr/share/zoneinfo/Europe/Berlin') {
    plan skip_all => 'no /usr/share/zoneinfo (tzdata)';
}

my $CONF = <<'CONF';
    rl_zone e;
    server {
        listen 127.0.0.1:$ServerPort;
        rl_headers draft;
        location /month {
            rl_rule zone=e key=$arg_k rate=2r/month tz=Europe/Berlin
                    name=monthly;
            empty_gif;
        }
        location /fifteenth {
            rl_rule zone=e key=$arg_k rate=2r/month tz=Europe/Berlin
                    anchor=15 name=from15;
            empty_gif;
        }
        location /billing {
            rl_rule zone=e key=$arg_k rate=2r/month tz=Europe/Berlin
                    anchor=$arg_day name=per_key;
            empty_gif;
        }
        location /day {
            rl_rule zone=e key=$arg_k rate=2r/d tz=Europe/Berlin name=daily;
            empty_gif;
        }
        location /tuesday {
            rl_rule zone=e key=$arg_k rate=2r/w tz=Europe/Berlin anchor=tue
                    name=weekly;
            empty_gif;
        }
    }
CONF

# nginx whose clock reads `at` as it starts
sub start_at {
    my ($at) = @_;
    $clock->set($at);
    return $clock->start_nginx(workers => 2, config => $CONF);
}

sub hdr { $_[0]{headers}{ lc $_[1] } // '' }
sub near {
    my ($got, $want, $what) = @_;
    ok(defined $got && $got =~ /^\d+$/ && $got >= $want - 2
       && $got <= $want + 1, "$what: $got, about $want")
        or diag("got " . ($got // 'nothing') . ", want $want");
}

# Polls `path` until it is admitted: nginx's time as the admitted
# request left and as its answer came (nginx decided in between), or
# nothing.
sub admitted_at {
    my ($port, $path) = @_;
    my @when;
    wait_until(sub {
        my $t = $clock->now;
        return 0 unless http_get($port, $path)->{code} == 200;
        @when = ($t, $clock->now);
        return 1;
    }, timeout => 10, interval => 0.05);
    return @when;
}

# Admitted at the boundary: not before it (the answer came after it;
# the request may have left just before), nor 2 s after.
sub at_boundary {
    my ($boundary, $sent, $answered) = @_;
    return defined $sent && $answered >= $boundary && $sent < $boundary + 2;
}

# ------------------------------------- the 1st: month, day and a week
{
    # 2025-03-31 23:59:57 CEST; April 1 is a Tuesday
    my $boundary = utc(2025, 3, 31, 22);
    my $ng = start_at($boundary - 3);
    my $port = $ng->port;
    for my $p ('/month?k=a', '/day?k=a', '/tuesday?k=a', '/fifteenth?k=a') {
        my @c = map { http_get($port, $p)->{code} } 1 .. 3;
        is("@c", '200 200 429', "$p: its quota used");
    }
    my $res = http_get($port, '/month?k=a');
    near(hdr($res, 'Retry-After'), 3, 'Retry-After counts to midnight');
    my @when = admitted_at($port, '/month?k=a');
    ok(at_boundary($boundary, @when),
       'the month resets at local midnight on the 1st, not before')
        or diag(sprintf "admitted %.2f s after midnight",
                ($when[1] // 0) - $boundary);
    is(http_get($port, '/day?k=a')->{code}, 200, 'so does the day');
    is(http_get($port, '/tuesday?k=a')->{code}, 200,
       'and the week from Tuesday');
    $res = http_get($port, '/fifteenth?k=a');
    is($res->{code}, 429, 'the month from the 15th does not');
    near(hdr($res, 'Retry-After'), utc(2025, 4, 14, 22) - int($clock->now),
         'it ends on April 15, 00:00 CEST');
    $ng->stop;
}

# --------------------------------------------- the 15th, a billing day
{
    # 2025-03-14 23:59:57 CET
    my $boundary = utc(2025, 3, 14, 23);
    my $ng = start_at($boundary - 3);
    my $port = $ng->port;
    for my $p ('/fifteenth?k=b', '/billing?k=c&day=15',
               '/billing?k=d&day=16', '/month?k=b') {
        my @c = map { http_get($port, $p)->{code} } 1 .. 3;
        is("@c", '200 200 429', "$p: its quota used");
    }
    my @when = admitted_at($port, '/fifteenth?k=b');
    ok(at_boundary($boundary, @when),
       'anchor=15 resets at local midnight on the 15th');
    is(http_get($port, '/billing?k=c&day=15')->{code}, 200,
       'so does a key billed on the 15th');
    is(http_get($port, '/billing?k=d&day=16')->{code}, 429,
       'not one billed on the 16th');
    is(http_get($port, '/month?k=b')->{code}, 429,
       'nor the month from the 1st');
    $ng->stop;
}

# ------------------------------------------- days of 23 and 25 hours
{
    # 2025-03-30 00:00:03 CET, and 2025-10-26 00:00:03 CEST
    for my $case ([utc(2025, 3, 29, 23, 0, 3), 23, 'spring'],
                  [utc(2025, 10, 25, 22, 0, 3), 25, 'fall']) {
        my ($at, $hours, $what) = @$case;
        my $ng = start_at($at);
        my $res = http_get($ng->port, '/day?k=e');
        is($res->{code}, 200, "$what: the day of the change");
        near(hdr($res, 'X-RateLimit-Reset'), $hours * 3600 - 3,
             "$what: it lasts $hours hours");
        like(hdr($res, 'RateLimit-Policy'),
             qr/^"daily";q=2;w=${\ ($hours * 3600)}$/,
             "$what: w=" . $hours * 3600);
        $ng->stop;
    }
    # 2025-03-30 23:59:57 CEST: the 23-hour day's end
    my $boundary = utc(2025, 3, 30, 22);
    my $ng = start_at($boundary - 3);
    my @c = map { http_get($ng->port, '/day?k=f')->{code} } 1 .. 3;
    is("@c", '200 200 429', 'the end of March 30: its quota used');
    my @when = admitted_at($ng->port, '/day?k=f');
    ok(at_boundary($boundary, @when),
       'March 31 starts at 00:00 CEST');
    $ng->stop;
}

done_testing();
