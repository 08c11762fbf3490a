# The dashboard's fleet view (SPEC section 11, issue 32) in a real
# browser: headless Chromium driven by Selenium (t/lib/dashboard_fleet.py)
# against three nginx instances on one Redis, each publishing its record
# every second. The page of the first opens on the fleet's view: it lists
# the three instances, sums the rule's rejections over them and merges
# their top keys; its switch shows this instance's figures instead. From
# the page, a trial of the what-if's limit is started and its figures
# (after traffic on the other instances) are shown; a live limit set
# from it rejects on the third instance within seconds, shows as
# "configured → live" on its rule, and the recent changes list each
# write, newest first, with the instance and client that made it; both
# ended from the page, the third instance admits as configured again.
#
# RL_SCREENSHOT=FILE keeps the fleet view as the browser drew it, with a
# live limit and a trial running (make screenshot writes
# docs/img/dashboard.png so).

use lib 't/lib';
use RlTest;
use RlTest::Api;
use File::Temp ();

browser_needs();

my $r = start_redis();
my $config = <<'CONF';
    rl_fleet name=$Name interval=1s;
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
    rl_zone local;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /login {
            rl_rule zone=main key=$http_x_key rate=20r/m name=login;
            empty_gif;
        }
        location /search {
            rl_rule zone=main key=$http_x_key:$arg_q rate=30r/m
                    algorithm=token_bucket name=search;
            empty_gif;
        }
        location /api {
            rl_rule zone=main key=$http_x_key rate=600r/m name=api;
            empty_gif;
        }
        location /local {
            rl_rule zone=local key=$http_x_key rate=2r/s
                    algorithm=gcra burst=2 name=local-burst dry_run;
            empty_gif;
        }
        location /rl/ { rl_api write=on; }
    }
CONF
my @ng = map { start_nginx(redis => $r, workers => 2,
                           vars => { Name => "edge-$_" }, config => $config) }
         1 .. 3;
my @api = map { RlTest::Api->new($_->port, '/rl/') } @ng;
sub as { http_get($ng[$_[0]]->port, $_[1], 'X-Key' => $_[2]) }

# traffic on each: one client limited everywhere (the key's state is the
# fleet's: 20 a minute over the three), one on two instances, others
# admitted
for my $i (0 .. 2) {
    as($i, '/login', 'mallory') for 1 .. 30;
    as($i, '/login', "bot-$i") for 1 .. ($i ? 26 : 0);
    as($i, '/login', "203.0.113.$_") for map { ($_) x 4 } 1 .. 3;
    as($i, '/api', "u$_") for 1 .. 20;
    as($i, '/search?q=x', 'bob') for 1 .. 5;
    as($i, '/local', 'burst') for 1 .. 6;
}

# the fleet caught up: it lists three and sums what each instance says
sub login_of {
    my ($list) = @_;
    return (grep { $_->{name} eq 'login' } @{ $list // [] })[0];
}
my ($sum, $own);
ok(wait_until(sub {
    my (undef, $fleet) = $api[0]->get('1/fleet');
    return 0 unless $fleet && @{ $fleet->{instances} } == 3;
    my @each = map { login_of(($api[$_]->get('1/rules'))[1]) } 0 .. 2;
    $sum = 0;
    $sum += $_->{requests}{rejected} for @each;
    $own = $each[0]{requests}{rejected};
    my $f = login_of(($api[0]->get('1/fleet/rules'))[1]);
    return $f && $f->{requests}{rejected} == $sum;
}, timeout => 10), "the fleet lists three and sums their rejections ($sum)");

my $shot = $ENV{RL_SCREENSHOT}
    // File::Temp->new(SUFFIX => '.png', UNLINK => 1)->filename;
browser_run('dashboard_fleet.py', 25,
    '--page' => "http://127.0.0.1:" . $ng[0]->port . "/rl/",
    (map { ('--instance' => "http://127.0.0.1:" . $_->port) } @ng),
    '--names' => 'edge-1,edge-2,edge-3', '--rule' => 'login',
    '--limit' => 20, '--rejected' => 'mallory', '--fleet-rejected' => $sum,
    '--own-rejected' => $own, '--screenshot' => $shot);
ok(-s $shot > 20000, 'a screenshot of the page');

for my $ng (@ng) {
    unlike($ng->error_log_text, qr/\[(alert|crit|emerg)\]/, 'no alert');
}
$_->stop for @ng;
done_testing();
