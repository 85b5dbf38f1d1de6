/* arch.h: what differs between the CPU architectures tlsmeter runs on, behind one interface.
 * The Makefile compiles preload/arch/$(ARCH)/ only (ARCH from the compiler's target); the
 * inline parts come from that folder's counter.h. Nothing here depends on the rest of the
 * preload: this is the lowest layer. */
#ifndef TLSM_ARCH_H
#define TLSM_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__)
#include "arch/x86_64/counter.h"
#elif defined(__aarch64__)
#include "arch/aarch64/counter.h"
#else
#error "tlsmeter supports x86_64 and aarch64 (preload/arch/)"
#endif

/* Instruction families found (bit per family). x86_64: legacy SSE and VEX/EVEX forms are
 * told apart because OpenSSL's AVX routines (gcm_ghash_avx) use only the VEX forms. */
enum tlsm_isa {
    TLSM_ISA_AES = 1u << 0,        /* x86 aesenc/aesdec(last) (66 0F 38 DC-DF) */
    TLSM_ISA_AES_VEX = 1u << 1,    /* x86 vaesenc... (VEX or EVEX) */
    TLSM_ISA_CLMUL = 1u << 2,      /* x86 pclmulqdq (66 0F 3A 44) */
    TLSM_ISA_CLMUL_VEX = 1u << 3,  /* x86 vpclmulqdq (VEX or EVEX) */
    TLSM_ISA_PSHUFB = 1u << 4,     /* x86 pshufb / vpshufb: SSSE3 byte shuffles (vpaes, bsaes) */
    TLSM_ISA_A64_AES = 1u << 5,    /* aarch64 aese/aesd/aesmc/aesimc */
    TLSM_ISA_A64_PMULL = 1u << 6,  /* aarch64 pmull{2} .1q (64x64 carry-less) */
    TLSM_ISA_A64_PMULL8 = 1u << 7, /* aarch64 pmull{2} .8h (8x8 polynomial, NEON GHASH) */
    TLSM_ISA_A64_TBL = 1u << 8,    /* aarch64 tbl/tbx (vpaes, bsaes) */
};

/* The cycle counter's rate when it is a usable clock (constant rate, never stopped), else
 * false: then the preload keeps clock_gettime. */
bool tlsm_arch_counter_hz(uint64_t *hz);

/* Crypto features of the CPU from the kernel's hardware capabilities: up to max names into
 * names, how many; -1 when this architecture reads them from /proc/cpuinfo's flags instead. */
int tlsm_arch_crypto_hwcaps(const char **names, int max);

/* Instruction families (TLSM_ISA_* of base/codeid.h) in size bytes of code at start; each
 * direct call or jump met is handed to branch(arg, target), in code order. */
uint32_t tlsm_arch_scan(uintptr_t start, uint32_t size, void (*branch)(void *, uintptr_t),
                        void *arg);

/* Bytes from pc to the end of its first return instruction, looking at most max bytes (all
 * readable); 0 if none or if this architecture bounds functions by their FDEs only. */
uint32_t tlsm_arch_to_ret(uintptr_t pc, uint32_t max);

#endif
