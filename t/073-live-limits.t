# Live limits (SPEC section 11): PUT /1/rules/NAME/limit through one
# instance of three on one Redis rejects on the other two within a
# second, in every definition of the name, with the headers saying the
# live N; a key value's override still wins; the limit ends at its ttl
# everywhere; DELETE returns everyone to nginx.conf's N; a limit of 0
# rejects every request. When Redis stops, the instances keep the
# limits they read (until their ttl); an empty Redis returns them to
# nginx.conf's within a second. Embedded zones: this instance alone.
# Bad input is refused and writes nothing; write=off is 403. A setting
# in Redis the rules cannot take is not applied, and warned of once.

use lib 't/lib';
use RlTest;
use RlTest::Api;
use Time::HiRes qw(time sleep);

my $r = start_redis();
my @ng = map { start_nginx(redis => $r, workers => 2, config => <<"CONF") }
    rl_fleet name=i$_ interval=1s;
    rl_zone main redis=127.0.0.1:\$RedisPort timeout=2s;
    rl_zone mem;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /a { rl_rule zone=main key=\$http_x_key rate=10r/m
                              name=per; empty_gif; }
        location /b { rl_rule zone=main key=\$http_x_key rate=10r/h
                              algorithm=fixed_window name=per; empty_gif; }
        location /tb { rl_rule zone=main key=\$http_x_key rate=10r/m
                               algorithm=token_bucket name=bucket;
                       empty_gif; }
        location /inf { rl_rule zone=main key=\$http_x_key concurrency=5
                                name=slots; empty_gif; }
        location /m { rl_rule zone=mem key=\$http_x_key rate=10r/m
                              name=mper; empty_gif; }
        location /q { rl_rule zone=main key=\$http_x_key rate=3r/h
                              algorithm=fixed_window name=quota; empty_gif; }
        location /mq { rl_rule zone=mem key=\$http_x_key rate=3r/h
                               algorithm=fixed_window name=mquota;
                       empty_gif; }
        location /rl/ { rl_api write=on; }
        location /ro/ { rl_api; }
    }
CONF
    1 .. 3;
my @api = map { RlTest::Api->new($_->port, '/rl/') } @ng;

sub as {
    my ($i, $path, $key) = @_;
    return http_get($ng[$i]->port, $path, 'X-Key' => $key);
}
sub codes { my ($i, $path, $key, $n) = @_;
            join ' ', map { code_status(as($i, $path, $key)) } 1 .. $n }

# the seconds until f() holds, or undef past the deadline
sub within {
    my ($f, $deadline) = @_;
    my $t0 = time;
    return wait_until($f, timeout => $deadline, interval => 0.05)
        ? time - $t0 : undef;
}

# ------------------------------------------------------------ set on A
is(codes(1, '/a', 'before', 10), join(' ', ('200 PASSED') x 10),
   'B: ten a minute before');
my ($code, $data) = $api[0]->call('PUT', '1/rules/per/limit',
                                  { limit => 3, ttl => 6,
                                    reason => 'incident 42' });
is($code, 200, 'a live limit set through A');
is_deeply([ @{ $data->{live} }{qw(limit reason by)}, $data->{configured} ],
          [3, 'incident 42', '127.0.0.1', 10], 'its answer');
my $set = time;
# each instance probed before any other traffic: its time is its own
# read of the fleet's settings
for my $i (1, 2) {
    my $t = within(sub { (as($i, '/a', "probe$i-" . time))
                         ->{headers}{'x-ratelimit-limit'} eq '3' }, 3);
    ok(defined $t && time - $set < a_second(),
       "instance $i decides with N=3 within a second ("
       . (defined $t ? sprintf('%.2fs', time - $set) : 'never') . ')');
}
for my $i (1, 2) {
    my $key = "k$i";
    is(codes($i, '/a', $key, 4), '200 PASSED 200 PASSED 200 PASSED '
                                 . '429 REJECTED', "instance $i: 3 pass");
    is(codes($i, '/b', $key, 4), '200 PASSED 200 PASSED 200 PASSED '
                                 . '429 REJECTED',
       "instance $i: the other definition of the name too");
    my $res = as($i, '/b', "h$i");
    is($res->{headers}{'x-ratelimit-limit'}, 3, 'X-RateLimit-Limit says 3');
}
($code, $data) = $api[2]->get('1/rules/per');
is_deeply([ $data->{limit}, $data->{configured}, $data->{live}{limit},
            $data->{live}{reason}, $data->{live}{by} ],
          [3, 10, 3, 'incident 42', '127.0.0.1'],
          'C shows the limit in force, the configured one, who set it');
