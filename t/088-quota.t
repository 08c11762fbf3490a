# A caller's own quota (SPEC section 14, rl_quota), against a real Redis
# and the embedded store, two workers: for each of the six algorithms, a
# calendar rule and a concurrency= rule (slots held at t/lib/upstream.py),
# remaining and reset equal what the caller's next request's headers
# say (less the request itself, when it passes); the draft's fields; a
# hundred asks change no count (Redis' keys, the headers, the metrics,
# a rule of the server the location does not inherit); two callers see
# their own, a query, a header or a path naming another key change
# nothing; a key value's override, a block and a live limit as the next
# request meets them; a name in two zones, a rule whose key is empty, a
# long key; the location's own rl_rule counts its asks; nginx -t refuses
# a name no rl_rule has; Redis stopped: 503 JSON, the embedded zone
# still answers.

use strict;
use warnings;
use lib 't/lib';
use RlTest;
use RlTest::Api;
use JSON::PP ();

plan skip_all => 'no /usr/share/zoneinfo (tzdata)'
    unless -f '/usr/share/zoneinfo/Europe/Berlin';

my $r  = start_redis();
my $up = start_upstream();
my $UP = $up->port;

# the rules, each in a location of its own: [path, zone, parameters];
# an in-flight rule's location is the upstream's
my $cal = 'tz=Europe/Berlin anchor=$day';
my @rules = (
    [fw => main => 'rate=5r/m algorithm=fixed_window'],
    [sw => main => 'rate=5r/m algorithm=sliding_window'],
    [sl => main => 'rate=5r/m algorithm=sliding_log'],
    [tb => main => 'rate=5r/m algorithm=token_bucket'],
    [lb => main => 'rate=5r/m algorithm=leaky_bucket burst=4'],
    [gc => main => 'rate=5r/m algorithm=gcra burst=4'],
    [cal => main => "rate=5r/month $cal name=monthly"],
    ['in' => main => 'concurrency=3 name=inflight'],
    [mfw => mem => 'rate=5r/m algorithm=fixed_window'],
    [mtb => mem => 'rate=5r/m algorithm=token_bucket'],
    [mcal => mem => "rate=5r/month $cal name=mmonthly"],
    [min => mem => 'concurrency=3 name=minflight'],
    [both => main => 'rate=9r/m name=shared'],
    [both2 => mem => 'rate=7r/m name=shared'],
    [lv => main => 'rate=5r/m algorithm=fixed_window'],
    map { ["z$_" => "z$_" => "rate=${_}0r/m"] } 1 .. 5,
);
# zones of their own prefix on the one Redis: a call each
my $zones = join '', map {
    "    rl_zone z$_ redis=127.0.0.1:\$RedisPort timeout=5s prefix=z$_:;\n"
} 1 .. 5;
my $locations = join '', map {
    my ($path, $zone, $params) = @$_;
    $params .= " name=$path" unless $params =~ /name=/;
    my $content = $params =~ /concurrency/
                ? "proxy_pass http://127.0.0.1:$UP/hold;" : 'empty_gif;';
    "        location /$path {\n"
    . "            rl_rule zone=$zone key=\$http_x_key $params;\n"
    . "            $content\n        }\n";
} @rules;

my $ng = start_nginx(redis => $r, workers => 2, ready => 2,
                     config => <<"CONF");
    rl_zone main redis=127.0.0.1:\$RedisPort timeout=5s;
    rl_zone mem;
$zones    rl_headers draft;
    map \$http_x_day \$day { default 1; ~^([0-9]+)\$ \$1; }
    server {
        listen 127.0.0.1:\$ServerPort;
        # every location without rules of its own, but rl_quota's
        rl_rule zone=main key=\$http_x_key rate=1000r/d name=site;

$locations
        location /plain { empty_gif; }

        location = /v1/quota {
            rl_quota fw sw sl tb lb gc monthly inflight site;
        }
        location /q/ { rl_quota fw; }
        location = /mq { rl_quota mfw mtb mmonthly minflight; }
        location = /sq { rl_quota shared; }
        location = /many { rl_quota z1 z2 z3 z4 z5 fw; }
        location = /lq { rl_quota lv; }
        location = /limited {
            rl_rule zone=main key=\$http_x_key rate=3r/m name=asks;
            rl_quota fw;
        }
        location /rl/ { rl_api write=on; }
        location = /metrics { rl_metrics; }
    }
