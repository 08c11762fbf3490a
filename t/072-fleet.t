# The fleet's view (SPEC section 11) of three instances on one Redis,
# each publishing its record every interval (1 s here): GET /1/fleet
# lists the three, with their versions, workers and up; /1/fleet/rules
# sums each rule's counters and usage exactly (the sum of the instances'
# own /1/rules); /1/fleet/rules/NAME/top merges their top keys. A
# fourth instance defining a rule differently shows as drift; a stopped
# one is gone after 3 intervals; two instances of one name are reported,
# not merged. rl_fleet off publishes nothing; bad zone= and Redis gone
# answer errors.

use lib 't/lib';
use RlTest;
use RlTest::Api;
use Time::HiRes qw(time sleep);

my $r = start_redis();
sub config {
    my ($name, $rate) = @_;
    return <<"CONF";
    rl_fleet name=$name interval=1s;
    rl_zone main redis=127.0.0.1:\$RedisPort timeout=2s;
    rl_zone other redis=127.0.0.1:\$RedisPort timeout=2s prefix=o:;
    rl_zone mem;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /a { rl_rule zone=main key=\$http_x_key rate=$rate
                              name=per; empty_gif; }
        location /d { rl_rule zone=main key=\$http_x_key rate=3r/m
                              algorithm=fixed_window name=daily; empty_gif; }
        location /o { rl_rule zone=other key=\$http_x_key rate=5r/m
                              name=elsewhere; empty_gif; }
        location /rl/ { rl_api write=on; }
    }
CONF
}
my @ng = map { start_nginx(redis => $r, workers => 2,
                           config => config("i$_", '4r/m')) } 1 .. 3;
my @api = map { RlTest::Api->new($_->port, '/rl/') } @ng;
sub as { http_get($ng[$_[0]]->port, $_[1], 'X-Key' => $_[2]) }

# traffic on each: some keys limited on every instance, some on one
for my $i (0 .. 2) {
    as($i, '/a', 'everywhere') for 1 .. 6;
    as($i, '/a', "only$i") for 1 .. (5 + $i);
    as($i, '/a', "fine$_") for 1 .. 3;
    as($i, '/d', 'd') for 1 .. 2;
}

# ------------------------------------------------------------ instances
my $fleet;
# (each up: published within its last intervals, which a worker slowed
# by the sanitizers beside other suites may miss for one read)
ok(wait_until(sub {
    (undef, $fleet) = $api[0]->get('1/fleet');
    $fleet && @{ $fleet->{instances} } == 3
        && !grep { !$_->{up} } @{ $fleet->{instances} };
}, timeout => 10), 'the fleet lists the three instances, up');
is_deeply([ sort map { $_->{name} } @{ $fleet->{instances} } ],
          [qw(i1 i2 i3)], 'by their names');
my ($one) = grep { $_->{name} eq 'i2' } @{ $fleet->{instances} };
is_deeply([ @$one{qw(version workers interval)}, $one->{up} ? 1 : 0,
            $one->{gone} ? 1 : 0, scalar @{ $one->{drift} } ],
          ['0.2.0', 2, 1, 1, 0, 0], 'each with its version, workers, up');
like($one->{id}, qr/^[0-9a-f]{16}$/, 'an id');
ok($one->{seen} <= 2 && abs($one->{started} - time) < 60,
   'seen lately, started now');
is($fleet->{zone}, 'main', 'of the first zone with Redis');

# ------------------------------------------------------------ sums
sub rule_of { my ($list, $name) = @_; (grep { $_->{name} eq $name } @$list)[0] }
# (the records of a second ago: wait until they carry this traffic)
my ($fr, @own);
ok(wait_until(sub {
    @own = map { rule_of(($api[$_]->get('1/rules'))[1], 'per') } 0 .. 2;
    (undef, my $list) = $api[1]->get('1/fleet/rules');
    $fr = rule_of($list, 'per');
    $fr && $fr->{requests}{passed} == eval { my $s = 0;
                                             $s += $_->{requests}{passed}
                                                 for @own; $s };
}, timeout => 5), 'the fleet\'s rules caught up');
for my $o (qw(passed rejected rejected_dry_run delayed error)) {
    my $sum = 0;
    $sum += $_->{requests}{$o} for @own;
    is($fr->{requests}{$o}, $sum, "$o summed exactly ($sum)");
}
for my $b (0 .. 6) {
    my $sum = 0;
    $sum += $_->{usage}[$b]{count} for @own;
    is($fr->{usage}[$b]{count}, $sum,
       "usage le=$fr->{usage}[$b]{le} summed ($sum)");
}
is($fr->{instances}, 3, 'defined on three instances');
ok(!exists $fr->{drift}, 'alike: no drift');
is_deeply([ @$fr{qw(algorithm limit window key)} ],
          ['sliding_window', 4, 60, '$http_x_key'], 'its definition');
my (undef, $other) = $api[0]->get('1/fleet/rules?zone=other');
is_deeply([ map { $_->{name} } @$other ], ['elsewhere'],
          '?zone=other: that zone\'s rules');

