# The dashboard's addresses in a real browser (issue 31, 5 and 6;
# SPEC section 8), t/lib/dashboard_paths.py driving headless Chromium:
# - opened at //127.0.0.2:PORT/..%2Frl/ (which nginx serves as /rl/),
#   the page builds its API address from document.baseURI: it reads
#   the rules from its own origin, and the other host (a listener of
#   this test's, in nginx) hears nothing;
# - its Content-Security-Policy allows the page's own script and style
#   by their SHA-256, never 'unsafe-inline';
# - keys "." and ".." in the top list are looked up from the page, and a
#   "." is reset, blocked and unblocked from it (the query form).

use lib 't/lib';
use RlTest;
use Digest::SHA qw(sha256_base64);

browser_needs();

my $r = start_redis();
my $other = free_port();
my $ng = start_nginx(redis => $r, workers => 1, config => <<"CONF");
    rl_zone main redis=127.0.0.1:\$RedisPort timeout=5s;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /dots {
            rl_rule zone=main key=\$http_x_key rate=2r/m name=dots;
            empty_gif;
        }
        location /rl/ { rl_api write=on; }
    }
    # the other host a crafted address names: it must hear nothing
    server {
        listen 127.0.0.2:$other;
        access_log \$ServerRoot/logs/other.log;
        location / { return 200 '{}'; }
    }
CONF
my $port = $ng->port;
sub as { http_get($port, $_[0], 'X-Key' => $_[1]) }

# the page's policy: its own script and style by their hashes
my $page = http_get($port, '/rl/');
my ($script) = $page->{body} =~ m{<script>(.*?)</script>}s;
my ($style) = $page->{body} =~ m{<style>(.*?)</style>}s;
my $csp = $page->{headers}{'content-security-policy'} // '';
unlike($csp, qr/unsafe-inline/, "the page's policy has no 'unsafe-inline'");
like($csp, qr/script-src 'sha256-\Q${\ sha256_base64($script)}\E='/,
     "it allows the page's script by its hash");
like($csp, qr/style-src 'sha256-\Q${\ sha256_base64($style)}\E='/,
     'and its style');
like($csp, qr/connect-src 'self'/, 'fetches only from its own origin');

# "." and ".." rejected: in the top list
for my $key ('.', '..') {
    as('/dots', $key) for 1 .. 4;
}
my $crafted = "http://127.0.0.1:$port//127.0.0.2:$other/..%2Frl/";
is(http_get($port, "//127.0.0.2:$other/..%2Frl/")->{code}, 200,
   'nginx serves the crafted address as the page');

browser_run('dashboard_paths.py', 10,
    '--crafted' => $crafted, '--page' => "http://127.0.0.1:$port/rl/",
    '--limited' => "http://127.0.0.1:$port/dots", '--rule' => 'dots',
    '--dot' => '.', '--dot' => '..');
my $heard = -e $ng->dir . '/logs/other.log'
    ? -s $ng->dir . '/logs/other.log' : 0;
is($heard, 0, 'the other host heard nothing from the page');

$ng->stop;
done_testing();
