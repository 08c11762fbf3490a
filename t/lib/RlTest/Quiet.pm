package RlTest::Quiet;

# CI runs `make test` legs side by side (.ci/run's lanes). A test whose
# assertions are rates and latencies (t/087, t/091) runs with no other
# test file of ours beside it: every test file holds a shared lock on
# RUN while it runs (taken as RlTest loads), after passing a GATE; such
# a test closes the gate (new files wait at it) and then waits for the
# files that run to end (an exclusive lock on RUN), in turn with any
# other such test. Those it waits for end within a minute or so; past
# WAIT seconds it goes on anyway, and says so (a child of a test that
# outlived it keeps its lock). Nice 10 work (nginx's suite, fuzzing,
# the package check) goes on beside it.
#
#   RlTest::Quiet::beside();    # RlTest does it for every file
#   RlTest::Quiet::alone();     # RlTest::Load::timing_critical()

use strict;
use warnings;

use Fcntl ();
use Time::HiRes ();

my $GATE = '/tmp/rl-timing-gate.lock';
my $RUN = '/tmp/rl-timing-critical.lock';
my $WAIT = 300;
my ($gate, $run);

# (Perl opens them close-on-exec: the servers a test starts do not
# hold them)
sub _open {
    my ($path) = @_;
    open my $fh, '>>', $path or die "$path: $!";
    chmod 0666, $path;
    return $fh;
}

# flock with a deadline: false if it was not had within $WAIT seconds
sub _lock {
    my ($fh, $how) = @_;
    my $until = Time::HiRes::time() + $WAIT;
    until (flock($fh, $how | Fcntl::LOCK_NB())) {
        return 0 if Time::HiRes::time() > $until;
        Time::HiRes::sleep(0.05);
    }
    return 1;
}

sub beside {
    return if $run;
    $gate = _open($GATE);
    $run = _open($RUN);
    _lock($gate, Fcntl::LOCK_SH());
    _lock($run, Fcntl::LOCK_SH());
    flock($gate, Fcntl::LOCK_UN());
}

sub alone {
    $gate //= _open($GATE);
    $run //= _open($RUN);
    flock($run, Fcntl::LOCK_UN());      # its own shared lock
    my $t0 = Time::HiRes::time();
    my $ok = _lock($gate, Fcntl::LOCK_EX()) && _lock($run, Fcntl::LOCK_EX());
    my $waited = Time::HiRes::time() - $t0;
    Test::More::diag(sprintf('alone on the machine after %.0f s', $waited))
        if $waited >= 1;
    Test::More::diag("not alone: other tests held the lock $WAIT s")
        unless $ok;
    return $ok;
}

1;
