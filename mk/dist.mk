# mk/dist.mk: `make dist`, libtlsmeter.so for the boards people have (glibc 2.28 and later,
# x86_64 and aarch64), and the analyzer for this host. Included by the top Makefile.
#
#   make dist           $(O)/dist/x86_64/libtlsmeter.so, $(O)/dist/aarch64/libtlsmeter.so,
#                       beside each libtlsmeter-attach.so and tlsmeter-attach (tlsmeter
#                       attach on the board), $(O)/dist/tlsmeter-analyze (the host's analyzer:
#                       traces are analyzed where they are read, not on the board)
#   make dist-x86_64    one of them (dist-aarch64 likewise)
#
# Each library is compiled against Debian 11's glibc 2.31 (scripts/bullseye-root, cached
# beside the build: $(O)/bullseye-amd64, $(O)/bullseye-arm64) and with OpenSSL 3's headers
# (bookworm's, from the same script): the preload links no OpenSSL, it finds every OpenSSL
# function with dlsym in the copies the process loaded, so its OpenSSL headers only give it
# OpenSSL 3's declarations, and the library handles OpenSSL 3 copies on a newer system as
# the host build does. What it may not do is ask for a newer glibc than the board has: the
# loader would refuse the library and the program would not start. So the build checks the
# symbol versions (scripts/check-glibc-symbols, objdump -T) and fails past DIST_GLIBC_MAX.

DIST_O ?= $(abspath $(O))/dist
DIST_GLIBC_MAX := 2.28
DIST_ROOTS := $(abspath $(O))
DIST_CROSS := aarch64-linux-gnu-

.PHONY: dist dist-x86_64 dist-aarch64

dist: dist-x86_64 dist-aarch64 $(ANALYZER)
	$(Q)mkdir -p $(DIST_O) && cp $(ANALYZER) $(DIST_O)/tlsmeter-analyze
	$(Q)echo "dist: $(DIST_O)/ARCH/{libtlsmeter.so,libtlsmeter-attach.so,tlsmeter-attach} (ARCH x86_64, aarch64), $(DIST_O)/tlsmeter-analyze"

# $(1): our arch name, $(2): Debian's, $(3): triplet, $(4): CROSS_COMPILE
define dist_lib
dist-$(1):
	$(Q)$(if $(4),scripts/install-deps --extra "gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu")
	+$(Q)root=$$$$(scripts/bullseye-root $(2) $(DIST_ROOTS)/bullseye-$(2)) && \
	$(MAKE) --no-print-directory O=$(DIST_O)/$(1) CROSS_COMPILE=$(4) SYSROOT=$$$$root \
		TRIPLET=$(3) SAN= DEBUG= OPENSSL_CFLAGS= \
		SYSROOT_FIRST_CFLAGS="-I$$$$root/openssl3/include -I$$$$root/openssl3/include/$(3)" \
		$(DIST_O)/$(1)/libtlsmeter.so $(DIST_O)/$(1)/libtlsmeter-attach.so $(DIST_O)/$(1)/tlsmeter-attach
	$(Q)for f in libtlsmeter.so libtlsmeter-attach.so tlsmeter-attach; do \
		scripts/check-glibc-symbols --objdump $(4)objdump $(DIST_GLIBC_MAX) $(DIST_O)/$(1)/$$$$f || exit 1; done
endef
$(eval $(call dist_lib,x86_64,amd64,x86_64-linux-gnu,))
$(eval $(call dist_lib,aarch64,arm64,aarch64-linux-gnu,$(DIST_CROSS)))
