# ngx_http_rl_module: the two commands of README.md, and their parts.
#
#   make run     install what building and running need, build, start
#                redis-server and nginx with the example configuration on
#                127.0.0.1 (make stop ends them)
#   make test    install the test tools, build, run the unit tests
#                (ctest) and the integration tests (prove -r t)
#   make SERVER=redis-8.0|valkey-8.1 test  the same against that server
#
#   make test-nginx  nginx's own test suite (../shared) without the module
#                and with it, an embedded and a Redis rule on every request
#                (t/nginx-suite)
#   make test SANITIZE=1  the unit and integration tests against the core
#                and the module built with ASan and UBSan (build/sanitize)
#   make fuzz    each libFuzzer target FUZZ_SECONDS (60) seconds, then a
#                fake Redis answering random RESP through nginx (t/048)
#   make docs    the design diagram, docs/img/design.svg, rendered from
#                docs/design.dot with graphviz' dot (t/052 checks it)
#   make screenshot  docs/img/dashboard.png: the operator dashboard's
#                fleet view as t/077-dashboard-fleet.t's headless
#                Chromium draws it

SHELL      := /bin/bash
NGX_SRC    ?= /usr/share/nginx/src
# make BUILD=DIR LUA=DIR: another build directory and script directory
# (bench/floor builds the module with stand-in scripts)
BUILD      := $(CURDIR)/build

