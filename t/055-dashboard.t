# The operator dashboard (SPEC section 8) in a real browser: headless
# Chromium driven by Selenium (t/lib/dashboard.py) against nginx and
# Redis with 100 rules, long and binary key values and a client being
# rejected. The page lists the rules, shows the rejected key in its top
# list, its what-if control changes its figure, a block made from the
# page makes the client's next request a 429 and unblocking lets it in.
#
# RL_SCREENSHOT=FILE keeps the page as the browser drew it (make docs
# writes docs/img/dashboard.png so).

use lib 't/lib';
use RlTest;
use File::Temp ();

browser_needs();

my $r = start_redis();
my $rules = join '', map { <<"RULE" } 1 .. 96;
        location /r$_ {
            rl_rule zone=main key=\$http_x_key rate=${\ (10 * $_)}r/m
                    name=api-$_;
            empty_gif;
        }
RULE
my $ng = start_nginx(redis => $r, workers => 2, config => <<"CONF");
    rl_zone main redis=127.0.0.1:\$RedisPort timeout=5s;
    rl_zone local;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /login {
            rl_rule zone=main key=\$http_x_key rate=5r/m name=login;
            rl_rule zone=main key=\$http_x_key rate=100r/d
                    algorithm=fixed_window name=login-daily;
            empty_gif;
        }
        location /search {
            rl_rule zone=main key=\$http_x_key:\$arg_q rate=3r/m
                    algorithm=token_bucket name=search;
            empty_gif;
        }
        location /local {
            rl_rule zone=local key=\$http_x_key rate=2r/s
                    algorithm=gcra burst=2 name=local-burst dry_run;
            empty_gif;
        }
$rules
        location /rl/ { rl_api write=on; }
    }
CONF
my $port = $ng->port;
sub as { http_get($port, $_[0], 'X-Key' => $_[1]) }

# traffic: a client rejected often, others now and then, a long and a
# binary key, and usage over many rules
as('/login', 'mallory') for 1 .. 30;
as('/login', $_) for map { ("carol", "dave", "erin") } 1 .. 3;
as('/login', "k-\x01\x02\xff") for 1 .. 7;
as('/login', 'long-' . ('x' x 150)) for 1 .. 8;
as("/search?q=$_", 'bob') for 1 .. 6;
as('/local', 'burst') for 1 .. 6;
for my $i (1 .. 96) {
    as("/r$i", "u$_") for 1 .. ($i % 7);
}

my $shot = $ENV{RL_SCREENSHOT}
    // File::Temp->new(SUFFIX => '.png', UNLINK => 1)->filename;
browser_run('dashboard.py', 15,
    '--page' => "http://127.0.0.1:$port/rl/",
    '--limited' => "http://127.0.0.1:$port/login",
    '--screenshot' => $shot, '--rule' => 'login', '--rejected' => 'mallory',
    '--client' => 'oscar', '--rules' => 96 + 4);
ok(-s $shot > 20000, 'a screenshot of the page');

unlike($ng->error_log_text, qr/\[(alert|crit|emerg)\]/, 'no alert');
done_testing();
