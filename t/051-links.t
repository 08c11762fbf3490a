# Every relative link in README.md and in docs/ (every .md below it)
# resolves: a link to a file or directory of the repository names one
# that exists, and a link to an anchor (#name, or file.md#name) names a
# heading of that file (GitHub's anchors: lower case, punctuation dropped,
# spaces to hyphens, -1, -2... for repeats) or an explicit <a name/id>.
# Links inside code (fenced or indented blocks, `code spans`) are not
# links. The checker is checked first on a document with broken links.

use strict;
use warnings;
use Test::More;
use Cwd ();
use File::Basename qw(dirname);
use File::Find ();
use File::Temp ();

my $root = Cwd::abs_path(dirname(__FILE__) . '/..');

sub slurp {
    open my $fh, '<:encoding(UTF-8)', $_[0] or return undef;
    local $/;
    return <$fh>;
}

# The text of a document with its code blocks and code spans blanked
# (lines kept, so line numbers stay right).
sub prose {
    my ($text) = @_;
    my (@out, $fence, $prev_blank);
    $prev_blank = 1;
    my $in_indented = 0;
    for my $line (split /\n/, $text, -1) {
        if (defined $fence) {
            $fence = undef if $line =~ /^\s*\Q$fence\E\s*$/;
            push @out, '';
            next;
        }
        if ($line =~ /^\s{0,3}(`{3,}|~{3,})/) {
            $fence = $1;
            push @out, '';
            next;
        }
        # an indented code block starts after a blank line (not inside a
        # list item's continuation, which we cannot tell apart cheaply:
        # lists here indent by 2)
        if ($line =~ /^(?: {4}|\t)/ && ($prev_blank || $in_indented)) {
            $in_indented = 1;
            push @out, '';
            next;
        }
        $in_indented = 0 if $line =~ /\S/;
        $prev_blank = $line !~ /\S/;
        (my $l = $line) =~ s/(`+)(?:(?!\1).)+?\1/ /g;
        push @out, $l;
    }
    return join "\n", @out;
}

# GitHub's anchor of a heading's text.
sub slug {
    my ($t) = @_;
    $t =~ s/!?\[([^\]]*)\]\([^)]*\)/$1/g;     # links: their text
    $t =~ s/<[^>]+>//g;                         # inline HTML
    $t =~ s/[`*]//g;
    $t = lc $t;
    $t =~ s/[^\w\- ]//g;                        # \w is Unicode-aware
    $t =~ s/ /-/g;
    return $t;
}

# { anchor => 1 } of a document
sub anchors {
    my ($text) = @_;
    my (%a, %seen);
    my $fence;
    for my $line (split /\n/, $text) {
        if (defined $fence) {
            $fence = undef if $line =~ /^\s*\Q$fence\E\s*$/;
            next;
        }
        if ($line =~ /^\s{0,3}(`{3,}|~{3,})/) { $fence = $1; next }
        if ($line =~ /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/) {
            my $s = slug($1);
            my $n = $seen{$s}++;
            $a{$n ? "$s-$n" : $s} = 1;
        }
        $a{$1} = 1 while $line =~ /<a\s+(?:name|id)="([^"]+)"/g;
    }
    return \%a;
}

# [ [line, target], ... ]: inline links and images, reference definitions
sub links {
    my ($text) = @_;
    my @l;
    my $n = 0;
    for my $line (split /\n/, prose($text), -1) {
        $n++;
        while ($line =~ /\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g) {
            push @l, [ $n, $1 ];
        }
        push @l, [ $n, $1 ] if $line =~ /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/;
    }
    return @l;
}

# the problems of one document: "file:line: target: why"
sub check_doc {
    my ($file, $base) = @_;
    my $text = slurp($file) // return ("$file: cannot read");
    my @bad;
    (my $name = $file) =~ s{^\Q$base\E/}{};
    for my $l (links($text)) {
        my ($line, $target) = @$l;
        next if $target eq '' || $target =~ m{^[a-zA-Z][a-zA-Z0-9+.-]*:}
                                 || $target =~ m{^//};
        my ($path, $anchor) = $target =~ /^([^#]*)(?:#(.*))?$/;
        $path =~ s/%20/ /g;
        my $dest = $path eq '' ? $file
                 : $path =~ m{^/} ? "$base$path"
                 : dirname($file) . "/$path";
        if (!-e $dest) {
            push @bad, "$name:$line: $target: no such file";
            next;
        }
        next unless defined $anchor && length $anchor;
        next unless $dest =~ /\.md$/i;
        my $a = anchors(slurp($dest) // '');
        push @bad, "$name:$line: $target: no such heading"
            unless $a->{$anchor};
    }
    return @bad;
}

# ------------------------------------------------------------ the checker

{
    my $dir = File::Temp::tempdir(CLEANUP => 1);
    mkdir "$dir/docs";
    open my $fh, '>', "$dir/docs/other.md" or die $!;
    print $fh "# Other\n\n## The `rl_zone` directive (shared)\n\n## Twice\n\n## Twice\n";
    close $fh;
    open $fh, '>', "$dir/README.md" or die $!;
    print $fh <<'MD';
# Top

See [other](docs/other.md), [its zone](docs/other.md#the-rl_zone-directive-shared),
[the second](docs/other.md#twice-1), [here](#top), [web](https://example.com/x)
and [ref].

[ref]: docs/other.md#twice

Broken: [gone](docs/gone.md) and [no heading](docs/other.md#nothing),
![missing image](img/x.svg) [no local](#nowhere).

    [in an indented block](not/checked.md)

```
[in a fence](not/checked.md)
```

And `[a span](not/checked.md)`.
MD
    close $fh;
    my @bad = check_doc("$dir/README.md", $dir);
    is_deeply([ sort @bad ], [ sort
        'README.md:9: docs/gone.md: no such file',
        'README.md:9: docs/other.md#nothing: no such heading',
        'README.md:10: img/x.svg: no such file',
        'README.md:10: #nowhere: no such heading',
    ], 'the checker finds broken files and anchors, and only them')
        or diag(join "\n", @bad);
}

# ------------------------------------------------------------ the docs

my @docs = ("$root/README.md");
File::Find::find(sub { push @docs, $File::Find::name if /\.md$/ },
                 "$root/docs") if -d "$root/docs";
my $links = 0;
for my $doc (sort @docs) {
    my @bad = check_doc($doc, $root);
    $links += () = links(slurp($doc) // '');
    (my $name = $doc) =~ s{^\Q$root\E/}{};
    is(scalar @bad, 0, "$name: every relative link resolves")
        or diag(join "\n", @bad);
}
note("$links links in " . scalar(@docs) . ' documents');

done_testing();
