package RlTest::Upstream;

# A real upstream for the in-flight and charge tests: t/lib/upstream.py
# (Python's asyncio, standard library only), on a free loopback port. It
# holds requests as long as they ask, counts each key's requests in
# flight (now, and the most at once) and answers X-Tokens-Used as asked.
#
#   my $up = RlTest::Upstream->new;
#   $up->port;
#   $up->stats('k');       # { now => 0, max => 3, seen => 9, tokens => 40 }
#   $up->release('tag');   # ends the requests held with until=tag
#   $up->reset;
#   $up->capacity(8, 50);  # /work serves 8 at once, 50 ms each
#   $up->capacity_stats;   # { c => 8, max => 8, served => 900, ... }
#   $up->stop;             # (also done at exit)

use strict;
use warnings;

use File::Basename ();
use RlTest::HTTP qw(http_get);
use RlTest::Proc qw(make_tempdir exec_child wait_until);
use parent -norequire, 'RlTest::Proc::Owned';

# Debian's python3 (the first python3 on PATH may be another build;
# either runs a standard-library server)
our $PYTHON = -x '/usr/bin/python3' ? '/usr/bin/python3' : 'python3';

my $SCRIPT = File::Basename::dirname(__FILE__) . '/../upstream.py';

sub new {
    my ($class, %opt) = @_;
    my $self = bless { dir => make_tempdir('upstream'), owner => $$ },
                     $class;
    RlTest::Proc::register($self);
    my $file = "$self->{dir}/port";
    $self->{pid} = exec_child([$PYTHON, $SCRIPT, $file],
                              "$self->{dir}/upstream.log", group => 1);
    wait_until(sub { -s $file }, timeout => 10)
        or die "upstream: no port within 10 s: " . $self->log_text;
    open my $fh, '<', $file or die "$file: $!";
    ($self->{port}) = <$fh> =~ /(\d+)/;
    return $self;
}

sub port { $_[0]{port} }
sub dir  { $_[0]{dir} }

sub log_text { RlTest::Nginx::_slurp("$_[0]{dir}/upstream.log") }

sub stats {
    my ($self, $key) = @_;
    return _json_numbers(http_get($self->{port}, "/stats?key=$key")->{body});
}

sub release {
    my ($self, $tag) = @_;
    return http_get($self->{port}, "/release?tag=$tag")->{code};
}

sub reset { http_get($_[0]{port}, '/reset')->{code} }

sub _json_numbers {
    my ($body) = @_;
    my %s = ($body // '') =~ /"(\w+)": (\d+)/g;
    return \%s;
}

sub capacity {
    my ($self, $c, $ms) = @_;
    my $q = "c=$c" . (defined $ms ? "&ms=$ms" : '');
    return _json_numbers(http_get($self->{port}, "/capacity?$q")->{body});
}

sub capacity_stats {
    my ($self) = @_;
    return _json_numbers(http_get($self->{port}, '/capacity/stats')->{body});
}

sub stop { $_[0]->stop_child }

sub _cleanup_priority { 2 }

1;
