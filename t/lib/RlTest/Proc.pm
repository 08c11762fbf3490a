package RlTest::Proc;

# Process helpers shared by the harness: a registry of the processes the
# test started (so none is left behind, even when a test dies), polling with
# deadlines, free ports, temp dirs, /proc scanning and forked children.

use strict;
use warnings;

use Exporter 'import';
use File::Temp ();
use IO::Socket::IP;
use POSIX ();
use Scalar::Util qw(weaken refaddr);
use Time::HiRes ();

our @EXPORT_OK = qw(
    a_second
    now wait_until free_port make_tempdir children_of cmdline_of
    pid_alive reap_pid kill_and_reap spawn register unregister keep_temp
    exec_child tcp_of
);

$SIG{PIPE} = 'IGNORE';

# ---------------------------------------------------------------- registry

my %LIVE;           # refaddr => weak ref to an object with ->_cleanup
my $OWNER = $$;     # forked children never clean up the parent's processes

sub register {
    my ($obj) = @_;
    $LIVE{ refaddr $obj } = $obj;
    weaken $LIVE{ refaddr $obj };
}

sub unregister {
    my ($obj) = @_;
    delete $LIVE{ refaddr $obj };
}

sub cleanup_all {
    return unless $$ == $OWNER;
    # nginx first (priority 0), then redis (1), then the rest.
    my @objs = sort { ($a->can('_cleanup_priority') ? $a->_cleanup_priority : 5)
                      <=> ($b->can('_cleanup_priority') ? $b->_cleanup_priority : 5) }
               grep { defined } values %LIVE;
    for my $obj (@objs) {
        eval { $obj->_cleanup; 1 } or warn "cleanup failed: $@";
    }
    %LIVE = ();
}

END {
    local $?;
    cleanup_all();
}

for my $sig (qw(INT TERM HUP)) {
    $SIG{$sig} = sub {
        my $num = { INT => 2, HUP => 1, TERM => 15 }->{$sig};
        print STDERR "# caught SIG$sig, cleaning up\n";
        exit(128 + $num);          # runs END blocks, hence cleanup_all
    };
}

# ---------------------------------------------------------------- time

sub now { Time::HiRes::time() }

# a_second(): what "within a second" of a one-second cadence (the fleet's
# read, a renewal tick) may take as a test sees it: the cadence, the
# requests that look, and a loaded host; more under the sanitizers (their
# workers run some three times slower)
sub a_second { $ENV{RL_SANITIZE} ? 2.5 : 1.5 }

# wait_until(sub { ... }, timeout => SECONDS, interval => SECONDS)
# Returns the first true value of the sub, or undef at the deadline.
sub wait_until {
    my ($cond, %opt) = @_;
    my $timeout  = $opt{timeout}  // 5;
    my $interval = $opt{interval} // 0.05;
    my $deadline = now() + $timeout;
    while (1) {
        my $v = $cond->();
        return $v if $v;
        return undef if now() >= $deadline;
        Time::HiRes::sleep($interval);
    }
}

# ---------------------------------------------------------------- ports

my %GIVEN;

sub free_port {
    for (1 .. 50) {
        my $s = IO::Socket::IP->new(
            LocalHost => '127.0.0.1', LocalPort => 0, Proto => 'tcp',
            Listen => 1, ReuseAddr => 0,
        ) or die "cannot bind a free port: $@";
        my $port = $s->sockport;
        close $s;
        next if $GIVEN{$port}++;
        return $port;
    }
    die "no free port found";
}

# ---------------------------------------------------------------- temp dirs

sub keep_temp { $ENV{RL_KEEP} ? 1 : 0 }

sub make_tempdir {
    my ($tag) = @_;
    my $dir = File::Temp::tempdir("rltest-${tag}-XXXXXX", DIR => '/tmp',
                                  CLEANUP => !keep_temp());
    print STDERR "# $tag temp dir kept: $dir\n" if keep_temp();
    return $dir;
}

# ---------------------------------------------------------------- /proc

sub _stat_of {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or return;
    my $line = <$fh> // return;
    close $fh;
    $line =~ /^\d+ \((.*)\) (\S) (\d+)/s or return;
    return ($2, $3);    # state, ppid
}

sub cmdline_of {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/cmdline" or return '';
    local $/;
    my $c = <$fh> // '';
    close $fh;
    $c =~ s/\0+$//;
    $c =~ s/\0/ /g;
    return $c;
}

# Live (non-zombie) children of a pid.
sub children_of {
    my ($ppid) = @_;
    opendir my $dh, '/proc' or return;
    my @kids;
    for my $e (readdir $dh) {
        next unless $e =~ /^\d+$/;
        my ($state, $pp) = _stat_of($e);
        next unless defined $pp && $pp == $ppid;
        next if $state eq 'Z' || $state eq 'X';
        push @kids, $e + 0;
    }
    closedir $dh;
    return sort { $a <=> $b } @kids;
}

# A process's established TCP connections (IPv4), from /proc: each
# { peer => PORT, keepalive => 1 when its keepalive timer runs (an idle
# socket with SO_KEEPALIVE; /proc/net/tcp's timer 2) }.
sub tcp_of {
    my ($pid) = @_;
    my %mine;
    opendir my $dh, "/proc/$pid/fd" or return;
    for my $fd (readdir $dh) {
        my $l = readlink "/proc/$pid/fd/$fd" // next;
        $mine{$1} = 1 if $l =~ /^socket:\[(\d+)\]$/;
    }
    closedir $dh;
    open my $fh, '<', "/proc/$pid/net/tcp" or return;
    my @conns;
    while (my $line = <$fh>) {
        my @f = split ' ', $line;
        next unless @f > 9 && $f[3] eq '01' && $mine{ $f[9] };  # ESTABLISHED
        my ($peer) = $f[2] =~ /:([0-9A-F]+)$/;
        my ($timer) = split /:/, $f[5];
        push @conns, { peer => hex $peer, keepalive => $timer eq '02' ? 1 : 0 };
    }
    close $fh;
    return @conns;
}

