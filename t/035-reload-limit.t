# SPEC: a rule's state is named by zone, name, algorithm, window and key
# (plus the key's value); N is not part of it, so raising or lowering N
# keeps current usage. The default name is the rate as written: rules
# without name= and of other rates never share state (two locations at
# 5r/h and 100r/h on one key count apart), and a rule keeps its usage
# across a change of N under a name=.

use lib 't/lib';
use RlTest;

my $r = start_redis();
for my $zone ('redis=127.0.0.1:$RedisPort timeout=5s', 'size=1m') {
    my $store = $zone =~ /redis/ ? 'Redis' : 'embedded';
    my $tpl = <<"CONF";
    rl_zone main $zone;
    server {
        listen 127.0.0.1:\$ServerPort;
        location /t {
            rl_rule zone=main key=k rate=NNNr/h algorithm=fixed_window
                    name=quota;
            empty_gif;
        }
        location /login {
            rl_rule zone=main key=k rate=2r/h algorithm=fixed_window;
            empty_gif;
        }
        location /api {
            rl_rule zone=main key=k rate=MMMr/h algorithm=fixed_window;
            empty_gif;
        }
    }
CONF
    (my $two = $tpl) =~ s/NNN/2/;
    $two =~ s/MMM/100/;
    (my $three = $tpl) =~ s/NNN/3/;
    $three =~ s/MMM/101/;
    $r->cli('FLUSHALL');
    my $ng = start_nginx(redis => $r, workers => 1, config => $two);
    my $port = $ng->port;
    my @left = map { http_get($port, '/t')->{headers}{'x-ratelimit-remaining'} }
               1, 2;
    is("@left", '1 0', "$store, 2r/h: two requests");

    # unnamed, 100r/h: its own count, not /login's (2r/h)
    @left = map { http_get($port, '/api')->{headers}{'x-ratelimit-remaining'} }
            1 .. 3;
    is("@left", '99 98 97', "$store, unnamed 100r/h: three requests");
    my $login = http_get($port, '/login');
    is("$login->{code} $login->{headers}{'x-ratelimit-remaining'}", '200 1',
       "$store, unnamed 2r/h on the same key: /api counted apart");

    ok($ng->reload(config => $three), "$store: reload with 3r/h and 101r/h");
    my $t = http_get($port, '/t');
    is("$t->{code} $t->{headers}{'x-ratelimit-remaining'} "
       . "$t->{headers}{'x-ratelimit-limit'}", '200 0 3',
       "$store, named, 3r/h: the two requests still count, a third passes");
    is(http_get($port, '/t')->{code}, 429, "$store, named, 3r/h: then none");
    # renamed by its new rate: a new state
    is(http_get($port, '/api')->{headers}{'x-ratelimit-remaining'}, 100,
       "$store, unnamed 100r/h -> 101r/h: counted afresh");
    $ng->stop;
}

done_testing();
