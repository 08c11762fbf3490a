#!/usr/bin/perl

# nginx's own test suite with the module loaded: the part of t/nginx-suite
# that runs as the unprivileged user. Two commands:
#
#   nginx-suite.pl run MODE OUT FILE...
#       runs the files (in the current directory, nginx's tests) with
#       TAP::Harness, NGINX_SUITE_JOBS at once, each under a time limit,
#       and writes OUT: one line per file, "FILE<TAB>ok|fail|skip<TAB>
#       FAILED-SUBTESTS<TAB>SECONDS". MODE only names the run in its log.
#
#   nginx-suite.pl failing DIR MODE...
#       prints the files that failed in any DIR/MODE.tsv, once each: the
#       ones the baseline (none) runs for
#
#   nginx-suite.pl compare DIR MODE...
#       reads DIR/none.tsv and DIR/MODE.tsv for each MODE and prints the
#       files that fail with the module and pass without it, marking the
#       known differences (%KNOWN below). Exit status: 0 when nothing
#       else differs, 1 otherwise. Files to run again (noise) are listed
#       in DIR/again.
#
# Environment: NGINX_SUITE_JOBS (default 2), NGINX_SUITE_FILE_TIMEOUT
# (seconds per file, default 300), and Test::Nginx's own TEST_NGINX_*.

use strict;
use warnings;

use TAP::Harness;

# The differences that are not the module's: each names the mode it is
# seen in, the subtests that fail, why, and how t/nginx-suite proves it
# on every run ('limit_req': nginx's own limit_req, delaying the request
# as the module parks it, makes the same subtests fail without the
# module loaded; 'server': stock nginx with the suite's rl_api server, a
# return in place of rl_api, fails them too; a listed difference that
# stock nginx does not reproduce is no longer excused; 'timing': a check
# of under a millisecond that a request waiting for Redis meets by
# chance, which no stock nginx of the suite's modes reproduces, excused
# for those subtests alone).
our %KNOWN = (
    'grpc_request_buffering.t' => {
        modes  => [qw(redis)],
        failed => '10-11',
        proof  => 'limit_req',
        reason => 'the test client sends a 66000-byte DATA frame at once, '
            . 'past the 65536-byte stream window nginx advertised (RFC 9113 '
            . '6.9.1); nginx accepts it only when the request reaches '
            . 'proxy_pass, which opens the window, while the same read is '
            . 'being parsed. A request that waits in the access phases (for '
            . 'Redis here, for limit_req\'s delay in stock nginx) meets the '
            . 'DATA frame with the window still closed: RST_STREAM '
            . 'FLOW_CONTROL_ERROR, "client violated flow control". A client '
            . 'that keeps to the window passes (t/047-http2-body.t).',
    },
    'limit_req_delay.t' => {
        modes  => [qw(redis)],
        failed => '2',
        proof  => 'timing',
        reason => 'its subtest 2 ("not yet delayed") asserts X-Time: '
            . '0.000, a request that took under one millisecond of nginx\'s '
            . 'cached clock. With a Redis rule the request waits a round '
            . 'trip in the access phase (0.1 to 0.5 ms): it reads 0.001 '
            . 'whenever a millisecond boundary falls within it, by chance '
            . '(one run in three or four on a busy host). The limit_req '
            . 'mode cannot show it: the test\'s location sets its own '
            . 'limit_req, so the http level\'s does not reach it. Its '
            . 'delay and rejection (subtests 3 and 4) pass.',
    },
    'ssl_password_file.t' => {
        modes  => [qw(embedded redis)],
        failed => '1-3',
        proof  => 'server',
        reason => 'the test sets ssl_certificate_key and a password file '
            . 'that does not open it at http level, for its servers to '
            . 'override; the server the suite adds for rl_api (on a unix '
            . 'socket) inherits them, so nginx cannot load its key and '
            . 'does not start. Any server added there does the same: '
            . 'stock nginx with that server and no module fails alike.',
    },
);

my $cmd = shift @ARGV // '';

