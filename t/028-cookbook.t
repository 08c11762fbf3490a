# The cookbook (docs/cookbook.md), run as written: every ```nginx block
# of a recipe ("## TITLE") is a complete configuration. Only what ties it
# to a host is moved (the module path, the Redis address, the listen and
# upstream ports, log paths, and what the harness needs: pid, error_log,
# daemon off); then each recipe is checked for what its text says it
# does. The prometheus.yml snippet must parse and point at the metrics
# location. The reference's snippets (docs/reference.md: rl_status and
# the variables) are run too, in a configuration around them.

use lib 't/lib';
use RlTest;
use CPAN::Meta::YAML;
use IO::Socket::IP;
use IO::Select;
use JSON::PP ();
use RlTest::Api;

# ------------------------------------------------------------ the docs

sub doc {
    local (@ARGV, $/) = (repo_root() . "/docs/$_[0]");
    return -e $ARGV[0] ? <> : '';
}
# the recipes: what follows the title (# Cookbook) and its introduction
my ($cookbook) = doc('cookbook.md') =~ /^# Cookbook\n.*?^(## .*)/ms;
ok(defined $cookbook, 'docs/cookbook.md has the cookbook') or do {
    done_testing();
    exit;
};

# title => { nginx => [blocks], yaml => [blocks] }
my (%recipe, @titles);
for my $part (split /^## /m, $cookbook) {
    my ($title) = $part =~ /\A(.*)\n/ or next;
    next if $title =~ /^\s*$/ || $part !~ /```/;
    push @titles, $title;
    while ($part =~ /^```(\w+)\n(.*?)^```$/msg) {
        push @{ $recipe{$title}{$1} }, $2;
    }
}

sub recipe {
    my ($re, $what) = @_;
    my @t = grep { /$re/ } @titles;
    is(scalar @t, 1, "the cookbook has one recipe for $what")
        or diag("recipes: @titles");
    return @t ? $recipe{ $t[0] } : undef;
}

# ------------------------------------------------------------ running one

package CookbookNginx {
    our @ISA = ('RlTest::Nginx');
    # the configuration is complete already
    sub conf_text { $_[0]{config} }
}

my $r = start_redis();

# Moves a cookbook configuration to the test's ports and paths; returns
# the text and the map of its port => test port.
sub adapt {
    my ($conf, $dir) = @_;
    my %port;
    my $map = sub { $port{ $_[0] } //= free_port() };
    my $mod = module_path();
    my $user = $> == 0 ? "user root;\n" : '';
    $conf =~ s{^load_module\s+\S+;\n}{}m
        or die "no load_module line\n";
    $conf =~ s{^\s*(?:pid|error_log|daemon|user)\s[^;]*;\n}{}mg;
    $conf = "load_module $mod;\n${user}daemon off;\nmaster_process on;\n"
          . "pid logs/nginx.pid;\nlock_file logs/nginx.lock;\n"
          . "error_log logs/error.log info;\n" . $conf;
    $conf =~ s{redis=127\.0\.0\.1:6379\b}{'redis=127.0.0.1:' . $r->port}ge;
    # a host that stalls past the default 100ms must not turn a recipe's
    # decisions into timeouts: a zone waits 5s here, whether it names no
    # timeout or one in ms (the recipes' 100ms)
    $conf =~ s{^(\s*rl_zone\s[^;]*redis=[^;]*);}
              {my $z = $1;
               $z =~ s/\btimeout=\d+ms\b/timeout=5s/;
               $z =~ /\btimeout=/ ? "$z;" : "$z timeout=5s;"}gme;
    $conf =~ s{^(\s*listen\s+)(?:127\.0\.0\.1:)?(\d+)}
              {$1 . '127.0.0.1:' . $map->($2)}gme;
    $conf =~ s{(http://127\.0\.0\.1:)(\d+)}{$1 . $map->($2)}ge;
    $conf =~ s{^(\s*server\s+127\.0\.0\.1:)(\d+)}{$1 . $map->($2)}gme;
    $conf =~ s{(access_log\s+)/var/log/nginx/}{${1}logs/}g;
    $conf =~ s{^(http\s*\{\n)}{$1
    client_body_temp_path temp/client_body;
    proxy_temp_path temp/proxy;
    fastcgi_temp_path temp/fastcgi;
    uwsgi_temp_path temp/uwsgi;
    scgi_temp_path temp/scgi;
}m or die "no http block\n";
    return ($conf, \%port);
}

sub run_recipe {
    my ($rc, $what) = @_;
    return unless $rc;
    my @blocks = @{ $rc->{nginx} // [] };
    is(scalar @blocks, 1, "$what: one nginx configuration");
    return unless @blocks;
    my ($conf, $port) = adapt($blocks[0]);
    my $ng = CookbookNginx->new(config => $conf, port => $port->{8080},
                                start => 0);
    my ($ok, $msg) = $ng->try_start;
    ok($ok, "$what: nginx -t passes and nginx starts") or diag($msg);
    return unless $ok;
    return ($ng, $port, $conf);
}

# GET from a given local address (the whole of 127/8 is loopback).
sub get_from {
    my ($local, $port, $path, @headers) = @_;
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                                LocalHost => $local, Timeout => 5)
        or return { code => 0, headers => {}, error => "$local: $@" };
    my $h = '';
    while (my ($k, $v) = splice @headers, 0, 2) { $h .= "$k: $v\r\n" }
    print $s "GET $path HTTP/1.1\r\nHost: localhost\r\n$h"
             . "Connection: close\r\n\r\n";
    my $buf = '';
    my $sel = IO::Select->new($s);
    my $deadline = now() + 10;
    while (now() < $deadline) {
        next unless $sel->can_read(0.1);
        my $n = sysread $s, $buf, 65536, length $buf;
        last unless $n;
    }
    close $s;
    my ($head, $body) = split /\r\n\r\n/, $buf, 2;
    my ($code) = ($head // '') =~ m{^HTTP/1\.\d (\d+)};
    my %hd;
    for (split /\r\n/, $head // '') {
        $hd{ lc $1 } = $2 if /^([^:]+):\s*(.*)$/;
    }
    return { code => $code // 0, headers => \%hd, body => $body // '' };
}

my $can_127_0_0_2 = do {
    my $p = IO::Socket::IP->new(LocalHost => '127.0.0.2', LocalPort => 0,
                                Proto => 'tcp', Listen => 1);
    $p ? 1 : 0;
};

sub codes { join ' ', map { $_->{code} } @_ }
sub first_reject { my $i = 0; for (@_) { return $i if $_->{code} == 429; $i++ } -1 }

# ------------------------------------------------------------ per IP + per key

{
    my $what = 'per-IP + per-API-key';
    my ($ng, $port) = run_recipe(recipe(qr/per-API-key/i, $what), $what);
    if ($ng) {
        my $p = $port->{8080};
        my @k = map { http_get($p, '/api/x', 'X-Api-Key' => 'k1') } 1 .. 3;
        is(codes(@k), '200 200 200', "$what: with a key, served");
        is($k[0]{body}, "ok\n", "$what: by the application");
        like($k[0]{headers}{'ratelimit-policy'} // '',
             qr/^"per_ip";q=10;w=1, ?"per_key";q=1000;w=3600$/,
             "$what: with a key, both rules apply");
        is($k[0]{headers}{'x-ratelimit-limit'}, 10,
           "$what: the per-IP rule binds (least remaining)");
        my $nokey = http_get($p, '/api/x');
        like($nokey->{headers}{'ratelimit-policy'} // '',
             qr/^"per_ip";q=10;w=1$/, "$what: without a key, per_ip only");

        $r->cli('FLUSHALL');
        my @burst = map { http_get($p, '/api/x') } 1 .. 40;
        my $first = first_reject(@burst);
        ok($first >= 21, "$what: from idle, 1 + burst 20 pass at once "
                         . "(first 429 at request " . ($first + 1) . ')');
        ok($first > 0, "$what: then 429");
        is($burst[$first]{headers}{'x-ratelimit-limit'}, 10,
           "$what: the 429 names the per-IP limit") if $first > 0;
        like($burst[$first]{headers}{'retry-after'} // '', qr/^[1-9]\d*$/,
             "$what: with Retry-After") if $first > 0;
        $ng->stop(name => "$what: nginx");
    }
}

# ------------------------------------------------------------ tiers by rules

{
    my $what = 'tiers by rules';
    $r->cli('FLUSHALL');
    my ($ng, $port) = run_recipe(recipe(qr/different rules/i, $what), $what);
    if ($ng) {
        my $p = $port->{8080};
        my @anon = map { http_get($p, '/api/x') } 1 .. 15;
        my $first = first_reject(@anon);
        ok($first >= 10, "$what: anonymous: 10 pass (first 429 at "
                         . ($first + 1) . ')');
        ok($first > 0, "$what: anonymous: then 429");
        is($anon[0]{headers}{'x-ratelimit-limit'}, 10,
           "$what: anonymous: 10 a minute");

        my @free = map { http_get($p, '/api/x', 'X-Api-Key' => 'abc') }
                   1 .. 70;
        $first = first_reject(@free);
        is($free[0]{headers}{'x-ratelimit-limit'}, 60,
           "$what: free: 60 a minute");
        ok($first >= 60 && $first <= 62, "$what: free: 60 pass (first 429 at "
                                          . ($first + 1) . ')');

        my $pro = http_get($p, '/api/x', 'X-Api-Key' => 'pro_123');
        is($pro->{code}, 200, "$what: pro: served");
        is($pro->{headers}{'x-ratelimit-limit'}, 600,
           "$what: pro: 600 a minute");
        is($pro->{headers}{'x-ratelimit-remaining'}, 599,
           "$what: pro: its own quota");

        my @int = map { http_get($p, '/api/x', 'X-Api-Key' => 'int_7') }
                  1 .. 20;
        is(codes(@int), join(' ', (200) x 20), "$what: internal: unlimited");
        ok(!grep({ exists $_->{headers}{'x-ratelimit-limit'} } @int),
           "$what: internal: no rule applied, no header");
        $ng->stop(name => "$what: nginx");
    }
}

# ------------------------------------------------------------ tiers by cost

{
    my $what = 'tiers by cost';
    $r->cli('FLUSHALL');
    my ($ng, $port) = run_recipe(recipe(qr/cost per tier/i, $what), $what);
    if ($ng) {
        my $p = $port->{8080};
        my @free = map { http_get($p, '/api/x', 'X-Api-Key' => 'abc') }
                   1 .. 65;
        is($free[0]{headers}{'x-ratelimit-limit'}, 600,
           "$what: free: the limit is in units");
        is($free[0]{headers}{'x-ratelimit-remaining'}, 590,
           "$what: free: a request costs 10");
        my $first = first_reject(@free);
        ok($first >= 60 && $first <= 62,
           "$what: free: 60 requests (first 429 at " . ($first + 1) . ')');

        my $pro = http_get($p, '/api/x', 'X-Api-Key' => 'pro_1');
        is($pro->{headers}{'x-ratelimit-remaining'}, 599,
           "$what: pro: a request costs 1");

        my $anon = http_get($p, '/api/x');
        is($anon->{headers}{'x-ratelimit-remaining'}, 590,
           "$what: no key: limited per address, as free");

        my @int = map { http_get($p, '/api/x', 'X-Api-Key' => 'int_1') }
                  1 .. 10;
        is(codes(@int), join(' ', (200) x 10), "$what: internal: unlimited");
        ok(!grep({ exists $_->{headers}{'x-ratelimit-limit'} } @int),
           "$what: internal: no header");
        $ng->stop(name => "$what: nginx");
    }
}

# ------------------------------------------------------------ exemption

{
    my $what = 'exempting internal networks';
    $r->cli('FLUSHALL');
    my ($ng, $port) = run_recipe(recipe(qr/Exempting/i, $what), $what);
    if ($ng) {
        my $p = $port->{8080};
        my @local = map { http_get($p, '/') } 1 .. 10;
        is(codes(@local), join(' ', (200) x 10),
           "$what: 127.0.0.1 is exempted");
        ok(!grep({ exists $_->{headers}{'x-ratelimit-limit'} } @local),
           "$what: 127.0.0.1: no header");
      SKIP: {
            skip 'cannot bind 127.0.0.2', 3 unless $can_127_0_0_2;
            my @other = map { get_from('127.0.0.2', $p, '/') } 1 .. 8;
            my $first = first_reject(@other);
            ok($first >= 5, "$what: 127.0.0.2: 5 pass (first 429 at "
                            . ($first + 1) . ')');
            ok($first > 0, "$what: 127.0.0.2: then 429");
            is($other[0]{headers}{'x-ratelimit-limit'}, 5,
               "$what: 127.0.0.2: limited by per_ip");
        }
        $ng->stop(name => "$what: nginx");
    }
}

# ------------------------------------------------------------ dry-run rollout

{
    my $what = 'dry-run rollout';
    $r->cli('FLUSHALL');
    my ($ng, $port, $conf) = run_recipe(recipe(qr/dry-run rollout/i, $what),
                                        $what);
    if ($ng) {
        my $p = $port->{8080};
        my $log = $ng->dir . '/logs/ratelimit.log';
        my $lines = sub {
            open my $fh, '<', $log or return ();
            return <$fh>;
        };
        my $minute = int(time / 60);
        my @res = map { http_get($p, '/api/x') } 1 .. 105;
        is(codes(@res), join(' ', (200) x 105),
           "$what: step 1: 105 requests, none rejected");
        ok(wait_until(sub { $lines->() >= 105 }, timeout => 5),
           "$what: the access log has them");
        my @l = $lines->();
        my $dry = grep { /rl=REJECTED_DRY_RUN rule=per_ip / } @l;
        my $passed = grep { /rl=PASSED rule=per_ip / } @l;
        # 5 unless a minute boundary (sliding window) fell in between
        ok($dry >= 1 && $dry <= 5, "$what: about 5 logged as "
                                   . "REJECTED_DRY_RUN ($dry)");
        ok($passed >= 100, "$what: at least the 100 of the limit passed");
        is($passed + $dry, 105, "$what: the others as PASSED ($passed)");

        my $m = http_get($p, '/metrics');
        is($m->{code}, 200, "$what: the metrics answer 127.0.0.1");
        like($m->{body},
             qr/^rl_requests_total\{zone="main",rule="per_ip",outcome="rejected_dry_run"\} $dry$/m,
             "$what: the metrics count the $dry dry-run rejections");
        like($m->{body},
             qr/^rl_requests_total\{zone="main",rule="per_ip",outcome="passed"\} $passed$/m,
             "$what: and the $passed passed");

        # step 3: the switch, as the recipe says
        (my $on = $conf) =~ s/rl_dry_run on;/rl_dry_run off;/;
        isnt($on, $conf, "$what: the configuration has rl_dry_run on;");
        ok($ng->reload(config => $on), "$what: reload with rl_dry_run off");
        my @after = map { http_get($p, '/api/x') } 1 .. 5;
        my $first = first_reject(@after);
        # a minute boundary since step 1 weighs its 105 less: more pass
        my $crossed = int(time / 60) != $minute;
        ok($first >= 0 && ($first <= 1 || $crossed),
           "$what: step 3: the rule now rejects (" . codes(@after)
           . ($crossed ? ', a minute later' : '') . ')');
        ok(wait_until(sub { grep { /" 429 rl=REJECTED rule=per_ip / }
                                 $lines->() }, timeout => 5),
           "$what: logged as REJECTED");
        $ng->stop(name => "$what: nginx");
    }
}

# ------------------------------------------------------------ LLM gateway

{
    my $what = 'LLM gateway';
    $r->cli('FLUSHALL');
    my ($ng, $port) = run_recipe(recipe(qr/LLM gateway/, $what), $what);
    if ($ng) {
        my $p = $port->{8080};
        my @key = (Authorization => 'Bearer sk-test-1');
        my $first = http_get($p, '/v1/chat', @key);
        is($first->{code}, 200, "$what: a call with a key");
        is($first->{headers}{'ratelimit-policy'},
           '"per_ip";q=10;w=1, "in_flight";q=4;qu="concurrent-requests", '
           . '"tokens_minute";q=20000;w=60, "tokens_day";q=1000000;'
           . 'w=86400', "$what: its four rules");
        ok(!exists $first->{headers}{'x-tokens-used'},
           "$what: the usage header is not the client's");
        # one worker, one connection: each call's charge reaches Redis
        # before the next call's decision
        my ($served, $last) = (1);
        while ($served < 40) {
            $last = http_get($p, '/v1/chat', @key);
            last if $last->{code} != 200;
            $served++;
        }
        ok($served == 17 || $served == 18,
           "$what: 17 calls of 1,200 tokens in a minute ($served), then")
            or diag("the last: $last->{code}");
        is(join(' ', $last->{code}, $last->{headers}{'x-ratelimit-limit'},
                $last->{headers}{'ratelimit'} =~ /^"(\w+)"/),
           '429 20000 tokens_minute', "$what: the minute's budget rejects");
        my $other = http_get($p, '/v1/chat',
                             Authorization => 'Bearer sk-test-2');
        is($other->{code}, 200, "$what: another key has its own budget");
        my $nokey = http_get($p, '/v1/chat');
        is($nokey->{headers}{'ratelimit-policy'}, '"per_ip";q=10;w=1',
           "$what: without a key, per address only");
        $ng->stop(name => "$what: nginx");
    }
}

# ------------------------------------------------------------ billing days

SKIP: {
    my $what = 'monthly quotas on billing days';
    skip "$what: no /usr/share/zoneinfo (tzdata)", 1
        unless -f '/usr/share/zoneinfo/Europe/Berlin';
    $r->cli('FLUSHALL');
    my ($ng, $port) = run_recipe(recipe(qr/billing day/i, $what), $what);
    if ($ng) {
        my $p = $port->{8080};
        my $api = RlTest::Api->new($port->{8082}, '/rl/');
        my $res = http_get($p, '/api/x', 'X-Api-Key' => 'key-acme');
        is($res->{code}, 200, "$what: a request of a key");
        like($res->{headers}{'ratelimit-policy'},
             qr/^"monthly";q=10000;w=\d+, "daily";q=500;w=\d+$/,
             "$what: both rules in RateLimit-Policy");
        like($res->{headers}{'ratelimit'}, qr/^"daily";r=499;t=\d+$/,
             "$what: the day binds");
        for my $k (['key-acme', 15], ['key-initech', 28], ['key-other', 1]) {
            my ($key, $day) = @$k;
            http_get($p, '/api/x', 'X-Api-Key' => $key) if $key ne 'key-acme';
            my ($code, $d) = $api->get("1/rules/monthly/keys/$key?anchor=$day");
            is($d->{remaining}, 9999, "$what: $key used 1 this month");
            my $want = next_month_day('Europe/Berlin', $day) - time;
            ok(abs(($d->{reset} // 0) - $want) <= 2,
               "$what: ${key}'s month ends on the $day, 00:00 in Berlin "
               . "($d->{reset} s, about $want)");
        }
        my ($code, $d) = $api->call('POST',
            '1/rules/daily/keys/key-acme/credit', { units => 10 });
        is($code, 200, "$what: a credit through the operator API");
        is($d->{remaining}, 509, "$what: 10 more today");
        $res = http_get($p, '/api/x', 'X-Api-Key' => 'key-acme');
        is($res->{headers}{'x-ratelimit-remaining'}, 508,
           "$what: the next request counts with it");
        $ng->stop(name => "$what: nginx");
    }
}

# ------------------------------------------------------------ their quota

{
    my $what = 'customers see their quota';
    $r->cli('FLUSHALL');
    my ($ng, $port) = run_recipe(recipe(qr/see their quota/i, $what),
                                 $what);
    if ($ng) {
        my $p = $port->{8080};
        my $ask = sub {
            my $res = http_get($p, '/v1/quota', @_);
            my $d = eval { JSON::PP->new->decode($res->{body}) } // {};
            my %e = map { ($_->{name} => $_) } @{ $d->{rules} // [] };
            return ($res, \%e);
        };
        my @key = ('X-Api-Key' => 'key-acme');
        http_get($p, '/api/x', @key) for 1 .. 3;
        my ($res, $e) = $ask->(@key);
        is($res->{code}, 200, "$what: the quota answers");
        is_deeply([ @{ $e->{monthly} }{qw(limit remaining used period tz)} ],
                  [ 10000, 9997, 3, 'month', 'UTC' ],
                  "$what: three requests of the month used");
        ok($e->{monthly}{reset} > 0 && $e->{monthly}{reset} <= 31 * 86400,
           "$what: until the month ends ($e->{monthly}{reset} s)");
        is($e->{per_second}{window}, 1, "$what: and the second's rule");
        like($res->{headers}{'ratelimit-policy'} // '',
             qr/^"monthly";q=10000;w=\d+, "per_second";q=10;w=1, "quota_asks";q=10;w=60$/,
             "$what: with RateLimit-Policy (the asks' own rule after)");
        like($res->{headers}{'ratelimit'} // '',
             qr/^"per_second";r=\d+;t=\d+, "quota_asks";r=9;t=\d+$/,
             "$what: and RateLimit");
        my @asks = map { [ $ask->(@key) ] } 1 .. 9;
        is(join(' ', map { $_->[0]{code} } @asks), join(' ', (200) x 9),
           "$what: ten asks a minute");
        is(join(' ', map { $_->[1]{monthly}{remaining} } @asks),
           join(' ', (9997) x 9), "$what: none spent the month");
        is(($ask->(@key))[0]{code}, 429, "$what: the eleventh is refused");
        is(http_get($p, '/api/x', @key)->{code}, 200,
           "$what: the API still serves the key");
        my ($other, $oe) = $ask->('X-Api-Key' => 'key-initech');
        is($oe->{monthly}{remaining}, 10000,
           "$what: another key sees its own");
        my ($nokey) = $ask->();
        is($nokey->{body}, qq({"rules":[]}\n), "$what: no key, no rules");
        $ng->stop(name => "$what: nginx");
    }
}

# ------------------------------------------------------------ problem details

{
    my $what = 'problem details';
    $r->cli('FLUSHALL');
    my ($ng, $port) = run_recipe(recipe(qr/problem details/i, $what), $what);
    if ($ng) {
        my $p = $port->{8080};
        my ($res, $n) = (undef, 0);
        wait_until(sub {
            $res = http_get($p, '/api/x', 'X-Api-Key' => 'k1');
            $n++;
            $res->{code} != 200;
        }, timeout => 10, interval => 0);
        is($res->{code}, 429, "$what: a 429 after $n requests");
        is($res->{headers}{'content-type'}, 'application/problem+json',
           "$what: as application/problem+json");
        my $body = eval { JSON::PP->new->decode($res->{body}) };
        ok($body, "$what: a JSON object") or diag($res->{body});
        is($body->{type}, 'https://iana.org/assignments/http-problem-types'
           . '#quota-exceeded', "$what: the draft's quota-exceeded type");
        is($body->{status}, 429, "$what: its status");
        like($body->{title} // '', qr/quota has been exceeded/,
             "$what: its title");
        is_deeply($body->{'violated-policies'}, ['per_ip'],
                  "$what: violated-policies names the binding rule");
        like($body->{detail} // '', qr/^Retry in \d+ seconds\.$/,
             "$what: a detail with \$rl_reset");
        ok($res->{headers}{'retry-after'}, "$what: Retry-After kept");
        is($res->{headers}{'x-ratelimit-limit'}, 10,
           "$what: X-RateLimit-Limit kept");
        like($res->{headers}{ratelimit} // '', qr/^"per_ip";r=0;t=\d+$/,
             "$what: RateLimit kept");
        like($res->{headers}{'ratelimit-policy'} // '',
             qr/^"per_ip";q=10;w=1, "monthly";q=100000;w=\d+$/,
             "$what: RateLimit-Policy kept");
        $ng->stop(name => "$what: nginx");
    }
}

# ------------------------------------------------------------ failed logins

{
    my $what = 'failed logins';
    $r->cli('FLUSHALL');
    my ($ng, $port) = run_recipe(recipe(qr/failed logins/i, $what), $what);
    if ($ng) {
        my $p = $port->{8080};
        my $login = sub { http_get($p, "/login?password=$_[0]")->{code} };
        my @ok = map { $login->('right') } 1 .. 20;
        is("@ok", join(' ', (200) x 20),
           "$what: 20 successful logins, never limited");
        my @bad = map { $login->('wrong') } 1 .. 5;
        is("@bad", '401 401 401 401 401', "$what: 5 failures reach the "
           . 'application');
        is($login->('wrong'), 429, "$what: the 6th failure is refused");
        is($login->('right'), 429, "$what: and so is any login from there");
        $ng->stop(name => "$what: nginx");
    }
}

# ------------------------------------------------------------ shedding load

{
    my $what = 'reduced capacity';
    $r->cli('FLUSHALL');
    my ($ng, $port) = run_recipe(recipe(qr/reduced-capacity/i, $what),
                                 $what);
    if ($ng) {
        my $p = $port->{8080};
        # four business requests hold N = 4 slots (min=) while their
        # bodies come slowly: the fifth is shed
        my @held = map {
            my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                        PeerPort => $p, Timeout => 5);
            print $s "POST /api/x HTTP/1.1\r\nHost: localhost\r\n"
                   . "X-Api-Plan: business\r\nContent-Length: 10\r\n\r\na";
            $s;
        } 1 .. 4;
        ok(wait_until(sub { slots_held($r) == 4 }, timeout => 10),
           "$what: 4 requests hold the 4 slots N starts with");
        my $res = http_get($p, '/api/x', 'X-Api-Plan' => 'business');
        is($res->{code}, 503, "$what: the fifth is shed with a 503");
        is($res->{headers}{'content-type'}, 'application/problem+json',
           "$what: as application/problem+json");
        my $body = eval { JSON::PP->new->decode($res->{body}) } // {};
        is($body->{type}, 'https://iana.org/assignments/http-problem-types'
           . '#temporary-reduced-capacity',
           "$what: the draft's temporary-reduced-capacity type");
        is_deeply($body->{'violated-policies'}, ['backend'],
                  "$what: violated-policies names the rule");
        is(join(' ', map { $res->{headers}{$_} // '-' }
                         qw(retry-after x-ratelimit-limit)),
           '1 4', "$what: Retry-After: 1 and the N it was decided with");
        print $_ "bcdefghij" for @held;
        close $_ for @held;
        ok(wait_until(sub { slots_held($r) == 0 }, timeout => 10),
           "$what: their slots go when they end");
        $ng->stop(name => "$what: nginx");
    }
}

# ------------------------------------------------------------ Prometheus

{
    my $what = 'Prometheus';
    $r->cli('FLUSHALL');
    my $rc = recipe(qr/Prometheus/, $what);
    my @yaml = @{ $rc->{yaml} // [] };
    is(scalar @yaml, 1, "$what: one prometheus.yml snippet");
    my $y = eval { CPAN::Meta::YAML->read_string($yaml[0] // '') };
    ok($y, "$what: prometheus.yml parses") or diag($@);
    my $job = $y ? $y->[0]{scrape_configs}[0] : {};
    my ($target) = @{ $job->{static_configs}[0]{targets} // [] };
    my ($thost, $tport) = ($target // '') =~ /^([^:]+):(\d+)$/;
    ok($job->{job_name}, "$what: a job_name");
    my $nginx = ($rc->{nginx} // [''])->[0];
    my ($mpath) = $nginx =~ /location\s+=\s+(\S+)\s*\{[^}]*rl_metrics;/s;
    is($job->{metrics_path}, $mpath,
       "$what: metrics_path is the rl_metrics location ($mpath)");
    like($nginx, qr/listen\s+\Q$thost:$tport\E;/,
         "$what: the target is the metrics server's listen ($thost:$tport)");

    my ($ng, $port) = run_recipe($rc, $what);
    if ($ng && !($tport && $port->{$tport})) {
        fail("$what: the target's port is not one of the configuration's");
        $ng->stop(name => "$what: nginx");
    } elsif ($ng) {
        my $p = $port->{8080};
        my $mp = $port->{$tport};
        is(http_get($p, '/')->{code}, 200, "$what: traffic");
        my $m = http_get($mp, $mpath);
        is($m->{code}, 200, "$what: the scrape from 127.0.0.1 answers");
        like($m->{headers}{'content-type'} // '',
             qr{^text/plain; version=0\.0\.4}, "$what: in the text format");
        like($m->{body},
             qr/^rl_requests_total\{zone="main",rule="per_ip",outcome="passed"\} 1$/m,
             "$what: with the counts");
        unlike(http_get($p, $mpath)->{body}, qr/rl_requests_total/,
               "$what: the public server does not serve the metrics");
      SKIP: {
            skip 'cannot bind 127.0.0.2', 1 unless $can_127_0_0_2;
            is(get_from('127.0.0.2', $mp, $mpath)->{code}, 403,
               "$what: another address is denied");
        }
        $ng->stop(name => "$what: nginx");
    }
}

# ------------------------------------------------------------ reference snippets

# The snippets of the directive reference, in a configuration around them.
{
    # its sections: "## NAME" => text
    my %ref = map { /\A(.*)\n/ ? ($1 => $_) : () }
              split /^## /m, doc('reference.md');
    my ($status) = ($ref{'rl_status'} // '') =~ /^```nginx\n(.*?)^```$/ms;
    my ($vars) = ($ref{'Embedded variables'} // '') =~
        /^```nginx\n(.*?)^```$/ms;
    ok(defined $status, 'the rl_status section has an error_page example');
    ok(defined $vars, 'the variables section has an example');
    $r->cli('FLUSHALL');
    my $conf = <<"CONF";
load_module /usr/lib/nginx/modules/ngx_http_rl_module.so;
events {}
http {
    rl_zone main redis=127.0.0.1:6379;
@{[ $vars // '' ]}
    upstream app {
        server 127.0.0.1:8081;
    }
    server {
        listen 8080;
@{[ $status // '' ]}
    }
    server {
        listen 127.0.0.1:8081;
        return 200 "ok\\n";
    }
}
CONF
    my ($ng, $port) = run_recipe({ nginx => [$conf] }, 'reference snippets');
    if ($ng) {
        my $p = $port->{8080};
        my ($res, $n);
        wait_until(sub {
            $res = http_get($p, '/api/x');
            $n++;
            $res->{code} != 200;
        }, timeout => 10, interval => 0);
        is($res->{code}, 429, "rl_status example: a 429 after $n requests");
        like($res->{body},
             qr/^\{"error":"rate_limited","rule":"per_ip","retry_after":[1-9]\d*\}\n\z/,
             'rl_status example: the JSON body of the named location');
        like($res->{headers}{'content-type'} // '', qr{^application/json},
             'rl_status example: as JSON');
        is($res->{headers}{'x-ratelimit-limit'}, 10,
           'rl_status example: the headers survive the redirect');
        is($res->{headers}{'x-rl-verdict'}, 'slow down',
           'variables example: the map of $rl_status to a header');
        $ng->stop(name => 'reference snippets: nginx');
    }
}

$r->stop;
done_testing();
