# SPEC: the limit N is not part of a rule's state, so raising or lowering
# N keeps current usage; that holds for a rule without name= too (its
# default name, the rate as written, is not part of the state either).

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
            rl_rule zone=main key=k rate=NNNr/h algorithm=fixed_window;
            empty_gif;
        }
    }
CONF
    (my $two = $tpl) =~ s/NNN/2/;
    (my $three = $tpl) =~ s/NNN/3/;
    $r->cli('FLUSHALL');
    my $ng = start_nginx(redis => $r, workers => 1, config => $two);
    my $port = $ng->port;
    my @left = map { http_get($port, '/t')->{headers}{'x-ratelimit-remaining'} }
               1, 2;
    is("@left", '1 0', "$store, 2r/h: two requests");
    ok($ng->reload(config => $three), "$store: reload with 3r/h");
    my $t = http_get($port, '/t');
    is("$t->{code} $t->{headers}{'x-ratelimit-remaining'} "
       . "$t->{headers}{'x-ratelimit-limit'}", '200 0 3',
       "$store, 3r/h: the two requests still count, a third passes");
    is(http_get($port, '/t')->{code}, 429, "$store, 3r/h: then none");
    $ng->stop;
}

done_testing();