# make HIREDIS=1.2 NGINX=1.26 [test|module|...]: the module built with
# hiredis 1.2 (TLS) and for nginx 1.26, both from Debian 13's source
# packages, built once into build/deps; each pair builds into a build
# directory of its own. Default: Debian 12's hiredis 0.14 and nginx 1.22.
HIREDIS    ?= 0.14
NGINX      ?= 1.22
# not in the recipes' environment: nginx reads $NGINX as inherited sockets
unexport NGINX HIREDIS
DEPS       := $(CURDIR)/build/deps
NGX_BIN    := /usr/sbin/nginx
ifeq ($(HIREDIS),1.2)
HIREDIS_DIR := $(DEPS)/hiredis-1.2
HIREDIS_LIB := $(HIREDIS_DIR)/lib/libhiredis_ssl.a
export RL_HIREDIS := $(HIREDIS_DIR)
else ifeq ($(HIREDIS),0.14)
export RL_HIREDIS :=
else
$(error HIREDIS=$(HIREDIS): 0.14 (Debian 12) or 1.2 (Debian 13's source))
endif
ifeq ($(NGINX),1.26)
NGX_SRC    := $(DEPS)/nginx-1.26.3
NGX_BIN    := $(NGX_SRC)/objs/nginx
else ifneq ($(NGINX),1.22)
$(error NGINX=$(NGINX): 1.22 (Debian 12) or 1.26 (Debian 13's source))
endif
ifneq ($(HIREDIS)-$(NGINX),0.14-1.22)
BUILD      := $(CURDIR)/build/nginx-$(NGINX)-hiredis-$(HIREDIS)
endif
# make SERVER=redis-8.0|valkey-8.1 test: the tests (and make run) against
# that server, built from Debian 13's source package into build/deps
# (redis-server and redis-cli, valkey's under those names too, first in
# PATH; RL_SERVER tells t/000-harness.t which to expect). The module is
# the same: SERVER changes no build directory. Default: Debian 12's
# redis-server 7.0.
SERVER     ?= redis-7.0
ifeq ($(SERVER),redis-8.0)
SERVER_BIN := $(DEPS)/redis-8.0/bin/redis-server
else ifeq ($(SERVER),valkey-8.1)
SERVER_BIN := $(DEPS)/valkey-8.1/bin/redis-server
else ifneq ($(SERVER),redis-7.0)
$(error SERVER=$(SERVER): redis-7.0 (Debian 12), redis-8.0 or valkey-8.1 (Debian 13's source))
endif
export RL_SERVER := $(SERVER)
ifdef SERVER_BIN
export PATH := $(dir $(SERVER_BIN)):$(PATH)
endif
# make test SANITIZE=1: the module and the unit tests built with ASan
# and UBSan (BUILD/sanitize), every test run against them; any report
# fails the run
SANITIZE   ?= 0
ifeq ($(SANITIZE),1)
BUILD      := $(BUILD)/sanitize
endif
LUA        := lua
MODULE_DIR := $(BUILD)/module
MODULE     := $(MODULE_DIR)/ngx_http_rl_module.so
SCRIPT_H   := $(MODULE_DIR)/ngx_http_rl_script.h
PAGE_H     := $(MODULE_DIR)/ngx_http_rl_page.h
CMAKE_DIR  := $(BUILD)/cmake
RUN_DIR    := $(BUILD)/run
RUN_PORT   ?= 8080
REDIS_PORT ?= 6380
JOBS       ?= 2
# the compiler flags Debian builds nginx and its modules with
NGX_CC_OPT ?= -g -O2 -fstack-protector-strong -Wformat \
              -Werror=format-security -fPIC -Wdate-time -D_FORTIFY_SOURCE=2

NGX_LD_OPT ?=
CMAKE_OPT  ?=
ifeq ($(SANITIZE),1)
SAN_FLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=all
NGX_CC_OPT += $(SAN_FLAGS) -fno-omit-frame-pointer
NGX_LD_OPT += $(SAN_FLAGS)
CMAKE_OPT  += -DRL_SANITIZE=ON
# reports go to files (each process its own); nginx is not built with
# sanitizers: it runs with their runtime preloaded (tests/sanitize/nginx)
# (a directory every user writes, nginx's workers may run as another)
SAN_LOG    := /tmp/rl-sanitizer.$(shell echo $(BUILD) | md5sum | cut -c1-8)
# (a leak is reported at exit without failing the process: the module's
# fail the run in tests/sanitize/check, nginx's own are counted apart)
SAN_ENV    := ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:fast_unwind_on_malloc=0:log_path=$(SAN_LOG)/asan \
              LSAN_OPTIONS=exitcode=0 \
              UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$(SAN_LOG)/ubsan \
              RL_SANITIZE=1 PATH=$(CURDIR)/tests/sanitize:$$PATH \
              RL_NGINX=$(CURDIR)/tests/sanitize/nginx RL_SANITIZE_NGINX=$(NGX_BIN)
endif

# make integration T="t/073-live-limits.t t/074-trials.t": those alone
T       ?= t

SOURCES := config $(wildcard src/*.c src/*.h src/*.cpp src/*.hpp \
                             src/*/*.c src/*/*.h src/*/*.cpp src/*/*.hpp)
SCRIPTS := $(LUA)/embed.sh $(wildcard $(LUA)/*.lua)
PAGE    := src/api/dashboard/embed.sh $(wildcard src/api/dashboard/*.html \
             src/api/dashboard/*.css src/api/dashboard/*.js)

.PHONY: all deps test-deps module unit unit-build integration test \
        test-nginx fuzz run stop clean deb docs screenshot server sources \
        sources-nginx sources-servers

all: module unit-build

# What building and make run need (the README's first command); the
# first make test installs the rest, make test-nginx, fuzz and deb their
# own (.ci/install-deps GROUP; .ci/run installs them all).
deps:
	@.ci/install-deps run

test-deps: deps
	@.ci/install-deps test

# Debian's way (libnginx-mod-*): configure the packaged nginx source
# with the flags nginx was built with, then build only the modules.
$(MODULE_DIR)/Makefile: config $(HIREDIS_LIB) $(NGX_BIN)
	@mkdir -p $(MODULE_DIR)
	cd $(NGX_SRC) && source ./conf_flags && ./configure \
	    "$${NGX_CONF_FLAGS[@]}" --with-cc-opt="$(NGX_CC_OPT)" \
	    --with-ld-opt="$(NGX_LD_OPT)" \
	    --add-dynamic-module=$(CURDIR) --builddir=$(MODULE_DIR) \
	    > $(MODULE_DIR)/configure.log

$(SCRIPT_H): $(SCRIPTS) $(MODULE_DIR)/Makefile
	sh $(LUA)/embed.sh $(LUA) > $@

$(PAGE_H): $(PAGE) $(MODULE_DIR)/Makefile
	sh src/api/dashboard/embed.sh src/api/dashboard/index.html > $@

$(MODULE): $(MODULE_DIR)/Makefile $(SCRIPT_H) $(PAGE_H) $(SOURCES)
	$(MAKE) -f $(MODULE_DIR)/Makefile -C $(NGX_SRC) modules

module: deps
	@$(MAKE) --no-print-directory $(MODULE)

unit-build: test-deps $(HIREDIS_LIB) $(SERVER_BIN)
	cmake -S . -B $(CMAKE_DIR) -DRL_WERROR=ON -DCMAKE_BUILD_TYPE=Debug \
	    $(CMAKE_OPT) $(if $(HIREDIS_DIR),-DRL_HIREDIS=$(HIREDIS_DIR)) \
	    > /dev/null
	cmake --build $(CMAKE_DIR) -j $(JOBS)

unit: unit-build
	@$(san_reset)
	cd $(CMAKE_DIR) && $(SAN_ENV) ctest --output-on-failure; \
	    rc=$$?; $(san_check) || rc=1; exit $$rc

integration: test-deps module $(SERVER_BIN)
	@$(san_reset)
	RL_MODULE=$(MODULE) RL_NGINX=$(NGX_BIN) $(SAN_ENV) prove --timer -r $(T); \
	    rc=$$?; $(san_check) || rc=1; exit $$rc

test: unit integration

# with SANITIZE=1: an empty report directory before, none after
ifeq ($(SANITIZE),1)
san_reset = rm -rf $(SAN_LOG) && mkdir -m 1777 $(SAN_LOG)
san_check = $(CURDIR)/tests/sanitize/check $(SAN_LOG)
else
san_reset = :
san_check = :
endif

test-nginx: test-deps module $(SERVER_BIN)
	@.ci/install-deps test-nginx
	RL_MODULE=$(MODULE) BUILD=$(BUILD) t/nginx-suite

FUZZ_SECONDS ?= 60
FUZZ_ROUNDS  ?= 1000
fuzz: test-deps module
	@.ci/install-deps fuzz
	BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run
	RL_MODULE=$(MODULE) RL_FUZZ_ROUNDS=$(FUZZ_ROUNDS) \
	    prove t/048-random-replies.t

run: module $(SERVER_BIN)
	@RL_MODULE=$(MODULE) RL_NGINX=$(NGX_BIN) RUN_DIR=$(RUN_DIR) \
	    RUN_PORT=$(RUN_PORT) \
	    REDIS_PORT=$(REDIS_PORT) docker/run-local start

stop:
	@RUN_DIR=$(RUN_DIR) docker/run-local stop

# hiredis 1.2 with its SSL part: static, position-independent, its
# symbols hidden (the module exports none of them)
$(DEPS)/hiredis-1.2/lib/libhiredis_ssl.a:
	.ci/debian-source hiredis 1.2.0 $(DEPS)
	$(MAKE) -C $(DEPS)/hiredis-1.2.0 -j $(JOBS) USE_SSL=1 OPTIMIZATION=-O2 \
	    CFLAGS="-fvisibility=hidden -fstack-protector-strong \
	            -D_FORTIFY_SOURCE=2" static > /dev/null
	mkdir -p $(DEPS)/hiredis-1.2/include/hiredis $(DEPS)/hiredis-1.2/lib
	cd $(DEPS)/hiredis-1.2.0 && cp hiredis.h async.h read.h sds.h alloc.h \
	    sockcompat.h hiredis_ssl.h $(DEPS)/hiredis-1.2/include/hiredis/
	cp $(DEPS)/hiredis-1.2.0/libhiredis.a $(DEPS)/hiredis-1.2/lib/
	cp $(DEPS)/hiredis-1.2.0/libhiredis_ssl.a $@

# make SERVER=... server: that server alone
server: $(SERVER_BIN)

# make sources: every build of Debian 13's sources (hiredis 1.2, nginx
# 1.26, Redis 8.0, Valkey 8.1) into build/deps, one after the other (they
# share the private apt configuration): then legs that use them can run
# side by side (.ci/run). Its halves: make sources-nginx (hiredis 1.2,
# nginx 1.26), make sources-servers (Redis 8.0, Valkey 8.1); never both
# at once.
SOURCES_NGINX   := $(DEPS)/hiredis-1.2/lib/libhiredis_ssl.a \
                   $(DEPS)/nginx-1.26.3/objs/nginx
SOURCES_SERVERS := $(DEPS)/redis-8.0/bin/redis-server \
                   $(DEPS)/valkey-8.1/bin/redis-server
sources: deps
	@$(MAKE) --no-print-directory -j1 $(SOURCES_NGINX) $(SOURCES_SERVERS)
sources-nginx: deps
	@$(MAKE) --no-print-directory -j1 $(SOURCES_NGINX)
sources-servers: deps
	@$(MAKE) --no-print-directory -j1 $(SOURCES_SERVERS)

# The servers of Debian 13 (Redis 8.0, Valkey 8.1), with TLS, as
# Debian builds them (jemalloc, the Lua of their tree); only the server
# and the cli (sentinel mode is the server's --sentinel). Valkey's are
# valkey-*, with redis-* links beside them as its make install makes.
# $(call build_server,PACKAGE,VERSION): its server and cli, into
# DEPS/PACKAGE-X.Y/bin (the build's sha is none, not this repository's)
define build_server
	.ci/debian-source $(1) $(2) $(DEPS)
	GIT_CEILING_DIRECTORIES=$(DEPS) \
	    $(MAKE) -C $(DEPS)/$(1)-$(2)/src -j $(JOBS) BUILD_TLS=yes \
	    $(1)-server $(1)-cli > $(DEPS)/$(1)-$(2)/build.log 2>&1 \
	    || { tail -n 30 $(DEPS)/$(1)-$(2)/build.log; exit 1; }
	mkdir -p $(@D)
	cp $(DEPS)/$(1)-$(2)/src/$(1)-server $(DEPS)/$(1)-$(2)/src/$(1)-cli \
	    $(@D)/
endef

$(DEPS)/redis-8.0/bin/redis-server:
	$(call build_server,redis,8.0.2)

$(DEPS)/valkey-8.1/bin/redis-server:
	$(call build_server,valkey,8.1.1)
	ln -sf valkey-cli $(@D)/redis-cli
	ln -sf valkey-server $@

# nginx 1.26, a plain build with the modules the tests use; conf_flags
# as Debian's nginx-dev has it, for the module's configure
NGX_126_FLAGS := --with-compat --with-threads --with-http_ssl_module \
    --with-http_v2_module --with-http_auth_request_module \
    --with-http_stub_status_module --with-http_realip_module
$(DEPS)/nginx-1.26.3/objs/nginx:
	.ci/debian-source nginx 1.26.3 $(DEPS)
	cd $(DEPS)/nginx-1.26.3 && ./configure $(NGX_126_FLAGS) \
	    --prefix=$(DEPS)/nginx-1.26.3 --with-cc-opt="$(NGX_CC_OPT)" \
	    > configure.log
	$(MAKE) -C $(DEPS)/nginx-1.26.3 -f objs/Makefile -j $(JOBS) > /dev/null
	echo 'NGX_CONF_FLAGS=( $(NGX_126_FLAGS) )' > $(DEPS)/nginx-1.26.3/conf_flags
# The Debian package libnginx-mod-http-rl, built as Debian builds its
# nginx modules (debian/: dh_nginx), out of tree in build/deb:
# build/libnginx-mod-http-rl_VERSION_ARCH.deb (.ci/deb-check installs it).
deb: deps
	@.ci/install-deps deb
	@.ci/build-deb $(BUILD)

# The design diagram (docs/design.md), rendered from its text source
# every time; both are committed, and t/052-design-svg.t (make docs
# DESIGN_SVG=its own file) fails when they disagree.
DOT        ?= dot
DESIGN_SVG ?= docs/img/design.svg
docs:
	@mkdir -p $(dir $(DESIGN_SVG))
	$(DOT) -Tsvg docs/design.dot -o $(DESIGN_SVG).tmp
	mv $(DESIGN_SVG).tmp $(DESIGN_SVG)

# The dashboard's picture in the docs is what the browser test draws,
# never a drawing: three instances' traffic summed, a live limit and a
# trial set from the page, the recent changes.
screenshot: test-deps module
	RL_MODULE=$(MODULE) RL_NGINX=$(NGX_BIN) \
	    RL_SCREENSHOT=$(CURDIR)/docs/img/dashboard.png \
	    prove t/077-dashboard-fleet.t

clean: stop
	rm -rf $(BUILD)
