# mk/aarch64.mk: the aarch64 cross build and `make check-aarch64` (the test suite under
# qemu-aarch64-static). Included by the top Makefile; see docs/aarch64.md.
#
#   make aarch64          sysroot + cross build into $(O)/aarch64 (preload, analyzer, test programs)
#   make check-aarch64    the same, then tests/run with every target program run through qemu
#   make sysroot-aarch64  only the arm64 sysroot ($(O)/sysroot-aarch64, cached)
# The sysroot sits beside the cross build, not inside it: `make clean O=$(O)/aarch64`
# keeps it, `make clean` drops both.

AARCH64_CROSS := aarch64-linux-gnu-
AARCH64_O := $(abspath $(O))/aarch64
AARCH64_SYSROOT := $(abspath $(O))/sysroot-aarch64
AARCH64_QEMU := qemu-aarch64-static
AARCH64_TOOLS := gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu qemu-user-static

.PHONY: aarch64 check-aarch64 sysroot-aarch64

sysroot-aarch64:
	$(Q)scripts/install-deps --extra "$(AARCH64_TOOLS)"
	$(Q)t0=$$(date +%s%N); scripts/aarch64-sysroot --verify $(AARCH64_SYSROOT) >/dev/null && \
		echo "aarch64: sysroot ready in $$((($$(date +%s%N) - t0) / 1000000)) ms: $(AARCH64_SYSROOT)"

aarch64: sysroot-aarch64
	$(Q)t0=$$(date +%s%N); $(MAKE) --no-print-directory O=$(AARCH64_O) \
		CROSS_COMPILE=$(AARCH64_CROSS) SYSROOT=$(AARCH64_SYSROOT) SAN= all testprogs && \
		echo "aarch64: cross build in $$((($$(date +%s%N) - t0) / 1000000)) ms: $(AARCH64_O)"

# Test programs see: O (the cross build), TLSM_PRELOAD (the arm64 preload), TLSM_ARCH,
# TLSM_SYSROOT and TLSM_RUNNER (tests/lib-qemu.sh turns them into run_target/run_traced).
check-aarch64: aarch64
	$(Q)O=$(AARCH64_O) TLSM_PRELOAD=$(AARCH64_O)/libtlsmeter.so \
		TLSM_ARCH=aarch64 TLSM_SYSROOT=$(AARCH64_SYSROOT) \
		TLSM_RUNNER="$(AARCH64_QEMU) -L $(AARCH64_SYSROOT)" \
		CROSS_COMPILE=$(AARCH64_CROSS) tests/run
