# ngx_http_rl_module: the two commands of README.md, and their parts.
#
#   make run     build, start redis-server and nginx with the example
#                configuration on 127.0.0.1 (make stop ends them)
#   make test    build, run the unit tests (ctest) and the integration
#                tests (prove -r t)

SHELL      := /bin/bash
NGX_SRC    ?= /usr/share/nginx/src
# make BUILD=DIR LUA=DIR: another build directory and script directory
# (bench/floor builds the module with stand-in scripts)
BUILD      := $(CURDIR)/build
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

SOURCES := config $(wildcard src/*.c src/*.h src/*.cpp src/*.hpp \
                             src/core/*.cpp src/core/*.hpp)
SCRIPTS := $(LUA)/embed.sh $(wildcard $(LUA)/*.lua)

.PHONY: all deps module unit unit-build integration test run stop clean deb

all: module unit-build

deps:
	@.ci/install-deps

# Debian's way (libnginx-mod-*): configure the packaged nginx source
# with the flags nginx was built with, then build only the modules.
$(MODULE_DIR)/Makefile: config
	@mkdir -p $(MODULE_DIR)
	cd $(NGX_SRC) && source ./conf_flags && ./configure \
	    "$${NGX_CONF_FLAGS[@]}" --with-cc-opt="$(NGX_CC_OPT)" \
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
	    > /dev/null
	cmake --build $(CMAKE_DIR) -j $(JOBS)

unit: unit-build
	cd $(CMAKE_DIR) && ctest --output-on-failure

integration: module
	RL_MODULE=$(MODULE) prove -r t

test: unit integration

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
