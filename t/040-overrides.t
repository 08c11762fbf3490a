# Per-key overrides (SPEC section 4, ops tooling): while the string
# PREFIX{VALUE} reads "limit NAME=N ...", the rules of that name decide
# that key value with limit N instead of their own, and say so in
# X-RateLimit-Limit, $rl_limit and RateLimit-Policy, the deny cache's
# rejections included. Read in the same script call as blocks: no
# round trip more. What a key value counted stays counted when its
# override goes.

use lib 't/lib';
use RlTest;
use RlTest::HTTP qw(http_parallel);

my $r = start_redis();
my $ng = start_nginx(redis => $r, workers => 2, ready => 2,
                     config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort;
    rl_zone local size=1m;
    rl_zone second redis=127.0.0.1:$RedisPort prefix=s:;
    server {
        listen 127.0.0.1:$ServerPort;
        add_header X-RL-Status $rl_status always;
        add_header X-Limit $rl_limit always;
        location /a {
            rl_headers draft;
            rl_rule zone=main key=$http_x_key rate=2r/m name=api;
            rl_rule zone=main key=$http_x_key rate=100r/d
                    algorithm=fixed_window name=daily;
            empty_gif;
        }
        location /tb {
            rl_rule zone=main key=$http_x_key rate=2r/s
                    algorithm=token_bucket name=tb;
            empty_gif;
        }
        location /p {
            rl_rule zone=main key=$arg_k rate=2r/m name=api;
            empty_gif;
        }
        location /r {
            rl_rule zone=main key=$http_x_key rate=2r/m
                    algorithm=token_bucket name=tbr;
            rl_rule zone=second key=$http_x_key rate=1r/m name=other;
            empty_gif;
        }
        location /ronly {
            rl_rule zone=main key=$http_x_key rate=2r/m
                    algorithm=token_bucket name=tbr;
            empty_gif;
        }
        location /embedded {
            rl_rule zone=local key=$http_x_key rate=2r/m name=api;
            empty_gif;
        }
    }
CONF
my $port = $ng->port;

sub get_as {
    my ($path, $key) = @_;
    return http_get($port, $path, 'X-Key' => $key);
}

# what a response says of its limit: status, X-RateLimit-Limit,
# X-RateLimit-Remaining, $rl_limit
sub limit_of {
    my ($res) = @_;
    my $h = $res->{headers};
    return join ' ', code_status($res),
        map { $_ // '-' } @$h{qw(x-ratelimit-limit x-ratelimit-remaining
                                 x-limit)};
}

is_deeply([map { limit_of(get_as('/a', 'dave')) } 1 .. 3],
          ['200 PASSED 2 1 2', '200 PASSED 2 0 2', '429 REJECTED 2 0 2'],
          'dave has the rule\'s own limit');

$r->cli('SET', 'rl:{erin}', 'limit api=5');
my @got = map { limit_of(get_as('/a', 'erin')) } 1 .. 6;
is_deeply(\@got,
          [(map { "200 PASSED 5 $_ 5" } 4, 3, 2, 1, 0),
           '429 REJECTED 5 0 5'],
          'erin\'s override: 5 a minute, and the headers say so')
    or diag(explain \@got);

my $res = get_as('/a', 'erin');
is($res->{headers}{'ratelimit-policy'},
   '"api";q=5;w=60, "daily";q=100;w=86400',
   'RateLimit-Policy gives the override\'s quota');

# the deny cache answers for erin now, with the override's limit
my $calls = $r->calls('evalsha');
@got = map { limit_of(get_as('/a', 'erin')) } 1 .. 4;
is_deeply(\@got, [('429 REJECTED 5 0 5') x 4],
          'the deny cache keeps the override\'s limit')
    or diag(explain \@got);
is($r->calls('evalsha') - $calls, 0, 'and asks Redis nothing');

# lower than the rule's own
$r->cli('SET', 'rl:{frank}', 'limit api=1 daily=50');
is_deeply([map { limit_of(get_as('/a', 'frank')) } 1 .. 2],
          ['200 PASSED 1 0 1', '429 REJECTED 1 0 1'],
          'an override lowers a limit too');

# lifted: the rule's own limit again, with what was counted meanwhile
$r->cli('SET', 'rl:{henry}', 'limit api=5');
is_deeply([map { limit_of(get_as('/a', 'henry')) } 1 .. 3],
          ['200 PASSED 5 4 5', '200 PASSED 5 3 5', '200 PASSED 5 2 5'],
          'henry has 5');
$r->cli('DEL', 'rl:{henry}');
is(limit_of(get_as('/a', 'henry')), '429 REJECTED 2 0 2',
   'lifted: the rule\'s own 2, of which 3 are taken');

# a token bucket without burst=: the override is its capacity too; 10
# requests in a row (at the rule's own 2 tokens, 2 a second, they would
# take 4 s)
$r->cli('SET', 'rl:{gina}', 'limit tb=10');
@got = map { get_as('/tb', 'gina')->{code} } 1 .. 10;
is_deeply(\@got, [(200) x 10], 'a bucket of 10 for gina')
    or diag(explain \@got);

# "limit" in any case, words apart by any white space (redis-cli -x
# leaves a newline)
$r->cli('SET', 'rl:{jack}', "LIMIT\tdaily=7  api=3\n");
is(limit_of(get_as('/a', 'jack')), '200 PASSED 3 2 3',
   'LIMIT, a tab and a newline: an override still');

# many at once: the calls of a batch carry overridden rules and others,
# and each response gets its own rule's limit
$r->cli('SET', 'rl:{kate}', 'limit api=10');
my @res = http_parallel($port, [map { ("/p?k=kate", "/p?k=lou") } 1 .. 20],
                        concurrency => 16, full => 1);
my (%passed, %limits);
for my $i (0 .. $#res) {
    my $who = $i % 2 ? 'lou' : 'kate';
    $passed{$who}++ if $res[$i]{code} == 200;
    $limits{$who}{ $res[$i]{headers}{'x-ratelimit-limit'} // '-' }++;
}
is_deeply([$passed{kate}, $passed{lou}], [10, 2],
          '20 requests each at once: kate 10 (her override), lou 2');
is_deeply(\%limits, { kate => { 10 => 20 }, lou => { 2 => 20 } },
          'and each response says its own limit')
    or diag(explain \%limits);

# a refund (another zone rejects what this one admitted) gives back in
# the override's terms: a bucket of 10, not of the rule's own 2
$r->cli('SET', 'rl:{mia}', 'limit tbr=10');
is(code_status(get_as('/r', 'mia')), '200 PASSED', 'mia passes both');
is(code_status(get_as('/r', 'mia')), '429 REJECTED',
   'the other zone rejects her second');
is(limit_of(get_as('/ronly', 'mia')), '200 PASSED 10 8 10',
   'the refund gave her token back, up to 10');

# an override that is not one: the rule's own limit, and no block
$r->cli('SET', 'rl:{ivan}', 'limit api=lots');
is(limit_of(get_as('/a', 'ivan')), '200 PASSED 2 1 2',
   'an N that is no number leaves the rule as it is');

# the embedded store keeps no overrides
is_deeply([map { code_status(get_as('/embedded', 'erin')) } 1 .. 3],
          ['200 PASSED', '200 PASSED', '429 REJECTED'],
          'an embedded zone has its own limit for erin');

done_testing();
