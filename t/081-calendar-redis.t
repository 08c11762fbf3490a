# Calendar quotas on Redis (SPEC section 12): nginx's wall clock set and
# stepped across the boundaries (libfaketime, nginx alone), the script
# deciding at the time nginx sends (RL_TEST_CLOCK=nginx: Redis' own clock
# cannot be moved). A monthly quota in Europe/Berlin resets at local
# midnight on the 1st (not a second before), on its anchor day, on each
# key's billing day (anchor=$variable); a daily one lasts 23 hours on
# the spring change and 25 on the fall one (X-RateLimit-Reset, the draft
# fields' t= and w=) and resets at the local midnight after each; weeks
# from Monday and from Sunday. The state expires when its period ends.
#
# The locations' cost is a variable: no deny cache, whose entries last on
# the real clock while this test moves nginx's (t/083 has it with
# credits).

use lib 't/lib';
use RlTest;
use RlTest::FakeClock;
use Time::Local qw(timegm);

# UTC seconds of a UTC time
sub utc { my ($y, $mo, $d, $h, $mi, $s) = @_; timegm($s // 0, $mi // 0, $h // 0, $d, $mo - 1, $y) }

my $clock = RlTest::FakeClock->new;
unless ($clock) {
    plan skip_all => 'libfaketime not installed';
}
# (nginx -t hangs with both libfaketime and the ASan runtime loaded)
if ($ENV{RL_SANITIZE}) {
    plan skip_all => 'not with the sanitizers (make test SANITIZE=1)';
}
unless (-f '/usr/share/zoneinfo/Europe/Berlin') {
    plan skip_all => 'no /usr/share/zoneinfo (tzdata)';
}

my $r = start_redis();
my $ng = $clock->start_nginx(redis => $r, env => { RL_TEST_CLOCK => 'nginx' },
                             config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
    map $host $one { default 1; }
    server {
        listen 127.0.0.1:$ServerPort;
        rl_headers draft;
        add_header X-RL-Status $rl_status always;
        location /month {
            rl_rule zone=main key=$arg_k rate=3r/month tz=Europe/Berlin
                    cost=$one name=monthly;
            empty_gif;
        }
        location /anchor {
            rl_rule zone=main key=$arg_k rate=3r/month tz=Europe/Berlin
                    anchor=15 cost=$one name=billing;
            empty_gif;
        }
        location /billing {
            rl_rule zone=main key=$arg_k rate=3r/month tz=Europe/Berlin
                    anchor=$arg_day cost=$one name=per_key;
            empty_gif;
        }
        location /day {
            rl_rule zone=main key=$arg_k rate=2r/d tz=Europe/Berlin
                    cost=$one name=daily;
            empty_gif;
        }
        location /week {
            rl_rule zone=main key=$arg_k rate=2r/w tz=Europe/Berlin
                    cost=$one name=weekly;
            empty_gif;
        }
        location /sunday {
            rl_rule zone=main key=$arg_k rate=2r/w tz=Europe/Berlin
                    anchor=sun cost=$one name=sundays;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;
like($ng->error_log_text . $ng->stderr_text,
     qr/\[warn\].*RL_TEST_CLOCK=nginx: Redis decides at the time nginx sends/,
     'the test clock is said, at warn');

sub get { http_get($port, $_[0]) }
sub codes { join ' ', map { get($_[0])->{code} } 1 .. $_[1] }
sub hdr { $_[0]{headers}{ lc $_[1] } // '' }
# within a second or two of what it should be (the clock runs on)
sub near {
    my ($got, $want, $what) = @_;
    ok(defined $got && $got =~ /^\d+$/ && $got >= $want - 2
       && $got <= $want + 1, "$what: $got, about $want")
        or diag("got " . ($got // 'nothing') . ", want $want");
}

# ------------------------------------------------------ the 1st, 00:00
{
    # 2025-03-31 23:59:50 CEST
    $clock->set(utc(2025, 3, 31, 21, 59, 50));
    is(codes('/month?k=a', 3), '200 200 200', 'March: 3 of 3');
    my $res = get('/month?k=a');
    is($res->{code}, 429, 'the 4th rejected');
    near(hdr($res, 'Retry-After'), 10, 'Retry-After counts to midnight');
    near(hdr($res, 'X-RateLimit-Reset'), 10, 'X-RateLimit-Reset too');
    # March 2025 in Berlin: 31 days less the hour daylight saving skips
    like(hdr($res, 'RateLimit-Policy'), qr/^"monthly";q=3;w=2674800$/,
         'w= is March\'s length in Berlin');
    my ($t) = hdr($res, 'RateLimit') =~ /^"monthly";r=0;t=(\d+)$/;
    near($t, 10, 'the draft t= too');
    my ($key) = $r->cli('--scan', '--pattern', 'rl:{a}:*');
    my $ttl = $r->cli('PTTL', $key);
    ok($ttl > 5000 && $ttl <= 11002, "its state expires when March ends "
       . "($ttl ms)");

    $clock->set(utc(2025, 3, 31, 21, 59, 58));
    is(get('/month?k=a')->{code}, 429, 'still March at 23:59:58');
    $clock->set(utc(2025, 3, 31, 22, 0, 1));
    $res = get('/month?k=a');
    is($res->{code}, 200, 'April, local midnight: admitted again');
    is(hdr($res, 'X-RateLimit-Remaining'), 2, 'a whole month\'s quota');
    # until May 1, 00:00 CEST: April's 30 days
    near(hdr($res, 'X-RateLimit-Reset'), 30 * 86400 - 1,
         'and its reset is April\'s end');
    like(hdr($res, 'RateLimit-Policy'), qr/w=2592000$/, 'w= 30 days');
}

# ------------------------------------------------------- anchor=15
{
    # 2025-03-14 23:59:55 CET: the 15th in 5 s
    $clock->set(utc(2025, 3, 14, 22, 59, 55));
    is(codes('/anchor?k=b', 4), '200 200 200 429',
       'billing from the 15th: 3 of 3 on the 14th');
    is(codes('/month?k=b', 3), '200 200 200', 'and 3 of the month');
    $clock->set(utc(2025, 3, 14, 22, 59, 58));
    is(get('/anchor?k=b')->{code}, 429, 'still the 14th at 23:59:58');
    $clock->set(utc(2025, 3, 14, 23, 0, 1));
    my $res = get('/anchor?k=b');
    is($res->{code}, 200, 'the 15th: admitted again');
    # to April 15, 00:00 CEST
    near(hdr($res, 'X-RateLimit-Reset'),
         utc(2025, 4, 14, 22) - utc(2025, 3, 14, 23, 0, 1),
         'until the next 15th');
    is(get('/month?k=b')->{code}, 429, 'the month from the 1st does not '
       . 'reset on the 15th');
}

# ------------------------------------------------- anchor=$arg_day
{
    # 2025-03-09 23:59:55 CET: the 10th in 5 s
    $clock->set(utc(2025, 3, 9, 22, 59, 55));
    is(codes('/billing?k=c&day=10', 4), '200 200 200 429',
       'a key billed on the 10th');
    is(codes('/billing?k=d&day=20', 4), '200 200 200 429',
       'a key billed on the 20th');
    $clock->set(utc(2025, 3, 9, 23, 0, 2));
    is(get('/billing?k=c&day=10')->{code}, 200,
       'the 10th: the first key admitted again');
    my $res = get('/billing?k=d&day=20');
    is($res->{code}, 429, 'the second not');
    near(hdr($res, 'Retry-After'),
         utc(2025, 3, 19, 23) - utc(2025, 3, 9, 23, 0, 2),
         'its Retry-After counts to its 20th');
}

# ------------------------------------------- a day of 23 and of 25 hours
{
    # 2025-03-30 00:00:05 CET: the day clocks go forward
    $clock->set(utc(2025, 3, 29, 23, 0, 5));
    my $res = get('/day?k=e');
    is($res->{code}, 200, 'March 30');
    near(hdr($res, 'X-RateLimit-Reset'), 23 * 3600 - 5,
         'it lasts 23 hours');
    like(hdr($res, 'RateLimit-Policy'), qr/^"daily";q=2;w=82800$/,
         'w=82800');
    is(codes('/day?k=e', 2), '200 429', 'its quota used');
    $clock->set(utc(2025, 3, 30, 21, 59, 58));
    is(get('/day?k=e')->{code}, 429, 'still March 30 at 23:59:58 CEST');
    $clock->set(utc(2025, 3, 30, 22, 0, 1));
    is(get('/day?k=e')->{code}, 200, 'March 31 from 00:00 CEST');

    # 2025-10-26 00:00:05 CEST: the day clocks go back
    $clock->set(utc(2025, 10, 25, 22, 0, 5));
    $res = get('/day?k=f');
    is($res->{code}, 200, 'October 26');
    near(hdr($res, 'X-RateLimit-Reset'), 25 * 3600 - 5,
         'it lasts 25 hours');
    like(hdr($res, 'RateLimit-Policy'), qr/w=90000$/, 'w=90000');
    is(codes('/day?k=f', 2), '200 429', 'its quota used');
    # 23:59:58 of October 25's clock would be 21:59:58 UTC: still the
    # 26th; its end is 00:00 CET, 23:00 UTC
    $clock->set(utc(2025, 10, 26, 22, 59, 58));
    is(get('/day?k=f')->{code}, 429, 'still October 26 at 23:59:58 CET');
    $clock->set(utc(2025, 10, 26, 23, 0, 1));
    is(get('/day?k=f')->{code}, 200, 'October 27 from 00:00 CET');
}

# ------------------------------------------------------------- weeks
{
    # Sunday 2025-03-23 23:59:55 CET: Monday in 5 s
    $clock->set(utc(2025, 3, 23, 22, 59, 55));
    is(codes('/week?k=g', 3), '200 200 429', 'a week from Monday');
    is(codes('/sunday?k=g', 3), '200 200 429', 'a week from Sunday');
    $clock->set(utc(2025, 3, 23, 23, 0, 2));
    my $res = get('/week?k=g');
    is($res->{code}, 200, 'Monday 00:00: the week from Monday resets');
    # to Monday March 31, 00:00 CEST: a week less an hour
    near(hdr($res, 'X-RateLimit-Reset'), 7 * 86400 - 3600 - 2,
         'this week lasts 167 hours');
    $res = get('/sunday?k=g');
    is($res->{code}, 429, 'the week from Sunday does not');
    near(hdr($res, 'Retry-After'),
         utc(2025, 3, 29, 23) - utc(2025, 3, 23, 23, 0, 2),
         'it ends on Sunday 00:00');
}

$ng->stop;
done_testing();
