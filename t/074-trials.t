# Trials (SPEC section 11): PUT /1/rules/NAME/trial decides each request
# of the rule again, in dry run at the trial's N, on state of its own,
# in the same script call. It counts exactly what a dry_run rule at that
# N configured beside the rule counts (compared here with one, under
# the same traffic: a Redis zone, a lease= zone, an embedded zone, on
# two instances), never touches the rule's own state, headers or
# $rl_status, adds no round trip, lists the keys it would have rejected
# (top?trial=1), is summed by the fleet and ends by itself. A trial
# needs a ttl of at most a day, and a concurrency= rule takes none.

use lib 't/lib';
use RlTest;
use RlTest::Api;
use Time::HiRes qw(time sleep);

my $r = start_redis();
my $config = <<'CONF';
    rl_fleet name=$Name interval=1s;
    rl_zone main redis=127.0.0.1:$RedisPort timeout=2s;
    rl_zone leased redis=127.0.0.1:$RedisPort timeout=2s lease=5s;
    rl_zone mem;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /r {
            rl_rule zone=main key=$http_x_key rate=8r/m name=real;
            rl_rule zone=main key=$http_x_key rate=3r/m name=beside dry_run;
            empty_gif;
        }
        location /l {
            rl_rule zone=leased key=$http_x_key rate=1000r/m name=lreal;
            rl_rule zone=leased key=$http_x_key rate=20r/m name=lbeside
                    dry_run;
            empty_gif;
        }
        location /m {
            rl_rule zone=mem key=$http_x_key rate=8r/m name=mreal;
            rl_rule zone=mem key=$http_x_key rate=3r/m name=mbeside dry_run;
            empty_gif;
        }
        location /u { rl_rule zone=main key=$http_x_key rate=8r/m name=real;
                      empty_gif; }
        location /c { rl_rule zone=main key=$http_x_key concurrency=3
                              name=slots; empty_gif; }
        location /rl/ { rl_api write=on; }
    }
CONF
my @ng = map { start_nginx(redis => $r, workers => 2, vars => { Name => "i$_" },
                           config => $config) } 1 .. 2;
my @api = map { RlTest::Api->new($_->port, '/rl/') } @ng;

sub as {
    my ($i, $path, $key) = @_;
    return http_get($ng[$i]->port, $path, 'X-Key' => $key);
}

sub counts {
    my ($i, $name) = @_;
    my (undef, $d) = $api[$i]->get("1/rules/$name");
    return $d;
}

for my $case (['real', 'beside', '/r', 3, 'a Redis zone', 'main'],
              ['lreal', 'lbeside', '/l', 20, 'a lease= zone', 'leased'],
              ['mreal', 'mbeside', '/m', 3, 'an embedded zone', 'mem']) {
    my ($real, $beside, $path, $n, $what, $zone) = @$case;
    my ($code, $data) = $api[0]->call('PUT', "1/rules/$real/trial",
                                      { limit => $n, ttl => 120 });
    is($code, 200, "$what: a trial at $n");
    is_deeply($data->{trial}{limit}, $n, 'its answer');
    # the other instance runs it too (embedded: this instance alone)
    my $both = $what ne 'an embedded zone';
    ok(wait_until(sub { ((counts(1, $real) // {})->{trial} // {})->{limit}
                        // 0 == $n }, timeout => 3), "$what: B runs it")
        if $both;
    my @before = map { counts($_, $beside)->{requests} } 0, 1;
    # traffic: keys under and over both limits, the rule's own rejections
    # among them
    my %status;
    for my $round (1 .. 12) {
        for my $key (qw(a b c d)) {
            next if $key eq 'b' && $round > 4;
            next if $key eq 'c' && $round > 2;
            for my $i ($both ? (0, 1) : (0)) {
                my $res = as($i, $path, $key);
                $status{$res->{headers}{'x-rl-status'} // ''}++;
            }
        }
    }
    for my $i ($both ? (0, 1) : (0)) {
        my $after = counts($i, $beside)->{requests};
        my $rule = counts($i, $real);
        my %dry = (passed => $after->{passed} - $before[$i]{passed},
                   rejected => $after->{rejected_dry_run}
                               - $before[$i]{rejected_dry_run});
        is_deeply({ passed => $rule->{trial}{passed},
                    rejected => $rule->{trial}{rejected} }, \%dry,
                  "$what, instance $i: the trial counts what the dry_run "
                  . "rule beside counts ($dry{passed} passed, "
                  . "$dry{rejected} rejected)");
        ok($dry{rejected} > 0, "$what, instance $i: some rejected");
    }
    # the keys it would have rejected
    ($code, $data) = $api[0]->get("1/rules/$real/top?trial=1");
    is($code, 200, "$what: top?trial=1");
    ok((grep { $_->{key} eq 'a' } @{ $data->{keys} }),
       "$what: lists the key the trial would reject");
    if ($both) {
        my $sum = 0;
        ok(wait_until(sub {
            my (undef, $f) = $api[1]->get("1/fleet/rules?zone=$zone");
            my ($e) = grep { $_->{name} eq $real } @{ $f // [] };
            $sum = $e && $e->{trial} ? $e->{trial}{rejected} : -1;
            $sum == counts(0, $real)->{trial}{rejected}
                    + counts(1, $real)->{trial}{rejected};
        }, timeout => 5), "$what: the fleet sums the trial ($sum)");
    }
    ($code) = $api[0]->call('DELETE', "1/rules/$real/trial");
    is($code, 204, "$what: the trial ended");
}

# the rule itself: untouched by a trial
my ($code) = $api[0]->call('PUT', '1/rules/real/trial',
                           { limit => 1, ttl => 60 });
wait_until(sub { (counts(1, 'real')->{trial} // {})->{limit} }, timeout => 3);
my @st = map { code_status(as(1, '/u', 'untouched')) } 1 .. 3;
is_deeply(\@st, [('200 PASSED') x 3],
          'a trial at 1 rejects nothing of the rule');
my $res = as(1, '/u', 'untouched');
is_deeply([ @{ $res->{headers} }{qw(x-ratelimit-limit x-ratelimit-remaining
                                    x-rl-status)} ], [8, 4, 'PASSED'],
          'its headers and status are the rule\'s (8, 8 - 4)');
my @keys = split /\n/, $r->cli('KEYS', 'rl:{untouched}:*');
is(scalar @keys, 2, 'two states: the rule\'s and the trial\'s own');

# no round trip of its own: a request alone is one call with the trial
$r->cli('CONFIG', 'RESETSTAT');
as(0, '/r', "rt$_") for 1 .. 10;
is($r->calls('evalsha'), 10, 'ten requests, ten calls, the trial riding '
                             . 'in them');

# it ends by itself
($code) = $api[0]->call('PUT', '1/rules/real/trial', { limit => 2, ttl => 2 });
ok(wait_until(sub { !counts(1, 'real')->{trial} }, timeout => 5),
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
