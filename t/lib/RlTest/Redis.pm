package RlTest::Redis;

# A throw-away redis-server on a free loopback port and a unix socket, with
# no persistence, in its own temp dir.
#
#   my $r = RlTest::Redis->new(password => 's3cret', args => [...]);
#   $r->port; $r->sock; $r->pid; $r->dir;
#   RlTest::Redis->new(tls => $pki);  # a TLS port too (RlTest::Tls):
#   $r->tls_port;                     # the harness stays on the plain one
#   $r->cli('CLIENT', 'LIST');        # redis-cli output, chomped
#   $r->client_count('ngx_rl');       # CLIENT LIST lines with name=ngx_rl
#   $r->calls('evalsha');             # that command's calls (commandstats)
#   $r->kill('STOP'); $r->kill('CONT'); $r->kill('KILL');
#   $r->restart;                      # same port, same socket, empty data
#   $r->stop;
#   RlTest::Redis->new(host => '127.0.0.2');   # bound to that address only
#   RlTest::Redis->new(sentinel => $lines);    # redis-server --sentinel,
#                                     # $lines its sentinel.conf (kept, as
#                                     # the sentinel rewrites it, across a
#                                     # restart)

use strict;
use warnings;

use IO::Select;
use IO::Socket::IP;
use POSIX ();
use RlTest::Proc qw(now wait_until free_port make_tempdir pid_alive
                    reap_pid kill_and_reap exec_child);
use RlTest::Tls;
use parent -norequire, 'RlTest::Proc::Owned';

sub new {
    my ($class, %opt) = @_;
    my $dir = $opt{dir} // make_tempdir('redis');
    my $self = bless {
        dir      => $dir,
        port     => $opt{port} // free_port(),
        host     => $opt{host} // '127.0.0.1',
        sentinel => $opt{sentinel},
        sock     => "$dir/redis.sock",
        password => $opt{password},
        args     => $opt{args} // [],
        tls      => $opt{tls},
        tls_port => $opt{tls} ? ($opt{tls_port} // free_port()) : undef,
        owner    => $$,
    }, $class;
    RlTest::Proc::register($self);
    $self->start;
    return $self;
}

sub port { $_[0]{port} }
sub host { $_[0]{host} }
sub addr { "$_[0]{host}:$_[0]{port}" }
sub tls_port { $_[0]{tls_port} }
sub sock { $_[0]{sock} }
sub pid  { $_[0]{pid} }
sub dir  { $_[0]{dir} }
sub log_text {
    my ($self) = @_;
    open my $fh, '<', "$self->{dir}/redis.log" or return '';
    local $/;
    return scalar <$fh>;
}

sub start {
    my ($self) = @_;
    die "redis already running (pid $self->{pid})\n"
        if $self->{pid} && pid_alive($self->{pid});
    unlink $self->{sock};
    my @mode = ('redis-server');
    if (defined $self->{sentinel}) {
        my $conf = "$self->{dir}/sentinel.conf";
        unless (-e $conf) {
            open my $fh, '>', $conf or die "$conf: $!";
            print $fh $self->{sentinel};
            close $fh;
        }
        @mode = ('redis-server', $conf, '--sentinel');
    }
    my @bind = $self->{host} eq '127.0.0.1' ? ('127.0.0.1', '-::1')
                                            : ($self->{host});
    my @cmd = (
        @mode,
        '--port', $self->{port}, '--bind', @bind,
        '--unixsocket', $self->{sock}, '--unixsocketperm', '777',
        '--save', '', '--appendonly', 'no',
        '--dir', $self->{dir}, '--daemonize', 'no', '--logfile', '',
        '--protected-mode', 'no',
        (defined $self->{password}
            ? ('--requirepass', $self->{password}) : ()),
        ($self->{tls}
            ? RlTest::Tls::redis_args($self->{tls}, $self->{tls_port}) : ()),
        @{ $self->{args} },
    );
    my $pid = exec_child(\@cmd, "$self->{dir}/redis.log", append => 1,
                         group => 1);
    $self->{pid} = $pid;
    $self->{stopped} = 0;

    my $up = wait_until(sub {
        return -1 if waitpid($pid, POSIX::WNOHANG()) == $pid;
        return $self->ping ? 1 : 0;
    }, timeout => 10);
    if (!$up || $up == -1) {
        my $log = $self->log_text;
        kill_and_reap($pid, [KILL => 2]) if $up;
        $self->{pid} = undef;
        die "redis-server did not start on port $self->{port}:\n$log\n";
    }
    return $self;
}

# One PING over a raw socket; true on +PONG (or -NOAUTH, which means up).
sub ping {
    my ($self) = @_;
    my $s = IO::Socket::IP->new(PeerHost => $self->{host},
                                PeerPort => $self->{port}, Timeout => 1)
        or return 0;
    syswrite $s, "PING\r\n";
    my $sel = IO::Select->new($s);
    my $buf = '';
    if ($sel->can_read(1)) { sysread $s, $buf, 512 }
    close $s;
    return $buf =~ /^(\+PONG|-NOAUTH)/ ? 1 : 0;
}

sub cli {
    my ($self, @args) = @_;
    my @auth = defined $self->{password}
             ? ('--no-auth-warning', '-a', $self->{password}) : ();
    open my $fh, '-|', 'redis-cli', '-h', $self->{host}, '-p', $self->{port},
        @auth, @args
        or die "redis-cli: $!";
    local $/;
    my $out = <$fh> // '';
    close $fh;
    $out =~ s/\n\z//;
    return $out;
}

# The calls of a command Redis ran; with rejected => 1, those it refused
# too (OOM, a paused write...: Redis 7 counts them apart).
sub calls {
    my ($self, $command, %opt) = @_;
    my $line = ($self->cli('INFO', 'commandstats')
                =~ /^cmdstat_\Q$command\E:(.*)$/m)[0] // '';
    my ($n) = $line =~ /\bcalls=(\d+)/;
    my ($rejected) = $line =~ /\brejected_calls=(\d+)/;
    return ($n // 0) + ($opt{rejected} ? $rejected // 0 : 0);
}

sub client_count {
    my ($self, $name) = @_;
    $name //= 'ngx_rl';
    my $list = $self->cli('CLIENT', 'LIST');
    return scalar grep { /\bname=\Q$name\E(\s|$)/ } split /\n/, $list;
}

sub kill {
    my ($self, $sig) = @_;
    return unless $self->{pid};
    $sig = uc $sig;
    $sig =~ s/^SIG//;
    CORE::kill($sig, $self->{pid});
    if ($sig eq 'STOP') {
        $self->{stopped} = 1;
    } elsif ($sig eq 'CONT') {
        $self->{stopped} = 0;
    } elsif ($sig eq 'KILL' || $sig eq 'TERM' || $sig eq 'INT') {
        CORE::kill('CONT', $self->{pid}) if $self->{stopped};
        $self->{stopped} = 0;
        reap_pid($self->{pid}, 5)
            or kill_and_reap($self->{pid}, [KILL => 3]);
        $self->{pid} = undef;
    }
    return 1;
}

sub stop {
    my ($self) = @_;
    return unless $self->{pid};
    CORE::kill('CONT', $self->{pid}) if $self->{stopped};
    $self->{stopped} = 0;
    kill_and_reap($self->{pid}, [TERM => 3], [KILL => 3]);
    $self->{pid} = undef;
    return 1;
}

sub restart {
    my ($self) = @_;
    $self->stop;
    $self->start;
}

sub _cleanup_priority { 1 }

1;
