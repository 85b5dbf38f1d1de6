# tlsmeter: one Makefile for the preload, the analyzer, the tests and the demo.
# `make help` lists targets and variables.

VERSION := 0.1.0

# Sanitizer builds get their own tree: objects of the two kinds must never mix.
O ?= build$(if $(SAN),-san)
PREFIX ?= /usr/local
DESTDIR ?=
CROSS_COMPILE ?=
SYSROOT ?=
SAN ?=
DEBUG ?=
V ?=

CC := $(CROSS_COMPILE)gcc
PKG_CONFIG ?= pkg-config

ifeq ($(V),1)
Q :=
else
Q := @
endif

# Cross builds read headers and libraries from a sysroot (see scripts/aarch64-sysroot).
# The sysroot's multiarch folder is the compiler's target triplet (x86_64-linux-gnu for the
# dist build's host gcc, aarch64-linux-gnu for the cross compiler).
ifneq ($(SYSROOT),)
TRIPLET ?= $(shell $(CC) -dumpmachine)
export PKG_CONFIG_SYSROOT_DIR := $(SYSROOT)
export PKG_CONFIG_LIBDIR := $(SYSROOT)/usr/lib/$(TRIPLET)/pkgconfig:$(SYSROOT)/usr/share/pkgconfig
# GNU make before 4.4 (Debian 12 has 4.3) does not export variables to $(shell): without
# this, pkg-config below would answer with the host's flags.
PKG_CONFIG := PKG_CONFIG_SYSROOT_DIR=$(SYSROOT) PKG_CONFIG_LIBDIR=$(PKG_CONFIG_LIBDIR) $(PKG_CONFIG)
# SYSROOT_FIRST_CFLAGS: headers that win over the sysroot's own (make dist: OpenSSL 3's over
# Debian 11's 1.1.1, whose opensslconf.h sits in the sysroot's multiarch folder).
SYSROOT_FLAGS := --sysroot=$(SYSROOT) $(SYSROOT_FIRST_CFLAGS) -I$(SYSROOT)/usr/include/$(TRIPLET)
SYSROOT_LDFLAGS := --sysroot=$(SYSROOT) -L$(SYSROOT)/usr/lib/$(TRIPLET) \
	-Wl,-rpath-link,$(SYSROOT)/usr/lib/$(TRIPLET) -Wl,-rpath-link,$(SYSROOT)/lib/$(TRIPLET)
endif

OPENSSL_CFLAGS := $(shell $(PKG_CONFIG) --cflags openssl 2>/dev/null)
OPENSSL_LIBS := $(shell $(PKG_CONFIG) --libs openssl 2>/dev/null || echo -lssl -lcrypto)
JANSSON_CFLAGS := $(shell $(PKG_CONFIG) --cflags jansson 2>/dev/null)
JANSSON_LIBS := $(shell $(PKG_CONFIG) --libs jansson 2>/dev/null || echo -ljansson)
UNWIND_CFLAGS := $(shell $(PKG_CONFIG) --cflags libunwind 2>/dev/null)
# libunwind's headers only: the preload dlopens libunwind.so.8 when TLSMETER_STACKS is set.
DW_CFLAGS := $(shell $(PKG_CONFIG) --cflags libdw 2>/dev/null)
DW_LIBS := $(shell $(PKG_CONFIG) --libs libdw 2>/dev/null || echo -ldw -lelf)

# Project flags live apart from CFLAGS/LDFLAGS so a user's flags are respected.
TLSM_CFLAGS := -std=gnu11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter -fno-strict-aliasing -D_GNU_SOURCE \
	-DTLSM_VERSION='"$(VERSION)"' $(SYSROOT_FLAGS)
# The trace vocabulary both programs share: #include "common/schema.h" (common/schema.def).
TLSM_CFLAGS += -I.
ifeq ($(DEBUG),1)
TLSM_CFLAGS += -O0 -g3 -DTLSM_DEBUG
else
TLSM_CFLAGS += -O2 -g
endif
ifneq ($(SAN),)
TLSM_CFLAGS += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
TLSM_LDFLAGS += -fsanitize=$(SAN)
endif
TLSM_LDFLAGS += $(SYSROOT_LDFLAGS)
# Each compile writes the headers (and hooks.def, common/schema.def) it read into a .d file beside its output;
# the files are included at the end, so touching a header rebuilds exactly what includes it.
# -MP adds an empty rule per header, so a deleted header does not stop the build.
DEPFLAGS := -MMD -MP

