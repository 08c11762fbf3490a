# A Redis that answers, but refuses every call (src/core/reply_error.hpp),
# is down as a stopped one is: rl_store_up 0, one line when the incident
# starts and one when it ends, requests get the failure policy at once
# without a round trip, and a probe that writes (once a second) ends it
# when the server serves again. Before, each request went to Redis and
# got the policy from its error reply, rl_store_up stayed 1 and nothing
# was logged but one line for the first error.
#
# Each state driven for real: maxmemory reached under noeviction (OOM),
# a failed save with stop-writes-on-bgsave-error (MISCONF), a replica
# behind the zone's fixed address (READONLY: the connection is made
# again), a long script (BUSY), the ACL user's EVALSHA taken away
# (NOPERM). A key of the wrong type that someone wrote concerns that
# key's calls alone: the store stays up.

use lib 't/lib';
use RlTest;

my $r = start_redis(args => ['--enable-protected-configs', 'yes']);
$r->cli('ACL', 'SETUSER', 'ngx', 'on', '>secret', '~rl:*', '+@all');

my $ng = start_nginx(redis => $r, workers => 1, config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort username=ngx password=secret
            timeout=5s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /t {
            rl_rule zone=main key=$arg_k rate=1000r/m name=t;
            empty_gif;
        }
        location /log {
            rl_rule zone=main key=$arg_k rate=1000r/m algorithm=sliding_log
                    name=log;
            empty_gif;
        }
        location /metrics { rl_metrics; }
    }
CONF
my $port = $ng->port;

sub decide { code_status(http_get($port, "/t?k=$_[0]")) }
sub decide_log { code_status(http_get($port, "/log?k=$_[0]")) }
sub metric { metric_value($port, "$_[0]\{zone=\"main\"}") }
sub lines {
    my ($re) = @_;
    return scalar grep { /$re/ } split /\n/, $ng->error_log_text;
}

is(decide('a'), '200 PASSED', 'Redis serves');
is(metric('rl_store_up'), 1, 'rl_store_up 1');

# An incident from the first refusal until the server serves again.
sub incident {
    my (%t) = @_;
    my $name = $t{name};
    my $errors = metric('rl_store_errors_total');
    my $down = lines(qr/unavailable: (error reply|not the master): \Q$t{code}\E/);
    my $up = lines(qr/is available again/);
    $t{start}->();
    is(decide('a'), '200 ERROR', "$name: the failure policy");
    ok(wait_until(sub { metric('rl_store_up') == 0 }, timeout => 5),
       "$name: rl_store_up 0");
    is(lines(qr/unavailable: (error reply|not the master): \Q$t{code}\E/), $down + 1,
       "$name: the incident logged once, with the reply");
    my $calls = $r->calls('evalsha');
    my $again = metric('rl_store_reconnects_total');
    my $t0 = RlTest::Proc::now();
    my @s = map { decide("x$_") } 1 .. 20;
    # a probe a second (one more for the span's ends), and one per
    # connection made again (READONLY: backing off, below)
    my $probes = 2 + int(RlTest::Proc::now() - $t0)
                 + metric('rl_store_reconnects_total') - $again;
    is(scalar(grep { $_ eq '200 ERROR' } @s), 20,
       "$name: 20 more requests get the failure policy");
    cmp_ok($r->calls('evalsha') - $calls, '<=', $probes,
           "$name: ... without a call to Redis each (a probe a second)");
    cmp_ok(metric('rl_store_errors_total'), '>', $errors,
           "$name: rl_store_errors_total counts the error replies");
    $t{end}->();
    ok(wait_until(sub { metric('rl_store_up') == 1 }, timeout => 5),
       "$name: the server serves again: rl_store_up 1 within the probe's "
       . 'second') or diag($ng->error_log_text);
    is(decide('b'), '200 PASSED', "$name: decisions resume");
    is(lines(qr/is available again/), $up + 1, "$name: the end logged once");
}

incident(name => 'maxmemory', code => 'OOM',
         start => sub { $r->cli('CONFIG', 'SET', 'maxmemory', '1') },
         end   => sub { $r->cli('CONFIG', 'SET', 'maxmemory', '0') });

