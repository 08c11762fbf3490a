# The tree keeps its shape (docs/design.md, "The tree"): src/ by
# subsystem, a folder including only the folders below it, no source
# file over 1,000 lines, at most 12 files at the top of src/. Reads the
# sources only (no nginx, no Redis). The checker is checked first on a
# made-up tree that breaks each rule.

use strict;
use warnings;
use Test::More;
use Cwd ();
use File::Basename qw(dirname);
use File::Find ();
use File::Path qw(make_path);
use File::Temp ();

my $root = Cwd::abs_path(dirname(__FILE__) . '/..');

# what each folder may include besides itself and the top ('' is src/)
my %MAY = (
    core  => [],
    shm   => [qw(core)],
    redis => [qw(core)],
    fleet => [qw(redis shm core)],
    api   => [qw(fleet redis shm core)],
    http  => [qw(fleet redis shm core)],
    ''    => [qw(core)],
);
my $MAX_LINES = 1000;
my $MAX_TOP = 12;

# Every rule the tree below $src breaks, as lines of text.
sub breaches {
    my ($src) = @_;
    my @out;
    my @files;
    File::Find::find(sub {
        push @files, $File::Find::name
            if -f $_ && /\.(?:c|h|cpp|hpp)$/;
    }, $src);
    for my $path (sort @files) {
        (my $rel = $path) =~ s{^\Q$src\E/}{};
        my $dir = $rel =~ m{^([^/]+)/} ? $1 : '';
        # api/dashboard/ is the page's, no C
        open my $fh, '<', $path or die "$path: $!";
        my $lines = 0;
        while (my $line = <$fh>) {
            $lines++;
            next unless $line =~ /^\s*#\s*include\s+"([^"]+)"/;
            my $inc = $1;
            # found beside the file first, as the compiler looks
            next if $dir ne '' && -e "$src/$dir/$inc";
            next unless -e "$src/$inc";   # generated, or nginx's
            my $to = $inc =~ m{^([^/]+)/} ? $1 : '';
            next if $to eq $dir || $to eq '';
            my $may = $MAY{$dir};
            if (!defined $may) {
                push @out, "$rel: in a folder the tree does not know";
                last;
            }
            push @out, "$rel:$lines includes $inc: "
                . ($dir eq '' ? 'src/' : "$dir/") . " may include "
                . (join(', ', map { "$_/" } @$may) || 'no other folder')
                unless grep { $_ eq $to } @$may;
        }
        close $fh;
        push @out, "$rel: $lines lines (at most $MAX_LINES)"
            if $lines > $MAX_LINES;
    }
    opendir my $dh, $src or die "$src: $!";
    my @top = grep { -f "$src/$_" } readdir $dh;
    closedir $dh;
    push @out, scalar(@top) . " files at the top of src/ (at most $MAX_TOP)"
        if @top > $MAX_TOP;
    return @out;
}

sub write_file {
    my ($path, $text) = @_;
    make_path(dirname($path));
    open my $fh, '>', $path or die "$path: $!";
    print $fh $text;
    close $fh;
}

# the checker, on a tree that breaks each rule once
{
    my $t = File::Temp::tempdir(CLEANUP => 1);
    write_file("$t/core/a.hpp", "#pragma once\n");
    write_file("$t/core/a.cpp", qq{#include "a.hpp"\n#include "shm/b.hpp"\n});
    write_file("$t/shm/b.hpp", qq{#include "core/a.hpp"\n});
    write_file("$t/shm/b.cpp", qq{#include "b.hpp"\n#include "api/c.hpp"\n});
    write_file("$t/api/c.hpp", qq{#include "shm/b.hpp"\n#include "gen.h"\n});
    write_file("$t/api/long.cpp", "x\n" x ($MAX_LINES + 1));
    write_file("$t/odd/d.cpp", qq{#include "core/a.hpp"\n});
    write_file("$t/top$_.hpp", "\n") for 1 .. $MAX_TOP + 1;
    my @b = breaches($t);
    is(scalar(@b), 5, 'the checker finds each breach of a made-up tree')
        or diag(join("\n", @b));
    ok((grep { m{^core/a\.cpp:2 includes shm/b\.hpp} } @b),
       'core including a folder');
    ok((grep { m{^shm/b\.cpp:2 includes api/c\.hpp} } @b),
       'a folder including one above it');
    ok((grep { m{^api/long\.cpp: 1001 lines} } @b), 'a file too long');
    ok((grep { m{^odd/d\.cpp: in a folder} } @b), 'an unknown folder');
    ok((grep { /^13 files at the top/ } @b), 'too many files at the top');
}

my @b = breaches("$root/src");
is(scalar(@b), 0, 'src/ keeps the tree of docs/design.md')
    or diag(join("\n", @b));

# each folder of the table is there
ok(-d "$root/src/$_", "src/$_/") for grep { $_ ne '' } sort keys %MAY;

done_testing();
