package RlTest::Cluster;

# A throw-away Redis Cluster on loopback: real redis-server processes
# (RlTest::Redis, each in its own temp dir, with cluster-enabled, its
# own nodes.conf and an explicit cluster bus port), joined by
# `redis-cli --cluster create`, and the operations tests need: slots and
# the masters serving them, slot migrations (complete, or stopped where
# the source answers ASK), manual failovers, killed masters.
#
#   my $c = RlTest::Cluster->new(masters => 3, replicas => 1,
#                                node_timeout => 1000);
#   $c->nodes;  $c->live_nodes;  $c->masters;  $c->replicas_of($m);
#   $c->ports;  $c->seed;        # "127.0.0.1:P" of the master of slot 0
#   $c->seeds;                   # "127.0.0.1:P1,127.0.0.1:P2,..." (masters)
#   $c->slot_of($key);           # CLUSTER KEYSLOT
#   $c->slot_of_value($v);       # the slot of a state key of value $v
#   $c->master_for_slot($slot);  # RlTest::Redis of the master serving it
#   $c->master_for_key($key);
#   $c->node_id($node);          # CLUSTER MYID
#   $c->cli_on($node, @args);    # redis-cli on that node (no -c)
#   $c->get($key);               # GET on the key's master (undef: none)
#   $c->holders($key);           # live masters on which the key exists
#   $c->keys_on($node, $pat);    # KEYS $pat on one node
#   $c->value_on($m, prefix => 'k', avoid => [$slot...]);
#                                # "k7": a fresh key value whose slot
#                                # ({k7}) is served by master $m, a slot
#                                # no earlier value_on gave
#   $c->key_in_other_slot($v, on => $m);   # same, but not $v's slot
#   $c->migrate_slot($slot, $to);          # IMPORTING, MIGRATING,
#                                # GETKEYSINSLOT + MIGRATE, SETSLOT NODE
#   $c->migrate_slot($slot, $to, stop_after_migrate => 1);
#                                # keys moved, slot still MIGRATING on
#                                # the source (which answers ASK) and
#                                # IMPORTING on $to
#   $c->finish_migration($slot); # SETSLOT NODE everywhere, then waits
#   $c->failover($m);            # CLUSTER FAILOVER on a replica of $m;
#                                # returns the new master once every
#                                # node sees it
#   $c->kill_master($m);         # SIGKILL, then waits until a replica is
#                                # promoted; returns it
#   $c->kill_master($m, wait => 0); $c->wait_stable(timeout => 15);
#   $c->stop;                    # every node (also done at exit)
#   RlTest::Cluster->new(tls => $pki, ...): nodes with TLS ports too
#   (RlTest::Tls), the bus over TLS; a client connected over TLS is told
#   the TLS ports, the harness keeps to the plain ones
#   $c->tls_seeds;               # "127.0.0.1:T1,..." (masters' TLS ports)
#
# Every wait has a deadline (dies with the nodes' views when it passes);
# nothing sleeps blindly. Bus ports are picked like the client ports
# (free_port), not port + 10000, which may be out of range.

use strict;
use warnings;

use POSIX ();
use RlTest::Proc qw(now wait_until free_port make_tempdir reap_pid
                    kill_and_reap exec_child);
use parent -norequire, 'RlTest::Proc::Owned';
use RlTest::Redis;

my $NSLOTS = 16384;

