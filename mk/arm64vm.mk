# mk/arm64vm.mk: `make check-arm64vm`, the cases that need a real arm64 kernel (on-CPU
# clocks, kTLS, signals and fork, the ARMv8 crypto path natively) run inside Debian 12's own
# arm64 kernel under qemu-system-aarch64 (scripts/arm64vm; docs/aarch64.md). Included by the
# top Makefile. The broad suite stays with make check-aarch64 (qemu-user): it is fast.

ARM64VM_TOOLS := qemu-system-arm cpio
# Two boots: two vCPUs for everything, then one vCPU (a single-core board) for the cases
# whose subject is the scheduler: on-CPU time and death by signal. Sizes fit TCG (every
# instruction emulated).
ARM64VM_CASES ?= core-run-library aarch64-impl aarch64-tamper reroute-masked core-fork \
	trace-death cputime-agree enc-nginx attach-download attach-nginx $(notdir $(basename $(wildcard tests/cases/vm-*.sh)))
ARM64VM_CASES_1CPU ?= cputime-agree trace-death
# 256 records: enough for the clocks' sums, quick under TCG; attach windows of 2 MiB.
ARM64VM_ENV ?= TLSM_CPUTIME_MIB=8 TLSM_ATTACH_MIB=2

.PHONY: check-arm64vm

check-arm64vm: SHELL := /bin/bash # PIPESTATUS: the VM's status through tee

check-arm64vm: aarch64
	$(Q)scripts/install-deps --extra "$(ARM64VM_TOOLS)"
	$(Q)$(MAKE) --no-print-directory arm64vm-vendor-sdk
	$(Q)t0=$$(date +%s); log=$(abspath $(O))/arm64vm.log; \
	O=$(abspath $(O)) scripts/arm64vm $(foreach e,$(ARM64VM_ENV),--env $(e)) \
		$(ARM64VM_CASES) | tee $$log; rc=$${PIPESTATUS[0]}; \
	O=$(abspath $(O)) scripts/arm64vm --smp 1 $(foreach e,$(ARM64VM_ENV),--env $(e)) \
		$(ARM64VM_CASES_1CPU) | tee -a $$log; \
	[ $${PIPESTATUS[0]} -eq 0 ] || rc=1; \
	echo "check-arm64vm: $$(($$(date +%s) - t0)) s (two boots: -smp 2, then -smp 1)"; \
	awk '/^[0-9]+ passed, [0-9]+ failed/ { p += $$1; f += $$3; s += $$5; n++ } \
		END { printf "arm64vm: %d passed, %d failed, %d skipped\n", p, f + (n < 2 ? 1 : 0), s }' $$log; \
	exit $$rc

# The seed's no-asm vendor SDK for vm-vendor-noasm, cross-built here (no compiler in the VM)
# into the aarch64 build the VM gets, as vendor-noasm builds it under qemu-user: Debian 12's
# OpenSSL source no-asm (scripts/openssl-noasm, cached outside the clone), then the stripped
# libfoundation.so and its downloader. Without the source (no mirror) the case skips.
.PHONY: arm64vm-vendor-sdk
arm64vm-vendor-sdk:
	$(Q)if noasm=$$(SYSROOT=$(AARCH64_SYSROOT) scripts/openssl-noasm bookworm aarch64); then \
		CC=$(AARCH64_CROSS)gcc CROSS_COMPILE=$(AARCH64_CROSS) VENDOR_SYSROOT=$(AARCH64_SYSROOT) \
			tests/vendor/noasm-build $(abspath $(O))/aarch64/vendor-noasm "$$noasm" >/dev/null && \
		echo "arm64vm: no-asm vendor SDK in $(O)/aarch64/vendor-noasm"; \
	else echo "arm64vm: no no-asm OpenSSL (vm-vendor-noasm will skip)"; fi
