# The embedded store and the metrics table at their edges.
#
# 1. sliding_log keeps a ring of N times per key, N the rule's limit when
#    the key was first seen; N is not part of the state's identity, so a
#    reload that changes it finds the old ring. The ring is made again
#    for a larger N, keeping its times (before, a larger N wrote past
#    the ring: workers crashed); a lower N keeps the ring while it holds
#    more times than that N (t/092-lower-limit.t).
# 2. A zone full of small states that still limit keys does not make
#    room for a large node (a sliding_log of whole pages) by forgetting
#    them: freeing small blocks seldom frees a page, and before it went
#    on up to 4096 of them a request, under the lock, resetting as many
#    limits. The large new keys get the failure policy, logged at most
#    once a minute (t/063-embedded-full.t has the rest).
# 3. A metrics table too small for every zone and rule name shows the
#    ones it has and logs the first it has no room for (before, the
#    others' counts showed under zone="" and rule="").

use lib 't/lib';
use RlTest;

# ---------------------------------------------------------------- 1
my $tpl = <<'CONF';
    rl_zone e;
    server {
        listen 127.0.0.1:$ServerPort;
        location /api {
            rl_rule zone=e key=$arg_k rate=NNNr/h algorithm=sliding_log
                    name=api cost=$arg_c;
            empty_gif;
        }
    }
CONF
sub conf { (my $c = $tpl) =~ s/NNN/$_[0]/; $c }

my $ng = start_nginx(workers => 2, config => conf(2));
my $port = $ng->port;
for my $i (1, 2) {
    my $t = http_get($port, '/api?k=a&c=1');
    is("$t->{code} $t->{headers}{'x-ratelimit-remaining'}", '200 ' . (2 - $i),
       "2r/h: request $i");
}
ok($ng->reload(config => conf(4000)), 'reload: 4000r/h');
my $t = http_get($port, '/api?k=a&c=300');
is("$t->{code} $t->{headers}{'x-ratelimit-remaining'}", '200 3698',
   '4000r/h: the two times kept, 300 more counted');
for my $k (1 .. 20) {
    http_get($port, "/api?k=b$k&c=1");
}
$t = http_get($port, '/api?k=a&c=300');
is("$t->{code} $t->{headers}{'x-ratelimit-remaining'}", '200 3398',
   'and 300 more, other keys beside');
ok($ng->reload(config => conf(2)), 'reload: 2r/h again');
$t = http_get($port, '/api?k=a&c=1');
is($t->{code}, 429, '2r/h: the times kept, the key is full');
$t = http_get($port, '/api?k=new&c=1');
is($t->{code}, 200, 'a new key is counted');
unlike($ng->error_log_text, qr/exited on signal|was locked by/,
       'no worker crashed');
$ng->stop;

# ---------------------------------------------------------------- 2
$ng = start_nginx(workers => 1, config => <<'CONF');
    rl_zone e size=256k;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /a {
            rl_rule zone=e key=$arg_k rate=100r/h algorithm=fixed_window;
            empty_gif;
        }
        location /b {
            rl_rule zone=e key=$arg_u rate=2000r/h algorithm=sliding_log;
            empty_gif;
        }
    }
CONF
$port = $ng->port;
http_parallel($port, [map { "/a?k=k$_" } 1 .. 4000], concurrency => 20);
my %status;
for my $u (1 .. 5) {
    my $r = http_get($port, "/b?u=new$u");
    $status{ $r->{headers}{'x-rl-status'} // '-' }++;
}
is_deeply(\%status, { ERROR => 5 },
          'large new keys in a zone full of small limited ones: the '
          . 'failure policy');
my @full = $ng->error_log_text =~ /(\[warn\].*is full: no room for a .*)/g;
is(scalar @full, 1, 'logged once');
like($full[0] // '', qr/rl_zone "e" is full: no room for a state of \d+ by/,
     'naming the zone and the size');
$ng->stop;

# ---------------------------------------------------------------- 3
my $locs = '';
my $n = 0;
for my $l (1 .. 12) {
    $locs .= "location /l$l {\n";
    for (1 .. 60) {
        $n++;
        $locs .= "rl_rule zone=e key=\$arg_k rate=100r/s name=r$n;\n";
    }
    $locs .= "empty_gif; }\n";
}
$ng = start_nginx(workers => 1, config => <<"CONF");
    rl_zone e;
    server {
        listen 127.0.0.1:\$ServerPort;
        $locs
        location /metrics { rl_metrics; }
    }
CONF
$port = $ng->port;
http_get($port, '/l12?k=a');
my $m = http_get($port, '/metrics');
is($m->{code}, 200, 'metrics answer');
unlike($m->{body}, qr/zone=""/, 'no series without a zone');
like($m->{body}, qr/rl_requests_total\{zone="e",rule="r1",outcome="passed"\} 0/,
     'the first rules are shown');
like($ng->error_log_text,
     qr/rl_metrics: no room for rule "r\d+" of zone "e" and other new names/,
     'the first rule without room is logged');
$ng->stop;

done_testing();