sub new {
    my ($class, %opt) = @_;
    my $self = bless {
        n_masters    => $opt{masters} // 3,
        n_replicas   => $opt{replicas} // 0,
        node_timeout => $opt{node_timeout} // 1000,
        password     => $opt{password},
        tls          => $opt{tls},
        args         => $opt{args} // [],
        timeout      => $opt{timeout} // 30,
        dir          => make_tempdir('cluster'),
        nodes        => [],
        ids          => {},
        slot_cache   => {},
        given_slots  => {},
        seq          => 0,
        pending      => {},
        owner        => $$,
    }, $class;
    die "a cluster needs at least 3 masters\n" if $self->{n_masters} < 3;
    RlTest::Proc::register($self);

    my $n = $self->{n_masters} * (1 + $self->{n_replicas});
    for my $i (1 .. $n) {
        my $dir = "$self->{dir}/node$i";
        mkdir $dir or die "mkdir $dir: $!";
        my $bus = free_port();
        push @{ $self->{nodes} }, RlTest::Redis->new(
            dir      => $dir,
            password => $self->{password},
            tls      => $self->{tls},
            args     => [
                # TLS: the bus too, and a TLS client is told TLS ports
                ($self->{tls} ? ('--tls-cluster', 'yes') : ()),
                '--cluster-enabled', 'yes',
                '--cluster-config-file', "$dir/nodes.conf",
                '--cluster-node-timeout', $self->{node_timeout},
                '--cluster-port', $bus,
                # a replica's first sync starts at once, not after 5 s
                '--repl-diskless-sync-delay', 0,
                # a replica takes over however long ago it last heard
                # its master (the test host may stall)
                '--cluster-replica-validity-factor', 0,
                (defined $self->{password}
                    ? ('--masterauth', $self->{password}) : ()),
                @{ $self->{args} },
            ],
        );
    }
    $self->_create;
    return $self;
}

# ---------------------------------------------------------------- basics

sub nodes      { @{ $_[0]{nodes} } }
sub live_nodes { grep { $_->pid } @{ $_[0]{nodes} } }
sub ports      { map { $_->port } @{ $_[0]{nodes} } }
sub dir        { $_[0]{dir} }

sub node_by_port {
    my ($self, $port) = @_;
    my ($n) = grep { $_->port == $port } @{ $self->{nodes} };
    return $n;
}

sub _node {
    my ($self, $n) = @_;
    return $n if ref $n;
    return $self->node_by_port($n) // die "no node on port $n\n";
}

sub cli_on {
    my ($self, $node, @args) = @_;
    return $self->_node($node)->cli(@args);
}

sub node_id {
    my ($self, $node) = @_;
    $node = $self->_node($node);
    return $self->{ids}{ $node->port } //= do {
        my $id = $node->cli('CLUSTER', 'MYID');
        $id =~ s/\s+//g;
        die "CLUSTER MYID on " . $node->port . ": $id\n"
            unless $id =~ /^[0-9a-f]{40}$/;
        $id;
    };
}

# ---------------------------------------------------------------- views

