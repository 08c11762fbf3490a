# rl_zone's Redis options: password, username (ACL), db, prefix; what the
# module leaves in Redis: keys under the prefix, every key with a TTL,
# bounded key length.

use lib 't/lib';
use RlTest;


# ---------------------------------------------------------------- auth

{
    my $r = start_redis(password => 's3cret');
    $r->cli('ACL', 'SETUSER', 'app', 'on', '>apppw', '~*', '+@all');
    my $ng = start_nginx(redis => $r, config => <<'CONF');
    rl_zone good redis=127.0.0.1:$RedisPort password=s3cret timeout=5s;
    rl_zone acl redis=127.0.0.1:$RedisPort username=app password=apppw timeout=5s;
    rl_zone badpw redis=127.0.0.1:$RedisPort password=wrong timeout=300ms;
    rl_zone nopw redis=127.0.0.1:$RedisPort timeout=300ms;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /good  { rl_rule zone=good  key=k rate=2r/d; empty_gif; }
        location /acl   { rl_rule zone=acl   key=k rate=2r/d; empty_gif; }
        location /badpw { rl_rule zone=badpw key=k rate=2r/d; empty_gif; }
        location /nopw  { rl_rule zone=nopw  key=k rate=2r/d; empty_gif; }
    }
CONF
    my @s = map { code_status(http_get($ng->port, '/good')) } 1 .. 3;
    is("@s", '200 PASSED 200 PASSED 429 REJECTED', 'password=: limits');
    @s = map { code_status(http_get($ng->port, '/acl')) } 1 .. 3;
    is("@s", '200 PASSED 200 PASSED 429 REJECTED',
       'username= and password= (ACL user): limits');
    my @users = map { /\buser=(\S+)/ ? $1 : () }
                grep { /name=ngx_rl\b/ } split /\n/, $r->cli('CLIENT', 'LIST');
    ok(grep({ $_ eq 'app' } @users), 'a module connection runs as user app')
        or diag("users: @users");
    is(code_status(http_get($ng->port, '/badpw')), '200 ERROR',
       'wrong password: failure policy (open), ERROR');
    is(code_status(http_get($ng->port, '/nopw')), '200 ERROR',
       'no password on a protected Redis: ERROR');
    my @err = grep { /\[error\]/ && /badpw/ && /redis/i }
              split /\n/, $ng->error_log_text;
    ok(@err >= 1, 'wrong password logged with zone and redis')
        or diag(join "\n", grep { /badpw/ } split /\n/, $ng->error_log_text);
    # no password= for a Redis that wants one: the error says so (not what
    # the rest of the handshake then meets)
    my @nopw = grep { /\[error\]/ && /"nopw"/ } split /\n/,
               $ng->error_log_text;
    like($nopw[0] // '', qr/handshake failed: NOAUTH/,
         'no password: the error names NOAUTH')
        or diag(join "\n", @nopw);
    $ng->stop;
    $r->stop;
}

# An ACL user without the CLIENT command (as some managed Redis give):
# the connection goes unnamed, and decides.
{
    my $r = start_redis(password => 's3cret');
    $r->cli('ACL', 'SETUSER', 'app', 'on', '>apppw', '~*', '+@all',
            '-client');
    my $ng = start_nginx(redis => $r, config => <<'CONF');
    rl_zone acl redis=127.0.0.1:$RedisPort username=app password=apppw timeout=5s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /acl { rl_rule zone=acl key=k rate=2r/d; empty_gif; }
    }
CONF
    my $ok = wait_until(sub {
        code_status(http_get($ng->port, '/acl')) eq '200 PASSED'
    }, timeout => 5, interval => 0.1);
    ok($ok, 'an ACL user without CLIENT: decisions');
    my @s = map { code_status(http_get($ng->port, '/acl')) } 1 .. 2;
    is("@s", '200 PASSED 429 REJECTED', 'and the limit holds (2r/d)');
    like($ng->error_log_text, qr/refused CLIENT SETNAME/,
         'the refusal is logged (info)');
    unlike($ng->error_log_text, qr/unavailable/, 'the zone stayed up');
    $ng->stop;
    $r->stop;
}

# ---------------------------------------------------------------- db, prefix

{
    my $r = start_redis();
    my $ng = start_nginx(redis => $r, config => <<'CONF');
    rl_zone dflt redis=127.0.0.1:$RedisPort timeout=5s;
    rl_zone db3 redis=127.0.0.1:$RedisPort db=3 prefix=myapp: timeout=5s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /dflt {
            rl_rule zone=dflt key=$arg_k rate=3r/d algorithm=fixed_window;
            rl_rule zone=dflt key=$arg_k rate=3r/h;
            empty_gif;
        }
        location /db3 {
            rl_rule zone=db3 key=$arg_k rate=3r/d algorithm=fixed_window;
            rl_rule zone=db3 key=$arg_k rate=3r/h;
            empty_gif;
        }
    }
CONF
    my $long = 'x' x 500;
    for my $loc (qw(dflt db3)) {
        for my $k ('short', $long) {
            my @s = map { code_status(http_get($ng->port, "/$loc?k=$k")) } 1 .. 4;
            is("@s", '200 PASSED 200 PASSED 200 PASSED 429 REJECTED',
               "/$loc, key of " . length($k) . " bytes: limits");
        }
    }

    my @k0 = split /\n/, $r->cli('-n', 0, 'KEYS', '*');
    my @k3 = split /\n/, $r->cli('-n', 3, 'KEYS', '*');
    ok(@k0 > 0, 'default zone: keys in db 0 (' . scalar(@k0) . ')');
    ok(@k3 > 0, 'db=3 zone: keys in db 3 (' . scalar(@k3) . ')');
    ok(!grep({ !/^rl:/ } @k0), 'db 0: every key starts with rl:')
        or diag("@k0");
    ok(!grep({ !/^myapp:/ } @k3), 'db 3: every key starts with myapp:')
        or diag("@k3");
    ok(!grep({ /x{65}/ } @k0, @k3), 'no key holds the 500-byte value')
        or diag(join "\n", grep { /x{65}/ } @k0, @k3);
    my @too_long = (grep({ length($_) > length('rl:') + 128 } @k0),
                    grep({ length($_) > length('myapp:') + 128 } @k3));
    ok(!@too_long, 'every key is at most prefix + 128 bytes')
        or diag("@too_long");

    for my $db (0, 3) {
        for my $key ($db ? @k3 : @k0) {
            my $ttl = $r->cli('-n', $db, 'TTL', $key);
            ok($ttl > 0 && $ttl <= 2 * 86400 + 60,
               "db $db: key $key has a TTL ($ttl)");
        }
    }
    $ng->stop;
    $r->stop;
}

done_testing();
