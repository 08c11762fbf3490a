package RlTest::Sentinel;

# A throw-away Redis Sentinel deployment on loopback: a master and its
# replicas (RlTest::Redis, each in its own temp dir), and sentinels
# (redis-server --sentinel) monitoring the master under one name, with a
# short down-after-milliseconds so that a killed master is failed over
# in seconds. And the operations tests need: who the sentinels name,
# manual failovers, killed masters, sentinels stopped and started.
#
#   my $s = RlTest::Sentinel->new(replicas => 2, sentinels => 3,
#                                 password => 'pw',
#                                 sentinel_password => 'spw',
#                                 down_after => 1000);
#   RlTest::Sentinel->new(hostnames => 1);  # every server announced as
#                          # "localhost" (replica-announce-ip), the
#                          # sentinels with resolve-hostnames and
#                          # announce-hostnames: they name the master
#                          # "localhost" (get-master-addr-by-name,
#                          # +switch-master)
#   $s->name;              # the master's name ("mymaster")
#   $s->addrs;             # "127.0.0.1:S1,127.0.0.1:S2,..." (sentinels)
#   $s->sentinels;         # RlTest::Redis of each sentinel
#   $s->servers;           # RlTest::Redis of the master and replicas
#   $s->master;            # RlTest::Redis of the server the live
#                          # sentinels all name (dies if they disagree)
#   $s->named($sentinel);  # the port one sentinel names (undef: none)
#   $s->scli($sentinel, @args);     # redis-cli on a sentinel
#   $s->wait_ready;        # every live sentinel knows the others, the
#                          # master up and a replica in sync
#   $s->wait_named($port); # until every live sentinel names that port
#   $s->failover(%opt);    # SENTINEL FAILOVER; returns the new master
#                          # once every live sentinel names it
#   $s->failover(wait => 0);        # only asks; returns the old master
#   $s->kill_master;       # SIGKILL; returns the promoted replica once
#                          # every live sentinel names it
#   $s->stop;              # every process (also done at exit)
#
# Every wait has a deadline (dies with the sentinels' views when it
# passes); nothing sleeps blindly.

use strict;
use warnings;

use RlTest::Proc qw(now wait_until free_port make_tempdir);
use parent -norequire, 'RlTest::Proc::Owned';
use RlTest::Redis;

