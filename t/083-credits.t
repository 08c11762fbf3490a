# Credits (SPEC section 12): POST /1/rules/NAME/keys/VALUE/credit
# {"units": N} and its /key/credit?value= twin, on Redis and on the
# embedded store. A key that used its monthly quota may use N more this
# month (the deny cache's entry dropped at once, the write logged at
# notice); a key with no usage goes below zero; a fixed window's credit
# ends with its window; a bucket takes units back up to its burst; a key
# billed on its own day (anchor=$variable) credited for that day
# (?anchor=); sliding_log and concurrency= rules refuse credits; every
# bad request refused with nothing written.

use lib 't/lib';
use RlTest;
use RlTest::Api;

unless (-f '/usr/share/zoneinfo/Europe/Berlin') {
    plan skip_all => 'no /usr/share/zoneinfo (tzdata)';
}

my $r = start_redis();
# the same locations for each store: /redis/... and /mem/...
my $locations = join '', map { my $z = $_; <<"LOC" =~ s/ZONE/$z/gr } qw(redis mem);
        location /ZONE/month {
            rl_rule zone=ZONE key=\$arg_k rate=3r/month tz=Europe/Berlin
                    name=month_ZONE;
            empty_gif;
        }
        location /ZONE/billing {
            rl_rule zone=ZONE key=\$arg_k rate=2r/month tz=Europe/Berlin
                    anchor=\$arg_day name=billing_ZONE;
            empty_gif;
        }
        location /ZONE/window {
            rl_rule zone=ZONE key=\$arg_k rate=2r/h algorithm=fixed_window
                    name=window_ZONE;
            empty_gif;
        }
        location /ZONE/bucket {
            rl_rule zone=ZONE key=\$arg_k rate=1r/h algorithm=token_bucket
                    burst=3 name=bucket_ZONE;
            empty_gif;
        }
        location /ZONE/log {
            rl_rule zone=ZONE key=\$arg_k rate=2r/h algorithm=sliding_log
                    name=log_ZONE;
            empty_gif;
        }
        location /ZONE/slots {
            rl_rule zone=ZONE key=\$arg_k concurrency=2 name=slots_ZONE;
            empty_gif;
        }
LOC
my $ng = start_nginx(redis => $r, workers => 2, config => <<"CONF");
    rl_zone redis redis=127.0.0.1:\$RedisPort timeout=5s;
    rl_zone mem;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
$locations
        location /rl/ { rl_api write=on; }
        location /ro/ { rl_api; }
    }
CONF
my $port = $ng->port;
my $api = RlTest::Api->new($port, '/rl/');

sub get { http_get($port, $_[0]) }
sub codes { join ' ', map { get($_[0])->{code} } 1 .. $_[1] }
sub credit {
    my ($path, $units) = @_;
    return $api->call('POST', $path, { units => $units });
}

for my $store ('redis', 'mem') {
    my $what = $store eq 'redis' ? 'Redis' : 'embedded';

    # a key that used its month
    is(codes("/$store/month?k=a", 4), '200 200 200 429',
       "$what: a key uses its monthly quota");
    my ($code, $data, $res) = credit("1/rules/month_$store/keys/a/credit", 2);
    is($code, 200, "$what: credited 2 units") or diag($res->{body});
    is($data->{credit}, 2, "$what: the answer says the credit");
    is($data->{remaining}, 2, "$what: and what the key has now");
    is($data->{limit}, 3, "$what: its limit unchanged");
    cmp_ok($data->{reset}, '>', 0, "$what: until its month ends");
    my $hit = get("/$store/month?k=a");
    is($hit->{code}, 200, "$what: the next request passes at once "
       . '(the deny cache forgot the key)');
    is($hit->{headers}{'x-ratelimit-remaining'}, 1,
       "$what: X-RateLimit-Remaining counts the credit");
    is(codes("/$store/month?k=a", 2), '200 429',
       "$what: 2 more, then rejected again");
    like($ng->error_log_text,
         qr/\[notice\].*rl_api:\ 127\.0\.0\.1\ credited\ key\ "a"\ of\ rule
            \ "month_$store"\ in\ zone\ "$store"\ with\ 2\ units/x,
         "$what: the credit logged at notice");

    # a key with no usage: below zero
    ($code, $data) = credit("1/rules/month_$store/key/credit?value=b", 4);
    is($code, 200, "$what: the /key?value= twin");
    is($data->{remaining}, 7, "$what: a fresh key credited 4: 7 left");
    is(codes("/$store/month?k=b", 8), '200 200 200 200 200 200 200 429',
       "$what: 7 pass");

    # a key billed on its own day
    ($code, $data) = credit(
        "1/rules/billing_$store/keys/c/credit?anchor=20", 1);
    is($code, 200, "$what: a billing day's key credited for its day");
    is(codes("/$store/billing?k=c&day=20", 4), '200 200 200 429',
       "$what: its month has 3");
    my ($c2, $d2) = $api->get("1/rules/billing_$store/keys/c?anchor=20");
    is($d2->{remaining}, 0, "$what: read with its day: nothing left");

    # a window of an hour: its credit ends with it; a bucket: at most its
    # burst
    ($code, $data) = credit("1/rules/window_$store/keys/d/credit", 3);
    is($data->{remaining}, 5, "$what: a window credited: 5 this hour");
    is(codes("/$store/bucket?k=e", 4), '200 200 200 429',
       "$what: a bucket emptied");
    ($code, $data) = credit("1/rules/bucket_$store/keys/e/credit", 1);
    is($data->{remaining}, 1, "$what: a bucket credited 1");
    ($code, $data) = credit("1/rules/bucket_$store/keys/e/credit", 10);
    is($data->{remaining}, 3, "$what: never above its burst");

    # refused
    for my $rule ("log_$store", "slots_$store") {
        ($code, $data) = credit("1/rules/$rule/keys/f/credit", 1);
        is($code, 400, "$what: $rule refuses credits");
        is($data->{error}{code}, 'CreditRefused', "$what: $rule: why");
    }
}

# bad requests: nothing written
my $path = '1/rules/month_redis/keys/g/credit';
for my $case ([{ units => 0 }, 'units 0'], [{ units => -1 }, 'units -1'],
              [{ units => 1.5 }, 'a fraction'],
              [{ units => 1000000001 }, 'more than 1e9'],
              [{}, 'no units'], [{ units => 1, ttl => 60 }, 'a ttl'],
              [{ units => '1' }, 'a string']) {
    my ($body, $name) = @$case;
    my ($code, $data) = $api->call('POST', $path, $body);
    is($code, 400, "$name: 400");
    is($data->{error}{code}, 'BodyInvalid', "$name: BodyInvalid");
}
my ($code, $data, $res) = $api->call('POST', $path, '{"units": 1}',
                                     type => 'text/plain');
is($code, 415, 'text/plain: 415');
($code, $data, $res) = $api->get($path);
is($code, 405, 'GET: 405');
is($res->{headers}{allow}, 'POST', 'Allow: POST');
($code) = RlTest::Api->new($port, '/ro/')->call('POST', $path, { units => 1 });
is($code, 403, 'without write=on: 403');
($code, $data) = $api->call('POST', "$path?anchor=29", { units => 1 });
is($code, 400, 'anchor=29: 400');
($code) = $api->call('POST', '1/rules/nope/keys/g/credit', { units => 1 });
is($code, 404, 'an unknown rule: 404');
is(($api->get('1/rules/month_redis/keys/g'))[1]{remaining}, 3,
   'nothing was written');

$ng->stop;
done_testing();