sub pid_alive {
    my ($pid) = @_;
    return 0 unless $pid;
    my ($state) = _stat_of($pid);
    return 0 unless defined $state;
    return 0 if $state eq 'Z' || $state eq 'X';
    return 1;
}

# Reap a child of ours; true when it has exited (status in $?).
sub reap_pid {
    my ($pid, $timeout) = @_;
    my $status;
    my $done = wait_until(sub {
        my $r = waitpid($pid, POSIX::WNOHANG());
        if ($r == $pid) { $status = $?; return 1 }
        return 1 if $r == -1;          # not our child any more / already reaped
        return 0;
    }, timeout => $timeout // 5, interval => 0.02);
    $? = $status // 0;
    return $done ? 1 : 0;
}

# Send each signal in turn, waiting up to its deadline for the child to exit.
# kill_and_reap($pid, [QUIT => 5], [TERM => 3], [KILL => 3]);
sub kill_and_reap {
    my ($pid, @steps) = @_;
    for my $step (@steps) {
        my ($sig, $timeout) = @$step;
        kill $sig, $pid;
        return 1 if reap_pid($pid, $timeout);
    }
    return 0;
}

# ---------------------------------------------------------------- children

# exec_child(\@cmd, $out, %opt) forks and execs @cmd with no stdin,
# stdout and stderr to the file $out (appended to with append => 1), in a
# process group of its own with group => 1 (a signal to the test's group
# then spares it); returns its pid.
sub exec_child {
    my ($cmd, $out, %opt) = @_;
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        POSIX::setpgid(0, 0) if $opt{group};
        open STDIN, '<', '/dev/null';
        open STDOUT, $opt{append} ? '>>' : '>', $out;
        open STDERR, '>&', \*STDOUT;
        exec @$cmd or POSIX::_exit(127);
    }
    return $pid;
}

# spawn(sub { ...; return $string }) forks; the child runs the sub and
# exits without running END blocks. ->wait(timeout) returns the string.
sub spawn {
    my ($code) = @_;
    return RlTest::Proc::Child->new($code);
}

package RlTest::Proc::Child;

use strict;
use warnings;
use POSIX ();

sub new {
    my ($class, $code) = @_;
    pipe(my $r, my $w) or die "pipe: $!";
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        close $r;
        my $out = eval { $code->() };
        my $ok = defined $out || !$@;
        $out = "CHILD DIED: $@" unless $ok;
        syswrite $w, $out // '';
        close $w;
        POSIX::_exit($ok ? 0 : 1);
    }
    close $w;
    my $self = bless { pid => $pid, fh => $r }, $class;
    RlTest::Proc::register($self);
    return $self;
}

sub pid { $_[0]{pid} }

sub wait {
    my ($self, $timeout) = @_;
    return $self->{result} if exists $self->{result};
    my $buf = '';
    my $fh = $self->{fh};
    my $deadline = RlTest::Proc::now() + ($timeout // 60);
    require IO::Select;
    my $sel = IO::Select->new($fh);
    while (RlTest::Proc::now() < $deadline) {
        next unless $sel->can_read(0.1);
        my $n = sysread $fh, $buf, 65536, length $buf;
        last unless $n;
    }
    close $fh;
    unless (RlTest::Proc::reap_pid($self->{pid}, 2)) {
        RlTest::Proc::kill_and_reap($self->{pid}, [TERM => 2], [KILL => 2]);
        $self->{status} = -1;
    } else {
        $self->{status} = $?;
    }
    RlTest::Proc::unregister($self);
    return $self->{result} = $buf;
}

sub status { $_[0]{status} }

sub _cleanup_priority { 2 }

sub _cleanup {
    my ($self) = @_;
    return if exists $self->{result};
    RlTest::Proc::kill_and_reap($self->{pid}, [TERM => 2], [KILL => 2]);
    $self->{result} = undef;
}

sub DESTROY {
    my ($self) = @_;
    return unless $$ == $OWNER;
    local ($@, $?);
    eval { $self->_cleanup };
}

# The base of the harness' servers (nginx, redis-server, a cluster):
# an object made with owner => $$ cleans up, when it goes or the test
# ends, in the process that made it and nowhere else (not in a forked
# child). _cleanup stops it; a class may add to that.
package RlTest::Proc::Owned;

use strict;
use warnings;

sub _cleanup {
    my ($self) = @_;
    return unless $$ == $self->{owner};
    $self->stop;
}

# The stop of a server that is one child of the test's, $self->{pid}
# (a DNS server, an upstream): TERM, then KILL.
sub stop_child {
    my ($self) = @_;
    return unless $self->{pid};
    RlTest::Proc::kill_and_reap($self->{pid}, [TERM => 2], [KILL => 2]);
    $self->{pid} = undef;
    return 1;
}

sub DESTROY {
    my ($self) = @_;
    return unless $$ == ($self->{owner} // 0);
    local ($@, $?);
    eval { $self->_cleanup };
    RlTest::Proc::unregister($self);
}

1;
