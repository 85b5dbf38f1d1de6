# mk/attachlib.mk: libtlsmeter-attach.so, the library `tlsmeter attach` loads into a running
# program: the preload's sources built again with the dynamic TLS model (preload/base/tls.h
# says why), so that a dlopen long after start does not need static TLS the process lacks.
# x86_64 uses TLSDESC (-mtls-dialect=gnu2), aarch64's default: a call per access that is cheap
# once the thread's block exists. Included by the top Makefile.

ATTACH_PRELOAD := $(O)/libtlsmeter-attach.so
ATTACH_LIB_OBJS := $(PRELOAD_SRCS:%.c=$(O)/attach-lib/%.o)
ATTACH_TLS_FLAGS := -DTLSM_DYNAMIC_TLS $(if $(filter x86_64,$(ARCH)),-mtls-dialect=gnu2)

all: $(ATTACH_PRELOAD)

$(O)/attach-lib/preload/%.o: preload/%.c $(O)/attach-lib/preload/%.d
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $< (attach)")
	$(Q)$(CC) $(TLSM_CFLAGS) $(DEPFLAGS) -Ipreload -fPIC -fvisibility=hidden $(OPENSSL_CFLAGS) \
		$(UNWIND_CFLAGS) $(ATTACH_TLS_FLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(ATTACH_PRELOAD): $(ATTACH_LIB_OBJS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) -shared -o $@ $^ $(TLSM_LDFLAGS) $(LDFLAGS) -Wl,-z,now -Wl,--no-undefined \
		-Wl,-e,tlsm_run_main -ldl -lpthread

$(ATTACH_LIB_OBJS:.o=.d):
include $(wildcard $(ATTACH_LIB_OBJS:.o=.d))

# The quick-start targets install what is missing first (as the top Makefile's other objects).
ifneq ($(filter check demo bench deps,$(MAKECMDGOALS)),)
$(ATTACH_LIB_OBJS) $(ATTACH_OBJS): | deps
endif