# The preload's layers, one folder each (docs/design.md, "Layers"); includes name the folder
# ("core/record.h") and point down only (tests/cases/layers.sh).
# CPU-specific code sits in preload/arch/$(ARCH)/, one folder per architecture (as uftrace's
# arch/$(ARCH)); ARCH is the compiler's target, so a cross build picks its own.
# (uname -m before a compiler is installed: `make deps` must still run on a fresh machine.)
ARCH ?= $(firstword $(subst -, ,$(shell $(CC) -dumpmachine 2>/dev/null || uname -m)))
ifeq ($(wildcard preload/arch/$(ARCH)/*.c),)
$(error tlsmeter supports x86_64 and aarch64, not "$(ARCH)" (preload/arch/))
endif
PRELOAD_LAYERS := base trace forward core reroute hooks
PRELOAD_SRCS := $(wildcard preload/arch/$(ARCH)/*.c $(PRELOAD_LAYERS:%=preload/%/*.c) preload/*.c)
PRELOAD_OBJS := $(PRELOAD_SRCS:%.c=$(O)/%.o)
# The analyzer's layers: base (text, numbers, maps) < model (the trace's content) < input
# (reading traces into it) < verdicts (what the numbers mean) < output (reports) < main.c.
ANALYZER_LAYERS := base model input verdicts output
ANALYZER_SRCS := $(wildcard $(ANALYZER_LAYERS:%=analyzer/%/*.c) analyzer/*.c)
ANALYZER_OBJS := $(ANALYZER_SRCS:%.c=$(O)/%.o)
TESTPROG_SRCS := $(wildcard tests/progs/*.c)
TESTPROGS := $(TESTPROG_SRCS:tests/progs/%.c=$(O)/tests/%)

PRELOAD := $(O)/libtlsmeter.so
ANALYZER := $(O)/tlsmeter-analyze
# tlsmeter-attach: loads the library into a running process with ptrace (attach/; its CPU
# part in attach/arch/$(ARCH).c).
ATTACH_SRCS := $(wildcard attach/*.c) attach/arch/$(ARCH).c
ATTACH_OBJS := $(ATTACH_SRCS:%.c=$(O)/%.o)
ATTACH := $(O)/tlsmeter-attach

# What the test scripts put in LD_PRELOAD: with sanitizers the runtime must come first.
ifneq ($(SAN),)
SAN_RUNTIMES := $(if $(findstring address,$(SAN)),$(shell $(CC) -print-file-name=libasan.so)) \
	$(if $(findstring undefined,$(SAN)),$(shell $(CC) -print-file-name=libubsan.so))
endif
empty :=
space := $(empty) $(empty)
TEST_PRELOAD := $(subst $(space),,$(strip $(foreach r,$(SAN_RUNTIMES),$(abspath $(r)):)$(abspath $(PRELOAD))))

.PHONY: all check demo bench install uninstall clean help deps fuzz format
all: $(PRELOAD) $(ANALYZER) $(ATTACH)

deps:
	$(Q)scripts/install-deps

# The quick-start targets (check, demo, bench) install what is missing before the first
# compile, also under -j: every object waits for `deps` when one of them is a goal.
ifneq ($(filter check demo bench deps,$(MAKECMDGOALS)),)
$(PRELOAD_OBJS) $(ANALYZER_OBJS) $(TESTPROGS) $(DLSAFE_PLUGINS): | deps
endif

# Any other native build (a plain `make` on a fresh machine) stops before its first compile
# when a library's development files are missing, naming them and the command that installs
# them, instead of at the first missing header.
ifeq ($(CROSS_COMPILE)$(SYSROOT),)
ifeq ($(filter check demo bench deps clean help format,$(MAKECMDGOALS)),)
MISSING_DEV := $(shell for p in openssl jansson libunwind libdw; do \
	$(PKG_CONFIG) --exists $$p 2>/dev/null || printf '%s ' $$p; done)
ifneq ($(strip $(MISSING_DEV)),)
$(error the build needs the development files of: $(strip $(MISSING_DEV)) (pkg-config finds none); run 'make deps' as root to install them, or 'make check' / 'make demo', which install them first)
endif
endif
endif

$(O)/preload/%.o: preload/%.c $(O)/preload/%.d
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(TLSM_CFLAGS) $(DEPFLAGS) -Ipreload -fPIC -fvisibility=hidden $(OPENSSL_CFLAGS) \
		$(UNWIND_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# -e: run as a program (it has a PT_INTERP, from preload/run.c), the library prints its version
# and usage.
$(PRELOAD): $(PRELOAD_OBJS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) -shared -o $@ $^ $(TLSM_LDFLAGS) $(LDFLAGS) -Wl,-z,now -Wl,--no-undefined \
		-Wl,-e,tlsm_run_main -ldl -lpthread

$(O)/analyzer/%.o: analyzer/%.c $(O)/analyzer/%.d
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(TLSM_CFLAGS) $(DEPFLAGS) -Ianalyzer $(JANSSON_CFLAGS) $(DW_CFLAGS) $(CPPFLAGS) $(CFLAGS) \
		-c -o $@ $<

$(ANALYZER): $(ANALYZER_OBJS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(TLSM_LDFLAGS) $(LDFLAGS) $(JANSSON_LIBS) $(DW_LIBS) -lm

$(O)/attach/%.o: attach/%.c $(O)/attach/%.d
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(TLSM_CFLAGS) $(DEPFLAGS) -Iattach $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(ATTACH): $(ATTACH_OBJS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(TLSM_LDFLAGS) $(LDFLAGS)

# -Ipreload: gentrace builds the preload's trace encoder into itself.
$(O)/tests/%: tests/progs/%.c $(O)/tests/%.d
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(TLSM_CFLAGS) $(DEPFLAGS) -Ipreload $(OPENSSL_CFLAGS) $(CPPFLAGS) $(CFLAGS) -o $@ $< \
		$(TLSM_LDFLAGS) $(LDFLAGS) $(OPENSSL_LIBS) -lpthread -ldl

# Plugins of the dlopen safety cases (tests/dlsafe/*.c into $(O)/tests/plugins, loaded by
# tests/progs/dlsafe.c): linked to libssl as a vendor plugin is; tlsplug.c reads tlsget.h.
DLSAFE_SRCS := $(wildcard tests/dlsafe/*.c)
DLSAFE_PLUGINS := $(DLSAFE_SRCS:tests/dlsafe/%.c=$(O)/tests/plugins/%.so)
$(O)/tests/plugins/%.so: tests/dlsafe/%.c $(O)/tests/plugins/%.d
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(TLSM_CFLAGS) $(DEPFLAGS) -Itests/progs -fPIC -shared $(OPENSSL_CFLAGS) $(CPPFLAGS) \
		$(CFLAGS) -o $@ $< $(TLSM_LDFLAGS) $(LDFLAGS) $(OPENSSL_LIBS) -ldl

testprogs: $(TESTPROGS) $(DLSAFE_PLUGINS)

# Fuzzing the trace reader (libFuzzer + ASan/UBSan, clang): `make fuzz FUZZ_TIME=60`.
FUZZ_CC ?= clang
FUZZ_TIME ?= 60
FUZZ_SRCS := $(filter-out analyzer/main.c,$(ANALYZER_SRCS)) tests/fuzz/fuzz_reader.c
FUZZER := $(O)/fuzz/fuzz-reader
FUZZ_CPPFLAGS := -D_GNU_SOURCE -DTLSM_VERSION='"$(VERSION)"' -I. -Ianalyzer $(JANSSON_CFLAGS) $(DW_CFLAGS)
# One compile of several sources: its header list comes from a separate -MM pass (one .d).
$(FUZZER): $(FUZZ_SRCS) $(FUZZER).d
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CPPFLAGS) -MM -MP -MT $@ $(FUZZ_SRCS) >$@.d
	@# -MP leaves the sources without a rule: one that was moved or deleted must not stop make.
	$(Q)printf '%s:\n' $(FUZZ_SRCS) >>$@.d
	$(Q)$(FUZZ_CC) -std=gnu11 -g -O1 $(FUZZ_CPPFLAGS) -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $(FUZZ_SRCS) $(JANSSON_LIBS) $(DW_LIBS) -lm
fuzz: $(FUZZER)
	$(Q)tests/fuzz/run $(FUZZER) $(FUZZ_TIME)

check: deps all testprogs
	$(Q)O=$(abspath $(O)) TLSM_PRELOAD=$(TEST_PRELOAD) TLSM_SAN=$(SAN) tests/run

demo: deps all
	$(Q)O=$(abspath $(O)) scripts/demo

bench: deps all testprogs
	$(Q)O=$(abspath $(O)) scripts/bench

# tlsmeter-certs' helper program goes to PREFIX/lib/tlsmeter, where the installed script looks
# (beside its bin/, as the wrapper finds PREFIX/lib/libtlsmeter.so).
install: all $(O)/tests/certbench
	install -d $(DESTDIR)$(PREFIX)/lib/tlsmeter $(DESTDIR)$(PREFIX)/bin
	install -m 0644 $(PRELOAD) $(DESTDIR)$(PREFIX)/lib/libtlsmeter.so
	install -m 0644 $(ATTACH_PRELOAD) $(DESTDIR)$(PREFIX)/lib/libtlsmeter-attach.so
	install -m 0755 $(O)/tests/certbench $(DESTDIR)$(PREFIX)/lib/tlsmeter/certbench
	install -m 0755 $(ANALYZER) $(DESTDIR)$(PREFIX)/bin/tlsmeter-analyze
	install -m 0755 $(ATTACH) $(DESTDIR)$(PREFIX)/bin/tlsmeter-attach
	install -m 0755 scripts/tlsmeter $(DESTDIR)$(PREFIX)/bin/tlsmeter
	for s in scripts/tlsmeter-*; do install -m 0755 $$s $(DESTDIR)$(PREFIX)/bin/; done
	@# The loader's cache covers the system's library folders only: ldconfig for those (as
	@# root), never for a private prefix (tlsmeter preloads the library by its path anyway).
	@case "$(PREFIX)" in /usr | /usr/local) \
		if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then \
			ldconfig; fi ;; esac

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libtlsmeter.so $(DESTDIR)$(PREFIX)/lib/libtlsmeter-attach.so \
		$(DESTDIR)$(PREFIX)/bin/tlsmeter \
		$(DESTDIR)$(PREFIX)/bin/tlsmeter-* $(DESTDIR)$(PREFIX)/lib/tlsmeter/certbench
	rmdir $(DESTDIR)$(PREFIX)/lib/tlsmeter 2>/dev/null || true

format:
	clang-format -i $(PRELOAD_SRCS) $(wildcard preload/*/*.h) $(ANALYZER_SRCS) $(wildcard analyzer/*/*.h) tests/progs/*.c \
		tests/dlsafe/*.c

clean:
	rm -rf $(O)

help:
	@echo "tlsmeter $(VERSION)"
	@echo "Targets:"
	@echo "  all       build $(O)/libtlsmeter.so, $(O)/tlsmeter-analyze and $(O)/tlsmeter-attach (default)"
	@echo "  deps      install missing Debian packages (needs root)"
	@echo "  check     run the test suite (closing line: N passed, N failed, N skipped)"
	@echo "  unit      the unit tests of the preload's pure parts, no LD_PRELOAD (seconds)"
	@echo "  demo      trace a loopback HTTPS download and print the report"
	@echo "  bench     overhead and throughput benchmarks (ratios, one run)"
	@echo "  install   install to \$$(DESTDIR)\$$(PREFIX) (default /usr/local)"
	@echo "  fuzz      fuzz the trace reader for FUZZ_TIME seconds (default 60; needs clang)"
	@echo "  aarch64   arm64 sysroot (Debian packages, cached) and cross build into \$$(O)/aarch64"
	@echo "  check-aarch64   the suite cross-built, run under qemu-aarch64-static"
	@echo "  check-arm64vm   the cases that need a real arm64 kernel, in Debian 12's arm64 kernel (qemu-system)"
	@echo "  dist      \$$(O)/dist/{x86_64,aarch64}/libtlsmeter.so for glibc >= 2.28 (Debian 11 sysroot)"
	@echo "  format    clang-format the C sources"
	@echo "  clean     remove $(O)"
	@echo "Variables:"
	@echo "  O=DIR            build directory (default build)"
	@echo "  V=1              show commands"
	@echo "  DEBUG=1          -O0 -g3 debug build"
	@echo "  SAN=address,undefined   sanitizer build into build-san (tests preload the runtimes)"
	@echo "  CROSS_COMPILE=aarch64-linux-gnu- SYSROOT=DIR   cross build"
	@echo "  PREFIX=/usr/local DESTDIR=   install location"
-include mk/aarch64.mk
-include mk/arm64vm.mk
-include mk/dist.mk
-include mk/attachlib.mk

# Header dependencies written by the compiles above. Each output also depends on its .d: a
# missing one (first build, or a tree built before -MMD) counts as changed, so the output is
# rebuilt and gets its list, instead of staying stale against headers make does not know of.
DEPFILES := $(PRELOAD_OBJS:.o=.d) $(ANALYZER_OBJS:.o=.d) $(ATTACH_OBJS:.o=.d) $(TESTPROGS:=.d) $(DLSAFE_PLUGINS:.so=.d) \
	$(FUZZER).d
$(DEPFILES):
include $(wildcard $(DEPFILES))

# Unit tests of the preload's pure parts (tests/unit/), linked without LD_PRELOAD: `make unit`
# (seconds). make check runs the same programs (tests/cases/unit-preload.sh).
UNIT_TESTS := $(O)/tests/unit/recsm $(O)/tests/unit/json $(O)/tests/unit/cputime $(O)/tests/unit/hs \
	$(O)/tests/unit/abi
$(O)/tests/unit/recsm: tests/unit/recsm.c preload/core/recsm.c preload/core/recsm.h preload/base/cpumark.h
$(O)/tests/unit/json: tests/unit/json.c preload/base/json.c preload/base/json.h common/schema.h \
	common/schema.def
$(O)/tests/unit/hs: tests/unit/hs.c preload/core/hs.c preload/base/json.c preload/core/hs.h \
	preload/base/json.h common/schema.h common/schema.def
$(O)/tests/unit/cputime: tests/unit/cputime.c preload/base/clock.c preload/arch/$(ARCH)/cpu.c \
	preload/trace/cputime.h preload/base/clock.h preload/trace/thread.h preload/base/fn.h \
	preload/base/hooks.def preload/base/cpumark.h preload/arch/arch.h preload/arch/$(ARCH)/counter.h
$(O)/tests/unit/abi: tests/unit/abi.c preload/forward/abi.c preload/forward/abi_ossl3.c \
	preload/forward/abi_ossl111.c preload/arch/$(ARCH)/ossl111caps.c preload/base/caps.c \
	preload/arch/$(ARCH)/cpu.c preload/base/json.c preload/forward/abi.h preload/forward/obj.h \
	preload/base/caps.h preload/arch/arch.h common/schema.h common/schema.def
$(UNIT_TESTS):
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $@")
	$(Q)$(CC) $(TLSM_CFLAGS) -Ipreload $(CPPFLAGS) $(CFLAGS) -o $@ $(filter %.c,$^) \
		$(TLSM_LDFLAGS) $(LDFLAGS)
.PHONY: unit
unit: $(UNIT_TESTS)
	$(Q)tests/unit/run "$(O)/tests/unit/recsm tests/unit/evp" $(O)/tests/unit/json \
		$(O)/tests/unit/cputime $(O)/tests/unit/hs $(O)/tests/unit/abi