if ($cmd eq 'run') {
    exit run(@ARGV);
} elsif ($cmd eq 'compare') {
    exit compare(@ARGV);
} elsif ($cmd eq 'merge') {
    exit merge(@ARGV);
} elsif ($cmd eq 'proof') {
    exit proof(@ARGV);
} elsif ($cmd eq 'failing') {
    exit failing(@ARGV);
}
die "usage: $0 run MODE OUT FILE... | compare DIR MODE... | "
    . "merge TSV AGAIN-TSV | proof DIR PROOF | failing DIR MODE...\n";

sub run {
    my ($mode, $out, @files) = @_;
    my $jobs = $ENV{NGINX_SUITE_JOBS} || 2;
    my $limit = $ENV{NGINX_SUITE_FILE_TIMEOUT} || 300;

    my $harness = TAP::Harness->new({
        jobs      => $jobs,
        lib       => ['lib'],
        merge     => 1,
        verbosity => -3,
        exec      => sub {
            my (undef, $file) = @_;
            return ['timeout', '-k', '10', $limit, $^X, '-Ilib', $file];
        },
    });

    my $started = time;
    my $agg = $harness->runtests(@files);

    open my $fh, '>', $out or die "$out: $!\n";
    for my $file (@files) {
        my ($p) = $agg->parsers($file);
        my ($status, $failed) = ('ok', '');
        if ($p->skip_all) {
            $status = 'skip';
        } elsif ($p->has_problems) {
            $status = 'fail';
            my @f = $p->failed;
            push @f, 'exit' . ($p->exit || $p->wait)
                if $p->exit || $p->wait;
            push @f, 'plan' if $p->parse_errors;
            $failed = ranges(@f);
        }
        print "nginx-suite: $mode: $file fails subtests $failed\n"
            if $status eq 'fail';
        my $secs = sprintf '%.1f', ($p->end_time // 0) - ($p->start_time // 0);
        print $fh join("\t", $file, $status, $failed, $secs), "\n";
    }
    close $fh;

    my %n;
    $n{(split /\t/)[1]}++ for do { open my $r, '<', $out; <$r> };
    printf "nginx-suite: %s: %d files, %d ok, %d failed, %d skipped, %ds\n",
        $mode, scalar @files, $n{ok} // 0, $n{fail} // 0, $n{skip} // 0,
        time - $started;
    return 0;
}

sub compare {
    my ($dir, @modes) = @_;
    my $base = load("$dir/none.tsv");
    my (@regressions, @known, @again, @seen);

    my ($passed, $skipped) = (0, 0);
    for my $mode (@modes) {
        my $with = load("$dir/$mode.tsv");
        for my $file (sort keys %$with) {
            $skipped++ if $with->{$file}{status} eq 'skip';
            $passed++ if $with->{$file}{status} eq 'ok';
            next unless $with->{$file}{status} eq 'fail';
            $passed++;      # unless it is one of the regressions below
            my $b = $base->{$file} // { status => 'not run', failed => '' };
            next if $b->{status} eq 'skip';
            my $failed = $with->{$file}{failed};
            # failing without the module too (nginx 1.22.1's own bugs,
            # this host): only subtests that pass without it count
            next if $b->{status} eq 'fail' && subset($failed, $b->{failed});
            my $k = $KNOWN{$file};
            if ($k && grep({ $_ eq $mode } @{$k->{modes}})
                && subset($failed, $k->{failed}))
            {
                push @known, "$file ($mode): subtests $failed: $k->{reason}";
                push @seen, join "\t", $file, $failed, $k->{proof};
                next;
            }
            $passed--;
            push @regressions, "$file ($mode): subtests $failed "
                . "(without the module: "
                . ($b->{status} eq 'ok' ? 'ok'
                   : $b->{status} eq 'fail' ? "fails $b->{failed}"
                   : $b->{status}) . ')';
            push @again, "$mode\t$file";
        }
    }

    open my $fh, '>', "$dir/again" or die "$dir/again: $!\n";
    print $fh "$_\n" for @again;
    close $fh;

    open $fh, '>', "$dir/counts" or die "$dir/counts: $!\n";
    print $fh join(' ', $passed, scalar @regressions, $skipped), "\n";
    close $fh;

    open $fh, '>', "$dir/known" or die "$dir/known: $!\n";
    print $fh "$_\n" for @seen;
    close $fh;

    for my $file (sort keys %$base) {
        print "nginx-suite: fails without the module too (not the "
            . "module's): $file: subtests $base->{$file}{failed}\n"
            if $base->{$file}{status} eq 'fail';
    }
    print "nginx-suite: known difference: $_\n" for @known;
    print "nginx-suite: FAILS WITH THE MODULE: $_\n" for @regressions;
    return @regressions ? 1 : 0;
}

sub failing {
    my ($dir, @modes) = @_;
    my %f;
    for my $mode (@modes) {
        my $r = load("$dir/$mode.tsv");
        $f{$_} = 1 for grep { $r->{$_}{status} eq 'fail' } keys %$r;
    }
    print "$_\n" for sort keys %f;
    return 0;
}

# TSV with the lines of AGAIN-TSV (a second run of some files) in place
sub merge {
    my ($tsv, $again) = @_;
    my $r = load($tsv);
    my $a = load($again);
    $r->{$_} = $a->{$_} for keys %$a;
    open my $fh, '>', $tsv or die "$tsv: $!\n";
    print $fh join("\t", $_, @{$r->{$_}}{qw(status failed secs)}), "\n"
        for sort keys %$r;
    close $fh;
    return 0;
}

# Each known difference seen (DIR/known) must be reproduced by its proof
# run (DIR/PROOF.tsv): stock nginx fails at least the same subtests.
sub proof {
    my ($dir, $proof) = @_;
    my $p = load("$dir/$proof.tsv");
    my $bad = 0;
    open my $fh, '<', "$dir/known" or die "$dir/known: $!\n";
    while (<$fh>) {
        chomp;
        my ($file, $failed, $how) = split /\t/;
        next unless $how eq $proof;
        my $r = $p->{$file};
        if ($r && $r->{status} eq 'fail' && subset($failed, $r->{failed})) {
            print "nginx-suite: proven: $file fails subtests $r->{failed} "
                . "in stock nginx with $proof as well\n";
            next;
        }
        print "nginx-suite: NOT PROVEN: $file passes (or fails otherwise: "
            . ($r ? "$r->{status} $r->{failed}" : 'not run')
            . ") with $proof; its listed difference is no longer excused\n";
        $bad = 1;
    }
    return $bad;
}

sub load {
    my ($file) = @_;
    my %r;
    open my $fh, '<', $file or die "$file: $!\n";
    while (<$fh>) {
        chomp;
        my ($f, $status, $failed, $secs) = split /\t/, $_, -1;
        $r{$f} = { status => $status, failed => $failed, secs => $secs };
    }
    return \%r;
}

# "3 5 6 7" -> "3,5-7"; words (exit2, plan) stay as they are
sub ranges {
    my (@n) = @_;
    my @nums = sort { $a <=> $b } grep { /^\d+$/ } @n;
    my @words = grep { !/^\d+$/ } @n;
    my @out;
    while (@nums) {
        my $lo = shift @nums;
        my $hi = $lo;
        $hi = shift @nums while @nums && $nums[0] == $hi + 1;
        push @out, $lo == $hi ? $lo : "$lo-$hi";
    }
    return join ',', @out, @words;
}

# every failed subtest of A is listed in B (exit statuses aside)
sub subset {
    my ($a, $b) = @_;
    my %in = map { $_ => 1 } expand($b);
    for (expand($a)) {
        return 0 unless $in{$_} || /^exit/;
    }
    return 1;
}

sub expand {
    my ($s) = @_;
    return map { /^(\d+)-(\d+)$/ ? ($1 .. $2) : $_ } split /,/, $s // '';
}
