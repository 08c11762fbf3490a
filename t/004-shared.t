# One limit shared by every worker of every instance on one Redis: under
# concurrent load, exactly N requests are admitted in total.

use lib 't/lib';
use RlTest;

my $r = start_redis();

# reuseport spreads the connections over the workers (no accept mutex luck)
my $http = <<'CONF';
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
    server {
        listen 127.0.0.1:$ServerPort reuseport;
        add_header X-RL-Status $rl_status always;
        add_header X-Pid $pid always;
        location /fixed {
            rl_rule zone=main key=shared rate=20r/d algorithm=fixed_window;
            empty_gif;
        }
        location /sliding {
            rl_rule zone=main key=shared rate=20r/d algorithm=sliding_window;
            empty_gif;
        }
        location /fixed50 {
            rl_rule zone=main key=shared50 rate=50r/d algorithm=fixed_window;
            empty_gif;
        }
        location /sliding50 {
            rl_rule zone=main key=shared50 rate=50r/d
                    algorithm=sliding_window;
            empty_gif;
        }
    }
CONF

sub tally {
    my (@res) = @_;
    my (%codes, %pids, %status);
    for (@res) {
        $codes{ $_->{code} }++;
        $pids{ $_->{headers}{'x-pid'} // 'none' }++;
        $status{ $_->{headers}{'x-rl-status'} // 'none' }++;
    }
    return (\%codes, \%pids, \%status);
}

# ---------------------------------------------------------------- one instance

{
    my $ng = start_nginx(redis => $r, workers => 2, config => $http);
    my %workers = map { $_ => 1 } $ng->worker_pids;

    for my $loc (qw(fixed sliding)) {
        my @res = http_parallel($ng->port, [ ("/$loc") x 60 ],
                                concurrency => 30, full => 1);
        my ($codes, $pids, $status) = tally(@res);
        is($codes->{200} // 0, 20, "$loc, 2 workers: exactly 20 admitted")
            or diag(explain($codes));
        is($codes->{429} // 0, 40, "$loc, 2 workers: 40 rejected");
        is($status->{ERROR} // 0, 0, "$loc, 2 workers: no ERROR");
        my @served = grep { $workers{$_} } keys %$pids;
        is(scalar @served, 2, "$loc: both workers served requests")
            or diag(explain($pids));
    }
    $ng->stop;
}

# ---------------------------------------------------------------- two instances

$r->cli('FLUSHALL');
{
    my @ng = map { start_nginx(redis => $r, workers => 2, config => $http) }
             1 .. 2;

    for my $loc (qw(fixed50 sliding50)) {
        # interleave the two instances: 60 requests each, at once
        my @targets = map { ([ $ng[0]->port, "/$loc" ],
                             [ $ng[1]->port, "/$loc" ]) } 1 .. 60;
        my @res = http_parallel(undef, \@targets, concurrency => 40,
                                full => 1);
        my ($codes, $pids, $status) = tally(@res);
        is($codes->{200} // 0, 50,
           "$loc, 2 instances x 2 workers: exactly 50 admitted")
            or diag(explain($codes));
        is($codes->{429} // 0, 70, "$loc: 70 rejected");
        is($status->{ERROR} // 0, 0, "$loc: no ERROR");
        my %per;
        for my $i (0 .. $#res) {
            $per{ $i % 2 }{ $res[$i]{code} }++;
        }
        ok(($per{0}{200} // 0) > 0 && ($per{1}{200} // 0) > 0,
           "$loc: both instances admitted some ("
           . ($per{0}{200} // 0) . " + " . ($per{1}{200} // 0) . ")");
        ok(scalar(keys %$pids) >= 3,
           "$loc: at least 3 of the 4 workers served ("
           . scalar(keys %$pids) . ")");
    }
    wait_until(sub { $r->client_count('ngx_rl') == 4 }, timeout => 5);
    is($r->client_count('ngx_rl'), 4,
       'two instances x 2 workers x 1 zone: 4 ngx_rl connections');
    $_->stop for @ng;
}

$r->stop;
done_testing();
