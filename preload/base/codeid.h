/* codeid.h: what a code pointer points at, read from the code itself: the loaded object
 * holding it, the function's bounds from the object's .eh_frame_hdr (OpenSSL's perlasm emits
 * CFI for every assembler routine), and which crypto instructions the function and the
 * functions it calls directly contain. Slow (walks the loaded objects); callers cache. */
#ifndef TLSM_CODEID_H
#define TLSM_CODEID_H

#include "arch/arch.h"
#include "base/json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* Whether the n bytes at p lie in one PT_LOAD segment (executable if exec) of the loaded
 * object whose code holds anchor: a pointer read from a structure is believed only then.
 * Slow (walks the loaded objects); callers cache. */
bool tlsm_code_same_object(const void *anchor, const void *p, size_t n, bool exec);
/* The isa bits' names as items of the open array (impl's fn_F_isa). */
void tlsm_isa_write(struct tlsm_json *j, uint32_t isa);

#endif
