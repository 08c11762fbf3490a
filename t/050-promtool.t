# The Prometheus and Grafana files of docs/ against Prometheus' own tool
# (promtool, Debian's prometheus package) and a live page: the alerting
# and recording rules pass `promtool check rules` and their unit tests
# (`promtool test rules`); every expression of the Grafana dashboard is
# valid PromQL; the rl_metrics page of a running nginx, after passed,
# rejected, deny-cache, dry-run, error and local decisions, passes
# `promtool check metrics`; and every rl_* series the rules and the
# dashboard use is one the page shows (lease units with a lease= zone).
# Skipped without promtool.

use lib 't/lib';
use RlTest;
use RlTest::Proc qw(make_tempdir);
use JSON::PP ();

my $promtool = `sh -c 'command -v promtool'`;
chomp $promtool;
plan(skip_all => 'promtool is not installed (Debian: prometheus)')
    unless $promtool;

my $root = repo_root();
my $rules = "$root/docs/prometheus/rl-alerts.yml";
my $dash_file = "$root/docs/grafana/rl-dashboard.json";
my $tmp = make_tempdir('promtool');

sub run_tool {
    my ($cmd) = @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

sub slurp {
    open my $fh, '<', $_[0] or die "$_[0]: $!";
    local $/;
    return <$fh>;
}

# ------------------------------------------------------------ the rules

my ($rc, $out) = run_tool("$promtool check rules $rules");
is($rc, 0, 'promtool check rules passes') or diag($out);
like($out, qr/SUCCESS: \d+ rules found/, 'and finds the rules');
($rc, $out) = run_tool("cd $root/docs/prometheus && "
                       . "$promtool test rules rl-alerts.test.yml");
is($rc, 0, 'promtool test rules: the alerts fire as their tests say')
    or diag($out);

my $rules_text = slurp($rules);
my %recorded = map { $_ => 1 } $rules_text =~ /^\s*- record:\s*(\S+)/mg;
my @alerts = $rules_text =~ /^\s*- alert:\s*(\S+)/mg;

# the rules' expressions: `expr: TEXT` or `expr: |` and the lines
# indented deeper
my @rule_exprs;
{
    my @lines = split /\n/, $rules_text;
    for (my $i = 0; $i < @lines; $i++) {
        my ($ind, $rest) = $lines[$i] =~ /^(\s*)expr:\s*(.*)$/ or next;
        if ($rest =~ /^[|>]-?$/) {
            $rest = '';
            while ($i + 1 < @lines && $lines[$i + 1] =~ /^\Q$ind\E\s+\S/) {
                $rest .= $lines[++$i] . "\n";
            }
        }
        push @rule_exprs, $rest;
    }
}
is(scalar @rule_exprs, @alerts + keys %recorded, 'one expression per rule');
ok(@alerts >= 8, scalar(@alerts) . ' alerts');
ok(keys %recorded >= 3, scalar(keys %recorded) . ' recording rules');

# ------------------------------------------------------------ the dashboard

my $dash = eval { JSON::PP->new->decode(slurp($dash_file)) };
ok($dash, 'the dashboard is JSON') or diag($@);
my (@exprs, %ids);
for my $p (@{ $dash->{panels} // [] }) {
    $ids{$p->{id}}++;
    push @exprs, map { $_->{expr} } @{ $p->{targets} // [] };
}
ok(!grep({ $_ > 1 } values %ids), 'panel ids are unique');
ok(@exprs >= 10, scalar(@exprs) . ' queries');
my @vars = map { $_->{name} } @{ $dash->{templating}{list} // [] };
is_deeply(\@vars, [qw(datasource job instance zone rule whatif)],
          'variables: datasource, job, instance, zone, rule, whatif');
push @exprs, map { $_->{definition} =~ /^label_values\((.*), \w+\)$/ ? $1 : () }
             grep { $_->{type} eq 'query' } @{ $dash->{templating}{list} };

# Grafana's variables replaced, each query becomes a recording rule that
# promtool parses
{
    open my $fh, '>', "$tmp/dashboard-rules.yml" or die $!;
    print $fh "groups:\n  - name: dashboard\n    rules:\n";
    my $n = 0;
    for my $e (@exprs) {
        (my $q = $e) =~ s/\$__rate_interval/5m/g;
        $q =~ s/\$(?:job|instance|zone|rule)\b/.*/g;
        $q =~ s/\$whatif\b/0.5/g;
        $q =~ s/\n/ /g;
        $n++;
        print $fh "      - record: dashboard_query_$n\n"
            . "        expr: '" . ($q =~ s/'/''/gr) . "'\n";
    }
    close $fh;
    my ($rc2, $o) = run_tool("$promtool check rules $tmp/dashboard-rules.yml");
    is($rc2, 0, "the dashboard's $n queries are valid PromQL") or diag($o);
}

# ------------------------------------------------------------ a live page

my $r = start_redis();
my $ng = start_nginx(redis => $r, config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
    rl_zone local;
    rl_zone down redis=127.0.0.1:1 connect_timeout=200ms timeout=200ms;
    rl_zone fallback redis=127.0.0.1:1 connect_timeout=200ms timeout=200ms
            failure=local;
    rl_zone leased redis=127.0.0.1:$RedisPort timeout=5s lease=1s;

    server {
        listen 127.0.0.1:$ServerPort;
        location /main {
            rl_rule zone=main key=k rate=2r/h name=per_key;
            rl_rule zone=main key=k rate=1r/h name=dry dry_run;
            empty_gif;
        }
        location /local {
            rl_rule zone=local key=k rate=1r/h;
            empty_gif;
        }
        location /down {
            rl_rule zone=down key=k rate=1r/h name=broken;
            empty_gif;
        }
        location /fallback {
            rl_rule zone=fallback key=k rate=1r/h name=fallback;
            empty_gif;
        }
        location /leased {
            rl_rule zone=leased key=k rate=1000r/h name=hot;
            empty_gif;
        }
        location = /metrics {
            rl_metrics;
        }
    }
CONF
my $port = $ng->port;
my %codes;
$codes{main} = join ' ', map { http_get($port, '/main')->{code} } 1 .. 4;
$codes{local} = join ' ', map { http_get($port, '/local')->{code} } 1 .. 2;
$codes{down} = http_get($port, '/down')->{code};
$codes{fallback} = join ' ', map { http_get($port, '/fallback')->{code} } 1 .. 2;
$codes{leased} = join ' ', map { http_get($port, '/leased')->{code} } 1 .. 8;
is_deeply(\%codes, { main => '200 200 429 429', local => '200 429',
                     down => 200, fallback => '200 429',
                     leased => join(' ', (200) x 8) },
          'passed, rejected, deny cache, dry run, error, local and leased '
          . 'decisions');

my $res = http_get($port, '/metrics');
is($res->{code}, 200, 'the metrics page answers');
my $page = $res->{body} // '';
{
    open my $fh, '>', "$tmp/metrics.txt" or die $!;
    print $fh $page;
}
($rc, $out) = run_tool("$promtool check metrics < $tmp/metrics.txt");
is($rc, 0, 'promtool check metrics passes the live page') or diag($out);
is($out, '', 'with no lint message');
for my $s ('rl_requests_total{zone="main",rule="per_key",outcome="rejected"}',
           'rl_requests_total{zone="main",rule="dry",outcome="rejected_dry_run"}',
           'rl_requests_total{zone="down",rule="broken",outcome="error"}',
           'rl_local_decisions_total{zone="fallback"}',
           'rl_deny_cache_hits_total{zone="main"}',
           'rl_lease_units_total{zone="leased",use="granted"}',
           'rl_lease_units_total{zone="leased",use="spent"}') {
    like($page, qr/^\Q$s\E [1-9]/m, "the page counts $s") or diag($page);
}

# every rl_* name used is on the page (histograms by their family)
my %families = map { $_ => 1 } $page =~ /^# TYPE (\S+) /mg;
my %used;
for my $text (@rule_exprs, @exprs) {
    while ($text =~ /(?<![\w:"])([a-zA-Z_:][a-zA-Z0-9_:]*)/g) {
        my $name = $1;
        $used{$name}++ if $name =~ /^rl_/;
    }
}
for my $name (sort keys %used) {
    my $family = $name;
    $family =~ s/_(?:bucket|sum|count)$// unless $families{$name};
    ok($families{$family}, "$name, used by the rules or the dashboard, "
                           . 'is on the page');
}
for my $f (sort keys %families) {
    ok(grep({ $used{"$f$_"} } '', '_bucket', '_sum', '_count'),
       "the rules or the dashboard use $f");
}

$ng->stop;
done_testing();
