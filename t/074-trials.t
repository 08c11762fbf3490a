# Trials (SPEC section 11): PUT /1/rules/NAME/trial decides each request
# of the rule as the rule would at the trial's N, in the rule's place,
# on state of its own, in the same script call; its state takes a
# request when that world admits it (the trial and every other rule of
# the request admit it). A raise from 5 to 20 over 30 requests of a key
# passes 20 and rejects 10; a cut to 2 of a key whose real state was
# full passes 2 of its next 10 (a Redis zone and a lease= zone over two
# instances, summed by the fleet; an embedded zone on one). A request
# that a rule of another zone rejects is not counted in the trial's
# state (given back as the rule's count is). The rule's own decisions,
# state, headers and $rl_status are untouched; the trial adds no round
# trip, lists the keys it would have rejected (top?trial=1) and ends by
# itself. A trial needs a ttl of at most a day, and a concurrency= rule
# takes none.

use lib 't/lib';
use RlTest;
use RlTest::Api;

my $r = start_redis();
# the rules: a token bucket of 5 an hour (no window to cross meanwhile),
# its default burst following a trial's N
my $tb = 'key=$http_x_key algorithm=token_bucket';
my $config = <<"CONF";
    rl_fleet name=\$Name interval=1s;
    rl_zone main redis=127.0.0.1:\$RedisPort timeout=5s;
    rl_zone leased redis=127.0.0.1:\$RedisPort timeout=5s lease=5s;
    rl_zone gate redis=127.0.0.1:\$RedisPort prefix=g: timeout=5s;
    rl_zone mem;
    rl_zone mem2;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /r { rl_rule zone=main $tb rate=5r/h name=real; empty_gif; }
        location /l { rl_rule zone=leased $tb rate=5r/h name=lreal;
                      empty_gif; }
        location /m { rl_rule zone=mem $tb rate=5r/h name=mreal; empty_gif; }
        # the rule of /r and /m behind a rule of another zone (of a
        # variable cost, which the deny cache never answers for: each
        # request asks its store)
        location /x { rl_rule zone=gate $tb rate=3r/h cost=\$http_x_cost
                              name=gate;
                      rl_rule zone=main $tb rate=5r/h name=real; empty_gif; }
        location /g { rl_rule zone=gate $tb rate=3r/h cost=\$http_x_cost
                              name=gate; empty_gif; }
        location /mx { rl_rule zone=mem2 $tb rate=3r/h name=mgate;
                       rl_rule zone=mem $tb rate=5r/h name=mreal; empty_gif; }
        location /mg { rl_rule zone=mem2 $tb rate=3r/h name=mgate; empty_gif; }
        location /u { rl_rule zone=main key=\$http_x_key rate=8r/m name=u;
                      empty_gif; }
        location /c { rl_rule zone=main key=\$http_x_key concurrency=3
                              name=slots; empty_gif; }
        location /rl/ { rl_api write=on; }
    }
CONF
my @ng = map { start_nginx(redis => $r, workers => 2, ready => 2,
                           vars => { Name => "i$_" }, config => $config) }
             1 .. 2;
my @api = map { RlTest::Api->new($_->port, '/rl/') } @ng;

sub as {
    my ($i, $path, $key) = @_;
    return http_get($ng[$i]->port, $path, 'X-Key' => $key, 'X-Cost' => 1);
}

sub rule {
    my ($i, $name) = @_;
    my (undef, $d) = $api[$i]->get("1/rules/$name");
    return $d // {};
}

sub trial {
    my ($i, $name) = @_;
    return rule($i, $name)->{trial} // {};
}

# the trial's figures, summed over the instances
sub figures {
    my ($name, @on) = @_;
    my ($passed, $rejected) = (0, 0);
    for my $i (@on) {
        my $t = trial($i, $name);
        $passed += $t->{passed} // 0;
        $rejected += $t->{rejected} // 0;
    }
    return "passed $passed, rejected $rejected";
}

