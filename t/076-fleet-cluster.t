# The fleet on a 3-master Redis Cluster (SPEC section 11): every key of
# the fleet carries one hash tag, {fleet}, so lua/fleet.lua's calls land
# on one master; three instances are listed and their counters summed;
# a live limit set through A rejects on B within a second; a trial runs
# in each key's own call on its master; a block lifted through A lets
# the key in on B within a second; the audit lists the writes; when the
# {fleet} slot moves, the fleet follows it.

use lib 't/lib';
use RlTest;
use RlTest::Api;
use RlTest::Cluster;
use Time::HiRes qw(time);

my $c = RlTest::Cluster->new(masters => 3, replicas => 0,
                             node_timeout => 1000);
my @ng;
for my $i (1 .. 3) {
    my $ng = start_nginx(workers => 2, start => 0,
                         vars => { Seed => $c->seed, Name => "c$i" },
                         config => <<'CONF');
    rl_fleet name=$Name interval=1s;
    rl_zone c cluster=$Seed timeout=5s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /t { rl_rule zone=c key=$http_x_key rate=5r/m name=t;
                      empty_gif; }
        location /rl/ { rl_api write=on; }
    }
CONF
    my ($ok, $msg) = $ng->try_start;
    BAIL_OUT("nginx on the cluster: $msg") unless $ok;
    push @ng, $ng;
}
my @api = map { RlTest::Api->new($_->port, '/rl/') } @ng;
sub st { code_status(http_get($ng[$_[0]]->port, '/t', 'X-Key' => $_[1],
                              -timeout => 10)) }

# a key value on each master, on each instance
my @M = $c->masters;
my @v = map { $c->value_on($_, prefix => 'k') } @M;
for my $i (0 .. 2) {
    st($i, $_) for @v;
}

my $fleet;
ok(wait_until(sub {
    (undef, $fleet) = $api[0]->get('1/fleet');
    $fleet && 3 == grep { !$_->{gone} } @{ $fleet->{instances} };
}, timeout => 8), 'three instances listed');
my @slots = map { $c->slot_of("rl:{fleet}:c:$_") } qw(live trial audit seen);
is(scalar(keys %{{ map { $_ => 1 } @slots }}), 1,
   'the fleet\'s keys on one slot');
my $home = $c->master_for_slot($slots[0]);
ok($c->keys_on($home, 'rl:{fleet}:c:*') >= 2, 'on its master');

my $fr;
ok(wait_until(sub {
    (undef, my $list) = $api[1]->get('1/fleet/rules');
    ($fr) = grep { $_->{name} eq 't' } @{ $list // [] };
    $fr && $fr->{requests}{passed} == 9;
}, timeout => 5), 'the counters of the three summed (9 passed)');

# a live limit through A, on B within a second
my ($code) = $api[0]->call('PUT', '1/rules/t/limit', { limit => 1 });
is($code, 200, 'a live limit set through A');
my $t0 = time;
my $key = $c->value_on($M[2], prefix => 'l');
ok(wait_until(sub {
    my $k = $key . int(rand 1e9);
    st(1, $k) eq '200 PASSED' && st(1, $k) eq '429 REJECTED';
}, timeout => 3), 'rejects on B');
ok(time - $t0 < a_second(),
   sprintf('within a second (%.2fs)', time - $t0));
$api[0]->call('DELETE', '1/rules/t/limit');

# a trial: in each key's call, on its master
($code) = $api[0]->call('PUT', '1/rules/t/trial', { limit => 1, ttl => 60 });
ok(wait_until(sub { (($api[2]->get('1/rules/t'))[1]{trial} // {})->{limit} },
              timeout => 3), 'a trial, on C');
st(2, $_) for map { $c->value_on($_, prefix => 'tr') } @M;
my $tr = $c->value_on($M[1], prefix => 'tt');
st(2, $tr) for 1 .. 3;
my (undef, $rule) = $api[2]->get('1/rules/t');
is_deeply([ @{ $rule->{trial} }{qw(passed rejected)} ], [4, 2],
          'it counts on every master');
ok($c->keys_on($c->master_for_slot($c->slot_of_value($tr)), "rl:{$tr}:*") == 2,
   'its own state beside the rule\'s, on the key\'s master');
$api[0]->call('DELETE', '1/rules/t/trial');

# a block lifted through A: in on B within a second
my $b = $c->value_on($M[0], prefix => 'b');
$api[0]->call('POST', "1/rules/t/keys/$b/block", {});
is(st(1, $b), '429 REJECTED', 'blocked, on B');
is(st(1, $b), '429 REJECTED', 'again (B\'s deny cache)');
($code) = $api[0]->call('DELETE', "1/rules/t/keys/$b/block");
$t0 = time;
ok(wait_until(sub { st(1, $b) eq '200 PASSED' }, timeout => 3)
   && time - $t0 < a_second(),
   sprintf('lifted through A: in on B within a second (%.2fs)', time - $t0));

my (undef, $audit) = $api[1]->get('1/audit');
is_deeply([ map { $_->{action} } @{ $audit->{entries} } ],
          [qw(unblock block untrial trial unlimit limit)],
          'the audit lists every write');

# The fleet's slot moves to another master: the first call to meet its
# MOVED has the map read again, and the fleet goes on there. Before, no
# request's call goes to {fleet}, so nothing read the map again: every
# sync, publication and write of the API met MOVED for good.
my $fslot = $c->slot_of('rl:{fleet}:c:live');
my $from = $c->master_for_slot($fslot);
my ($to) = grep { $_ != $from } @M;
$c->migrate_slot($fslot, $to);
ok(wait_until(sub {
    ($api[0]->call('PUT', '1/rules/t/limit', { limit => 1 }))[0] == 200
}, timeout => 5, interval => 0.2), 'the fleet\'s slot moved: a live limit '
   . 'set through A');
is($c->keys_on($to, 'rl:{fleet}:c:live'), 1, '... on its new master');
ok(wait_until(sub {
    my $k = $key . int(rand 1e9);
    st(1, $k) eq '200 PASSED' && st(1, $k) eq '429 REJECTED';
}, timeout => 5), '... and rejects on B');

$_->stop for @ng;
done_testing();