# One node's CLUSTER NODES, parsed: { myself => port, nodes => { port =>
# { id, port, flags => {..}, master_id, slots => [[a, b], ..],
# migrating => {slot => id}, importing => {slot => id}, link } } }, or
# undef when the node does not answer.
sub view {
    my ($self, $node) = @_;
    $node = $self->_node($node);
    return undef unless $node->pid;
    my $out = $node->cli('CLUSTER', 'NODES');
    my %v = (nodes => {});
    for my $line (split /\n/, $out) {
        my ($id, $addr, $flags, $master, undef, undef, undef, $link, @slots)
            = split ' ', $line;
        next unless defined $link && $id =~ /^[0-9a-f]{40}$/;
        my ($port) = $addr =~ /^[^:]*:(\d+)@/ or next;
        my %n = (id => $id, port => $port, link => $link,
                 master_id => $master eq '-' ? undef : $master,
                 flags => { map { $_ => 1 } split /,/, $flags },
                 slots => [], migrating => {}, importing => {});
        for my $s (@slots) {
            if ($s =~ /^\[(\d+)->-([0-9a-f]+)\]$/) {
                $n{migrating}{$1} = $2;
            } elsif ($s =~ /^\[(\d+)-<-([0-9a-f]+)\]$/) {
                $n{importing}{$1} = $2;
            } elsif ($s =~ /^(\d+)(?:-(\d+))?$/) {
                push @{ $n{slots} }, [ $1, $2 // $1 ];
            }
        }
        $v{myself} = $port if $n{flags}{myself};
        $self->{ids}{$port} //= $id;
        $v{nodes}{$port} = \%n;
    }
    return undef unless defined $v{myself};
    return \%v;
}

sub _is_down {
    my ($n) = @_;
    return $n->{flags}{fail} || $n->{flags}{'fail?'}
        || $n->{flags}{noaddr} || $n->{flags}{handshake};
}

# Owner port of every slot in one view: an array of 16384 (undef: none).
sub _slot_owners {
    my ($v) = @_;
    my @own;
    for my $n (values %{ $v->{nodes} }) {
        for my $r (@{ $n->{slots} }) {
            $own[$_] = $n->{port} for $r->[0] .. $r->[1];
        }
    }
    return \@own;
}

# A view in one line, to compare views: "P:0-5460 ... | R>P ...".
sub _summary {
    my ($v) = @_;
    my (@m, @r);
    for my $n (sort { $a->{port} <=> $b->{port} } values %{ $v->{nodes} }) {
        if (@{ $n->{slots} }) {
            push @m, "$n->{port}:" . join ',',
                map { "$_->[0]-$_->[1]" }
                sort { $a->[0] <=> $b->[0] } @{ $n->{slots} };
        }
        next if _is_down($n) || !$n->{master_id};
        my ($mp) = map { $_->{port} }
                   grep { $_->{id} eq $n->{master_id} } values %{ $v->{nodes} };
        push @r, "$n->{port}>" . ($mp // '?');
    }
    return join(' ', @m) . ' | ' . join(' ', @r);
}

sub _cluster_info {
    my ($self, $node) = @_;
    my %i = map { /^(\w+):(.*?)\s*$/ ? ($1, $2) : () }
            split /\n/, $node->cli('CLUSTER', 'INFO');
    return \%i;
}

# Why the cluster is not stable yet ('' when it is): every live node
# says cluster_state:ok, knows every other live node as up (not fail,
# not fail?), has the same view of slots and replicas as every other,
# in which all 16384 slots are served by live masters; every live
# replica's replication link is up.
sub _unstable {
    my ($self) = @_;
    my @live = $self->live_nodes;
    my %live = map { $_->port => 1 } @live;
    my ($first, $first_port);
    for my $node (@live) {
        my $p = $node->port;
        my $i = $self->_cluster_info($node);
        return "$p: cluster_state " . ($i->{cluster_state} // 'no answer')
            unless ($i->{cluster_state} // '') eq 'ok';
        my $v = $self->view($node) or return "$p: no CLUSTER NODES";
        for my $lp (keys %live) {
            my $n = $v->{nodes}{$lp} or return "$p does not know $lp";
            return "$p sees $lp as " . join(',', sort keys %{ $n->{flags} })
                if _is_down($n);
            return "$p sees $lp as migrating/importing"
                if %{ $n->{migrating} } || %{ $n->{importing} };
        }
        my $own = _slot_owners($v);
        for my $s (0 .. $NSLOTS - 1) {
            my $o = $own->[$s];
            return "$p: slot $s not served" unless defined $o;
            return "$p: slot $s served by $o, which is down"
                unless $live{$o};
        }
        my $sum = _summary($v);
        if (!defined $first) {
            ($first, $first_port) = ($sum, $p);
        } elsif ($sum ne $first) {
            return "views differ: $first_port [$first] vs $p [$sum]";
        }
        if (my $mid = $v->{nodes}{$p}{master_id}) {
            my $repl = $node->cli('INFO', 'replication');
            return "$p: replication link not up"
                unless $repl =~ /^master_link_status:up\s*$/m;
        }
    }
    return '';
}

# Waits until the cluster is stable (see _unstable); dies with the
# reason and every view at the deadline.
sub wait_stable {
    my ($self, %opt) = @_;
    my $timeout = $opt{timeout} // $self->{timeout};
    my $why = '';
    my $ok = wait_until(sub { ($why = $self->_unstable) eq '' },
                        timeout => $timeout, interval => 0.05);
    return $self if $ok;
    die "cluster not stable after ${timeout}s"
        . ($opt{what} ? " ($opt{what})" : '') . ": $why\n"
        . $self->describe;
}

# Every live node's CLUSTER NODES, for diagnostics.
sub describe {
    my ($self) = @_;
    my $t = '';
    for my $n ($self->live_nodes) {
        $t .= "--- CLUSTER NODES of " . $n->port . "\n"
            . $n->cli('CLUSTER', 'NODES') . "\n";
    }
    return $t;
}

# The view of a live node (a master if any answers), or die.
sub _live_view {
    my ($self) = @_;
    my @live = $self->live_nodes;
    for my $n (@live) {
        my $v = $self->view($n) or next;
        return $v if $v->{nodes}{ $n->port }{flags}{master};
    }
    for my $n (@live) {
        my $v = $self->view($n);
        return $v if $v;
    }
    die "no live cluster node answers\n";
}

# ---------------------------------------------------------------- creation

sub _create {
    my ($self) = @_;
    my $out = "$self->{dir}/create.out";
    my @cmd = ('redis-cli',
               (defined $self->{password}
                   ? ('--no-auth-warning', '-a', $self->{password}) : ()),
               '--cluster', 'create',
               map({ '127.0.0.1:' . $_->port } @{ $self->{nodes} }),
               '--cluster-replicas', $self->{n_replicas},
               '--cluster-yes');
    my $pid = exec_child(\@cmd, $out);
    my $done = reap_pid($pid, $self->{timeout});
    my $status = $?;
    kill_and_reap($pid, [KILL => 2]) unless $done;
    my $text = do { open my $fh, '<', $out; local $/; <$fh> // '' };
    die "redis-cli --cluster create "
        . ($done ? "failed (status $status)" : "did not end in "
                                               . "$self->{timeout}s")
        . ":\n$text\n"
        unless $done && $status == 0;
    $self->wait_stable(what => 'after create');
    my $v = $self->_live_view;
    my $want = $self->{n_masters};
    my @m = grep { @{ $_->{slots} } } values %{ $v->{nodes} };
    die "the cluster has " . @m . " masters, not $want\n" if @m != $want;
    return $self;
}

# ---------------------------------------------------------------- roles

# Live masters serving slots, by their lowest slot.
sub masters {
    my ($self) = @_;
    my $v = $self->_live_view;
    my @m = sort { $a->{slots}[0][0] <=> $b->{slots}[0][0] }
            map { $_->{slots} = [ sort { $a->[0] <=> $b->[0] }
                                  @{ $_->{slots} } ]; $_ }
            grep { @{ $_->{slots} } && !_is_down($_) }
            values %{ $v->{nodes} };
    return grep { defined && $_->pid } map { $self->node_by_port($_->{port}) }
           @m;
}

sub seed {
    my ($self) = @_;
    my ($m) = $self->masters;
    return '127.0.0.1:' . $m->port;
}

# "127.0.0.1:P1,127.0.0.1:P2,...": every live master.
sub seeds {
    my ($self) = @_;
    return join ',', map { '127.0.0.1:' . $_->port } $self->masters;
}

sub tls_seeds {
    my ($self) = @_;
    return join ',', map { '127.0.0.1:' . $_->tls_port } $self->masters;
}

# Live replicas of a master, in a live node's view.
sub replicas_of {
    my ($self, $master) = @_;
    $master = $self->_node($master);
    my $id = $self->node_id($master);
    my $v = $self->_live_view;
    return grep { defined && $_->pid }
           map { $self->node_by_port($_->{port}) }
           grep { ($_->{master_id} // '') eq $id && !_is_down($_) }
           values %{ $v->{nodes} };
}

sub is_master {
    my ($self, $node) = @_;
    $node = $self->_node($node);
    return scalar grep { $_ == $node } $self->masters;
}

# ---------------------------------------------------------------- slots, keys

sub slot_of {
    my ($self, $key) = @_;
    return $self->{slot_cache}{$key} //= do {
        my ($n) = $self->live_nodes or die "no live node\n";
        my $s = $n->cli('CLUSTER', 'KEYSLOT', $key);
        $s =~ s/\s+//g;
        die "CLUSTER KEYSLOT $key: $s\n" unless $s =~ /^\d+$/;
        $s;
    };
}

# The slot of every state key of key value $v: the one of "{$v}" (for a
# plain value: no brace, at most 64 bytes, not starting with "~").
sub slot_of_value {
    my ($self, $v) = @_;
    return $self->slot_of("{$v}");
}

sub _owner_of_slot {
    my ($self, $v, $slot) = @_;
    for my $n (values %{ $v->{nodes} }) {
        next if _is_down($n);
        for my $r (@{ $n->{slots} }) {
            return $self->node_by_port($n->{port})
                if $slot >= $r->[0] && $slot <= $r->[1];
        }
    }
    return undef;
}

sub master_for_slot {
    my ($self, $slot) = @_;
    return $self->_owner_of_slot($self->_live_view, $slot);
}

sub master_for_key {
    my ($self, $key) = @_;
    return $self->master_for_slot($self->slot_of($key));
}

# GET on the master serving the key's slot; undef when it has no such key.
sub get {
    my ($self, $key) = @_;
    my $m = $self->master_for_key($key) or die "no master for $key\n";
    return undef unless $m->cli('EXISTS', $key) =~ /^1\s*$/;
    return $m->cli('GET', $key);
}

# The live masters on which the key exists.
sub holders {
    my ($self, $key) = @_;
    return grep { $_->cli('EXISTS', $key) =~ /^1\s*$/ } $self->masters;
}

# KEYS $pattern on one node.
sub keys_on {
    my ($self, $node, $pattern) = @_;
    my $out = $self->_node($node)->cli('KEYS', $pattern);
    return grep { length } split /\n/, $out;
}

# A fresh key value ("k1", "k2", ...; prefix => 'x' for "x1", ...) whose
# slot ({VALUE}) is served by $master (any master if undef), in a slot
# no earlier call returned and not in avoid => [slots].
sub value_on {
    my ($self, $master, %opt) = @_;
    $master = $self->_node($master) if defined $master;
    my $prefix = $opt{prefix} // 'k';
    my %avoid = map { $_ => 1 } @{ $opt{avoid} // [] };
    my $v = $self->_live_view;
    for (1 .. 2000) {
        my $cand = $prefix . ++$self->{seq};
        my $slot = $self->slot_of_value($cand);
        next if $avoid{$slot} || $self->{given_slots}{$slot};
        my $owner = $self->_owner_of_slot($v, $slot) or next;
        next if defined $master && $owner != $master;
        $self->{given_slots}{$slot} = 1;
        return $cand;
    }
    die "no key value found on " . ($master ? $master->port : 'any master')
        . "\n";
}

# A fresh key value in another slot than $value's; on => $master to
# choose its master, other_master => 1 for any master but $value's.
sub key_in_other_slot {
    my ($self, $value, %opt) = @_;
    my $slot = $self->slot_of_value($value);
    my $on = $opt{on};
    if (!$on && $opt{other_master}) {
        my $mine = $self->master_for_slot($slot);
        ($on) = grep { $_ != $mine } $self->masters;
    }
    return $self->value_on($on, %opt,
                           avoid => [ $slot, @{ $opt{avoid} // [] } ]);
}

# ---------------------------------------------------------------- migration

sub _expect_ok {
    my ($what, $out) = @_;
    die "$what: $out\n" unless $out =~ /^OK\s*$/;
    return 1;
}

# Moves slot $slot to master $to the way redis-cli --cluster reshard
# does. stop_after_migrate => 1: return once every key is on $to, with the
# slot still MIGRATING on the source (it answers ASK) and IMPORTING on
# $to; finish_migration($slot) then completes it.
sub migrate_slot {
    my ($self, $slot, $to, %opt) = @_;
    $to = $self->_node($to);
    die "slot $slot is being migrated already\n" if $self->{pending}{$slot};
    my $from = $self->master_for_slot($slot)
        or die "no master serves slot $slot\n";
    die "slot $slot is on " . $to->port . " already\n" if $from == $to;
    my ($fid, $tid) = ($self->node_id($from), $self->node_id($to));

    _expect_ok("SETSLOT $slot IMPORTING on " . $to->port,
               $to->cli('CLUSTER', 'SETSLOT', $slot, 'IMPORTING', $fid));
    _expect_ok("SETSLOT $slot MIGRATING on " . $from->port,
               $from->cli('CLUSTER', 'SETSLOT', $slot, 'MIGRATING', $tid));
    $self->{pending}{$slot} = { from => $from, to => $to };

    my @auth = defined $self->{password} ? ('AUTH', $self->{password}) : ();
    my $deadline = now() + ($opt{timeout} // 20);
    my $moved = 0;
    while (1) {
        die "migration of slot $slot: keys still on the source after "
            . "the deadline\n" if now() > $deadline;
        my @keys = grep { length }
                   split /\n/, $from->cli('CLUSTER', 'GETKEYSINSLOT',
                                          $slot, 100);
        last unless @keys;
        my $r = $from->cli('MIGRATE', '127.0.0.1', $to->port, '', 0, 5000,
                           @auth, 'KEYS', @keys);
        die "MIGRATE of slot $slot: $r\n" unless $r =~ /^(?:OK|NOKEY)\s*$/;
        $moved += @keys;
    }
    $self->{pending}{$slot}{moved} = $moved;
    return $to if $opt{stop_after_migrate};
    return $self->finish_migration($slot, %opt);
}

# SETSLOT NODE on the target, the source, then every other live master;
# waits until every live node sees $to serve the slot. Returns $to.
sub finish_migration {
    my ($self, $slot, %opt) = @_;
    my $m = delete $self->{pending}{$slot}
        or die "slot $slot is not being migrated\n";
    my ($from, $to) = @$m{qw(from to)};
    my $tid = $self->node_id($to);
    _expect_ok("SETSLOT $slot NODE on " . $to->port,
               $to->cli('CLUSTER', 'SETSLOT', $slot, 'NODE', $tid));
    _expect_ok("SETSLOT $slot NODE on " . $from->port,
               $from->cli('CLUSTER', 'SETSLOT', $slot, 'NODE', $tid));
    for my $o ($self->masters) {
        next if $o == $from || $o == $to;
        _expect_ok("SETSLOT $slot NODE on " . $o->port,
                   $o->cli('CLUSTER', 'SETSLOT', $slot, 'NODE', $tid));
    }
    my $why = '';
    my $ok = wait_until(sub {
        for my $n ($self->live_nodes) {
            my $v = $self->view($n);
            my $o = $v && $self->_owner_of_slot($v, $slot);
            unless ($o && $o == $to) {
                $why = $n->port . ' sees slot ' . $slot . ' on '
                     . ($o ? $o->port : 'nobody');
                return 0;
            }
        }
        return ($why = $self->_unstable) eq '';
    }, timeout => $opt{timeout} // $self->{timeout});
    die "slot $slot: migration to " . $to->port . " not seen everywhere: "
        . "$why\n" . $self->describe unless $ok;
    return $to;
}

# ---------------------------------------------------------------- failures

# Manual failover of $master: CLUSTER FAILOVER on one of its replicas,
# then waits until every live node sees that replica serve the slots
# $master served. Returns the new master.
sub failover {
    my ($self, $master, %opt) = @_;
    $master = $self->_node($master);
    my $v = $self->_live_view;
    my $slots = $v->{nodes}{ $master->port }{slots};
    die "node " . $master->port . " serves no slot\n" unless @$slots;
    my ($rep) = $opt{replica} ? ($self->_node($opt{replica}))
                              : $self->replicas_of($master);
    die "master " . $master->port . " has no live replica\n" unless $rep;
    _expect_ok("CLUSTER FAILOVER on " . $rep->port,
               $rep->cli('CLUSTER', 'FAILOVER', @{ $opt{args} // [] }));
    $self->_wait_serves($rep, $slots, %opt, what => 'failover of '
                        . $master->port . ' to ' . $rep->port);
    return $rep;
}

# SIGKILL $master; unless wait => 0, waits until one of its replicas
# serves its slots in every live node's view and the cluster is stable
# again; returns that replica (wait => 0: the replicas it had).
sub kill_master {
    my ($self, $master, %opt) = @_;
    $master = $self->_node($master);
    my $v = $self->_live_view;
    my $slots = $v->{nodes}{ $master->port }{slots};
    my @reps = $self->replicas_of($master);
    die "master " . $master->port . " has no live replica\n"
        unless @reps || !($opt{wait} // 1);
    $master->kill('KILL');
    $self->{killed}{ $master->port } = { slots => $slots,
                                         replicas => \@reps };
    return @reps if defined $opt{wait} && !$opt{wait};
    return $self->wait_promoted($master, %opt);
}

# After kill_master(..., wait => 0): waits until one of the killed
# master's replicas serves its slots everywhere; returns it.
sub wait_promoted {
    my ($self, $master, %opt) = @_;
    $master = $self->_node($master);
    my $k = $self->{killed}{ $master->port }
        or die "node " . $master->port . " was not killed by kill_master\n";
    my %reps = map { $_->port => $_ } @{ $k->{replicas} };
    my $new;
    my $why = '';
    my $timeout = $opt{timeout} // $self->{timeout};
    my $ok = wait_until(sub {
        my $v = eval { $self->_live_view } or return 0;
        my $o = $self->_owner_of_slot($v, $k->{slots}[0][0]);
        unless ($o && $reps{ $o->port }) {
            $why = 'slot ' . $k->{slots}[0][0] . ' still on '
                 . ($o ? $o->port : 'nobody');
            return 0;
        }
        $new = $o;
        return ($why = $self->_unstable) eq '';
    }, timeout => $timeout, interval => 0.05);
    die "no replica of " . $master->port . " promoted in ${timeout}s: "
        . "$why\n" . $self->describe unless $ok;
    return $new;
}

sub _wait_serves {
    my ($self, $node, $slots, %opt) = @_;
    my $why = '';
    my $timeout = $opt{timeout} // $self->{timeout};
    my $ok = wait_until(sub {
        for my $n ($self->live_nodes) {
            my $v = $self->view($n) or do { $why = 'no view'; return 0 };
            for my $r (@$slots) {
                for my $s ($r->[0], $r->[1]) {
                    my $o = $self->_owner_of_slot($v, $s);
                    next if $o && $o == $node;
                    $why = $n->port . " sees slot $s on "
                         . ($o ? $o->port : 'nobody');
                    return 0;
                }
            }
        }
        return ($why = $self->_unstable) eq '';
    }, timeout => $timeout, interval => 0.05);
    die "$opt{what}: not done in ${timeout}s: $why\n" . $self->describe
        unless $ok;
    return 1;
}

# ---------------------------------------------------------------- stop

sub stop {
    my ($self) = @_;
    $_->stop for @{ $self->{nodes} };
    return 1;
}

sub _cleanup_priority { 1 }

1;
