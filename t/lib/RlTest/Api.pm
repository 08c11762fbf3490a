package RlTest::Api;

# The operator API (rl_api) as a client sees it: requests, their JSON
# decoded.
#
#   my $api = RlTest::Api->new($port, '/rl/');
#   my ($code, $data, $res) = $api->get('1/rules');
#   $api->call('POST', '1/rules/r/keys/k/block', { ttl => 60 });
#   $api->call('PUT', $path, '{"limit": 5}', type => 'text/plain');
#   RlTest::Api::enc($bytes)   # every byte percent-encoded

use strict;
use warnings;

use JSON::PP ();
use RlTest::HTTP qw(http_request);

my $JSON = JSON::PP->new->canonical;

sub new {
    my ($class, $port, $base) = @_;
    return bless { port => $port, base => $base // '/rl/' }, $class;
}

# ($code, $decoded or undef, $response)
sub call {
    my ($self, $method, $path, $body, %opt) = @_;
    my @headers;
    if (defined $body) {
        $body = $JSON->encode($body) if ref $body;
        push @headers, 'Content-Type' => $opt{type} // 'application/json';
    }
    push @headers, @{ $opt{headers} // [] };
    my $res = http_request($self->{port}, $method, $self->{base} . $path,
                           headers => \@headers, body => $body,
                           timeout => $opt{timeout});
    my $data;
    if (($res->{headers}{'content-type'} // '') eq 'application/json') {
        $data = eval { $JSON->decode($res->{body}) };
    }
    return ($res->{code}, $data, $res);
}

sub get { my ($self, $path, %opt) = @_; $self->call('GET', $path, undef, %opt) }

sub enc {
    my ($bytes) = @_;
    return join '', map { sprintf '%%%02X', ord } split //, $bytes;
}

1;