sub new {
    my ($class, %opt) = @_;
    my $self = bless {
        name       => $opt{name} // 'mymaster',
        password   => $opt{password},
        spassword  => $opt{sentinel_password},
        down_after => $opt{down_after} // 1000,
        failover_timeout => $opt{failover_timeout} // 6000,
        timeout    => $opt{timeout} // 30,
        dir        => make_tempdir('sentinel'),
        servers    => [],
        sentinels  => [],
        owner      => $$,
    }, $class;
    RlTest::Proc::register($self);

    my @auth = defined $self->{password}
             ? ('--masterauth', $self->{password}) : ();
    # a replica's first sync starts at once, not after 5 s
    my @sync = ('--repl-diskless-sync-delay', 0);
    # the name every server is known by
    my $host = $opt{hostnames} ? 'localhost' : '127.0.0.1';
    push @sync, '--replica-announce-ip', $host if $opt{hostnames};
    my $master = RlTest::Redis->new(password => $self->{password},
                                    args => [ @auth, @sync ]);
    push @{ $self->{servers} }, $master;
    for (1 .. $opt{replicas} // 1) {
        push @{ $self->{servers} }, RlTest::Redis->new(
            password => $self->{password},
            args => [ @auth, @sync, '--replicaof', $host, $master->port ]);
    }
    my $conf = join '', map { "$_\n" }
        ($opt{hostnames} ? ('sentinel resolve-hostnames yes',
                            'sentinel announce-hostnames yes') : ()),
        "sentinel monitor $self->{name} $host " . $master->port
            . ' ' . ($opt{quorum} // 2),
        "sentinel down-after-milliseconds $self->{name} $self->{down_after}",
        # a failover that fails is tried again after twice this
        "sentinel failover-timeout $self->{name} $self->{failover_timeout}",
        "sentinel parallel-syncs $self->{name} 1",
        (defined $self->{password}
            ? "sentinel auth-pass $self->{name} $self->{password}" : ());
    for (1 .. $opt{sentinels} // 3) {
        push @{ $self->{sentinels} }, RlTest::Redis->new(
            sentinel => $conf, password => $self->{spassword});
    }
    $self->wait_ready;
    return $self;
}

sub name      { $_[0]{name} }
sub servers   { @{ $_[0]{servers} } }
sub sentinels { @{ $_[0]{sentinels} } }
sub dir       { $_[0]{dir} }
sub addrs     { join ',', map { '127.0.0.1:' . $_->port } $_[0]->sentinels }
sub live_sentinels { grep { $_->pid } $_[0]->sentinels }

sub scli {
    my ($self, $sentinel, @args) = @_;
    return $sentinel->cli(@args);
}

sub server_by_port {
    my ($self, $port) = @_;
    my ($s) = grep { $_->port == $port } $self->servers;
    return $s;
}

# The port a sentinel names for the master, undef when none (or it
# does not answer).
sub named {
    my ($self, $sentinel) = @_;
    return undef unless $sentinel->pid;
    my $out = $sentinel->cli('SENTINEL', 'get-master-addr-by-name',
                             $self->{name});
    my (undef, $port) = split /\n/, $out;
    return defined $port && $port =~ /^\d+$/ ? $port : undef;
}

# What every live sentinel names, "P P P", for diagnostics.
sub views {
    my ($self) = @_;
    return join ' ', map { $self->named($_) // '-' } $self->live_sentinels;
}

sub master {
    my ($self) = @_;
    my %ports = map { ($self->named($_) // '-') => 1 } $self->live_sentinels;
    my @p = keys %ports;
    die "sentinels disagree on the master: " . $self->views . "\n"
        unless @p == 1 && $p[0] ne '-';
    return $self->server_by_port($p[0]);
}

# SENTINEL MASTER / REPLICAS as hashes
sub _fields {
    my ($text) = @_;
    my @l = split /\n/, $text;
    my %h;
    while (@l >= 2) {
        my ($k, $v) = splice @l, 0, 2;
        $h{$k} = $v;
    }
    return \%h;
}

sub _replicas {
    my ($self, $sentinel) = @_;
    my $out = $sentinel->cli('SENTINEL', 'REPLICAS', $self->{name});
    # one block of field/value lines per replica, each starting at "name"
    my @blocks = grep { length } split /(?=^name\n)/m, $out;
    return map { _fields($_) } @blocks;
}

# Why the deployment is not ready yet ('' when it is): every live
# sentinel names the same live master, knows the other sentinels, and
# knows a replica in sync with it (one a failover can promote).
sub _unready {
    my ($self) = @_;
    my @live = $self->live_sentinels;
    return 'no sentinel alive' unless @live;
    my $m = eval { $self->master } or return $@ || 'no master';
    return 'master ' . $m->port . ' is down' unless $m->pid && $m->ping;
    my $want = @{ $self->{sentinels} } - 1;
    for my $s (@live) {
        my $f = _fields($s->cli('SENTINEL', 'MASTER', $self->{name}));
        return $s->port . ': ' . ($f->{flags} // 'no master')
            unless ($f->{flags} // '') eq 'master';
        return $s->port . ": knows $f->{'num-other-sentinels'} sentinels"
            if ($f->{'num-other-sentinels'} // 0) < $want;
        my @good = grep {
            ($_->{flags} // '') eq 'slave'
                && ($_->{'master-link-status'} // '') eq 'ok'
                && ($_->{'master-port'} // 0) == $m->port
        } $self->_replicas($s);
        return $s->port . ': no replica in sync' unless @good;
    }
    return '';
}

sub wait_ready {
    my ($self, %opt) = @_;
    my $why = '';
    my $timeout = $opt{timeout} // $self->{timeout};
    wait_until(sub { ($why = $self->_unready) eq '' },
               timeout => $timeout, interval => 0.1)
        or die "sentinels not ready in ${timeout}s: $why\n";
    return 1;
}

# Until every live sentinel names $port; returns the time it happened.
sub wait_named {
    my ($self, $port, %opt) = @_;
    my $timeout = $opt{timeout} // $self->{timeout};
    wait_until(sub {
        !grep { ($self->named($_) // 0) != $port } $self->live_sentinels
    }, timeout => $timeout, interval => 0.02)
        or die "sentinels do not all name $port in ${timeout}s: "
             . $self->views . "\n";
    return now();
}

# SENTINEL FAILOVER on the first live sentinel (again while it answers
# NOGOODSLAVE or INPROG). Unless wait => 0, waits until every live
# sentinel names another master and returns it, with the time they all
# did: ($new, $t). A failover asked that aborts is asked again by
# wait_moved().
sub failover {
    my ($self, %opt) = @_;
    my $old = $self->master;
    my ($s) = $self->live_sentinels;
    my $r = '';
    wait_until(sub {
        $r = $s->cli('SENTINEL', 'FAILOVER', $self->{name});
        return $r =~ /^OK/;
    }, timeout => $opt{timeout} // $self->{timeout}, interval => 0.2)
        or die "SENTINEL FAILOVER: $r\n";
    $self->{asked} = now();
    return $old if defined $opt{wait} && !$opt{wait};
    return $self->wait_moved($old, %opt);
}

# Until every live sentinel names another master than $old: ($new, $t).
# A SENTINEL FAILOVER asked (failover()) that has not moved the master
# once its failover-timeout passed is asked again: it aborted. (Within
# seconds of an earlier failover, a sentinel that has not seen the old
# master turn replica yet, its INFO being 10 s apart, turns the replica
# just promoted back into one; the leader, never seeing it a master,
# gives up: -failover-abort-slave-timeout. Seen with Redis 8.0.)
sub wait_moved {
    my ($self, $old, %opt) = @_;
    my $timeout = $opt{timeout} // $self->{timeout};
    my $again = $self->{failover_timeout} / 1000 + 1;
    my $new;
    my $t = wait_until(sub {
        my @p = map { $self->named($_) // 0 } $self->live_sentinels;
        my %p = map { $_ => 1 } @p;
        if (keys %p == 1 && $p[0] && $p[0] != $old->port) {
            $new = $self->server_by_port($p[0]);
            return now();
        }
        if ($self->{asked} && now() - $self->{asked} > $again) {
            my ($s) = $self->live_sentinels;
            print STDERR "# SENTINEL FAILOVER asked again: no failover "
                         . "from " . $old->port . " in ${again}s\n";
            $s->cli('SENTINEL', 'FAILOVER', $self->{name}) if $s;
            $self->{asked} = now();
        }
        return 0;
    }, timeout => $timeout, interval => 0.02)
        or die "no failover from " . $old->port . " in ${timeout}s: "
             . $self->views . "\n";
    delete $self->{asked};
    return wantarray ? ($new, $t) : $new;
}

# SIGKILL the master; returns the promoted replica once every live
# sentinel names it (and the time: ($new, $t) in list context).
sub kill_master {
    my ($self, %opt) = @_;
    my $old = $self->master;
    $old->kill('KILL');
    return $self->wait_moved($old, %opt);
}

sub stop {
    my ($self) = @_;
    $_->stop for @{ $self->{sentinels} }, @{ $self->{servers} };
    return 1;
}

sub _cleanup_priority { 1 }

1;
