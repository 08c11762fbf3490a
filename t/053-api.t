# The operator API (SPEC section 8, rl_api) against a real Redis and the
# embedded store, two workers: the page, zones and rules with their
# counters and usage histogram (and rl_usage_ratio in rl_metrics), the
# top limited keys (from Redis' rejections and the deny cache's, binary
# and long keys), a key's state read without counting for every
# algorithm, the writes (block, unblock, override, reset) in the rule's
# key encoding and what they change at once in this instance, and every
# error: unknown paths and methods, bodies, values, writes without
# write=on, Redis stopped.

use lib 't/lib';
use RlTest;
use RlTest::Api;

my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 2, config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
    rl_zone other redis=127.0.0.1:$RedisPort timeout=5s prefix=o:;
    rl_zone mem;
    rl_zone leased redis=127.0.0.1:$RedisPort timeout=5s lease=10s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /a {
            rl_rule zone=main key=$http_x_key rate=4r/m name=four;
            empty_gif;
        }
        location /addr {
            rl_rule zone=main key=$binary_remote_addr rate=3r/m name=ip;
            empty_gif;
        }
        location /both {
            rl_rule zone=main key=$http_x_key rate=100r/m name=shared;
            empty_gif;
        }
        location /both2 {
            rl_rule zone=other key=$http_x_key rate=100r/m name=shared;
            empty_gif;
        }
        location /mem {
            rl_rule zone=mem key=$http_x_key rate=5r/m name=mem;
            empty_gif;
        }
        location /lease {
            rl_rule zone=leased key=$http_x_key rate=1000r/m name=hot;
            empty_gif;
        }
        location /fw { rl_rule zone=main key=$http_x_key rate=5r/m
                               algorithm=fixed_window name=fw; empty_gif; }
        location /sw { rl_rule zone=main key=$http_x_key rate=5r/m
                               algorithm=sliding_window name=sw; empty_gif; }
        location /sl { rl_rule zone=main key=$http_x_key rate=5r/m
                               algorithm=sliding_log name=sl; empty_gif; }
        location /tb { rl_rule zone=main key=$http_x_key rate=5r/m
                               algorithm=token_bucket name=tb; empty_gif; }
        location /lb { rl_rule zone=main key=$http_x_key rate=5r/m
                               algorithm=leaky_bucket burst=4 name=lb;
                       empty_gif; }
        location /gc { rl_rule zone=main key=$http_x_key rate=5r/m
                               algorithm=gcra burst=4 name=gc; empty_gif; }
        location /mfw { rl_rule zone=mem key=$http_x_key rate=5r/m
                                algorithm=fixed_window name=mfw; empty_gif; }
        location /mtb { rl_rule zone=mem key=$http_x_key rate=5r/m
                                algorithm=token_bucket name=mtb; empty_gif; }
        location /mgc { rl_rule zone=mem key=$http_x_key rate=5r/m
                                algorithm=gcra burst=4 name=mgc; empty_gif; }
        location /msl { rl_rule zone=mem key=$http_x_key rate=4r/m
                                algorithm=sliding_log name=msl; empty_gif; }
        location /rl/ { rl_api write=on; }
        location /ro/ { rl_api; }
        location /metrics { rl_metrics; }
    }
CONF
my $port = $ng->port;
my $api = RlTest::Api->new($port, '/rl/');
my $ro = RlTest::Api->new($port, '/ro/');

sub as { my ($path, $key) = @_; http_get($port, $path, 'X-Key' => $key) }

# ---------------------------------------------------------------- page
my ($code, $data, $res) = $api->get('');
is($code, 200, 'the page');
like($res->{headers}{'content-type'}, qr{^text/html}, 'is HTML');
like($res->{headers}{'content-security-policy'} // '', qr/default-src 'none'/,
     'and says it loads nothing from elsewhere');
