# A Redis Cluster zone's first requests, before a worker knows the slot
# map (src/redis/cluster.cpp, route): they wait for a seed's connection,
# as a single Redis's first requests wait for theirs, and a MOVED sends
# them to their slot's master; they do not get the failure policy while
# the map is still being asked. (Seen under load: nginx's first requests
# came before CLUSTER SLOTS was answered and were all admitted by
# failure=open, counting nothing.)
#
# One 3-master cluster (no replica), its masters paused (CLIENT PAUSE
# ALL: connections accepted, commands answered when the pause ends) as
# one nginx of one worker starts, failure=closed (the failure policy:
# 429), timeout=15s (a pause of 8 s: nginx -t and a start under the
# sanitizers on a loaded host fit in it):
#   (a) requests on key values of each master, sent during the pause:
#       all 200 once the pause ends, each counted on its own master's
#       slot and nowhere else
#   (b) with every seed unreachable (a zone whose seeds are closed
#       ports), a request gets the failure policy at once (not after
#       the timeout)
# About 12 s.

use lib 't/lib';
use RlTest;
use RlTest::Cluster;
use Time::HiRes ();

my $c = RlTest::Cluster->new(masters => 3, replicas => 0);
my @M = $c->masters;
my @v = map { $c->value_on($M[$_], prefix => "s$_") } 0 .. 2;
my $seeds = $c->seeds;     # (asks the nodes: not during the pause)
my $dead = join ',', map { '127.0.0.1:' . free_port() } 1 .. 2;

# counts of the rule's state keys on each master: "n0 n1 n2"
sub keys_on {
    return join ' ', map { scalar(() = ($c->cli_on($_, 'KEYS', 'rl:*')
                                       =~ /\S+/g)) } @M;
}

$c->cli_on($_, 'CLIENT', 'PAUSE', 8000, 'ALL') for @M;
my $paused = Time::HiRes::time();
my $ng = start_nginx(workers => 1,
                     vars => { Seeds => $seeds, Dead => $dead },
                     config => <<'CONF');
    rl_zone main cluster=$Seeds timeout=15s connect_timeout=15s
            failure=closed;
    rl_zone gone cluster=$Dead timeout=5s connect_timeout=5s
            failure=closed;
    server {
        listen 127.0.0.1:$ServerPort;
        location /a {
            rl_rule zone=main key=$arg_key rate=100r/d
                    algorithm=fixed_window name=a;
            empty_gif;
        }
        location /gone {
            rl_rule zone=gone key=$arg_key rate=100r/d;
            empty_gif;
        }
        location = /metrics { rl_metrics; }
    }
CONF
my $P = $ng->port;

# (a)
my @sent = map { http_start($P, "/a?key=$_") } @v;
my $early = Time::HiRes::time() - $paused;
cmp_ok($early, '<', 7.5, 'the requests left during the pause');
is(join(' ', map { $_->result(20)->{code} } @sent), '200 200 200',
   'sent before the map: decided by their masters, not the failure policy');
is(keys_on(), '1 1 1', "each counted on its own master's slot");
is(metric_value($P, 'rl_requests_total{zone="main",rule="a",'
                    . 'outcome="error"}'), 0, 'no error counted');

# (b)
my $t0 = Time::HiRes::time();
is(http_get($P, '/gone?key=x')->{code}, 429,
   'seeds unreachable: the failure policy');
cmp_ok(Time::HiRes::time() - $t0, '<', 4, '... at once, not after timeout');

$ng->stop;
done_testing();
