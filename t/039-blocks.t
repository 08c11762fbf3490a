# Manual blocks (SPEC section 4, ops tooling): while the string
# PREFIX{VALUE} exists in Redis, every rule of a zone with that prefix
# rejects that key value, counts nothing, and says to retry when the
# block ends (at most 60 s: it is read again by then); the deny cache
# spares Redis the flood meanwhile. Read in the same script call: no
# round trip more. Binary and long key values are blocked by the key
# the module writes for them.

use lib 't/lib';
use RlTest;
use Digest::SHA qw(sha1_hex);

my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 2, ready => 2,
                     config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort;
    rl_zone other redis=127.0.0.1:$RedisPort prefix=o:;
    rl_zone same redis=127.0.0.1:$RedisPort timeout=1s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /a {
            rl_rule zone=main key=$http_x_key rate=100r/m;
            rl_rule zone=main key=$http_x_key rate=1000r/d
                    algorithm=sliding_log name=daily;
            empty_gif;
        }
        location /dry {
            rl_rule zone=main key=$http_x_key rate=100r/m name=dry dry_run;
            empty_gif;
        }
        location /other {
            rl_rule zone=other key=$http_x_key rate=100r/m;
            empty_gif;
        }
        location /same {
            rl_rule zone=same key=$http_x_key rate=100r/m;
            empty_gif;
        }
        location /log {
            rl_rule zone=main key=$http_x_key rate=100r/m
                    algorithm=sliding_log name=log;
            empty_gif;
        }
        location /addr {
            rl_rule zone=main key=$binary_remote_addr rate=100r/m
                    algorithm=gcra burst=10;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;

sub get_as {
    my ($path, $key) = @_;
    return http_get($port, $path, 'X-Key' => $key);
}

is(code_status(get_as('/a', 'alice')), '200 PASSED', 'alice passes');
is(code_status(get_as('/log', 'alice')), '200 PASSED', 'and in the log');

# 5 s: the checks below take a fraction of it, on a stalled host too
$r->cli('SET', 'rl:{alice}', 'ops', 'PX', 5000);
my $res = get_as('/a', 'alice');
is(code_status($res), '429 REJECTED', 'blocked: alice is rejected');
my $h = $res->{headers};
is($h->{'x-ratelimit-remaining'}, 0, 'nothing left while blocked');
ok(($h->{'retry-after'} // 0) >= 1 && $h->{'retry-after'} <= 6,
   'Retry-After is what the block has left ('
   . ($h->{'retry-after'} // 'absent') . ')');
is(code_status(get_as('/a', 'bob')), '200 PASSED', 'bob is not blocked');
is(code_status(get_as('/other', 'alice')), '200 PASSED',
   'a zone with another prefix is not blocked');
is(code_status(get_as('/same', 'alice')), '429 REJECTED',
   'a zone with the same prefix is');
is(code_status(get_as('/log', 'alice')), '429 REJECTED',
   'a sliding_log rule is');
is(code_status(get_as('/dry', 'alice')), '200 REJECTED_DRY_RUN',
   'a dry-run rule reports the block and rejects nothing');

# the deny cache answers for the block: Redis hears nothing more of alice
my $calls = $r->calls('evalsha');
my @codes = map { code_status(get_as('/a', 'alice')) } 1 .. 6;
is_deeply(\@codes, [('429 REJECTED') x 6], 'still blocked')
    or diag(explain \@codes);
is($r->calls('evalsha') - $calls, 0,
   'the deny cache keeps the block: no script call');

# the block ends with its TTL; what it rejected counted nothing: the
# minute rule has 100 - 2 left after alice's second admission
my $back;
ok(wait_until(sub { ($back = get_as('/a', 'alice'))->{code} == 200 },
              timeout => 12, interval => 0.1),
   'alice passes again once the block ends');
is($back->{headers}{'x-ratelimit-remaining'}, 98,
   'blocked requests counted nothing');
is(get_as('/log', 'alice')->{headers}{'x-ratelimit-remaining'}, 98,
   'nor in the log');

# no TTL: blocked until the key goes, read again within a minute
$r->cli('SET', 'rl:{carol}', '1');
$res = get_as('/a', 'carol');
is(code_status($res), '429 REJECTED', 'a block without TTL rejects');
is($res->{headers}{'retry-after'}, 60, 'and says to retry in 60 s');
like($ng->error_log_text,
     qr/rl: request rejected by rule "100r\/m" of zone "main", key "carol", retry in 60000 ms/,
     'the rejection is logged as any other');

# a key value over 64 bytes is blocked by its digest, as its state keys
# are named
my $long = 'x' x 100;
is(code_status(get_as('/a', $long)), '200 PASSED', 'a long key passes');
$r->cli('SET', 'rl:{~' . sha1_hex($long) . '}', '1', 'PX', 5000);
is(code_status(get_as('/a', $long)), '429 REJECTED',
   'blocked by the digest of its value');

# $binary_remote_addr: the block's key holds the address' 4 bytes, as
# docs/redis.md's recipe writes it
is(code_status(http_get($port, '/addr')), '200 PASSED', '127.0.0.1 passes');
$r->cli('EVAL', q{local v = string.char(127, 0, 0, 1)
    if #v > 64 or v:find('[{}]') or v:sub(1, 1) == '~' then
        v = '~' .. redis.sha1hex(v)
    end
    return redis.call('SET', 'rl:{' .. v .. '}', 1, 'EX', 5)}, '0');
is(code_status(http_get($port, '/addr')), '429 REJECTED',
   'a binary key value is blocked by its bytes');

is_deeply([RlTest::Nginx::bad_log_lines($ng->error_log_text)], [],
          'no alert, crash or leak in the error log');

$ng->stop;
$r->stop;

done_testing();