# starts a trial of N on the rule, run by every instance named
sub start_trial {
    my ($name, $n, $what, @on) = @_;
    my ($code, $data) = $api[0]->call('PUT', "1/rules/$name/trial",
                                      { limit => $n, ttl => 300 });
    is_deeply([$code, $data->{trial}{limit}], [200, $n],
              "$what: a trial at $n");
    for my $i (@on) {
        ok(wait_until(sub { (trial($i, $name)->{limit} // -1) == $n
                            && trial($i, $name)->{passed} == 0
                            && trial($i, $name)->{rejected} == 0 },
                      timeout => 2 * a_second()),
           "$what: instance $i runs it, from nothing");
    }
}

sub end_trial {
    my ($name, $what) = @_;
    my ($code) = $api[0]->call('DELETE', "1/rules/$name/trial");
    is($code, 204, "$what: the trial ended");
}

# $n requests of a key, over the instances in turn: their statuses
sub traffic {
    my ($path, $key, $n, @on) = @_;
    my %status;
    for my $k (0 .. $n - 1) {
        my $res = as($on[$k % @on], $path, $key);
        $status{code_status($res)}++;
    }
    return join ', ', map { "$_ x$status{$_}" } sort keys %status;
}

# what the fleet sums of the rule's trial, once its records caught up
sub fleet_says {
    my ($zone, $name, $want) = @_;
    my $got = '';
    wait_until(sub {
        my (undef, $f) = $api[1]->get("1/fleet/rules?zone=$zone");
        my ($e) = grep { $_->{name} eq $name } @{ $f // [] };
        $got = $e && $e->{trial}
                   ? "passed $e->{trial}{passed}, "
                     . "rejected $e->{trial}{rejected}"
                   : 'none';
        $got eq $want;
    }, timeout => 4 * a_second());
    return $got;
}

sub granted {
    my (undef, $z) = $api[0]->get('1/zones');
    return $z->{leased}{lease}{granted} // 0;
}

# a trial of N on the case's rule, then $n requests of a key over its
# instances: the rule's statuses, the trial's figures summed (and the
# fleet's sum), no lease taken meanwhile
sub try_limit {
    my ($case, $how, $n, $key, $requests, $statuses, $figures) = @_;
    my ($name, $path, $what, $zone, @on) = @$case;
    start_trial($name, $n, "$what, $how", @on);
    my $granted = granted();
    is(traffic($path, $key, $requests, @on), $statuses,
       "$what, $how: the rule decides as it did");
    is(granted(), $granted, "$what, $how: no lease while a trial runs")
        if $path eq '/l';
    is(figures($name, @on), $figures,
       "$what, $how: the trial at $n, of $requests: $figures");
    is(fleet_says($zone, $name, $figures), $figures,
       "$what, $how: the fleet sums it") if $zone;
}

# (the embedded zone's trials are this instance's alone)
for my $case (['real', '/r', 'a Redis zone', 'main', 0, 1],
              ['lreal', '/l', 'a lease= zone', 'leased', 0, 1],
              ['mreal', '/m', 'an embedded zone', undef, 0]) {
    my ($name, $path, $what) = @$case;

    # a raise: the requests the rule rejects alone, the trial counts
    try_limit($case, 'raise', 20, "raise-$name", 30,
              '200 PASSED x5, 429 REJECTED x25', 'passed 20, rejected 10');
    my ($code, $data) = $api[0]->get("1/rules/$name/top?trial=1");
    ok($code == 200 && (grep { $_->{key} eq "raise-$name" }
                             @{ $data->{keys} }),
       "$what: top?trial=1 lists the key the trial rejected");
    end_trial($name, "$what, raise");

    # a cut: a key the rule has used up before the trial began
    is(traffic($path, "cut-$name", 8, 0), '200 PASSED x5, 429 REJECTED x3',
       "$what, cut: the key used up first");
    try_limit($case, 'cut', 2, "cut-$name", 10, '429 REJECTED x10',
              'passed 2, rejected 8');
    end_trial($name, "$what, cut");
}

# a rule of another zone rejects: the trial's world rejects the request
# too, and what its state took in its own call is given back
for my $case (['real', '/r', '/x', '/g', 'a Redis zone'],
              ['mreal', '/m', '/mx', '/mg', 'an embedded zone']) {
    my ($name, $alone, $behind, $gate, $what) = @$case;
    start_trial($name, 20, "$what behind a gate", 0);
    is(traffic($gate, 'gated', 3, 0), '200 PASSED x3',
       "$what: the gate used up");
    is(traffic($alone, 'gated', 5, 0), '200 PASSED x5',
       "$what: the rule used up");
    is(traffic($behind, 'gated', 10, 0), '429 REJECTED x10',
       "$what: behind the gate, rejected");
    is(figures($name, 0), 'passed 15, rejected 0',
       "$what: the trial admits them all");
    is(traffic($alone, 'gated', 20, 0), '429 REJECTED x20',
       "$what: the rule alone");
    is(figures($name, 0), 'passed 30, rejected 5',
       "$what: the trial had counted 5 (the gate rejected the 10 "
       . "others): it passes 15 more");
    end_trial($name, "$what behind a gate");
}

# the rule itself: untouched by a trial
start_trial('u', 1, 'untouched', 0, 1);
my @st = map { code_status(as(1, '/u', 'untouched')) } 1 .. 3;
is_deeply(\@st, [('200 PASSED') x 3],
          'a trial at 1 rejects nothing of the rule');
my $res = as(1, '/u', 'untouched');
is_deeply([ @{ $res->{headers} }{qw(x-ratelimit-limit x-ratelimit-remaining
                                    x-rl-status)} ], [8, 4, 'PASSED'],
          'its headers and status are the rule\'s (8, 8 - 4)');
is(figures('u', 1), 'passed 1, rejected 3', 'the trial at 1: 1 of 4');
my @keys = split /\n/, $r->cli('KEYS', 'rl:{untouched}:*');
is(scalar @keys, 2, 'two states: the rule\'s and the trial\'s own');

# no round trip of its own: a request alone is one call with the trial
$r->cli('CONFIG', 'RESETSTAT');
as(0, '/u', "rt$_") for 1 .. 10;
is($r->calls('evalsha'), 10, 'ten requests, ten calls, the trial riding '
                             . 'in them');

# it ends by itself
($code) = $api[0]->call('PUT', '1/rules/u/trial', { limit => 2, ttl => 2 });
ok(wait_until(sub { (trial(1, 'u')->{limit} // -1) == 2 },
              timeout => 2 * a_second()), 'a trial of 2 s runs');
ok(wait_until(sub { !rule(1, 'u')->{trial} }, timeout => 5),
   'a trial of 2 s ends by itself');

# bad input
for my $case ([{ limit => 2 }, 'no ttl'],
              [{ limit => 2, ttl => 86401 }, 'over a day'],
              [{ limit => -2, ttl => 60 }, 'a negative limit'],
              [{ limit => 2, ttl => 60, reason => 'x' }, 'a reason']) {
    my ($body, $what) = @$case;
    my ($c, $d) = $api[0]->call('PUT', '1/rules/real/trial', $body);
    is_deeply([$c, $d->{error}{code}], [400, 'BodyInvalid'], "$what: 400");
}
my ($c, $d) = $api[0]->call('PUT', '1/rules/slots/trial',
                            { limit => 2, ttl => 60 });
is_deeply([$c, $d->{error}{code}], [400, 'BodyInvalid'],
          'a concurrency= rule takes no trial');
ok(wait_until(sub { $r->cli('HLEN', 'rl:{fleet}:main:trial') == 0 },
              timeout => 3), 'nothing written');

$_->stop for @ng;
done_testing();