unlike($res->{body}, qr{(?:src|href)\s*=\s*["']?(?:https?:)?//}i,
       'it names no other site');
is(($api->get('index.html'))[0], 200, '/index.html too');
($code, $data, $res) = $api->call('HEAD', '');
is($code, 200, 'HEAD of the page');
is($res->{body}, '', 'without a body');

($code, $data) = $api->get('1');
is_deeply($data, { version => 1, endpoints => [qw(zones rules fleet audit)],
                   write => JSON::PP::true }, '/1: the endpoints, writes on');
is((($ro->get('1'))[1] // {})->{write}, JSON::PP::false,
   'writes off where rl_api has no write=on');

# ------------------------------------------------------- zones and rules
my @codes = map { code_status(as('/a', 'alice')) } 1 .. 6;
is_deeply(\@codes, [('200 PASSED') x 4, ('429 REJECTED') x 2],
          'four a minute') or diag explain \@codes;

($code, $data) = $api->get('1/zones');
is($code, 200, '/1/zones');
is_deeply([sort keys %$data], [qw(leased main mem other)], 'every zone');
is($data->{main}{store}, 'redis', 'main is a redis store');
is($data->{mem}{store}, 'embedded', 'mem is embedded');
ok($data->{main}{up}, 'main is up');
is_deeply($data->{main}{requests},
          { passed => 4, rejected => 2, rejected_dry_run => 0, delayed => 0,
            error => 0 }, "main's requests");
is_deeply($data->{leased}{lease}, { granted => 0, spent => 0, returned => 0 },
          'a lease zone has its lease units');
ok(!exists $data->{main}{lease}, 'others have none');
is($data->{main}{errors}, 0, 'a Redis zone has its error replies');
ok($data->{mem}{memory}{size} > 0
   && $data->{mem}{memory}{used} > 0
   && $data->{mem}{memory}{used} <= $data->{mem}{memory}{size},
   'an embedded zone its memory (' . ($data->{mem}{memory}{used} // '?')
   . ' of ' . ($data->{mem}{memory}{size} // '?') . ' bytes)');
is($data->{mem}{evictions}, 0, 'and its evictions');
ok(!exists $data->{main}{memory}, 'a Redis zone has no shared memory');

($code, $data) = $api->get('1/rules');
is($code, 200, '/1/rules');
my %rules = map { ("$_->{zone}/$_->{name}" => $_) } @$data;
is(scalar(keys %rules), scalar(@$data), 'each zone and name once');
ok($rules{'main/shared'} && $rules{'other/shared'},
   'one name in two zones: two entries');
my $four = $rules{'main/four'};
is_deeply([ @$four{qw(algorithm limit window key)} ],
          [ 'sliding_window', 4, 60, '$http_x_key' ], 'a rule as written');
is_deeply($four->{requests},
          { passed => 4, rejected => 2, rejected_dry_run => 0, delayed => 0,
            error => 0 }, 'its counters');
# used after each admission: 1/4, 2/4, 3/4, 4/4; the rejections: +Inf
is_deeply([ map { $_->{count} } @{ $four->{usage} } ], [0, 1, 2, 3, 3, 4, 6],
          'its usage histogram') or diag explain $four->{usage};
is_deeply([ map { $_->{le} } @{ $four->{usage} } ],
          [0.1, 0.25, 0.5, 0.75, 0.9, 1, '+Inf'], 'with its bounds');
($code, $data) = $api->get('1/rules/four');
is_deeply($data, $four, '/1/rules/NAME: the same entry');

my $metrics = http_get($port, '/metrics')->{body};
like($metrics, qr/^rl_usage_ratio_bucket\{zone="main",rule="four",le="0.5"\} 2$/m,
     'rl_metrics has the histogram');
like($metrics, qr/^rl_usage_ratio_bucket\{zone="main",rule="four",le="\+Inf"\} 6$/m,
     'with +Inf');
like($metrics, qr/^rl_usage_ratio_count\{zone="main",rule="four"\} 6$/m,
     'and its count');

# ------------------------------------------------------------ top keys
# the deny cache answers alice's next ones: counted as rejections too
as('/a', 'alice') for 1 .. 4;
as('/a', 'bob') for 1 .. 5;
as('/a', 'x' x 200) for 1 .. 7;
($code, $data) = $api->get('1/rules/four/top');
is($code, 200, '/top');
is_deeply([ map { [$_->{key}, $_->{rejected}, $_->{requests}] }
            @{ $data->{keys} } ],
          [ [ 'alice', 6, 6 ], [ 'x' x 128, 3, 3 ], [ 'bob', 1, 1 ] ],
          'the keys rejected, most first, deny cache included')
    or diag explain $data;
is($data->{keys}[1]{truncated}, JSON::PP::true, 'a long key is cut, and says so');
ok(!exists $data->{keys}[0]{truncated}, 'others are whole');
is($data->{rule}, 'four', 'of its rule');
is($data->{zone}, 'main', 'and zone');
($code, $data) = $api->get('1/rules/four/top?n=1');
is(scalar @{ $data->{keys} }, 1, 'n= keys at most');

# binary key values and addresses
http_get($port, '/addr') for 1 .. 5;
($code, $data) = $api->get('1/rules/ip/top');
is_deeply($data->{keys}, [ { key => '127.0.0.1', rejected => 2,
                             requests => 2 } ],
          'an address rule shows the address');
is(code_status(as('/fw', "k\x01\xff")), '200 PASSED', 'a binary key passes');
as('/fw', "k\x01\xff") for 1 .. 5;
($code, $data) = $api->get('1/rules/fw/top');
is($data->{keys}[0]{key}, 'k\\x01\\xff', 'a binary key as the log shows it');

# ------------------------------------------- a key's state, never counted
sub state_of {
    my ($rule, $key) = @_;
    my ($c, $d) = $api->get("1/rules/$rule/keys/" . RlTest::Api::enc($key));
    return $c == 200 ? $d : { code => $c, data => $d };
}
my $s = state_of('four', 'nobody');
is_deeply($s, { key => 'nobody', limit => 4, remaining => 4, reset => 0,
                blocked => undef, override => undef },
          'a key never seen reads as whole');
$s = state_of('four', 'alice');
is($s->{remaining}, 0, 'alice has nothing left');
my $rej = as('/a', 'alice')->{headers};
ok(abs($s->{reset} - $rej->{'x-ratelimit-reset'}) <= 1,
   "until it frees one, as the next 429 says ($s->{reset} s, "
   . "$rej->{'x-ratelimit-reset'} s)");

# what Redis holds of a key value: its keys and their values
sub held {
    my ($key) = @_;
    return join "\n", map { "$_ " . $r->cli('--no-raw', 'DUMP', $_) }
                      sort split /\n/, $r->cli('KEYS', "rl:{$key}*");
}
for my $alg (qw(fw sw sl tb lb gc mfw mtb mgc)) {
    my $key = "st-$alg";
    # not across a minute's end, where a fixed window's key expires
    # between the reads (as it did in a CI run)
    wait_until(sub { my $at = time % 60; $at >= 1 && $at < 55 },
               timeout => 10);
    as("/$alg", $key) for 1 .. 2;
    my $before = held($key);
    my $a = state_of($alg, $key);
    my $b = state_of($alg, $key);
    is(held($key), $before, "$alg: reading changes nothing in Redis");
    # reset counts whole seconds down to a fixed instant: the second
    # read may come after the clock passed one
    my %a = (%$a, reset => 0);
    my %b = (%$b, reset => 0);
    is_deeply(\%a, \%b, "$alg: reading twice reads the same");
    ok($a->{reset} - $b->{reset} == 0 || $a->{reset} - $b->{reset} == 1,
       "$alg: and the same reset, or a second less ($a->{reset}, "
       . "$b->{reset})");
    my $next = as("/$alg", $key)->{headers};
    is($next->{'x-ratelimit-remaining'}, $a->{remaining} - 1,
       "$alg: the next request has what the read said, less itself "
       . "($a->{remaining} - 1)");
    is($a->{limit}, $next->{'x-ratelimit-limit'}, "$alg: and its limit");
}
state_of('four', 'carol') for 1 .. 5;
is(as('/a', 'carol')->{headers}{'x-ratelimit-remaining'}, 3,
   'five reads took nothing from carol');

# ------------------------------------------------------------- writes
sub enc { RlTest::Api::enc($_[0]) }
($code, $data) = $api->call('POST', '1/rules/four/keys/dave/block',
                            { ttl => 600, reason => 'abuse, ticket 4711' });
is($code, 201, 'a block: 201');
is_deeply($data, { key => 'dave', blocked => { ttl => 600,
                   reason => 'abuse, ticket 4711' } }, 'it says what it did');
is($r->cli('GET', 'rl:{dave}'), 'abuse, ticket 4711',
   "written as the block of SPEC 4, the rule's prefix");
my $ttl = $r->cli('TTL', 'rl:{dave}');
ok($ttl > 590 && $ttl <= 600, "with its TTL ($ttl)");
is(code_status(as('/a', 'dave')), '429 REJECTED', 'dave is rejected now');
is(code_status(as('/both', 'dave')), '429 REJECTED',
   'by every rule of the prefix');
is(code_status(as('/both2', 'dave')), '200 PASSED',
   'but not another prefix');
$s = state_of('four', 'dave');
is($s->{blocked}{reason}, 'abuse, ticket 4711', 'the state says blocked');
ok($s->{blocked}{ttl} > 590, 'for how long');
is($s->{remaining}, 0, 'nothing left');
like($ng->error_log_text,
     qr/\[notice\].*rl_api: 127\.0\.0\.1 blocked key "dave" of rule "four" in zone "main", reason "abuse, ticket 4711" for 600 s \(was: nothing\)/,
     'the write is logged with who, what and what was there');

($code) = $api->call('DELETE', '1/rules/four/keys/dave/block');
is($code, 204, 'unblock: 204');
is($r->cli('EXISTS', 'rl:{dave}'), 0, 'the block is gone');
is(code_status(as('/a', 'dave')), '200 PASSED',
   'dave passes at once: the deny cache forgot him');

# a block without a TTL, a reason that would read as an override
($code, $data) = $api->call('POST', '1/rules/four/keys/erin/block',
                            { reason => 'limit exceeded' });
is($code, 201, 'a block without ttl');
is($data->{blocked}{ttl}, -1, 'lasts until lifted');
is($r->cli('TTL', 'rl:{erin}'), -1, 'no TTL in Redis');
is(code_status(as('/a', 'erin')), '429 REJECTED', 'never an override');

# overrides, kept by a block and back when it is lifted
($code, $data) = $api->call('PUT', '1/rules/four/keys/fred/override',
                            { limit => 10 });
is($code, 200, 'an override: 200');
is_deeply($data, { key => 'fred', override => 10, ttl => -1 },
          'it says what it did');
is($r->cli('GET', 'rl:{fred}'), 'limit four=10', 'NAME=N');
$api->call('PUT', '1/rules/shared/keys/fred/override?zone=main',
           { limit => 7, ttl => 300 });
is($r->cli('GET', 'rl:{fred}'), 'limit four=10 shared=7',
   "another rule's entry is kept");
$ttl = $r->cli('TTL', 'rl:{fred}');
ok($ttl > 290 && $ttl <= 300, "a ttl is the string's ($ttl)");
my $h = as('/a', 'fred')->{headers};
is($h->{'x-ratelimit-limit'}, 10, 'the next request has the new limit');
is($h->{'x-ratelimit-remaining'}, 9, 'and counts in it');
$s = state_of('four', 'fred');
is($s->{override}, 10, 'the state says so');
is($s->{limit}, 10, 'and its limit');
$api->call('POST', '1/rules/four/keys/fred/block', { ttl => 60 });
is(code_status(as('/a', 'fred')), '429 REJECTED', 'blocked over an override');
$s = state_of('four', 'fred');
is($s->{override}, 10, 'which the block keeps');
$api->call('DELETE', '1/rules/four/keys/fred/block');
is($r->cli('GET', 'rl:{fred}'), 'limit four=10 shared=7',
   'and gives back when lifted');
$ttl = $r->cli('TTL', 'rl:{fred}');
ok($ttl > 200 && $ttl <= 300, "with what its TTL had left ($ttl)");
is(as('/a', 'fred')->{headers}{'x-ratelimit-limit'}, 10, 'in force again');
($code) = $api->call('DELETE', '1/rules/four/keys/fred/override');
is($code, 204, 'an override removed: 204');
is($r->cli('GET', 'rl:{fred}'), 'limit shared=7', "only that rule's");
$api->call('DELETE', '1/rules/shared/keys/fred/override?zone=main');
is($r->cli('EXISTS', 'rl:{fred}'), 0, 'the last one takes the string');
is(as('/a', 'fred')->{headers}{'x-ratelimit-limit'}, 4, 'back to N');

# reset
is(code_status(as('/a', 'alice')), '429 REJECTED', 'alice is still limited');
($code) = $api->call('DELETE', '1/rules/four/keys/alice');
is($code, 204, 'a reset: 204');
$h = as('/a', 'alice')->{headers};
is($h->{'x-rl-status'}, 'PASSED', 'alice passes at once');
is($h->{'x-ratelimit-remaining'}, 3, 'from a whole window');
like($ng->error_log_text, qr/rl_api: 127\.0\.0\.1 reset key "alice" of rule "four" in zone "main" \(1 states forgotten\)/,
     'logged');

# an address rule takes the address
is(code_status(http_get($port, '/addr')), '429 REJECTED', '127.0.0.1 is limited');
($code) = $api->call('DELETE', '1/rules/ip/keys/127.0.0.1');
is($code, 204, 'reset by its address');
is(code_status(http_get($port, '/addr')), '200 PASSED', 'and passes');
($code) = $api->call('POST', '1/rules/ip/keys/127.0.0.1/block', {});
is(code_status(http_get($port, '/addr')), '429 REJECTED',
   'blocked by its address: the 4 bytes');
is($r->cli('EVAL', q{return redis.call('EXISTS',
                 'rl:{' .. string.char(127, 0, 0, 1) .. '}')}, 0), 1,
   'the block is the bytes of the address');
$api->call('DELETE', '1/rules/ip/keys/127.0.0.1/block');
is(code_status(http_get($port, '/addr')), '200 PASSED', 'unblocked');
($code, $data) = $api->get('1/rules/ip/keys/::ffff:127.0.0.1');
is($data->{key}, '127.0.0.1', 'an IPv4-mapped address is the IPv4 one');

# a binary key value, in the path or (with a NUL byte) in key=
($code, $data) = $api->call('POST', '1/rules/fw/keys/' . enc("k\x01\xff")
                            . '/block', {});
is($code, 201, 'a binary key blocked');
is($data->{key}, 'k\\x01\\xff', 'shown as the log shows it');
is(code_status(as('/fw', "k\x01\xff")), '429 REJECTED', 'and rejected');
($code, $data) = $api->get('1/rules/fw/keys/?key=' . enc("n\x00l"));
is($code, 200, 'a NUL byte goes in key=');
is($data->{key}, 'n\\x00l', 'read');

# a lease of a blocked key goes at once
my @hot = map { code_status(as('/lease', 'hot')) } 1 .. 40;
is($hot[-1], '200 PASSED', 'a hot key in a lease zone');
$api->call('POST', '1/rules/hot/keys/hot/block', {});
is(code_status(as('/lease', 'hot')), '429 REJECTED',
   'blocked at once: its lease was dropped');
$api->call('DELETE', '1/rules/hot/keys/hot/block');
is(code_status(as('/lease', 'hot')), '200 PASSED', 'and passes when lifted');

# ------------------------------------------------------- embedded store
as('/mem', 'm1') for 1 .. 3;
$s = state_of('mem', 'm1');
is_deeply([ @$s{qw(limit remaining)} ], [5, 2], 'an embedded key');
($code) = $api->call('DELETE', '1/rules/mem/keys/m1');
is($code, 204, 'reset');
is(state_of('mem', 'm1')->{remaining}, 5, 'whole again');

# blocks and overrides of the embedded store: in its shared memory
is(code_status(as('/mem', 'm2')), '200 PASSED', 'm2 passes');
($code, $data) = $api->call('POST', '1/rules/mem/keys/m2/block',
                            { ttl => 600, reason => 'embedded abuse' });
is($code, 201, 'an embedded zone takes a block');
$res = as('/mem', 'm2');
is(code_status($res), '429 REJECTED', 'm2 is rejected');
is($res->{headers}{'retry-after'}, 60, 'Retry-After: what it has left, '
   . 'at most a minute');
is(code_status(as('/mfw', 'm2')), '429 REJECTED',
   'by every rule of the zone');
is(code_status(as('/a', 'm2')), '200 PASSED', 'not by a Redis zone');
$s = state_of('mem', 'm2');
is_deeply([ $s->{blocked}{reason}, $s->{remaining} ],
          [ 'embedded abuse', 0 ], 'the state says blocked');
ok($s->{blocked}{ttl} > 590 && $s->{blocked}{ttl} <= 600,
   "for what it has left ($s->{blocked}{ttl})");
($code) = $api->call('PUT', '1/rules/mem/keys/m2/override',
                     { limit => 50, ttl => 300 });
is($code, 200, 'an override while blocked');
is(state_of('mem', 'm2')->{override}, 50, 'kept beside the block');
($code) = $api->call('DELETE', '1/rules/mem/keys/m2/block');
is($code, 204, 'unblocked');
$res = as('/mem', 'm2');
is(code_status($res), '200 PASSED', 'm2 passes at once');
is($res->{headers}{'x-ratelimit-limit'}, 50, 'under its override');
is($res->{headers}{'x-ratelimit-remaining'}, 48,
   'which counts what it used before');
is(as('/mfw', 'm2')->{headers}{'x-ratelimit-limit'}, 5,
   'an override names its rule');
$s = state_of('mem', 'm2');
is_deeply([ $s->{override}, $s->{limit}, $s->{blocked} ], [ 50, 50, undef ],
          'the state says so');
($code) = $api->call('DELETE', '1/rules/mem/keys/m2/override');
is($code, 204, 'the override removed');
is(as('/mem', 'm2')->{headers}{'x-ratelimit-limit'}, 5, 'back to N');
like($ng->error_log_text,
     qr/rl_api: 127\.0\.0\.1 unblocked key "m2" of rule "mem" in zone "mem" \(was: "embedded abuse\\x0a\(override kept\) limit mem=50"\)/,
     'logged as a Redis string would say it');
# an embedded sliding_log under an override of another N: its ring
as('/msl', 'm3') for 1 .. 3;
$api->call('PUT', '1/rules/msl/keys/m3/override', { limit => 8 });
$res = as('/msl', 'm3');
is($res->{headers}{'x-ratelimit-remaining'}, 4,
   'a sliding_log keeps its times under an override of another N');
$api->call('DELETE', '1/rules/msl/keys/m3/override');
is(code_status(as('/msl', 'm3')), '429 REJECTED',
   'and back under its own');

# ------------------------------------------------------------- errors
sub error_is {
    my ($what, $got, $status, $errcode) = @_;
    my ($c, $d, $res) = @$got;
    is($c, $status, "$what: $status");
    is(($d // {})->{error}{code}, $errcode, "$what: $errcode");
    is(($d // {})->{error}{status}, $status, "$what: its status in the JSON");
    ok(!grep({ /^access-control-/ } keys %{ $res->{headers} }),
       "$what: no CORS header");
}
error_is('an unknown path', [ $api->get('1/nothing') ], 404, 'PathNotFound');
error_is('an unknown version', [ $api->get('2/rules') ], 404, 'PathNotFound');
error_is('an unknown rule', [ $api->get('1/rules/none/top') ], 404,
         'RuleNotFound');
error_is('a name in two zones', [ $api->get('1/rules/shared/keys/k') ], 400,
         'RuleAmbiguous');
is(($api->get('1/rules/shared/keys/k?zone=other'))[0], 200,
   'zone= says which');
error_is('zone= of none', [ $api->get('1/rules/shared/top?zone=nope') ], 404,
         'RuleNotFound');
error_is('a bad n=', [ $api->get('1/rules/four/top?n=x') ], 400,
         'ArgumentInvalid');
error_is('a bad address', [ $api->get('1/rules/ip/keys/300.1.1.1') ], 400,
         'KeyInvalid');
error_is('a bad key= escape', [ $api->get('1/rules/four/keys/?key=%zz') ],
         400, 'KeyInvalid');
is_deeply([ map { $_->{remaining} } ($api->get('1/rules/four/keys/'
                                                . ('v' x 4097)))[1] ],
          [4], 'a value of 4,097 bytes: read, as any a request line carries');
my @m = $api->call('PATCH', '1/rules/four/keys/k/block');
error_is('PATCH', \@m, 405, 'MethodNotAllowed');
is($m[2]{headers}{allow}, 'POST, DELETE', 'with Allow');
error_is('POST on the rules', [ $api->call('POST', '1/rules', {}) ], 405,
         'MethodNotAllowed');
error_is('no JSON',
         [ $api->call('POST', '1/rules/four/keys/k/block', '{"ttl":',) ],
         400, 'BodyInvalid');
error_is('a ttl that is no number',
         [ $api->call('POST', '1/rules/four/keys/k/block', { ttl => 'x' }) ],
         400, 'BodyInvalid');
error_is('a member not asked',
         [ $api->call('POST', '1/rules/four/keys/k/block', { limit => 3 }) ],
         400, 'BodyInvalid');
error_is('an override without limit',
         [ $api->call('PUT', '1/rules/four/keys/k/override', { ttl => 3 }) ],
         400, 'BodyInvalid');
error_is('a limit of 0',
         [ $api->call('PUT', '1/rules/four/keys/k/override', { limit => 0 }) ],
         400, 'BodyInvalid');
error_is('a reason with a newline',
         [ $api->call('POST', '1/rules/four/keys/k/block',
                      { reason => "a\nb" }) ], 400, 'BodyInvalid');
error_is('another content type',
         [ $api->call('POST', '1/rules/four/keys/k/block', '{}',
                      type => 'text/plain') ], 415, 'BodyInvalid');
error_is('a form',
         [ $api->call('POST', '1/rules/four/keys/k/block', 'ttl=5',
                      type => 'application/x-www-form-urlencoded') ], 415,
         'BodyInvalid');
error_is('a huge body',
         [ $api->call('POST', '1/rules/four/keys/k/block',
                      '{"reason": "' . ('r' x 5000) . '"}') ], 413,
         'BodyInvalid');
error_is('a write without write=on',
         [ $ro->call('POST', '1/rules/four/keys/k/block', {}) ], 403,
         'WriteForbidden');
error_is('a reset without write=on',
         [ $ro->call('DELETE', '1/rules/four/keys/alice') ], 403,
         'WriteForbidden');
is($r->cli('EXISTS', 'rl:{k}'), 0, 'none of them wrote anything');
is(($ro->get('1/rules/four/keys/alice'))[0], 200, 'reads are allowed there');

# Redis stopped: the store cannot answer, within a bound; nothing hangs
$r->kill('STOP');
my $t0 = now();
error_is('Redis stopped', [ $api->get('1/rules/four/keys/alice',
                                      timeout => 10) ], 503,
         'StoreUnavailable');
my $took = now() - $t0;
ok($took < 8, sprintf('answered within the zone\'s timeout (%.1f s)', $took));
my @w = $api->call('POST', '1/rules/four/keys/gina/block', {},
                   timeout => 10);
error_is('a write, Redis stopped', \@w, 503, 'StoreUnavailable');
like($w[1]{error}{text}, qr/may still/,
     'which says the write may still be applied when Redis answers');
is(($api->get('1/rules'))[0], 200, 'what the instance knows reads on');
$r->kill('CONT');
ok(wait_until(sub { ($api->get('1/rules/four/keys/alice'))[0] == 200 },
              timeout => 15), 'and the key once Redis is back');

unlike($ng->error_log_text, qr/\[(alert|crit|emerg)\]/, 'no alert');
done_testing();