my $gone = RlTest::Proc::make_tempdir('rdb');
incident(name => 'a failed save', code => 'MISCONF',
         start => sub {
             $r->cli('CONFIG', 'SET', 'save', '3600 1');
             $r->cli('CONFIG', 'SET', 'dir', $gone);
             rmdir $gone or die "$gone: $!";
             $r->cli('BGSAVE');
             wait_until(sub { $r->cli('INFO', 'persistence')
                                  =~ /rdb_last_bgsave_status:err/ })
                 or die 'BGSAVE did not fail';
         },
         end => sub {
             $r->cli('CONFIG', 'SET', 'stop-writes-on-bgsave-error', 'no');
         });
$r->cli('CONFIG', 'SET', 'save', '');
$r->cli('CONFIG', 'SET', 'dir', $r->dir);

my $reconnects = metric('rl_store_reconnects_total');
my $master = start_redis();
incident(name => 'a replica at the fixed address', code => 'READONLY',
         start => sub { $r->cli('REPLICAOF', '127.0.0.1', $master->port) },
         end   => sub { $r->cli('REPLICAOF', 'NO', 'ONE') });
cmp_ok(metric('rl_store_reconnects_total'), '>', $reconnects,
       'READONLY: the connection was made again meanwhile');
# A replica that stays at the address: each connection made again
# probes it, and they back off as a dead server's do (50 ms, doubling
# to a second): the fifth some 1.5 s after the incident began. Before,
# each connection's handshake reset the back-off: a reconnect, its
# handshake and a probe every 60 ms or so, from every worker.
{
    my $before = metric('rl_store_reconnects_total');
    $r->cli('REPLICAOF', '127.0.0.1', $master->port);
    is(decide('c'), '200 ERROR', 'READONLY again: the failure policy');
    my $t0 = RlTest::Proc::now();
    ok(wait_until(sub { metric('rl_store_reconnects_total') >= $before + 5 },
                  timeout => 10),
       'READONLY again: the connection is made again, five times');
    cmp_ok(RlTest::Proc::now() - $t0, '>=', 1.2,
           'READONLY again: ... backing off (the fifth 1.5 s after the '
           . 'first)');
    $r->cli('REPLICAOF', 'NO', 'ONE');
    $r->cli('ACL', 'SETUSER', 'ngx', 'on', '>secret', '~rl:*', '+@all');
    ok(wait_until(sub { metric('rl_store_up') == 1 }, timeout => 5),
       'READONLY again: over once it is a master');
}
$master->stop;
# (the replica took its master's empty dataset and ACL file: as before)
$r->cli('ACL', 'SETUSER', 'ngx', 'on', '>secret', '~rl:*', '+@all');

my $script;
incident(name => 'a long script', code => 'BUSY',
         start => sub {
             $r->cli('CONFIG', 'SET', 'busy-reply-threshold', '100');
             $script = spawn(sub {
                 $r->cli('EVAL', 'while true do end', '0');
             });
             wait_until(sub { $r->cli('PING') =~ /BUSY/ })
                 or die 'no BUSY';
         },
         end => sub {
             $r->cli('SCRIPT', 'KILL');
             $script->wait(5);
             $r->cli('CONFIG', 'SET', 'busy-reply-threshold', '5000');
         });

incident(name => 'the ACL user without EVALSHA', code => 'NOPERM',
         start => sub { $r->cli('ACL', 'SETUSER', 'ngx', '-evalsha') },
         end   => sub { $r->cli('ACL', 'SETUSER', 'ngx', '+evalsha') });

# a key of the wrong type (a string where sliding_log keeps a sorted
# set): that key's calls alone
{
    is(decide_log('bad'), '200 PASSED', 'a key decided');
    my ($key) = grep { length } split /\n/, $r->cli('KEYS', 'rl:{bad}:*');
    ok($key, "its state key: $key");
    $r->cli('SET', $key, 'x');
    my $errors = metric('rl_store_errors_total');
    my $down = lines(qr/unavailable/);
    is(decide_log('bad'), '200 ERROR', 'a key of the wrong type: the policy');
    is(metric('rl_store_up'), 1, 'the store stays up');
    is(decide_log('good'), '200 PASSED', 'other keys are decided');
    is(decide_log('bad'), '200 ERROR', 'that key, again');
    is(metric('rl_store_errors_total'), $errors + 2, 'both errors counted');
    is(lines(qr/unavailable/), $down, 'no incident');
    is(lines(qr/redis \S+ replied: WRONGTYPE Operation against a key/), 1,
       'the error logged once');
}

