# The dashboard's texts in a real browser: headless
# Chromium driven by Selenium (t/lib/dashboard_texts.py). A calendar
# rule's limit reads per its period ("1000/month", not "1000/30d", the
# period's nominal length), with its time zone and where its periods
# start (its anchor), in this instance's view and the fleet's (whose
# records carry them). An instance's name is anything its rl_fleet
# name= says: one with a bidi override (U+202E), made up beside the real
# instance (t/lib/RlTest/Fleet.pm), shows its control as \u202E rather
# than reordering the page.
#
# RL_SCREENSHOT=FILE keeps the fleet view as the browser drew it.

use lib 't/lib';
use RlTest;
use RlTest::Fleet;
use File::Temp ();

browser_needs();

my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 1, config => <<'CONF');
    rl_fleet name=edge-1 interval=1s;
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
    server {
        listen 127.0.0.1:$ServerPort;
        location /m { rl_rule zone=main key=$http_x_key rate=1000r/month
                              tz=Europe/Berlin anchor=15 name=monthly;
                      empty_gif; }
        location /w { rl_rule zone=main key=$http_x_key rate=50r/w
                              anchor=tue name=weekly;
                      empty_gif; }
        location /b { rl_rule zone=main key=$http_x_key rate=20r/month
                              anchor=$arg_day name=billing;
                      empty_gif; }
        location /a { rl_rule zone=main key=$http_x_key rate=5r/m name=api;
                      empty_gif; }
        location /rl/ { rl_api write=on; }
    }
CONF
http_get($ng->port, $_, 'X-Key' => 'k') for qw(/m /w /b?day=3 /a);
RlTest::Fleet::fake($r, zone => 'main',
                    instances => [ { name => "evil\xe2\x80\xaegnp.exe" } ]);
ok(wait_until(sub {
    my $res = http_get($ng->port, '/rl/1/fleet/rules');
    $res->{body} =~ /"period":"month","tz":"Europe\/Berlin","anchor":"15"/;
}, timeout => 5), '/1/fleet/rules: a calendar rule with its period, time '
                  . 'zone and anchor');

my $shot = $ENV{RL_SCREENSHOT}
    // File::Temp->new(SUFFIX => '.png', UNLINK => 1)->filename;
browser_run('dashboard_texts.py', 9,
    '--page' => "http://127.0.0.1:" . $ng->port . "/rl/",
    '--screenshot' => $shot);
ok(-s $shot > 20000, 'a screenshot of the page');

$ng->stop;
done_testing();
