# Thousands of rules (issue 31, 4): GET /1/rules and the metrics page
# list each zone and name once from a table made when the configuration
# is loaded, in time linear in the rules: 20,000 rules take about ten
# times what 2,000 take, not a hundred times (the de-duplication that
# compared every rule with every earlier one held the worker a second
# at 20,000). Compared within the run, the best of five requests each,
# so the machine's speed cancels out; a fixed cost a request pays only
# brings the ratio down.

use lib 't/lib';
use RlTest;
use RlTest::Api;
use Time::HiRes qw(time);

sub config {
    my ($rules) = @_;
    my $locations = '';
    for (my $i = 0; $i < $rules; $i += 64) {
        my $last = $i + 64 < $rules ? $i + 64 : $rules;
        $locations .= "location /l$i {\n" . join('', map {
            "rl_rule zone=mem key=\$http_x_key rate=" . ($_ + 1) . "r/m name=r$_;\n"
        } $i .. $last - 1) . "empty_gif; }\n";
    }
    return <<"CONF";
    rl_zone mem size=64m;
    server {
        listen 127.0.0.1:\$ServerPort;
        $locations
        location /rl/ { rl_api; }
        location /metrics { rl_metrics; }
    }
CONF
}

# the best of five: seconds, and what the last one answered
sub best {
    my ($port, $path) = @_;
    my ($best, $res);
    for (1 .. 5) {
        my $t0 = time;
        $res = http_get($port, $path, -timeout => 60);
        my $t = time - $t0;
        $best = $t if !defined $best || $t < $best;
    }
    return ($best, $res);
}

my %took;
for my $rules (2_000, 20_000) {
    my $ng = start_nginx(workers => 1, config => config($rules));
    my ($t, $res) = best($ng->port, '/rl/1/rules');
    is($res->{code}, 200, "$rules rules: /1/rules");
    my $n = () = $res->{body} =~ /"name":/g;
    is($n, $rules, "$rules rules: each listed once");
    $took{rules}{$rules} = $t;
    ($t, $res) = best($ng->port, '/metrics');
    is($res->{code}, 200, "$rules rules: the metrics page");
    $took{metrics}{$rules} = $t;
    ($t, $res) = best($ng->port, "/rl/1/rules/r" . ($rules - 1));
    is($res->{code}, 200, "$rules rules: the last rule looked up");
    $took{rule}{$rules} = $t;
    $ng->stop;
}

for my $what (sort keys %took) {
    my ($small, $large) = @{ $took{$what} }{2_000, 20_000};
    my $ratio = $large / ($small || 1e-6);
    diag(sprintf '%s: %.1f ms at 2,000 rules, %.1f ms at 20,000: %.1fx',
         $what, 1000 * $small, 1000 * $large, $ratio);
    ok($ratio < 30, "$what: ten times the rules take less than thirty "
                    . "times as long (${\ sprintf '%.1f', $ratio}x)");
}

done_testing();
