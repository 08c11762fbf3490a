# rl_metrics: the Prometheus text exposition format (0.0.4), checked by a
# strict parser (HELP/TYPE before samples, names, labels, escaping,
# values, families grouped, histograms cumulative and ending at +Inf equal
# to _count); the counts per rule and outcome from each rule's point of
# view; one instance's counters whatever worker answers (two workers,
# reuseport): K requests of which J rejected give deltas of K-J passed and
# J rejected; counters survive `nginx -s reload`; the store gauges and
# counters follow Redis going away and coming back; rules apply to the
# metrics location as to any other.

use lib 't/lib';
use RlTest;

# ------------------------------------------------------------ the parser

my $NAME  = qr/[a-zA-Z_:][a-zA-Z0-9_:]*/;
my $LABEL = qr/[a-zA-Z_][a-zA-Z0-9_]*/;
my $FLOAT = qr/[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]Inf|NaN/;

# Parses one exposition; returns { families => { name => { type, help } },
# samples => [ { name, labels => {..}, value, family } ], errors => [..] }.
sub parse_prometheus {
    my ($text) = @_;
    my (%fam, @samples, @errors, %series, %done);
    my $current = '';
    my $err = sub { push @errors, "line $_[0]: $_[1]" };

    push @errors, 'the exposition does not end with a newline'
        unless $text =~ /\n\z/;
    my $n = 0;
    for my $line (split /\n/, $text) {
        $n++;
        next if $line eq '';
        if ($line =~ /^#/) {
            if ($line =~ /^# (HELP|TYPE) (\S+)(?: (.*))?$/) {
                my ($kind, $name, $rest) = ($1, $2, $3 // '');
                $err->($n, "bad metric name '$name'") unless $name =~ /^$NAME$/;
                my $f = $fam{$name} //= {};
                $err->($n, "$kind of $name after its samples")
                    if $f->{has_samples};
                $err->($n, "second $kind for $name") if exists $f->{lc $kind};
                if ($kind eq 'TYPE') {
                    $err->($n, "bad type '$rest'") unless $rest =~
                        /^(?:counter|gauge|histogram|summary|untyped)$/;
                    $f->{type} = $rest;
                } else {
                    $err->($n, "bad escape in HELP of $name")
                        if $rest =~ /\\(?![\\n])/;
                    $f->{help} = $rest;
                }
            } elsif ($line =~ /^# (?:HELP|TYPE)\b/) {
                $err->($n, "malformed: $line");
            }
            next;
        }
        my ($name, $rest) = $line =~ /^($NAME)(.*)$/
            or do { $err->($n, "no metric name: $line"); next };
        my (%labels, $bad);
        if ($rest =~ s/^\{// && !($rest =~ s/^\}//)) {
            while (1) {
                my ($l) = $rest =~ /^($LABEL)="/
                    or do { $err->($n, "bad label at: $rest"); $bad = 1; last };
                $rest = substr $rest, length($l) + 2;
                my $v = '';
                while (1) {
                    if ($rest =~ s/^\\(.)//) {
                        my $c = $1;
                        if    ($c eq '\\') { $v .= '\\' }
                        elsif ($c eq '"')  { $v .= '"' }
                        elsif ($c eq 'n')  { $v .= "\n" }
                        else { $err->($n, "bad escape \\$c in label $l") }
                    } elsif ($rest =~ s/^([^"\\]+)//) {
                        $v .= $1;
                    } elsif ($rest =~ s/^"//) {
                        last;
                    } else {
                        $err->($n, "unterminated label value $l");
                        $bad = 1;
                        last;
                    }
                }
                last if $bad;
                $err->($n, "duplicate label $l") if exists $labels{$l};
                $err->($n, "reserved label name $l") if $l =~ /^__/;
                $labels{$l} = $v;
                last if $rest =~ s/^\}//;
                if ($rest =~ s/^,//) {
                    if ($rest =~ s/^\}//) {
                        $err->($n, "trailing comma in labels");
                        last;
                    }
                    next;
                }
                $err->($n, "expected , or } at: $rest");
                $bad = 1;
                last;
            }
        }
        next if $bad;
        my ($value, $ts) = $rest =~ /^ ($FLOAT)(?: (-?\d+))?$/
            or do { $err->($n, "bad value part '$rest'"); next };

        # the family: a histogram's _bucket/_sum/_count belong to it
        my $family = $name;
        if ($name =~ /^(.*)_(?:bucket|sum|count)$/) {
            my $base = $1;
            my $t = $fam{$base}{type} // '';
            $family = $base if $t eq 'histogram' || $t eq 'summary';
        }
        my $f = $fam{$family};
        unless ($f && defined $f->{type}) {
            $err->($n, "sample of $family before its TYPE");
        }
        unless ($f && defined $f->{help}) {
            $err->($n, "sample of $family without HELP");
        }
        if ($family ne $current) {
            $err->($n, "samples of $family are not grouped")
                if $done{$family};
            $done{$current} = 1 if length $current;
            $current = $family;
        }
        $fam{$family}{has_samples} = 1;
        my $id = $name . '{' . join(',', map { "$_=$labels{$_}" }
                                         sort keys %labels) . '}';
        $err->($n, "duplicate series $id") if $series{$id}++;
        push @samples, { name => $name, labels => \%labels,
                         value => $value, family => $family, line => $n };
    }

    # per family type checks
    for my $s (@samples) {
        my $type = $fam{ $s->{family} }{type} // '';
        if ($type eq 'counter' || $s->{name} =~ /_(?:bucket|count)$/) {
            push @errors, "line $s->{line}: $s->{name} is negative or NaN"
                unless $s->{value} =~ /^\+?(?:\d|\.\d|Inf)/;
        }
    }
    for my $family (grep { ($fam{$_}{type} // '') eq 'histogram' } keys %fam) {
        my %by;
        for my $s (grep { $_->{family} eq $family } @samples) {
            my %l = %{ $s->{labels} };
            my $le = delete $l{le};
            my $key = join ',', map { "$_=$l{$_}" } sort keys %l;
            if ($s->{name} eq "${family}_bucket") {
                unless (defined $le && $le =~ /^$FLOAT$/ && $le ne 'NaN') {
                    push @errors, "line $s->{line}: bucket without a valid le";
                    next;
                }
                push @{ $by{$key}{buckets} }, [ $le, $s->{value} ];
            } elsif ($s->{name} eq "${family}_sum") {
                $by{$key}{sum} = $s->{value};
            } elsif ($s->{name} eq "${family}_count") {
                $by{$key}{count} = $s->{value};
            } else {
                push @errors, "line $s->{line}: $s->{name} in histogram "
                              . $family;
            }
        }
        for my $key (sort keys %by) {
            my $h = $by{$key};
            my @b = @{ $h->{buckets} // [] };
            my $tag = "$family\{$key\}";
            push @errors, "$tag: no buckets" unless @b;
            push @errors, "$tag: no _sum" unless defined $h->{sum};
            push @errors, "$tag: no _count" unless defined $h->{count};
            next unless @b;
            my $num = sub { $_[0] eq '+Inf' ? 9**9**9 : $_[0] };
            for my $i (1 .. $#b) {
                push @errors, "$tag: le not increasing ($b[$i-1][0], $b[$i][0])"
                    unless $num->($b[$i][0]) > $num->($b[$i-1][0]);
                push @errors, "$tag: buckets not cumulative at le=$b[$i][0]"
                    unless $b[$i][1] >= $b[$i-1][1];
            }
            push @errors, "$tag: the last bucket is not +Inf"
                unless $b[-1][0] eq '+Inf';
            push @errors, "$tag: +Inf bucket $b[-1][1] != _count "
                          . ($h->{count} // 'none')
                unless defined $h->{count} && $b[-1][1] == $h->{count};
        }
    }
    return { families => \%fam, samples => \@samples, errors => \@errors };
}

# The value of one series (0 when absent: a counter not yet incremented).
sub val {
    my ($p, $name, %labels) = @_;
    S: for my $s (@{ $p->{samples} }) {
        next unless $s->{name} eq $name;
        next unless keys %{ $s->{labels} } == keys %labels;
        for (keys %labels) {
            next S unless ($s->{labels}{$_} // "\0") eq $labels{$_};
        }
        return $s->{value};
    }
    return 0;
}

sub has_series {
    my ($p, $name, %labels) = @_;
    S: for my $s (@{ $p->{samples} }) {
        next unless $s->{name} eq $name;
        for (keys %labels) {
            next S unless ($s->{labels}{$_} // "\0") eq $labels{$_};
        }
        return 1;
    }
    return 0;
}

my $CT = qr{^text/plain; version=0\.0\.4(?:; charset=utf-8)?$};

# Scrapes and parses; fails a test on a format error.
sub scrape {
    my ($port, $tag, $path) = @_;
    my $res = http_get($port, $path // '/metrics');
    is($res->{code}, 200, "$tag: metrics answer 200")
        or diag($res->{error} // $res->{raw});
    like($res->{headers}{'content-type'} // '', $CT,
         "$tag: Content-Type text/plain; version=0.0.4");
    my $p = parse_prometheus($res->{body});
    ok(!@{ $p->{errors} }, "$tag: the page parses as Prometheus text")
        or diag(join("\n", @{ $p->{errors} }[0 .. ($#{ $p->{errors} } > 20
                                                   ? 20 : $#{ $p->{errors} })])
                . "\n---\n$res->{body}");
    $p->{pid} = $res->{headers}{'x-pid'};
    $p->{body} = $res->{body};
    return $p;
}

# ------------------------------------------------------------ the parser itself

{
    my $good = <<'TXT';
# HELP a_total A counter.
# TYPE a_total counter
a_total{x="q\"b\\c\nd"} 3
a_total{x="y"} 0
# HELP h Latency.
# TYPE h histogram
h_bucket{le="0.5"} 1
h_bucket{le="1"} 2
h_bucket{le="+Inf"} 2
h_sum 0.7
h_count 2
TXT
    my $p = parse_prometheus($good);
    is_deeply($p->{errors}, [], 'parser: a valid page has no error');
    is(val($p, 'a_total', x => "q\"b\\c\nd"), 3, 'parser: unescapes labels');
    my %bad = (
        "a_total 1\n"                                   => 'sample before TYPE',
        "# TYPE a counter\n# HELP a x\na{b=\"c\"} 1\na{b=\"c\"} 2\n"
                                                        => 'duplicate series',
        "# TYPE a counter\n# HELP a x\na{b=\"\\t\"} 1\n" => 'bad escape',
        "# TYPE a counter\n# HELP a x\na{b=\"c\",} 1\n"  => 'trailing comma',
        "# TYPE a counter\n# HELP a x\na 1x\n"           => 'bad value',
        "# TYPE a counter\n# HELP a x\na -1\n"           => 'negative counter',
        "# TYPE a counter\n# HELP a x\na 1"              => 'no final newline',
        "# TYPE a gauge\n# HELP a x\n# TYPE b gauge\n# HELP b x\na 1\nb 1\na{c=\"d\"} 1\n"
                                                        => 'not grouped',
        "# TYPE h histogram\n# HELP h x\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"
                                                        => 'not cumulative',
        "# TYPE h histogram\n# HELP h x\nh_bucket{le=\"1\"} 2\nh_sum 1\nh_count 2\n"
                                                        => 'no +Inf',
        "# TYPE h histogram\n# HELP h x\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n"
                                                        => '+Inf != count',
        "# TYPE 1a counter\n"                           => 'bad name',
        "# TYPE a counter\n# HELP a x\na{1b=\"c\"} 1\n"  => 'bad label name',
    );
    for my $t (sort keys %bad) {
        ok(@{ parse_prometheus($t)->{errors} }, "parser rejects: $bad{$t}");
    }
}

# ------------------------------------------------------------ counts and format

my $r = start_redis();
{
    my $ng = start_nginx(redis => $r, config => <<'CONF');
    rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
    rl_zone local;
    rl_zone down redis=127.0.0.1:1 connect_timeout=200ms timeout=200ms;

    server {
        listen 127.0.0.1:$ServerPort;
        location /stack {
            rl_rule zone=main key=k rate=10r/h name=wide;
            rl_rule zone=main key=k rate=2r/h name=narrow;
            empty_gif;
        }
        location /mixed {
            rl_rule zone=local key=k rate=10r/h name=local_wide;
            rl_rule zone=main key=k rate=1r/h name=main_narrow;
            empty_gif;
        }
        location /dry {
            rl_rule zone=main key=k rate=1r/h name=dry dry_run;
            empty_gif;
        }
        location /shaped {
            rl_rule zone=local key=k rate=2r/s algorithm=gcra burst=1 delay=0
                    name=shaped;
            empty_gif;
        }
        location /down {
            rl_rule zone=down key=k rate=1r/h name=broken;
            empty_gif;
        }
        location /escape {
            rl_rule zone=main key=k rate=5r/h "name=q\"b\\s";
            empty_gif;
        }
        location /exempt {
            rl_rule zone=main key=$arg_k rate=1r/h name=exempt;
            empty_gif;
        }
        location = /metrics {
            rl_metrics;
        }
    }
CONF
    my $port = $ng->port;
    my $p = scrape($port, 'before any request');
    for (['main', 'wide'], ['down', 'broken'], ['local', 'local_wide'],
         ['local', 'shaped']) {
        my ($zone, $rule) = @$_;
        for my $o (qw(passed rejected rejected_dry_run delayed error)) {
            ok(has_series($p, 'rl_requests_total', zone => $zone,
                          rule => $rule, outcome => $o),
               "before: the series of $zone $rule $o is there");
            is(val($p, 'rl_requests_total', zone => $zone, rule => $rule,
                   outcome => $o), 0, "before: at 0");
        }
    }

    my %codes;
    $codes{stack}  = join ' ', map { http_get($port, '/stack')->{code} } 1 .. 4;
    $codes{mixed}  = join ' ', map { http_get($port, '/mixed')->{code} } 1 .. 3;
    $codes{dry}    = join ' ', map { http_get($port, '/dry')->{code} } 1 .. 3;
    $codes{shaped} = join ' ', map { http_get($port, '/shaped')->{headers}
                                     {'x-ratelimit-limit'} // '-' } 1 .. 2;
    $codes{down}   = join ' ', map { http_get($port, '/down')->{code} } 1 .. 2;
    $codes{escape} = http_get($port, '/escape')->{code};
    $codes{exempt} = join ' ', map { http_get($port, '/exempt')->{code} } 1 .. 3;
    is_deeply(\%codes, { stack => '200 200 429 429', mixed => '200 429 429',
                         dry => '200 200 200', shaped => '2 2',
                         down => '200 200', escape => 200,
                         exempt => '200 200 200' },
              'the traffic got the expected answers');

    $p = scrape($port, 'after the traffic');
    my $c = sub {
        my ($zone, $rule, $outcome) = @_;
        return val($p, 'rl_requests_total', zone => $zone, rule => $rule,
                   outcome => $outcome);
    };
    my %want = (
        # stacked in one zone: 4 requests, "narrow" rejects the last 2;
        # from "wide"'s point of view all 4 passed
        'main wide passed' => 4,          'main wide rejected' => 0,
        'main narrow passed' => 2,        'main narrow rejected' => 2,
        # two zones: "main_narrow" rejects, "local_wide" passed them
        'local local_wide passed' => 3,   'local local_wide rejected' => 0,
        'main main_narrow passed' => 1,   'main main_narrow rejected' => 2,
        # dry run: 1 passed, 2 would have been rejected
        'main dry passed' => 1,           'main dry rejected_dry_run' => 2,
        'main dry rejected' => 0,
        # delay=0: the second request was delayed
        'local shaped passed' => 1,       'local shaped delayed' => 1,
        # a zone on a closed port
        'down broken error' => 2,         'down broken passed' => 0,
        # escaped names
        "main q\"b\\s passed" => 1,
        # an empty key: the rule did not apply
        'main exempt passed' => 0,
    );
    for my $k (sort keys %want) {
        my ($zone, $rule, $outcome) = $k =~ /^(\S+) (.+) (\S+)$/s;
        is($c->($zone, $rule, $outcome), $want{$k},
           "rl_requests_total{zone=\"$zone\",rule=\"$rule\","
           . "outcome=\"$outcome\"} is $want{$k}");
    }
    like($p->{body}, qr/^rl_requests_total\{zone="main",rule="q\\"b\\\\s",outcome="passed"\} 1$/m,
         'a quote and a backslash in a rule name are escaped as \" and \\\\');
    ok(!has_series($p, 'rl_requests_total', rule => 'exempt')
       || !grep({ $_->{name} eq 'rl_requests_total'
                  && $_->{labels}{rule} eq 'exempt' && $_->{value} != 0 }
                @{ $p->{samples} }),
       'a rule that never applied counts nothing');
    for my $s (grep { $_->{name} eq 'rl_requests_total' } @{ $p->{samples} }) {
        like($s->{labels}{outcome},
             qr/^(?:passed|rejected|rejected_dry_run|delayed|error)$/,
             "outcome label of line $s->{line} is one of the five");
    }

    # families and their types
    my %type = (rl_requests_total => 'counter',
                rl_store_latency_seconds => 'histogram',
                rl_store_timeouts_total => 'counter',
                rl_store_reconnects_total => 'counter',
                rl_store_up => 'gauge',
                rl_deny_cache_hits_total => 'counter');
    for my $f (sort keys %type) {
        is($p->{families}{$f}{type}, $type{$f}, "# TYPE $f $type{$f}");
        ok(length($p->{families}{$f}{help} // ''), "# HELP $f is there");
    }

    # the store figures
    is(val($p, 'rl_store_up', zone => 'main'), 1, 'rl_store_up main 1');
    is(val($p, 'rl_store_up', zone => 'down'), 0, 'rl_store_up down 0');
    is(val($p, 'rl_store_up', zone => 'local'), 1,
       'rl_store_up of the embedded store 1');
    ok(has_series($p, 'rl_store_latency_seconds_count', zone => 'local'),
       'the embedded store has a latency series');
    is(val($p, 'rl_store_latency_seconds_count', zone => 'local'), 0,
       '... with no Redis round trip in it');
    for my $zone (qw(main down)) {
        ok(has_series($p, $_, zone => $zone), "$_ has zone=\"$zone\"")
            for qw(rl_store_timeouts_total rl_store_reconnects_total
                   rl_store_up rl_deny_cache_hits_total
                   rl_store_latency_seconds_count);
    }
    my $count = val($p, 'rl_store_latency_seconds_count', zone => 'main');
    my $hits = val($p, 'rl_deny_cache_hits_total', zone => 'main');
    # /stack 4 + /mixed 3 + /dry 3 + /escape 1 requests reached zone main;
    # each is one round trip unless the deny cache answered it
    ok($count + $hits >= 11,
       "main: round trips ($count) + deny cache hits ($hits) >= 11");
    ok($count >= 6, "main: at least the 6 admitted requests went to Redis "
                    . "($count)");
    ok(val($p, 'rl_store_latency_seconds_sum', zone => 'main') > 0,
       'main: the latency sum is positive');
    is(val($p, 'rl_store_latency_seconds_bucket', zone => 'main',
           le => '+Inf'), $count, 'main: +Inf bucket equals _count');
    is(val($p, 'rl_store_latency_seconds_count', zone => 'down'), 0,
       'down: no round trip completed');
    $ng->stop;
}

# ------------------------------------------------------------ two workers

$r->cli('FLUSHALL');
{
    my $K = 40;
    my $N = 15;
    my $ng = start_nginx(redis => $r, workers => 2, config => <<"CONF");
    rl_zone main redis=127.0.0.1:\$RedisPort timeout=5s;
    server {
        listen 127.0.0.1:\$ServerPort reuseport;
        add_header X-Pid \$pid always;
        location /t {
            rl_rule zone=main key=k rate=${N}r/h algorithm=fixed_window
                    name=shared;
            empty_gif;
        }
        location = /metrics {
            rl_metrics;
        }
    }
CONF
    my $port = $ng->port;
    my %workers = map { $_ => 1 } $ng->worker_pids;

    my $before = scrape($port, '2 workers, before');
    my @res = http_parallel($port, [ ('/t') x $K ], concurrency => 10,
                            full => 1);
    my %codes;
    $codes{ $_->{code} }++ for @res;
    my %pids = map { ($_->{headers}{'x-pid'} // '') => 1 } @res;
    is($codes{200}, $N, "$K requests: $N passed");
    is($codes{429}, $K - $N, "$K requests: " . ($K - $N) . ' rejected');
    is(scalar(grep { $workers{$_} } keys %pids), 2,
       'both workers served the traffic');

    # scrape until both workers have answered a scrape: same figures
    my (%seen, @scrapes);
    wait_until(sub {
        my $p = scrape($port, '2 workers, after (scrape ' . (@scrapes + 1)
                              . ')');
        push @scrapes, $p;
        $seen{ $p->{pid} // '' } = 1;
        return scalar(grep { $workers{$_} } keys %seen) == 2;
    }, timeout => 10, interval => 0.01);
    is(scalar(grep { $workers{$_} } keys %seen), 2,
       'both workers answered a scrape (' . scalar(@scrapes) . ' scrapes)');
    for my $p (@scrapes) {
        my $w = $p->{pid} // '?';
        is(val($p, 'rl_requests_total', zone => 'main', rule => 'shared',
               outcome => 'passed')
           - val($before, 'rl_requests_total', zone => 'main',
                 rule => 'shared', outcome => 'passed'),
           $N, "worker $w: passed delta is K-J = $N");
        is(val($p, 'rl_requests_total', zone => 'main', rule => 'shared',
               outcome => 'rejected')
           - val($before, 'rl_requests_total', zone => 'main',
                 rule => 'shared', outcome => 'rejected'),
           $K - $N, "worker $w: rejected delta is J = " . ($K - $N));
        is(val($p, 'rl_store_up', zone => 'main'), 1, "worker $w: store up");
    }

    # ------------------------------------------------------- reload
    my $last = $scrapes[-1];
    my $passed = val($last, 'rl_requests_total', zone => 'main',
                     rule => 'shared', outcome => 'passed');
    my $rejected = val($last, 'rl_requests_total', zone => 'main',
                       rule => 'shared', outcome => 'rejected');
    my $rt = val($last, 'rl_store_latency_seconds_count', zone => 'main');
    ok($ng->reload, 'nginx -s reload (same configuration)');
    my $p = scrape($port, 'after a reload');
    is(val($p, 'rl_requests_total', zone => 'main', rule => 'shared',
           outcome => 'passed'), $passed, "reload: passed kept ($passed)");
    is(val($p, 'rl_requests_total', zone => 'main', rule => 'shared',
           outcome => 'rejected'), $rejected,
       "reload: rejected kept ($rejected)");
    ok(val($p, 'rl_store_latency_seconds_count', zone => 'main') >= $rt,
       'reload: the latency count kept');

    my $more = http_get($port, '/t');
    is($more->{code}, 429, 'after the reload the limit still holds');
    $p = scrape($port, 'after a reload and one more request');
    is(val($p, 'rl_requests_total', zone => 'main', rule => 'shared',
           outcome => 'rejected'), $rejected + 1,
       'the counters go on from where they were');

    # a reload with a changed configuration: a new location and rule
    (my $conf2 = $ng->{config}) =~ s{(location = /metrics)}
        {location /new {
            rl_rule zone=main key=n rate=1r/h name=new;
            empty_gif;
        }
        $1};
    ok($ng->reload(config => $conf2), 'reload with a new location');
    is(http_get($port, '/new')->{code}, 200, 'the new location answers');
    $p = scrape($port, 'after a reload with a new configuration');
    is(val($p, 'rl_requests_total', zone => 'main', rule => 'shared',
           outcome => 'passed'), $passed, 'changed configuration: kept');
    is(val($p, 'rl_requests_total', zone => 'main', rule => 'shared',
           outcome => 'rejected'), $rejected + 1,
       'changed configuration: kept (rejected)');
    is(val($p, 'rl_requests_total', zone => 'main', rule => 'new',
           outcome => 'passed'), 1, 'the new rule is counted');

    # a restart (not a reload) starts the counters again
    $ng->stop;
    $ng->start;
    $p = scrape($port, 'after a restart');
    is(val($p, 'rl_requests_total', zone => 'main', rule => 'shared',
           outcome => 'passed'), 0, 'a restart starts the counters at 0');
    $ng->stop;
}

# ------------------------------------------------------------ store events

# One rule on a Redis zone of timeout=100ms and this connect_timeout=,
# and the metrics, once a request got its decision (a stalled host may
# time the first out: poll).
sub store_nginx {
    my ($connect_timeout, $tag) = @_;
    $r->cli('FLUSHALL');
    my $ng = start_nginx(redis => $r, config => <<"CONF");
    rl_zone main redis=127.0.0.1:\$RedisPort timeout=100ms
            connect_timeout=$connect_timeout;
    server {
        listen 127.0.0.1:\$ServerPort;
        add_header X-RL-Status \$rl_status always;
        location /t {
            rl_rule zone=main key=k rate=1000r/h name=big;
            empty_gif;
        }
        location = /metrics {
            rl_metrics;
        }
    }
CONF
    my $port = $ng->port;
    ok(wait_until(sub {
        (http_get($port, '/t')->{headers}{'x-rl-status'} // '') eq 'PASSED'
    }, timeout => 5, interval => 0.05), "$tag: Redis answers");
    return ($ng, $port);
}

{
    my ($ng, $port) = store_nginx('300ms', 'store events');
    my $p0 = scrape($port, 'store events, before');
    is(val($p0, 'rl_store_up', zone => 'main'), 1, 'rl_store_up 1');

    # Redis stopped: a request times out
    $r->kill('STOP');
    my $res = http_get($port, '/t');
    is($res->{headers}{'x-rl-status'}, 'ERROR', 'Redis stopped: ERROR');
    my $p1 = scrape($port, 'Redis stopped');
    ok(val($p1, 'rl_store_timeouts_total', zone => 'main')
       >= val($p0, 'rl_store_timeouts_total', zone => 'main') + 1,
       'rl_store_timeouts_total counted the timeout');
    is(val($p1, 'rl_store_up', zone => 'main'), 0,
       'rl_store_up 0 while Redis does not answer');
    is(val($p1, 'rl_requests_total', zone => 'main', rule => 'big',
           outcome => 'error')
       - val($p0, 'rl_requests_total', zone => 'main', rule => 'big',
             outcome => 'error'), 1, 'the request counted as error');

    # Redis restarted (the connection is lost): a reconnect
    $r->kill('CONT');
    $r->restart;
    my $up = wait_until(sub {
        http_get($port, '/t')->{headers}{'x-rl-status'} eq 'PASSED'
    }, timeout => 5, interval => 0.1);
    ok($up, 'decisions resume after Redis restarted');
    my $p2 = scrape($port, 'Redis back');
    is(val($p2, 'rl_store_up', zone => 'main'), 1, 'rl_store_up 1 again');
    ok(val($p2, 'rl_store_reconnects_total', zone => 'main')
       >= val($p0, 'rl_store_reconnects_total', zone => 'main') + 1,
       'rl_store_reconnects_total counted the reconnection');
    $ng->stop;
}

# A Redis that answers late (past timeout=, before connect_timeout=)
# keeps its connection: the late reply says it is up again
{
    my ($ng, $port) = store_nginx('10s', 'late replies');
    my $p0 = scrape($port, 'late replies, before');
    $r->kill('STOP');
    my $res = http_get($port, '/t');
    is($res->{headers}{'x-rl-status'}, 'ERROR', 'Redis stopped: ERROR');
    my $p1 = scrape($port, 'late replies, stopped');
    is(val($p1, 'rl_store_up', zone => 'main'), 0, 'rl_store_up 0');
    $r->kill('CONT');
    ok(wait_until(sub {
        (http_get($port, '/t')->{headers}{'x-rl-status'} // '') eq 'PASSED'
    }, timeout => 5, interval => 0.05), 'Redis goes on: decisions resume');
    my $p2 = scrape($port, 'late replies, after');
    is(val($p2, 'rl_store_up', zone => 'main'), 1,
       'rl_store_up 1 again, with the same connection');
    is(val($p2, 'rl_store_reconnects_total', zone => 'main'),
       val($p0, 'rl_store_reconnects_total', zone => 'main'),
       'no reconnection');
    $ng->stop;
}

$r->stop;

run_tests();
done_testing();

__DATA__

=== TEST 1: rules apply to the metrics location as to any other, and count themselves
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location = /metrics {
    rl_rule zone=main key=scraper rate=2r/h name=scrapes;
    rl_metrics;
}
--- request eval
["GET /metrics", "GET /metrics", "GET /metrics"]
--- error_code eval
[200, 200, 429]
--- response_headers eval
["X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 1",
 "X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0",
 "X-RateLimit-Limit: 2\nX-RateLimit-Remaining: 0"]
--- response_body_like eval
[qr/^rl_requests_total\{zone="main",rule="scrapes",outcome="passed"\} 1$/m,
 qr/^rl_requests_total\{zone="main",rule="scrapes",outcome="passed"\} 2$/m,
 qr/429 Too Many Requests/]



=== TEST 2: an allow/deny metrics location
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location = /metrics {
    allow 127.0.0.1;
    deny all;
    rl_metrics;
}
location = /denied {
    allow 10.0.0.0/8;
    deny all;
    rl_metrics;
}
--- request eval
["GET /metrics", "GET /denied"]
--- error_code eval
[200, 403]
--- response_headers_like eval
["Content-Type: text/plain; version=0\\.0\\.4(?:; charset=utf-8)?", "Content-Type: text/html"]



=== TEST 3: HEAD gets the headers without a body
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location = /metrics {
    rl_metrics;
}
--- request
HEAD /metrics
--- response_headers_like
Content-Type: text/plain; version=0\.0\.4(?:; charset=utf-8)?
--- response_body chomp



=== TEST 4: rl_metrics is for locations only
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
rl_metrics;
--- must_die
--- error_log
"rl_metrics" directive is not allowed here



=== TEST 5: rl_metrics takes no argument
--- http_config
rl_zone main redis=127.0.0.1:$RedisPort timeout=5s;
--- config
location /m { rl_metrics on; }
--- must_die
--- error_log
invalid number of arguments in "rl_metrics" directive



=== TEST 6: without any zone, the page is valid and empty of samples
--- config
location = /metrics {
    rl_metrics;
}
--- request
GET /metrics
--- response_headers_like
Content-Type: text/plain; version=0\.0\.4(?:; charset=utf-8)?
--- response_body_like eval
qr/\A(?:#[^\n]*\n)*\z/
