package RlTest::FakeClock;

# nginx's wall clock set where a test wants it (libfaketime, nginx alone:
# redis-server does not start under it), as t/063-embedded-full.t steps
# it. The monotonic clock stays real (DONT_FAKE_MONOTONIC), so nginx's
# timers and durations are not disturbed.
#
#   my $clock = RlTest::FakeClock->new or skip ...;   # undef: no library
#   $clock->set(timegm(0, 0, 22, 31, 2, 2025));       # nginx's "now"
#   my $ng = $clock->start_nginx(config => ..., env => { RL_TEST_CLOCK => 'nginx' });
#   $clock->set($later);                             # steps it, at once
#   $clock->now;                                     # nginx's time now
#
# A set is an offset from the real clock, written to a file every faked
# call reads again (FAKETIME_NO_CACHE): nginx's clock runs on from the
# time set. An embedded zone reads the wall clock once, when its shared
# memory is made (src/shm/store.cpp): a test of one sets the time before
# starting nginx.

use strict;
use warnings;

use Time::HiRes ();
use RlTest::Proc qw(make_tempdir);

sub library {
    my ($arch) = (`gcc -print-multiarch 2>/dev/null` // '') =~ /(\S+)/;
    my ($lib) = grep { -f } map { "/usr/lib/$_/faketime/libfaketime.so.1" }
                grep { defined } ($arch, 'x86_64-linux-gnu');
    return $lib;
}

sub new {
    my ($class) = @_;
    my $lib = library() or return undef;
    my $dir = make_tempdir('clock');
    chmod 0755, $dir;   # the workers (nobody) read it
    my $self = bless { lib => $lib, file => "$dir/faketime", offset => 0 },
                     $class;
    $self->set(time);
    return $self;
}

# nginx's clock to read `epoch` (seconds, may have a fraction) now.
sub set {
    my ($self, $epoch) = @_;
    my $offset = $epoch - Time::HiRes::time();
    $self->{offset} = $offset;
    open my $fh, '>', "$self->{file}.new" or die "$self->{file}: $!";
    printf $fh "%+.3f\n", $offset;
    close $fh;
    rename "$self->{file}.new", $self->{file} or die "$self->{file}: $!";
}

sub now { Time::HiRes::time() + $_[0]{offset} }

# An nginx under the faked clock (RlTest::Nginx->new's options, and env:
# more variables for it and its workers).
sub start_nginx {
    my ($self, %opt) = @_;
    my %env = (%{ delete $opt{env} // {} },
               FAKETIME_TIMESTAMP_FILE => $self->{file},
               FAKETIME_NO_CACHE => 1, DONT_FAKE_MONOTONIC => 1);
    local $ENV{LD_PRELOAD} = join ' ', grep { defined && length }
                                       $ENV{LD_PRELOAD}, $self->{lib};
    local @ENV{ keys %env } = values %env;
    # (nginx clears its workers' environment but for these)
    $opt{main_config} = join('', map { "env $_;\n" } sort keys %env)
                        . ($opt{main_config} // '');
    return RlTest::Nginx->new(%opt);
}

1;