# ------------------------------------------------------------ top keys
my (undef, $top) = $api[2]->get('1/fleet/rules/per/top');
my %k = map { $_->{key} => $_ } @{ $top->{keys} };
is($top->{keys}[0]{key}, 'everywhere', 'the key limited everywhere first');
my %sum;
for my $i (0 .. 2) {
    my (undef, $own) = $api[$i]->get('1/rules/per/top');
    $sum{$_->{key}}{rejected} += $_->{rejected} for @{ $own->{keys} };
    $sum{$_->{key}}{instances}++ for @{ $own->{keys} };
}
is_deeply([ @{ $k{everywhere} }{qw(rejected instances)} ],
          [ @{ $sum{everywhere} }{qw(rejected instances)} ],
          'its rejections summed over the instances that saw it ('
          . "$k{everywhere}{rejected})");
is($k{everywhere}{instances}, 3, 'on all three');
is_deeply([ @{ $k{only2} }{qw(rejected instances)} ], [3, 1],
          'a key limited on one instance');
ok(!exists $k{fine1}, 'keys never limited are not listed');
(undef, $top) = $api[2]->get('1/fleet/rules/per/top?n=1');
is(scalar @{ $top->{keys} }, 1, 'n=1');
my ($c, $e) = $api[2]->get('1/fleet/rules/nope/top');
is_deeply([$c, $e->{error}{code}], [404, 'RuleNotFound'],
          'a rule no instance has: 404');

# ------------------------------------------------------------ drift
my $odd = start_nginx(redis => $r, workers => 1,
                      config => config('odd', '9r/m'));
ok(wait_until(sub {
    (undef, my $list) = $api[0]->get('1/fleet/rules');
    $fr = rule_of($list, 'per');
    $fr && $fr->{drift};
}, timeout => 5), 'a fourth instance with another rate: drift');
my @drift = sort { $a->{limit} <=> $b->{limit} } @{ $fr->{drift} };
is_deeply([ map { [ $_->{limit}, [ sort @{ $_->{instances} } ] ] } @drift ],
          [ [4, [qw(i1 i2 i3)]], [9, ['odd']] ],
          'each definition with its instances');
isnt($drift[0]{digest}, $drift[1]{digest}, 'apart by their digests');
(undef, $fleet) = $api[0]->get('1/fleet');
my ($o) = grep { $_->{name} eq 'odd' } @{ $fleet->{instances} };
is_deeply($o->{drift}, ['per'], 'the instance that drifts says which rule');

# ------------------------------------------------------------ gone
$odd->stop;
my $stopped = time;
ok(wait_until(sub {
    (undef, $fleet) = $api[0]->get('1/fleet');
    ($o) = grep { $_->{name} eq 'odd' } @{ $fleet->{instances} };
    $o && $o->{gone};
}, timeout => 8), 'a stopped instance is gone');
ok(time - $stopped >= 2, 'after 3 intervals ('
   . sprintf('%.1fs', time - $stopped) . ')');
ok(!$o->{up}, 'and not up');
(undef, my $list) = $api[0]->get('1/fleet/rules');
ok(!rule_of($list, 'per')->{drift}, 'its drift goes with it');

# ------------------------------------------------------------ one name twice
my $twin = start_nginx(redis => $r, workers => 1,
                       config => config('i1', '4r/m'));
ok(wait_until(sub {
    (undef, $fleet) = $api[0]->get('1/fleet');
    2 == grep { $_->{name} eq 'i1' && $_->{duplicate} && !$_->{gone} }
             @{ $fleet->{instances} };
}, timeout => 5), 'two instances named i1: both listed, reported');
$twin->stop;

# ------------------------------------------------------------ off, errors
my $off = start_nginx(redis => $r, workers => 1, config => <<'CONF');
    rl_fleet off;
    rl_zone main redis=127.0.0.1:$RedisPort;
    server { listen 127.0.0.1:$ServerPort;
             location /a { rl_rule zone=main key=k rate=1r/s name=per;
                           empty_gif; } }
CONF
my %before = map { $_->{id} => 1 } @{ $fleet->{instances} };
sleep 2;
(undef, $fleet) = $api[0]->get('1/fleet');
is_deeply([ grep { !$before{$_} } map { $_->{id} } @{ $fleet->{instances} } ],
          [], 'rl_fleet off publishes nothing');
$off->stop;
($c, $e) = $api[0]->get('1/fleet?zone=nope');
is_deeply([$c, $e->{error}{code}], [404, 'ZoneNotFound'], 'an unknown zone');
($c, $e) = $api[0]->get('1/fleet?zone=mem');
is($c, 400, 'an embedded zone has no fleet');
$r->kill('STOP');
($c, $e) = $api[0]->get('1/fleet/rules', timeout => 10);
is_deeply([$c, $e->{error}{code}], [503, 'StoreUnavailable'],
          'Redis stopped: 503');
$r->kill('CONT');

$_->stop for @ng;
done_testing();
