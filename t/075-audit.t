# The change feed and the audit (SPEC section 11): every write of the
# operator API goes to its zone's audit stream in Redis, with the time,
# the instance, the client, $remote_user, the rule, the key and what
# changed; GET /1/audit lists them newest first ($remote_user only where
# auth_basic checked it, under satisfy all). Every instance reads
# the stream's new entries once a second and drops what it caches of
# the keys named: a block made through A applies on B within a second
# although B holds a lease of the key (lease=10s), and a block lifted
# through A lets the key in on B within a second although B's deny
# cache kept its rejection (up to a minute).

use lib 't/lib';
use RlTest;
use RlTest::Api;
use MIME::Base64 qw(encode_base64);
use Time::HiRes qw(time sleep);

my $r = start_redis();
my $config = <<'CONF';
    rl_fleet name=$Name interval=1s;
    rl_zone main redis=127.0.0.1:$RedisPort timeout=2s;
    rl_zone leased redis=127.0.0.1:$RedisPort timeout=2s lease=10s;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /a { rl_rule zone=main key=$http_x_key rate=100r/m name=per;
                      empty_gif; }
        location /l { rl_rule zone=leased key=$http_x_key rate=100000r/m
                              name=hot; empty_gif; }
        location /rl/ {
            auth_basic ops;
            auth_basic_user_file $ServerRoot/conf/htpasswd;
            rl_api write=on;
        }
        location /open/ { rl_api write=on; }
        location /any/ {
            satisfy any;
            allow 127.0.0.1;
            deny all;
            auth_basic ops;
            auth_basic_user_file $ServerRoot/conf/htpasswd;
            rl_api write=on;
        }
    }
CONF
my @ng;
for my $name (qw(A B)) {
    my $ng = start_nginx(redis => $r, workers => 2, start => 0,
                         vars => { Name => $name }, config => $config);
    open my $fh, '>', $ng->dir . '/conf/htpasswd' or die $!;
    print $fh "ops:{PLAIN}secret\n";
    close $fh;
    $ng->start;
    push @ng, $ng;
}
my $auth = [Authorization => 'Basic ' . encode_base64('ops:secret', '')];
my @api = map { RlTest::Api->new($_->port, '/rl/') } @ng;
sub call { my ($i, $m, $p, $b) = @_;
           $api[$i]->call($m, $p, $b, headers => $auth) }
sub get { my ($i, $path) = @_; $api[$i]->get($path, headers => $auth) }
sub st { my ($i, $path, $key) = @_;
         code_status(http_get($ng[$i]->port, $path, 'X-Key' => $key)) }

sub within {
    my ($f, $deadline) = @_;
    my $t0 = time;
    return wait_until($f, timeout => $deadline, interval => 0.05)
        ? time - $t0 : undef;
}

# ---------------------------------------------------- a lease on B, blocked
# B's key hot: it holds a lease (requests spent without Redis)
st(1, '/l', 'hot') for 1 .. 200;
my $calls = $r->calls('evalsha');
st(1, '/l', 'hot') for 1 .. 50;
ok($r->calls('evalsha') - $calls < 25, 'B spends a lease of the hot key');
my ($code) = call(0, 'POST', '1/rules/hot/keys/hot/block',
                  { ttl => 600, reason => 'abuse' });
is($code, 201, 'blocked through A');
my $t = within(sub { st(1, '/l', 'hot') eq '429 REJECTED' }, 5);
ok(defined $t && $t < a_second(), 'B rejects it within a second, its lease '
   . 'dropped (' . (defined $t ? sprintf('%.2fs', $t) : 'never') . ')');

# ------------------------------------------------ B's deny cache, unblocked
($code) = call(0, 'POST', '1/rules/per/keys/bad/block', { reason => 'x' });
is(st(1, '/a', 'bad'), '429 REJECTED', 'B rejects a blocked key');
is(st(1, '/a', 'bad'), '429 REJECTED', 'again (its deny cache)');
($code) = call(0, 'DELETE', '1/rules/per/keys/bad/block');
is($code, 204, 'unblocked through A');
$t = within(sub { st(1, '/a', 'bad') eq '200 PASSED' }, 5);
ok(defined $t && $t < a_second(), 'B lets it in within a second, its cached '
   . 'rejection dropped (' . (defined $t ? sprintf('%.2fs', $t) : 'never')
   . ')');

# ------------------------------------------------------------ every write
# A key's write is recorded once Redis took it, with nobody waiting: two
# answered by two workers in a moment may be recorded in the other order
# (a sanitized run did). Each key write here waits for its entry; a live
# limit's and a trial's are recorded in the call that writes them.
sub recorded {
    my ($c, $d) = get(1, '1/audit?n=1000');
    return $c == 200 ? scalar @{ $d->{entries} } : -1;
}
sub key_write {
    my $n = recorded();
    call(@_);
    wait_until(sub { recorded() > $n }, timeout => 5)
        or diag("not recorded: $_[1] $_[2]");
}
key_write(1, 'PUT', '1/rules/per/keys/k1/override', { limit => 7, ttl => 60 });
key_write(1, 'DELETE', '1/rules/per/keys/k1/override');
key_write(1, 'DELETE', '1/rules/per/keys/k1');
call(0, 'PUT', '1/rules/per/limit', { limit => 50, ttl => 60,
                                      reason => 'calm' });
call(0, 'DELETE', '1/rules/per/limit');
call(0, 'PUT', '1/rules/per/trial', { limit => 20, ttl => 60 });
call(0, 'DELETE', '1/rules/per/trial');
key_write(0, 'POST', '1/rules/per/key/block?value=..', { ttl => 5 });

