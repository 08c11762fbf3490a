package RlTest::Load;

# Closed-loop clients with a deadline (t/lib/load.py): how many answers
# a second came back within it, and their latencies, as the in-flight
# and adaptive limits' tests measure them.
#
#   my $load = RlTest::Load->start(
#       urls => ["http://127.0.0.1:$p1/w", ...], clients => 48,
#       seconds => 10, deadline => 1, pause_ms => 0,
#       groups => ['4:X-Priority=0', '44:X-Priority=3']);
#   $load->finish;                   # waits for the run's end
#   $load->stats(from => 3, to => 10, group => 1);
#       # { goodput => 150.2, p50 => 0.051, p90 => 0.06, p99 => 0.1,
#       #   codes => { 200 => 1000, 503 => 50 }, requests => 1050 }
#   $load->series(step => 1);       # the same per second, in order
#   $load->epoch;                   # the run's start (epoch seconds,
#                                   # waits for it): its time 0
#   $load->requests;                # [[start, latency, status, group],
#                                   #  ...] as load.py wrote them
#
#   RlTest::Load::timing_critical();  # at a test's start, see below

use strict;
use warnings;

use File::Basename ();
use JSON::PP ();
use POSIX ();
use RlTest::Proc qw(make_tempdir exec_child wait_until reap_pid);
use RlTest::Quiet ();
use RlTest::Upstream ();

my $SCRIPT = File::Basename::dirname(__FILE__) . '/../load.py';
my $JSON = JSON::PP->new;

# A test whose assertions are rates and latencies (t/087, t/091) says so
# first: it waits until no other test file of ours runs on the machine
# (RlTest/Quiet.pm: another make test leg runs beside it in CI), and, run
# as root, takes a higher CPU priority (nice -10), which the nginx,
# redis-server, upstream and clients it starts inherit: a neighbour's
# nice 10 work then delays them less. Returns whether the figures can be
# held to their bounds: not under the sanitizers (workers 3x slower),
# where such a test checks what it does, not how fast (and runs beside
# the others, as they do, at nice -10 still).
sub timing_critical {
    my $timed = !$ENV{RL_SANITIZE};
    RlTest::Quiet::alone() if $timed;
    POSIX::nice(-10) if $> == 0;
    return $timed;
}

sub start {
    my ($class, %o) = @_;
    my $dir = make_tempdir('load');
    my $self = bless { dir => $dir, out => "$dir/requests",
                       seconds => $o{seconds} // 10 }, $class;
    my @cmd = ($RlTest::Upstream::PYTHON, $SCRIPT, 'run', $self->{out},
               '--url', join(',', @{ $o{urls} }),
               '--clients', $o{clients} // 48,
               '--seconds', $self->{seconds},
               '--deadline', $o{deadline} // 1,
               '--pause-ms', $o{pause_ms} // 0,
               '--epoch', "$dir/epoch",
               map { ('--group', $_) } @{ $o{groups} // [] });
    $self->{pid} = exec_child(\@cmd, "$dir/load.log");
    return $self;
}

# whether the clients ended
sub done {
    my ($self) = @_;
    return waitpid($self->{pid}, POSIX::WNOHANG()) == $self->{pid}
           ? ($self->{reaped} = 1) : $self->{reaped};
}

# waits for the clients' end (their seconds, plus a deadline and some);
# dies if they did not write their requests
sub finish {
    my ($self) = @_;
    wait_until(sub { $self->done }, timeout => $self->{seconds} + 30)
        or die "load.py did not end: " . $self->log_text;
    die "load.py wrote nothing: " . $self->log_text unless -e $self->{out};
    return $self;
}

sub epoch {
    my ($self) = @_;
    my $file = "$self->{dir}/epoch";
    wait_until(sub { -s $file }, timeout => 30)
        or die "load.py did not start: " . $self->log_text;
    open my $fh, '<', $file or die "$file: $!";
    my ($t) = <$fh> =~ /([\d.]+)/;
    return $t;
}

sub requests {
    my ($self) = @_;
    open my $fh, '<', $self->{out} or die "$self->{out}: $!";
    return [ map { [ split ' ' ] } <$fh> ];
}

sub log_text {
    my ($self) = @_;
    open my $fh, '<', "$self->{dir}/load.log" or return '';
    local $/;
    return <$fh>;
}

sub _ask {
    my ($self, @args) = @_;
    open my $fh, '-|', $RlTest::Upstream::PYTHON, $SCRIPT, @args,
        $self->{out} or die "load.py: $!";
    my @lines = <$fh>;
    close $fh;
    return map { $JSON->decode($_) } @lines;
}

sub stats {
    my ($self, %o) = @_;
    my @a = ('stats');
    push @a, '--from', $o{from} if defined $o{from};
    push @a, '--to', $o{to} if defined $o{to};
    push @a, '--group', $o{group} if defined $o{group};
    my ($s) = $self->_ask(@a);
    return $s;
}

sub series {
    my ($self, %o) = @_;
    return $self->_ask('series', '--step', $o{step} // 1);
}

1;