CONF
my $port = $ng->port;
my $api = RlTest::Api->new($port, '/rl/');
my $JSON = JSON::PP->new->canonical;

sub as { my ($path, $key, @h) = @_; http_get($port, $path, 'X-Key' => $key, @h) }

# the answer of a quota location for a key: (code, {NAME/ZONE => entry},
# response)
sub quota {
    my ($path, $key, @h) = @_;
    my $res = defined $key ? as($path, $key, @h) : http_get($port, $path, @h);
    my $d = eval { $JSON->decode($res->{body}) };
    my %e = map { ("$_->{name}/$_->{zone}" => $_) } @{ $d->{rules} // [] };
    return ($res->{code}, \%e, $res, $d);
}

sub near { my ($a, $b, $d) = @_; defined $a && defined $b && abs($a - $b) <= ($d // 1) }

# A fixed window's figures are checked clear of a minute's end: one
# crossed meanwhile is the host's timing, not the module's
sub clear_of_minute_end {
    wait_until(sub { my $s = time % 60; $s >= 1 && $s < 48 }, timeout => 15);
}

# ------------------------------------------------ the answer's shape
my ($code, $e, $res, $d) = quota('/v1/quota', 'fresh');
is($code, 200, 'rl_quota answers 200');
is($res->{headers}{'content-type'}, 'application/json', 'in JSON');
is($res->{headers}{'cache-control'}, 'no-store', 'never cached');
is_deeply([ map { $_->{name} } @{ $d->{rules} } ],
          [qw(fw sw sl tb lb gc monthly inflight site)],
          'each rule named, in the order named');
my %fw = %{ $e->{'fw/main'} };
my $fwReset = delete $fw{reset};
is_deeply(\%fw, { name => 'fw', zone => 'main', limit => 5, remaining => 5,
                  window => 60, used => 0 },
          'a key never seen: whole')
    or diag explain $e->{'fw/main'};
ok($fwReset > 0 && $fwReset <= 60,
   "a fixed window's reset: its end ($fwReset s)");
is($e->{'sw/main'}{reset}, 0, "a sliding window's: whole now");
is_deeply([ @{ $e->{'monthly/main'} }{qw(period tz limit remaining)} ],
          [ 'month', 'Europe/Berlin', 5, 5 ],
          'a calendar rule: its period and zone');
ok(!exists $e->{'monthly/main'}{window}, 'and no window');
is_deeply([ @{ $e->{'inflight/main'} }{qw(limit remaining used)} ],
          [ 3, 3, 0 ], 'an in-flight rule: no slot held');
ok(exists $e->{'inflight/main'}{window}
   && !defined $e->{'inflight/main'}{window}, 'and no window (null)');
like($res->{headers}{'ratelimit-policy'} // '',
     qr/^"fw";q=5;w=60, "sw";q=5;w=60, "sl";q=5;w=60, "tb";q=5;w=60, "lb";q=5;w=60, "gc";q=5;w=60, "monthly";q=5;w=(\d+), "inflight";q=3;qu="concurrent-requests", "site";q=1000;w=86400$/,
     'RateLimit-Policy: every rule, as rl_headers draft writes it')
    or diag($res->{headers}{'ratelimit-policy'});
like($res->{headers}{'ratelimit'} // '', qr/^"inflight";r=3;t=0$/,
     'RateLimit: the one with least left');
ok(!exists $res->{headers}{'x-ratelimit-limit'},
   'no X-RateLimit-* (no rule decided the ask)');

# --------------------------- each algorithm: as the next request says
# (reset: a fixed window's and a period's end do not move with a
# request; the others' "whole again" is later by what the request took)
my %fixed = (fw => 1, monthly => 1, mfw => 1, mmonthly => 1);
for my $alg (qw(fw sw sl tb lb gc cal mfw mtb mcal)) {
    my $name = { cal => 'monthly', mcal => 'mmonthly' }->{$alg} // $alg;
    my $zone = $alg =~ /^m/ ? 'mem' : 'main';
    my $qpath = $zone eq 'mem' ? '/mq' : '/v1/quota';
    my $key = "k-$alg";
    clear_of_minute_end();
    as("/$alg", $key, 'X-Day' => 15) for 1 .. 2;
    # (a reset counts down while the host runs between two answers)
    my $t0 = now();
    my ($c, $q) = quota($qpath, $key, 'X-Day' => 15);
    my $s = $q->{"$name/$zone"};
    my $next = as("/$alg", $key, 'X-Day' => 15)->{headers};
    my $late = 1 + int(now() - $t0);
    is($next->{'x-ratelimit-remaining'}, $s->{remaining} - 1,
       "$alg: the next request has what the quota said, less itself "
       . "($s->{remaining} - 1)");
    is($next->{'x-ratelimit-limit'}, $s->{limit}, "$alg: and its limit");
    ok($fixed{$name} ? near($next->{'x-ratelimit-reset'}, $s->{reset}, $late)
                     : $next->{'x-ratelimit-reset'} >= $s->{reset} - $late,
       "$alg: and a reset from the quota's ($s->{reset} s, the next "
       . "request: $next->{'x-ratelimit-reset'} s)");
    is($s->{used}, 2, "$alg: used 2");
    # spent: the quota says when it frees one, as the 429 does
    my $n = 0;
    $n++ while $n < 20 && as("/$alg", $key, 'X-Day' => 15)->{code} == 200;
    $t0 = now();
    ($c, $q) = quota($qpath, $key, 'X-Day' => 15);
    $s = $q->{"$name/$zone"};
    my $rej = as("/$alg", $key, 'X-Day' => 15);
    $late = 1 + int(now() - $t0);
    is($rej->{code}, 429, "$alg: spent");
    is($s->{remaining}, 0, "$alg: the quota says nothing is left");
    is($rej->{headers}{'x-ratelimit-remaining'}, 0, "$alg: as the 429");
    ok(near($rej->{headers}{'x-ratelimit-reset'}, $s->{reset}, $late),
       "$alg: which frees one when the quota said ($s->{reset} s, "
       . "the 429: $rej->{headers}{'x-ratelimit-reset'} s)");
    ok($s->{reset} > 0, "$alg: in some time");
}

# a month from the caller's billing day: its end in Berlin
for my $day (1, 15, 28) {
    my ($c, $q, $res) = quota('/v1/quota', "cal-$day", 'X-Day' => $day);
    my $want = next_month_day('Europe/Berlin', $day) - time;
    ok(near($q->{'monthly/main'}{reset}, $want, 2),
       "a month from the $day: its end in Berlin ($q->{'monthly/main'}{reset}"
       . " s, about $want)");
    my ($w) = ($res->{headers}{'ratelimit-policy'} // '') =~
        /"monthly";q=5;w=(\d+)/;
    my $next = as('/cal', "cal-$day", 'X-Day' => $day)->{headers};
    my ($nw) = ($next->{'ratelimit-policy'} // '') =~ /"monthly";q=5;w=(\d+)/;
    is($w, $nw, "a month from the $day: w= the month's length, as the "
                . "next request's");
}

# ------------------------------------------- in flight: slots in use
for my $in (['in', 'inflight', 'main', '/v1/quota'],
            ['min', 'minflight', 'mem', '/mq']) {
    my ($loc, $name, $zone, $qpath) = @$in;
    my $key = "c-$loc";
    my @held = map { http_start($port, "/$loc?key=$key&until=t-$loc",
                                'X-Key' => $key) } 1 .. 2;
    wait_until(sub { $up->stats($key)->{now} == 2 }, timeout => 10)
        or diag("the upstream holds " . $up->stats($key)->{now});
    my ($c, $q) = quota($qpath, $key);
    is_deeply([ @{ $q->{"$name/$zone"} }{qw(remaining used)} ], [1, 2],
              "$name: 2 slots in use, 1 left");
    push @held, http_start($port, "/$loc?key=$key&until=t-$loc",
                           'X-Key' => $key);
    wait_until(sub { $up->stats($key)->{now} == 3 }, timeout => 10);
    ($c, $q) = quota($qpath, $key);
    my $s = $q->{"$name/$zone"};
    is_deeply([ @$s{qw(remaining used)} ], [0, 3], "$name: all 3 in use");
    my $rej = as("/$loc?key=$key&until=t-$loc", $key);
    is($rej->{code}, 429, "$name: the next is refused");
    is($rej->{headers}{'x-ratelimit-reset'}, $s->{reset},
       "$name: and comes back when the quota said ($s->{reset} s)");
    $up->release("t-$loc");
    my @done = map { $_->result(10) } @held;
    is($done[2]{headers}{'x-ratelimit-remaining'}, 0,
       "$name: the third took the one the quota said was left");
    wait_until(sub { (quota($qpath, $key))[1]{"$name/$zone"}{used} == 0 },
               timeout => 10);
    ($c, $q) = quota($qpath, $key);
    is($q->{"$name/$zone"}{remaining}, 3, "$name: all back once they end");
}

# ------------------------------------------------ asking counts nothing
# what Redis holds of a key value: its keys and their values
sub held {
    my ($key) = @_;
    return join "\n", map { "$_ " . $r->cli('--no-raw', 'DUMP', $_) }
                      sort split /\n/, $r->cli('KEYS', "rl:{$key}*");
}
clear_of_minute_end();
as("/$_", 'hundred') for qw(fw sw sl tb lb gc cal plain);
my $before = held('hundred');
my $metrics = http_get($port, '/metrics')->{body};
my ($c0, $q0) = quota('/v1/quota', 'hundred');
my @asks = http_parallel($port, [ ('/v1/quota') x 100 ], concurrency => 10,
                         headers => { 'X-Key' => 'hundred' });
is_deeply([ grep { $_ != 200 } @asks ], [], 'a hundred asks, all answered');
is(held('hundred'), $before, 'a hundred asks change nothing in Redis');
is(http_get($port, '/metrics')->{body}, $metrics,
   'nor in the metrics (no rule decided them)');
my ($c1, $q1) = quota('/v1/quota', 'hundred');
for my $n (sort keys %$q0) {
    is($q1->{$n}{remaining}, $q0->{$n}{remaining},
       "$n: as much left after a hundred asks ($q0->{$n}{remaining})");
}
is($q1->{'site/main'}{remaining}, 999,
   "the server's rule: one request of /plain, none of the asks "
   . "(rl_quota inherits no rule)");
is(as('/fw', 'hundred')->{headers}{'x-ratelimit-remaining'}, 3,
   'the next request finds the count as before');

# ---------------------------------------------- two callers, their own
clear_of_minute_end();
as('/fw', 'alice') for 1 .. 3;
as('/fw', 'bob');
my (undef, $qa) = quota('/v1/quota', 'alice');
my (undef, $qb) = quota('/v1/quota', 'bob');
is($qa->{'fw/main'}{remaining}, 2, 'alice sees her own');
is($qb->{'fw/main'}{remaining}, 4, 'bob his');

# nothing of the request names another key but the rule's key=
sub plain { my %e = %{ $_[0] }; delete $e{reset}; \%e }
for my $ask (['/v1/quota?key=bob&value=bob&x-key=bob', 'a query'],
             ['/q/bob', 'a path'], ['/q/keys/bob', 'a path like the API\'s'],
             ['/v1/quota', 'a header', 'X-Api-Key' => 'bob',
              'X-Value' => 'bob', Cookie => 'key=bob']) {
    my ($path, $what, @h) = @$ask;
    my (undef, $q) = quota($path, 'alice', @h);
    is_deeply(plain($q->{'fw/main'}), plain($qa->{'fw/main'}),
              "$what naming bob changes nothing: alice's own");
}

# a key value longer than a state key holds (digested as its rule does)
my $long = 'L' x 150;
as('/fw', $long) for 1 .. 2;
is((quota('/v1/quota', $long))[1]{'fw/main'}{remaining}, 3,
   'a long key value, read as its rule digests it');

# no key: its rules do not apply, and are left out
($code, $e, $res, $d) = quota('/v1/quota', undef);
is_deeply($d, { rules => [] }, 'a caller no rule applies to: no rules');
ok(!exists $res->{headers}{'ratelimit-policy'}, 'and no draft fields');

# one name in two zones: each
(undef, $e) = quota('/sq', 'sh');
is_deeply([ sort keys %$e ], [ 'shared/main', 'shared/mem' ],
          'a name in two zones: both');
is_deeply([ $e->{'shared/main'}{limit}, $e->{'shared/mem'}{limit} ], [9, 7],
          'each its own');

# rules of six Redis zones: six calls, one request waiting for them all
as("/z$_", 'many') for 1 .. 5;
as("/z$_", 'many') for 3 .. 5;
(undef, $e) = quota('/many', 'many');
is_deeply([ map { $e->{"z$_/z$_"}{remaining} } 1 .. 5 ],
          [ 9, 19, 28, 38, 48 ], 'six zones, each read in its own call')
    or diag explain $e;
is($e->{'fw/main'}{remaining}, 5, 'the sixth too');

# ------------------------ what an operator set: as the next request
clear_of_minute_end();
$api->call('PUT', '1/rules/fw/keys/over/override', { limit => 2 });
as('/fw', 'over');
(undef, $e) = quota('/v1/quota', 'over');
is_deeply([ @{ $e->{'fw/main'} }{qw(limit remaining)} ], [2, 1],
          "a key value's override");
is(as('/fw', 'over')->{headers}{'x-ratelimit-limit'}, 2, 'as the next says');

$api->call('POST', '1/rules/fw/keys/blocked/block', { ttl => 30 });
(undef, $e) = quota('/v1/quota', 'blocked');
$res = as('/fw', 'blocked');
is_deeply([ $e->{'fw/main'}{remaining}, $res->{code} ], [0, 429],
          'a blocked key: nothing left, as the next finds');
ok(near($e->{'fw/main'}{reset}, $res->{headers}{'retry-after'}),
   "until the block ends ($e->{'fw/main'}{reset} s, Retry-After "
   . "$res->{headers}{'retry-after'})");

# (a rule of its own: the others' figures stay nginx.conf's)
clear_of_minute_end();
as('/lv', 'live') for 1 .. 2;
($code) = $api->call('PUT', '1/rules/lv/limit', { limit => 20 });
is($code, 200, 'a live limit of 20');
ok(wait_until(sub { (quota('/lq', 'live'))[1]{'lv/main'}{limit} == 20 },
              timeout => 5 * a_second()),
   'the quota reads it at the live limit');
(undef, $e) = quota('/lq', 'live');
$res = as('/lv', 'live');
is_deeply([ $e->{'lv/main'}{remaining}, $res->{headers}{'x-ratelimit-limit'},
            $res->{headers}{'x-ratelimit-remaining'} ],
          [ 18, 20, 17 ], 'as the next request: 18 left of 20, then 17');

# ------------------------ the location's own rule counts its asks
my @lim = map { (quota('/limited', 'asker'))[0] } 1 .. 4;
is("@lim", '200 200 200 429', "the location's own rl_rule limits the asks");
$res = as('/limited', 'asker2');
is($res->{headers}{'x-ratelimit-limit'}, 3, 'with its headers');
like($res->{headers}{'ratelimit-policy'},
     qr/^"fw";q=5;w=60, "asks";q=3;w=60$/,
     "the quota's policy and the asks' own");

# ----------------------------------------------------------- methods
$res = http_request($port, 'POST', '/v1/quota', body => '{}',
                    headers => [ 'X-Key' => 'p' ]);
is($res->{code}, 405, 'a POST: 405');
is($res->{headers}{allow}, 'GET, HEAD', 'GET and HEAD allowed');
$res = http_request($port, 'HEAD', '/v1/quota', headers => [ 'X-Key' => 'p' ]);
is($res->{code}, 200, 'HEAD: 200');

# ------------------------------------------- nginx -t: unknown names
for my $bad (['rl_quota fw nosuch;', qr/\[emerg\].*unknown rule "nosuch" in "rl_quota".* in \S+nginx\.conf:\d+/, 'a name no rule has'],
             ['rl_quota fw fw;', qr/\[emerg\].*duplicate rule name "fw"/, 'a name twice'],
             ['rl_quota;', qr/\[emerg\].*invalid number of arguments in "rl_quota"/, 'no name'],
             ['rl_quota fw; rl_quota fw;', qr/\[emerg\].*"rl_quota" directive is duplicate/, 'two in one place']) {
    my ($line, $want, $what) = @$bad;
    my $t = RlTest::Nginx->new(redis => $r, start => 0, config => <<"CONF");
    rl_zone main redis=127.0.0.1:\$RedisPort;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /fw { rl_rule zone=main key=\$http_x_key rate=5r/m name=fw;
                       empty_gif; }
        location = /q { $line }
    }
CONF
    my ($ok, $text) = $t->config_test;
    ok(!$ok, "nginx -t refuses $what");
    like($text, $want, "$what: named") or diag($text);
}

# ------------------------------------------------ concurrency=auto
# its N as the next request is decided with (min=max=3 here), its slots
# in use, on Redis and the embedded store
{
    my $auto = start_nginx(redis => $r, workers => 1, ready => 1,
                           config => <<"CONF");
    rl_zone main redis=127.0.0.1:\$RedisPort timeout=5s;
    rl_zone mem;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /ar { rl_rule zone=main key=\$http_x_key
                               concurrency=auto min=3 max=3 name=ar;
                       proxy_pass http://127.0.0.1:$UP/hold; }
        location /am { rl_rule zone=mem key=\$http_x_key
                               concurrency=auto min=3 max=3 name=am;
                       proxy_pass http://127.0.0.1:$UP/hold; }
        location = /aq { rl_quota ar am; }
    }
CONF
    my @h = map { http_start($auto->port, "/$_?key=auto&until=auto",
                             'X-Key' => 'auto') } qw(ar am);
    ok(wait_until(sub { $up->stats('auto')->{now} == 2 }, timeout => 10),
       'auto rules: a slot held in each');
    my $res = http_get($auto->port, '/aq', 'X-Key' => 'auto');
    my $answer = eval { $JSON->decode($res->{body}) } // {};
    my %a = map { ($_->{name} => "$_->{limit} $_->{remaining} $_->{used}") }
            @{ $answer->{rules} // [] };
    is_deeply(\%a, { ar => '3 2 1', am => '3 2 1' },
              'concurrency=auto: its N, what is left and the slot in use')
        or diag($res->{body});
    $up->release('auto');
    $_->result(10) for @h;
    $auto->stop;
}

# ----------------------------------------------- Redis stopped: 503
$r->stop;
($code, $e, $res, $d) = quota('/v1/quota', 'alice');
is($code, 503, 'Redis stopped: 503');
is($d->{error}{code}, 'StoreUnavailable', 'a JSON error') or diag($res->{body});
# (its month spent above: a minute's end since changes nothing)
(undef, $e) = quota('/mq', 'k-mcal', 'X-Day' => 15);
is($e->{'mmonthly/mem'}{remaining}, 0, 'an embedded zone still answers, '
                                       . 'from shared memory');

$ng->stop;
done_testing();