ok($data->{live}{until} >= int($set) + 5, 'and until when');

# a key value's override wins over the live limit
($code) = $api[1]->call('PUT', '1/rules/per/keys/vip/override',
                        { limit => 6 });
is($code, 200, 'an override of one key');
is(codes(2, '/a', 'vip', 7), join(' ', ('200 PASSED') x 6, '429 REJECTED'),
   'the override (6) wins over the live limit (3)');

# it ends at its ttl, everywhere
my $t = within(sub { as(1, '/a', 'end' . time)->{headers}{'x-ratelimit-limit'}
                     eq '10' }, 8);
ok(defined $t && time - $set >= 5.5 && time - $set < 7.5,
   'the live limit ends at its ttl (' . sprintf('%.1fs', time - $set) . ')');
ok(wait_until(sub { $r->cli('HLEN', 'rl:{fleet}:main:live') == 0 },
              timeout => 3), 'and leaves nothing in Redis');

# ------------------------------------------------------------ delete
($code) = $api[0]->call('PUT', '1/rules/per/limit', { limit => 2 });
is($code, 200, 'a live limit with no ttl');
ok(within(sub { as(2, '/a', 'x' . time)->{headers}{'x-ratelimit-limit'}
                eq '2' }, 3), 'applied on C');
($code) = $api[1]->call('DELETE', '1/rules/per/limit');
is($code, 204, 'removed through B');
# each logged at notice as it was written (before, a ttl of 0 was
# printed anyway: "to 20", "in zone \"main\"00")
ok(index($ng[0]->error_log_text, 'rl_api: 127.0.0.1 set the live limit of '
         . 'rule "per" in zone "main" to 2 (was: nothing)') >= 0,
   'the write logged');
ok(index($ng[1]->error_log_text, 'rl_api: 127.0.0.1 removed the live limit '
         . 'of rule "per" in zone "main" (was: a setting)') >= 0,
   'the removal logged');
$set = time;
ok(defined within(sub { as(2, '/a', 'y' . time)
                        ->{headers}{'x-ratelimit-limit'} eq '10' }, 3)
   && time - $set < a_second(),
   'C back to nginx.conf within a second ('
   . sprintf('%.2fs', time - $set) . ')');

# a limit of 0: every request rejected
($code) = $api[0]->call('PUT', '1/rules/per/limit', { limit => 0, ttl => 30 });
is($code, 200, 'a live limit of 0');
ok(within(sub { code_status(as(1, '/a', 'z' . time)) eq '429 REJECTED' }, 3),
   'rejects every request on B');