my ($c, $data) = get(1, '1/audit');
is($c, 200, 'GET /1/audit');
is($data->{zone}, 'main', 'of the first zone');
my @actions = map { $_->{action} } @{ $data->{entries} };
is_deeply(\@actions,
          [qw(block untrial trial unlimit limit reset unoverride override
              unblock block)],
          'every write of the zone, newest first') or diag explain \@actions;
my ($ov) = grep { $_->{action} eq 'override' } @{ $data->{entries} };
is_deeply([ @$ov{qw(instance client user rule key)} ],
          ['B', '127.0.0.1', 'ops', 'per', 'k1'],
          'who (instance, client, user), the rule, the key');
is_deeply($ov->{detail}, { limit => 7, ttl => 60 }, 'what changed');
my ($lim) = grep { $_->{action} eq 'limit' } @{ $data->{entries} };
is_deeply($lim->{detail}, { limit => 50, ttl => 60, reason => 'calm' },
          'a live limit, with its reason');
is($data->{entries}[0]{key}, '..', 'a key as text');
ok(abs($data->{entries}[0]{time} - time) < 5, 'the time of each');
($c, $data) = get(0, '1/audit?n=2');
is(scalar @{ $data->{entries} }, 2, 'n=2: the last two');
($c, $data) = get(0, '1/audit?zone=leased');
is_deeply([ map { $_->{action} } @{ $data->{entries} } ], ['block'],
          'the other zone has its own');
($c, $data) = get(0, '1/audit?n=0');
is($c, 400, 'n=0: 400');

# The user is recorded only when auth_basic checked it: elsewhere the
# Authorization header claims what the client likes (before, an API
# without auth_basic recorded "mallory", and so did one whose `satisfy
# any` let the address in with a wrong password)
my $claim = [Authorization => 'Basic ' . encode_base64('mallory:x', '')];
my $open = RlTest::Api->new($ng[0]->port, '/open/');
my $any = RlTest::Api->new($ng[0]->port, '/any/');
($c) = $open->call('POST', '1/rules/per/keys/o1/block', { ttl => 5 },
                   headers => $claim);
is($c, 201, 'a write through an API without auth_basic');
($c) = $any->call('POST', '1/rules/per/keys/o2/block', { ttl => 5 },
                  headers => $claim);
is($c, 201, 'one through satisfy any, let in by its address');
($c) = $any->call('POST', '1/rules/per/keys/o3/block', { ttl => 5 },
                  headers => $auth);
is($c, 201, 'and one there with the right password');
($c) = $api[0]->call('POST', '1/rules/per/keys/o4/block', { ttl => 5 },
                     headers => $claim);
is($c, 401, 'auth_basic refuses the claim');
($c, $data) = get(0, '1/audit?n=3');
is_deeply([ map { [ $_->{key}, $_->{user} ] } @{ $data->{entries} } ],
          [ [ 'o3', '' ], [ 'o2', '' ], [ 'o1', '' ] ],
          'none of them records a user auth_basic did not check')
    or diag explain $data->{entries};

# An entry written by hand with an id past 2^63 ms (Redis takes ids to
# 2^64): still JSON (before, its time read "-N." or worse)
$r->cli('XADD', 'rl:{fleet}:main:audit', '18446744073709551615-0',
        'action', 'block', 'rule', 'per', 'key', 'hand');
($c, $data) = get(0, '1/audit?n=1');
is($c, 200, 'an entry written by hand: 200');
is_deeply([ map { [ $_->{key}, $_->{time} ] } @{ $data->{entries} // [] } ],
          [ [ 'hand', 0 ] ], '... in JSON, its time unknown (0)');

# ------------------------------------------- an instance that read none yet
# C's first read of the audit comes after the writes it must apply: its
# user may not read the fleet's keys until then (as for an instance
# whose first reads met a Redis that could not answer). It reads the
# entries since it started, none skipped: a block made and lifted
# through A, on a new stream, lets the key in on C within a second of
# its first read. Before, C started at the stream's newest entry (the
# unblock) and its deny cache kept the rejection for the block's whole
# minute.
$r->cli('ACL', 'SETUSER', 'late', 'on', '>latepw', '~rl:{late}*', '+@all');
my $late = start_nginx(redis => $r, workers => 2, ready => 2,
                       config => <<'CONF');
    rl_fleet name=C interval=1s;
    rl_zone main redis=127.0.0.1:$RedisPort timeout=2s username=late
                 password=latepw;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        location /a { rl_rule zone=main key=$http_x_key rate=100r/m name=per;
                      empty_gif; }
    }
CONF
sub stc { code_status(http_get($late->port, '/a', 'X-Key' => 'late')) }
$r->cli('DEL', 'rl:{fleet}:main:audit');
is(stc(), '200 PASSED', 'C lets the key in');
($code) = call(0, 'POST', '1/rules/per/keys/late/block', { reason => 'x' });
is($code, 201, 'blocked through A (a new stream)');
is(stc() . ', ' . stc(), '429 REJECTED, 429 REJECTED',
   'C rejects it, then from its deny cache');
($code) = call(0, 'DELETE', '1/rules/per/keys/late/block');
is($code, 204, 'unblocked through A');
ok(wait_until(sub { $r->cli('ACL', 'LOG') =~ /\{fleet\}:main/ },
              timeout => 5), 'C has read no entry of the audit yet');
is(stc(), '429 REJECTED', 'so it still rejects the key');
$r->cli('ACL', 'SETUSER', 'late', '~rl:{fleet}*');
$t = within(sub { stc() eq '200 PASSED' }, 5);
ok(defined $t && $t < a_second(),
   'its first read: C lets the key in within a second, the entries since '
   . 'it started read (' . (defined $t ? sprintf('%.2fs', $t) : 'never')
   . ')');
$late->stop;

$_->stop for @ng;
done_testing();
