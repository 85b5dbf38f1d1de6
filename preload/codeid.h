/* codeid.h: what a code pointer points at, read from the code itself: the loaded object
 * holding it, the function's bounds from the object's .eh_frame_hdr (OpenSSL's perlasm emits
 * CFI for every assembler routine), and which crypto instructions the function and the
 * functions it calls directly contain. Slow (walks the loaded objects); callers cache. */
#ifndef TLSM_CODEID_H
#define TLSM_CODEID_H

#include "json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

struct tlsm_code {
    bool found;      /* fn lies in an executable segment of a loaded object */
    bool bounded;    /* size and isa are from its body (FDE, or to_ret) */
    bool to_ret;     /* aarch64 without an FDE: bounded by its first RET instead */
    uintptr_t base;  /* the object's load base (l_addr) */
    uintptr_t off;   /* fn - base: the symbol value in the object's .symtab */
    uint32_t size;   /* bytes, from the FDE */
    uint32_t isa;    /* enum tlsm_isa bits of the function and its direct callees */
    uint8_t callees; /* direct calls followed (to function starts in the same object) */
    char path[256];  /* the object, "" for the main program when the loader gives none */
};

/* Identify fn. Reads only memory inside the object's PT_LOAD segments. False if fn is not
 * in any loaded object's code. */
bool tlsm_code_identify(const void *fn, struct tlsm_code *out);
/* The isa bits' names as items of the open array (impl's fn_F_isa). */
void tlsm_isa_write(struct tlsm_json *j, uint32_t isa);

#endif