my $res = as(1, '/a', 'zero');
ok($res->{headers}{'retry-after'} > 0 && $res->{headers}{'retry-after'} <= 60,
   'Retry-After within a minute (' . ($res->{headers}{'retry-after'} // '')
   . ')');
$api[0]->call('DELETE', '1/rules/per/limit');

# a token bucket's default burst follows the live N
($code) = $api[0]->call('PUT', '1/rules/bucket/limit', { limit => 2 });
ok(within(sub { as(2, '/tb', 'p' . time)->{headers}{'x-ratelimit-limit'}
                eq '2' }, 3), 'a bucket at its live N');
is(codes(2, '/tb', 'burst', 3), '200 PASSED 200 PASSED 429 REJECTED',
   'its capacity follows N');
$api[0]->call('DELETE', '1/rules/bucket/limit');

# A key's read and a credit's answer say the live limit, as the next
# request's headers do (before, a Redis zone's read the key at the
# configured N: "limit 3, remaining 2" while the next request got a 429
# of limit 1; the embedded store's were right)
for my $z (['quota', '/q', 'Redis'], ['mquota', '/mq', 'embedded']) {
    my ($rule, $path, $what) = @$z;
    ($code) = $api[0]->call('PUT', "1/rules/$rule/limit", { limit => 1 });
    is($code, 200, "$what: a live limit of 1");
    $res = as(0, $path, 'kr');
    is(code_status($res) . ' ' . $res->{headers}{'x-ratelimit-limit'},
       '200 PASSED 1', "$what: a request of the key, limit 1");
    ($code, $data) = $api[0]->get("1/rules/$rule/keys/kr");
    is_deeply([ $code, @$data{qw(limit remaining)} ], [200, 1, 0],
              "$what: the key's read says limit 1, remaining 0");
    $res = as(0, $path, 'kr');
    is(code_status($res) . ' ' . $res->{headers}{'x-ratelimit-limit'},
       '429 REJECTED 1', "$what: as the next request finds it");
    ($code, $data) = $api[0]->call('POST', "1/rules/$rule/keys/kr/credit",
                                   { units => 1 });
    is_deeply([ $code, @$data{qw(limit remaining)} ], [200, 1, 1],
              "$what: a credit's answer says limit 1, remaining 1");
    is(code_status(as(0, $path, 'kr')), '200 PASSED',
       "$what: and the next request passes");
    $api[0]->call('DELETE', "1/rules/$rule/limit");
}

# ------------------------------------------------------------ Redis fails
($code) = $api[0]->call('PUT', '1/rules/per/limit', { limit => 4, ttl => 600 });
ok(within(sub { ($api[2]->get('1/rules/per'))[1]{limit} == 4 }, 3),
   'C has the live limit');
$r->kill('STOP');
sleep 2.5;
is(($api[2]->get('1/rules/per'))[1]{limit}, 4,
   'Redis stopped: C keeps the live limit it read');
($code, $data) = $api[2]->get('1/fleet', timeout => 10);
is($code, 503, 'fleet reads answer 503');
$r->kill('CONT');
$r->restart;        # no persistence: an empty Redis
$set = time;
ok(defined within(sub { ($api[2]->get('1/rules/per'))[1]{limit} == 10 }, 5)
   && time - $set < a_second() + 1,
   'an empty Redis: back to nginx.conf within a second of reconnecting ('
   . sprintf('%.2fs', time - $set) . ')');

# ------------------------------------------------------------ embedded
($code) = $api[0]->call('PUT', '1/rules/mper/limit', { limit => 2, ttl => 60 });
is($code, 200, 'an embedded zone: a live limit');
is(codes(0, '/m', 'e', 3), '200 PASSED 200 PASSED 429 REJECTED',
   'applies on this instance at once');
is(codes(1, '/m', 'e', 3), '200 PASSED 200 PASSED 200 PASSED',
   'and on this instance alone');
$ng[0]->reload;
is(($api[0]->get('1/rules/mper'))[1]{limit}, 2, 'kept across a reload');

# ------------------------------------------------------------ bad input
for my $case ([{ limit => -1 }, 'a negative limit'],
              ['{"limit": 1.5}', 'a fractional limit'],
              [{ limit => 'ten' }, 'a limit that is no number'],
              [{ limit => 2e9 }, 'an oversized limit'],
              [{ limit => 5, ttl => 0 }, 'a ttl of 0'],
              [{ limit => 5, extra => 1 }, 'a member not asked'],
              [{ ttl => 5 }, 'no limit']) {
    my ($body, $what) = @$case;
    ($code, $data) = $api[0]->call('PUT', '1/rules/per/limit', $body);
    is_deeply([$code, $data->{error}{code}], [400, 'BodyInvalid'], $what);
}
($code, $data) = $api[0]->call('PUT', '1/rules/per/limit',
                               { limit => 3 }, type => 'text/plain');
is($code, 415, 'not JSON: 415');
($code, $data) = $api[0]->call('PUT', '1/rules/nope/limit', { limit => 3 });
is_deeply([$code, $data->{error}{code}], [404, 'RuleNotFound'],
          'an unknown rule: 404');
($code, $data) = $api[0]->call('PUT', '1/rules/slots/limit', { limit => 0 });
is($code, 400, "a concurrency= rule's limit of 0");
($code, $data) = RlTest::Api->new($ng[0]->port, '/ro/')
    ->call('PUT', '1/rules/per/limit', { limit => 3 });
is_deeply([$code, $data->{error}{code}], [403, 'WriteForbidden'],
          'write=off: 403');
is($r->cli('HLEN', 'rl:{fleet}:main:live'), 0, 'nothing written');

# What the API refuses is not applied when read from Redis either (a
# rule of that name defined otherwise on another instance, an entry made
# by hand), and is warned of once, not each second. Before, a limit of 0
# left a concurrency= rule no slot, and a trial ran on one.
$r->cli('HSET', 'rl:{fleet}:main:live', 'slots', "0\t0\t1000\t10.0.0.9\thand");
$r->cli('HSET', 'rl:{fleet}:main:trial', 'slots', "3\t0\t1000\t10.0.0.9\thand");
sub refusals {
    my ($i, $what, $rule) = @_;
    $rule //= 'slots';
    return scalar grep { /rl_fleet: \Q$what\E of \d+ for rule "$rule" .* not applied/ }
                  split /\n/, $ng[$i]->error_log_text;
}
ok(wait_until(sub { refusals(1, 'live limit') && refusals(1, 'trial') },
              timeout => 5, interval => 0.1),
   'a live limit of 0 and a trial for a concurrency= rule, read from '
   . 'Redis: warned of') or diag($ng[1]->error_log_text);
like((grep { /not applied/ } split /\n/, $ng[1]->error_log_text)[0],
     qr/\[warn\].*zone "main".*at least 1/, '... saying why');
($code, $data) = $api[1]->get('1/rules/slots');
is($data->{limit}, 5, '... and not applied: nginx.conf\'s 5 slots');
is(codes(1, '/inf', 'c', 1), '200 PASSED', '... a request takes a slot');
# (the fleet reads each second: three more reads)
sleep 3;
is(refusals(1, 'live limit') + refusals(1, 'trial'), 2,
   '... once each, not at each read');
$r->cli('DEL', 'rl:{fleet}:main:live', 'rl:{fleet}:main:trial');

# Nor what the API refuses for its bounds (a ttl within a day for a
# trial, N within 1e9): a trial with no end, one of two days, a live
# limit of 999999999999999. Before, all three applied: the trial ran
# for ever, the limit was the rule's N.
my ($sec) = split /\n/, $r->cli('TIME');
my $ms = $sec * 1000;
$r->cli('HSET', 'rl:{fleet}:main:live', 'per',
        "999999999999999\t0\t$ms\t10.0.0.9\thand");
$r->cli('HSET', 'rl:{fleet}:main:trial', 'per',
        "3\t0\t$ms\t10.0.0.9\thand");
$r->cli('HSET', 'rl:{fleet}:main:trial', 'bucket',
        "3\t" . ($ms + 2 * 86400000) . "\t$ms\t10.0.0.9\thand");
my %why = ('live limit per' => qr/from 0 to 1e9/,
           'trial per' => qr/within a day/,
           'trial bucket' => qr/within a day/);
for my $case (sort keys %why) {
    my ($what, $rule) = $case =~ /^(.*) (\w+)$/;
    ok(wait_until(sub { refusals(1, $what, $rule) }, timeout => 5,
                  interval => 0.1), "$case read from Redis: warned of");
    like((grep { /\Q$what\E of \d+ for rule "$rule"/ }
          split /\n/, $ng[1]->error_log_text)[0] // '', $why{$case},
         '... saying why');
}
($code, $data) = $api[1]->get('1/rules/per');
is_deeply([ $data->{limit}, $data->{live}, $data->{trial} ],
          [10, undef, undef], '... and not applied: nginx.conf\'s 10');
is(($api[1]->get('1/rules/bucket'))[1]{trial}, undef,
   '... no trial of two days either');
sleep 2;
is(refusals(1, 'live limit', 'per') + refusals(1, 'trial', 'per')
   + refusals(1, 'trial', 'bucket'), 3, '... once each');
$r->cli('DEL', 'rl:{fleet}:main:live', 'rl:{fleet}:main:trial');

$_->stop for @ng;

# An embedded zone's live limit kept across a reload is checked against
# the rule as it is then, as a Redis zone's each second: 1e9 on a
# fixed_window, the rule made a sliding_log, HUP. Before, the limit
# stayed: a log of 8 GB, every state "no room", every request the
# failure policy.
my $conf = <<'CONF';
    rl_zone solo;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /s { rl_rule zone=solo key=$http_x_key rate=3r/m
                              algorithm=ALG name=big; empty_gif; }
        location /rl/ { rl_api write=on; }
    }
