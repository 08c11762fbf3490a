# In-flight limits and charges (SPEC sections 9 and 10) in a Redis
# Cluster (t/lib/RlTest/Cluster.pm, 3 masters): a key value's slots and
# usage live on the master serving its hash tag's slot, stacked with its
# other rules in one call; two key values on two masters each keep
# their own; releases, renewals and charges go to the right master.

use strict;
use warnings;
use lib 't/lib';
use RlTest;
use RlTest::Cluster;

my $c  = RlTest::Cluster->new(masters => 3);
my $up = start_upstream();
my $UP = $up->port;
my @m  = $c->masters;
my $a  = $c->value_on($m[0], prefix => 'a');
my $b  = $c->value_on($m[1], prefix => 'b');

my $ng = start_nginx(workers => 2, vars => { Seeds => $c->seeds },
                     config => <<"CONF");
    rl_zone main cluster=\$Seeds timeout=5s;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /c {
            rl_rule zone=main key=\$arg_key concurrency=2 hold=1s
                    name=inflight;
            rl_rule zone=main key=\$arg_key rate=1000000r/d
                    algorithm=fixed_window name=tokens
                    charge=\$upstream_http_x_tokens_used;
            proxy_pass http://127.0.0.1:$UP/hold;
        }
        location = /metrics { rl_metrics; }
    }
CONF
my $P = $ng->port;

sub held_on { my ($node) = @_; slots_held(sub { $c->cli_on($node, @_) }) }

my @held;
for my $v ($a, $b) {
    push @held, map { http_start($P, "/c?key=$v&until=$v&tokens=5") } 1 .. 2;
}
ok(wait_until(sub { $up->stats($a)->{now} == 2 && $up->stats($b)->{now} == 2 },
              timeout => 10), 'two key values, two held each');
is(held_on($m[0]) . ' ' . held_on($m[1]) . ' ' . held_on($m[2]), '2 2 0',
   "each key value's slots on the master of its hash tag");
for my $v ($a, $b) {
    is(http_get($P, "/c?key=$v&ms=1")->{code}, 429, "$v: full");
}
sleep 2;    # two holds: renewed on their masters
is(held_on($m[0]) . ' ' . held_on($m[1]), '2 2', 'renewed there');
$up->release($_) for $a, $b;
is(join(' ', map { $_->result(10)->{code} } @held), '200 200 200 200',
   'served');
ok(wait_until(sub { held_on($m[0]) + held_on($m[1]) == 0 }, timeout => 5),
   'released on both masters');
ok(wait_until(sub { metric_value($P, 'rl_charges_total{zone="main",'
                                     . 'rule="tokens",result="sent"}') == 4 },
              timeout => 5), 'four charges sent');
my $usage = $c->cli_on($m[0], 'EVAL', <<'LUA', 0, "rl:{$a}:*");
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
    local v = redis.call('GET', k)
    if #v == 16 then
        return string.format('%.0f', select(2, struct.unpack('<dd', v)))
    end
end
return -1
LUA
is($usage, 10, "the charges in the key value's rule, on its master");
$ng->stop;

done_testing();
