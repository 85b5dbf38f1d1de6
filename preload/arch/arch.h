/* arch.h: what differs between the CPU architectures tlsmeter runs on, behind one interface.
 * The Makefile compiles preload/arch/$(ARCH)/ only (ARCH from the compiler's target); the
 * inline parts come from that folder's counter.h. Nothing here depends on the rest of the
 * preload: this is the lowest layer. */
#ifndef TLSM_ARCH_H
#define TLSM_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* TLSM_ARCH_LOADER: the dynamic loader's path (the ABI's PT_INTERP), for running the library
 * itself as a program (preload/run.c). */
#if defined(__x86_64__)
#include "arch/x86_64/counter.h"
#define TLSM_ARCH_R_RELATIVE 8 /* R_X86_64_RELATIVE: base + addend */
#define TLSM_ARCH_LOADER     "/lib64/ld-linux-x86-64.so.2"
#elif defined(__aarch64__)
#include "arch/aarch64/counter.h"
#define TLSM_ARCH_R_RELATIVE 1027 /* R_AARCH64_RELATIVE */
#define TLSM_ARCH_LOADER     "/lib/ld-linux-aarch64.so.1"
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
    /* x86 EVEX forms (AVX-512 VAES / VPCLMULQDQ, any vector length): set beside AES_VEX and
     * CLMUL_VEX. OpenSSL's AES-NI/AVX code has only VEX forms; its VAES/AVX-512 GCM kernel
     * (3.5's aes-gcm-avx512.pl) is EVEX throughout. */
    TLSM_ISA_AES_EVEX = 1u << 9,    /* x86 EVEX vaesenc/vaesdec(last) */
    TLSM_ISA_CLMUL_EVEX = 1u << 10, /* x86 EVEX vpclmulqdq */
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

/* Entry patching (forward/entry.c). A branch of TLSM_ARCH_PATCH_LEN bytes written
 * at a function's entry reaches a stub within TLSM_ARCH_NEAR bytes of it. */
#if defined(__x86_64__)
#define TLSM_ARCH_PATCH_LEN 5            /* jmp rel32 */
#define TLSM_ARCH_NEAR      (1ull << 31) /* its reach */
#define TLSM_ARCH_FAR_LEN   14           /* jmp *0(%rip); .quad */
#else
#define TLSM_ARCH_PATCH_LEN 4 /* b imm26 */
#define TLSM_ARCH_NEAR      (1ull << 27)
#define TLSM_ARCH_FAR_LEN   16 /* ldr x16, #8; br x16; .quad */
#endif
/* Copy the instructions at fn that the patch overwrites (at least TLSM_ARCH_PATCH_LEN bytes,
 * starting *skip bytes in: a leading BTI or endbr64 may stay where it is) to tramp, relocated
 * to run there, followed by a jump back to the first instruction not copied; tramp lies within
 * TLSM_ARCH_NEAR of fn. With one, exactly one instruction is taken (after a landing pad kept
 * in place), and one shorter than the patch refuses: other threads may be running the
 * function, and a thread can be stopped between two instructions, never inside one. Returns
 * the bytes written to tramp (at most cap), *copied the bytes of fn taken; 0 when an
 * instruction cannot be relocated (why says which). Reads only fn's first 32 bytes. */
size_t tlsm_arch_relocate(const uint8_t *fn, uint8_t *tramp, size_t cap, bool one, size_t *skip,
                          size_t *copied, char *why, size_t whycap);
/* Store the patch's len bytes at `at` as one atomic store of the aligned word that holds them
 * (the rest of the word rewritten with what it holds); false when they straddle such a word. */
bool tlsm_arch_store_code(uint8_t *at, const uint8_t *bytes, size_t len);
/* The patch: a near branch from `from` to `to` (within TLSM_ARCH_NEAR) into buf. */
void tlsm_arch_near_branch(uintptr_t from, uintptr_t to, uint8_t *buf);
/* A jump to any address `to` (TLSM_ARCH_FAR_LEN bytes, position-independent) into buf. */
void tlsm_arch_far_jump(uintptr_t to, uint8_t *buf);
/* The capability words an OpenSSL 1.1.1 copy runs with, as its OPENSSL_cpuid_setup computes
 * them (the CPU's bits, then the OPENSSL_ia32cap / OPENSSL_armcap variable), in the form of
 * 3.x's OPENSSL_CPU_INFO text: "OPENSSL_ia32cap=0x..:0x.. (...)", "OPENSSL_armcap=0x.. (...)". */
void tlsm_arch_ossl111_cpuinfo(char *buf, size_t cap);

#endif
