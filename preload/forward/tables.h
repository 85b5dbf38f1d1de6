/* tables.h: an OpenSSL 3 copy the hooks cannot interpose (hidden or
 * stripped symbols, -Bsymbolic) still dispatches every cipher call through its default
 * provider's OSSL_DISPATCH tables, which EVP copies into each EVP_CIPHER at fetch time.
 * Found from the algorithm name strings and the relative relocations that point at them,
 * checked against OpenSSL 3.0's shapes, and rewritten (before the first fetch) to
 * tlsmeter's wrappers (hooks/hook_table.c). Data only: no code is touched. */
#ifndef TLSM_TABLES_H
#define TLSM_TABLES_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

struct tlsm_obj;

/* OSSL_FUNC_CIPHER_* ids (openssl/core_dispatch.h, stable since 3.0). */
enum { TLSM_TBL_FN_MAX = 14 };

/* One provider cipher of one copy: its dispatch array and the functions it held. */
struct tlsm_cipher_table {
    const struct link_map *lm;
    struct tlsm_obj *lib;
    const char *cipher; /* our static name: "AES-128-GCM", "AES-256-GCM", "ChaCha20-Poly1305" */
    bool gcm;
    uintptr_t disp;                          /* the OSSL_DISPATCH array */
    void (*orig[TLSM_TBL_FN_MAX + 1])(void); /* by function id */
    uintptr_t slot[TLSM_TBL_FN_MAX + 1];     /* where each id's function pointer is */
};

/* A candidate copy: an object holding OpenSSL 3's version text and its provider names, whose
 * EVP calls the hooks cannot see. */
struct tlsm_table_copy {
    const struct link_map *lm;
    const ElfW(Phdr) * phdr;
    int phnum;
    char version[64];
    char platform[64]; /* its build's "platform: TARGET" text (crypto/buildinf.h), "" if none */
    bool exports;      /* it exports EVP_CipherUpdate (then only -Bsymbolic makes it blind) */
    bool symbolic;     /* DT_SYMBOLIC / DF_SYMBOLIC */
};

/* Is the object info/lm (held by the caller) such a copy? Then c describes it. */
bool tlsm_tables_judge(const struct dl_phdr_info *info, const struct link_map *lm,
                       struct tlsm_table_copy *c);
/* The same question for a copy the hooks do interpose (an OpenSSL 3 libcrypto that exports
 * its EVP functions): its records can be measured at its tables too (hooks/hook_table.c). */
bool tlsm_tables_judge_hooked(const struct dl_phdr_info *info, const struct link_map *lm,
                              struct tlsm_table_copy *c);
/* Every loaded copy the hooks cannot interpose, up to max. */
int tlsm_tables_copies(struct tlsm_table_copy *out, int max);
/* Every loaded OpenSSL 3 copy the hooks interpose, up to max. */
int tlsm_tables_hooked_copies(struct tlsm_table_copy *out, int max);
/* The cipher tables of copy c, up to max. Returns how many matched OpenSSL 3.0's shapes; a
 * table found by name whose shape differs is not returned and is described in why ("" if
 * none), so the caller can leave the copy alone with a notice. */
int tlsm_tables_find(const struct tlsm_table_copy *c, struct tlsm_cipher_table *out, int max,
                     char *why, size_t whycap);
/* Does one of c's loaded segments hold p (code: an executable one)? */
bool tlsm_tables_holds(const struct tlsm_table_copy *c, const void *p, bool code);
/* Point table t's entry for function id at fn (NULL: the original). */
bool tlsm_tables_set(const struct tlsm_table_copy *c, struct tlsm_cipher_table *t, int id,
                     void (*fn)(void));

#endif