CONF
(my $fixed = $conf) =~ s/ALG/fixed_window/;
(my $log = $conf) =~ s/ALG/sliding_log/;
my $solo = start_nginx(workers => 2, config => $fixed);
my $sapi = RlTest::Api->new($solo->port, '/rl/');
($code) = $sapi->call('PUT', '1/rules/big/limit', { limit => 1000000000 });
is($code, 200, 'an embedded zone: a live limit of 1e9 on a fixed_window');
ok($solo->reload(config => $log), 'the rule made a sliding_log: reload');
is(join(' ', map { code_status(http_get($solo->port, '/s', 'X-Key' => 's')) }
             1 .. 4), '200 PASSED 200 PASSED 200 PASSED 429 REJECTED',
   'the live limit is not applied: nginx.conf\'s 3');
($code, $data) = $sapi->get('1/rules/big');
is_deeply([ $data->{limit}, $data->{live} ], [3, undef],
          'the API says so');
my $kept = qr/\[warn\].*live limit of 1000000000 for rule "big" in zone "solo"/
    . qr/ \(kept across a reload\) not applied: /;
is(scalar(grep { /$kept/ } split /\n/, $solo->error_log_text), 1,
   'warned of once') or diag($solo->error_log_text);
$solo->stop;

done_testing();
