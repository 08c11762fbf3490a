# ngx_http_rl_module: the two commands of README.md, and their parts.
#
#   make run     build, start redis-server and nginx with the example
#                configuration on 127.0.0.1 (make stop ends them)
#   make test    build, run the unit tests (ctest) and the integration
#                tests (prove -r t)
#
#   make test-nginx  nginx's own test suite (../shared) without the module
#                and with it, an embedded and a Redis rule on every request
#                (t/nginx-suite)
#   make test SANITIZE=1  the unit and integration tests against the core
#                and the module built with ASan and UBSan (build/sanitize)
#   make fuzz    each libFuzzer target FUZZ_SECONDS (60) seconds, then a
#                fake Redis answering random RESP through nginx (t/044)

SHELL      := /bin/bash
NGX_SRC    ?= /usr/share/nginx/src
# make BUILD=DIR LUA=DIR: another build directory and script directory
# (bench/floor builds the module with stand-in scripts)
BUILD      := $(CURDIR)/build
# make test SANITIZE=1: the module and the unit tests built with ASan
# and UBSan (build/sanitize), every test run against them; any report
# fails the run
SANITIZE   ?= 0
ifeq ($(SANITIZE),1)
BUILD      := $(CURDIR)/build/sanitize
endif
LUA        := lua
MODULE_DIR := $(BUILD)/module
MODULE     := $(MODULE_DIR)/ngx_http_rl_module.so
SCRIPT_H   := $(MODULE_DIR)/ngx_http_rl_script.h
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
              RL_NGINX=$(CURDIR)/tests/sanitize/nginx
endif

SOURCES := config $(wildcard src/*.c src/*.h src/*.cpp src/*.hpp \
                             src/core/*.cpp src/core/*.hpp)
SCRIPTS := $(LUA)/embed.sh $(wildcard $(LUA)/*.lua)

.PHONY: all deps module unit unit-build integration test test-nginx \
        fuzz run stop clean deb

all: module unit-build

deps:
	@.ci/install-deps

# Debian's way (libnginx-mod-*): configure the packaged nginx source
# with the flags nginx was built with, then build only the modules.
$(MODULE_DIR)/Makefile: config
	@mkdir -p $(MODULE_DIR)
	cd $(NGX_SRC) && source ./conf_flags && ./configure \
	    "$${NGX_CONF_FLAGS[@]}" --with-cc-opt="$(NGX_CC_OPT)" \
	    --with-ld-opt="$(NGX_LD_OPT)" \
	    --add-dynamic-module=$(CURDIR) --builddir=$(MODULE_DIR) \
	    > $(MODULE_DIR)/configure.log

$(SCRIPT_H): $(SCRIPTS) $(MODULE_DIR)/Makefile
	sh $(LUA)/embed.sh $(LUA) > $@

$(MODULE): $(MODULE_DIR)/Makefile $(SCRIPT_H) $(SOURCES)
	$(MAKE) -f $(MODULE_DIR)/Makefile -C $(NGX_SRC) modules

module: deps
	@$(MAKE) --no-print-directory $(MODULE)

unit-build: deps
	cmake -S . -B $(CMAKE_DIR) -DRL_WERROR=ON -DCMAKE_BUILD_TYPE=Debug \
	    $(CMAKE_OPT) > /dev/null
	cmake --build $(CMAKE_DIR) -j $(JOBS)

unit: unit-build
	@$(san_reset)
	cd $(CMAKE_DIR) && $(SAN_ENV) ctest --output-on-failure
	@$(san_check)

integration: module
	@$(san_reset)
	RL_MODULE=$(MODULE) $(SAN_ENV) prove -r t
	@$(san_check)

test: unit integration

# with SANITIZE=1: an empty report directory before, none after
ifeq ($(SANITIZE),1)
san_reset = rm -rf $(SAN_LOG) && mkdir -m 1777 $(SAN_LOG)
san_check = tests/sanitize/check $(SAN_LOG)
endif

test-nginx: module
	RL_MODULE=$(MODULE) BUILD=$(BUILD) t/nginx-suite

FUZZ_SECONDS ?= 60
FUZZ_ROUNDS  ?= 1000
fuzz: module
	BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run
	RL_MODULE=$(MODULE) RL_FUZZ_ROUNDS=$(FUZZ_ROUNDS) \
	    prove t/044-random-replies.t

run: module
	@RL_MODULE=$(MODULE) RUN_DIR=$(RUN_DIR) RUN_PORT=$(RUN_PORT) \
	    REDIS_PORT=$(REDIS_PORT) docker/run-local start

stop:
	@RUN_DIR=$(RUN_DIR) docker/run-local stop

# The Debian package libnginx-mod-http-rl, built as Debian builds its
# nginx modules (debian/: dh_nginx), out of tree in build/deb:
# build/libnginx-mod-http-rl_VERSION_ARCH.deb (.ci/deb-check installs it).
deb: deps
	@.ci/build-deb $(BUILD)

clean: stop
	rm -rf $(BUILD)
