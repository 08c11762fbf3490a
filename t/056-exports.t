# The module's .so exports nginx's entry points and nothing else
# (src/ngx_http_rl_module.map, linked by config): ngx_modules,
# ngx_module_names and ngx_module_order, which nginx looks up when it
# loads a dynamic module, and ngx_http_rl_module. Any other exported
# symbol (the C++ core's rl:: names, the C ABI between the shim and the
# core, a linked-in hiredis, the standard library's templates) could
# meet the same name in another module loaded beside it, and one of
# them would call the other's. `nm -D --defined-only` on the module
# under test (every build: hiredis 0.14 and 1.2, nginx 1.22 and 1.26,
# SANITIZE=1, the Debian package's build runs the same config).

use lib 't/lib';
use RlTest;

my $so = module_path();
my @nm = `nm -D --defined-only '$so' 2>&1`;
plan(skip_all => 'no nm (binutils)') if $? == -1;
is($?, 0, 'nm -D reads the module') or diag(@nm);

my %exported = map { (split)[-1] => 1 } grep { /\S/ } @nm;
my %entry = map { $_ => 1 }
    qw(ngx_modules ngx_module_names ngx_module_order ngx_http_rl_module);
ok($exported{$_}, "$_ is exported (nginx looks it up)")
    for qw(ngx_modules ngx_module_names ngx_http_rl_module);
my @other = sort grep { !$entry{$_} } keys %exported;
is(scalar @other, 0, 'no other symbol is exported')
    or diag(join "\n", 'exported:', @other[0 .. ($#other < 19 ? $#other : 19)],
            @other > 20 ? '... (' . scalar(@other) . ' in all)' : ());

# and nginx still loads it: nginx -t with the module and a zone
my ($ok, $text) = zone_config_test('rl_zone x redis=127.0.0.1:6379;');
ok($ok, 'nginx -t loads the module and takes an rl_zone') or diag($text);

done_testing();