$ng->stop;

# ------------------------------------------------------------ a cluster
use RlTest::Cluster;
{
    my $c = RlTest::Cluster->new(masters => 3, replicas => 0,
                                 node_timeout => 500);
    my @M = $c->masters;
    my $cn = start_nginx(workers => 1, vars => { Seeds => $c->seeds },
                         config => <<'CONF');
    rl_zone c cluster=$Seeds timeout=5s connect_timeout=1s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /t {
            rl_rule zone=c key=$arg_k rate=1000r/m name=t;
            empty_gif;
        }
        location /metrics { rl_metrics; }
    }
CONF
    my $cp = $cn->port;
    my $cdecide = sub { code_status(http_get($cp, "/t?k=$_[0]")) };
    my $cup = sub { metric_value($cp, 'rl_store_up{zone="c"}') };
    my @v = map { $c->value_on($_) } @M;
    ok(wait_until(sub { $cdecide->($v[0]) eq '200 PASSED' }, timeout => 10),
       'cluster: decided');
    is($cdecide->($v[1]), '200 PASSED', 'cluster: on the second master');
    ok(wait_until(sub { $cup->() == 1 }), 'cluster: rl_store_up 1');

    my $a = $M[0]->port;
    $M[0]->cli('CONFIG', 'SET', 'maxmemory', '1');
    is($cdecide->($v[0]), '200 ERROR', 'a master refuses (OOM): the policy');
    is($cup->(), 0, 'rl_store_up 0');
    is($cdecide->($v[1]), '200 PASSED', "the other masters' slots decided");
    my $calls = $M[0]->calls('evalsha');
    my @s = map { $cdecide->($v[0]) } 1 .. 10;
    is(scalar(grep { $_ eq '200 ERROR' } @s), 10, '10 more: the policy');
    cmp_ok($M[0]->calls('evalsha') - $calls, '<=', 2,
           '... without a call each to that master');
    my $log = $cn->error_log_text;
    is(scalar(() = $log =~ /redis 127\.0\.0\.1:$a unavailable: error reply: OOM/g),
       1, 'the incident logged once, naming the master');
    $M[0]->cli('CONFIG', 'SET', 'maxmemory', '0');
    ok(wait_until(sub { $cup->() == 1 }, timeout => 5),
       'it serves again: the probe on its slot ends the incident');
    is($cdecide->($v[0]), '200 PASSED', 'decided again');
    like($cn->error_log_text, qr/redis 127\.0\.0\.1:$a is available again/,
         'logged');

    # a master without replica stopped: the others say CLUSTERDOWN
    $M[2]->kill('STOP');
    ok(wait_until(sub { $M[0]->cli('CLUSTER', 'INFO')
                            =~ /cluster_state:fail/ }, timeout => 10),
       'the cluster is down');
    is($cdecide->($v[1]), '200 ERROR', 'CLUSTERDOWN: the policy');
    like($cn->error_log_text,
         qr/redis 127\.0\.0\.1:\d+ unavailable: error reply: CLUSTERDOWN/,
         'an incident, with the reply');
    @s = map { $cdecide->($v[1]) } 1 .. 10;
    is(scalar(grep { $_ eq '200 ERROR' } @s), 10, 'meanwhile, the policy');
    $M[2]->kill('CONT');
    ok(wait_until(sub { $M[0]->cli('CLUSTER', 'INFO')
                            =~ /cluster_state:ok/ }, timeout => 10),
       'the cluster is whole again');
    ok(wait_until(sub { $cdecide->($v[1]) eq '200 PASSED' }, timeout => 5),
       'decisions resume');
    ok(wait_until(sub { $cup->() == 1 }, timeout => 5), 'rl_store_up 1');
    $cn->stop;
    $c->stop;
}

done_testing();
