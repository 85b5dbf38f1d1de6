/* obj.h: loaded objects tlsmeter has met, as callers of hooked functions or as the OpenSSL
 * copies those calls land in (an "instance": gets a lib event and its helper functions). */
#ifndef TLSM_OBJ_H
#define TLSM_OBJ_H

#include "forward/abi.h"
#include "forward/resolve.h"

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

/* The ways tlsmeter reaches a copy past LD_PRELOAD (lib.reach, "+"-joined). */
enum {
    TLSM_REACH_GOT = 1,   /* a caller's GOT slots rewritten (forward/got.c) */
    TLSM_REACH_TABLE = 2, /* its provider dispatch tables rewritten (forward/tables.c) */
    TLSM_REACH_ENTRY = 4, /* its SSL_* entry points patched (forward/entry.c) */
    TLSM_REACH_PLT = 8,   /* its libc socket reads rewritten (hooks/hook_sock.c) */
};

struct tlsm_obj {
    const struct link_map *lm;
    uintptr_t start, end;
    char path[512];
    const char *want[TLSM_FN_COUNT]; /* version each of its references asks for */
    uint64_t refs;                   /* hooked names it imports through relocations */
    bool has_ssl, has_crypto;        /* defines SSL_read / EVP_CipherUpdate */
    _Atomic int described;
    int lib_id;        /* id of its lib event; 0 = not an OpenSSL instance (yet) */
    char version[64];  /* OpenSSL_version(OPENSSL_VERSION), "" if unknown */
    char platform[64]; /* "platform: TARGET" read from a copy tlsmeter never calls, "" if none */
    _Atomic uint64_t hooks_into;
    /* Its ABI and entry points (abi.h), decided once when described. A copy left alone
     * (old, foreign) has none: tlsmeter never calls into it, record.c tracks none of its
     * contexts, the SSL hooks only forward. */
    struct tlsm_abi abi;
    bool stale; /* dlclose() happened since: do not reuse for new callers */
    /* How calls that ordinary interposition misses reach the hooks (TLSM_REACH_*
     * bits); 0: only through the linker's own binding. */
    _Atomic unsigned reach;
    unsigned lib_gen; /* trace file generation its lib line was written to */
    /* A return instruction in its code that a dlopen it makes can return through (hook_late.c):
     * state 0 not looked for, 1 found, -1 none. */
    uintptr_t ret_gadget;
    _Atomic int ret_state;
    bool late; /* a copy reached after start, once its constructors had run (hook_late.c) */
    _Atomic int late_state; /* its late reach: 0 not begun, 1 under way, 2 done */
    /* A copy the hooks reach whose records are measured at its provider tables
     * (hooks/hook_table.c): its libssl's and its own per-record EVP and GCM calls are bound
     * past the hooks (forward/bindpast.c); its EVP init hook only marks libssl's keys. */
    _Atomic bool tbl_records;
    bool tbl_gcm; /* ... and its GCM contexts name their code (its CRYPTO_gcm128_* calls too) */
    /* ... and a libssl context of it that its tables do not serve (another provider, an
     * ENGINE, a cipher without a wrapped table) is measured at the EVP hooks: the bindings
     * were put back (tlsm_bindpast_undo), for good. */
    _Atomic bool evp_records;
};

/* The object containing addr, registered on first sight (under the registry's own lock, taken
 * here only for a new object; callers hold no lock). NULL if no object or the registry is full. */
struct tlsm_obj *tlsm_obj_of(const void *addr);
/* First time a hook forwards into o: learn what it is, write its lib event. */
void tlsm_obj_describe(struct tlsm_obj *o);
/* o is reached as reach (TLSM_REACH_* bits) says: describe it, also when it exports
 * no OpenSSL name (then version is the text found in it). */
void tlsm_obj_describe_reached(struct tlsm_obj *o, unsigned reach, const char *version);
/* How the registered object lm is reached past interposition (TLSM_REACH_* bits), 0: not. */
unsigned tlsm_obj_reach_of(const struct link_map *lm);
/* The "+"-joined names of reach bits ("table+entry"), "" for 0. */
const char *tlsm_reach_name(unsigned reach, char *buf, size_t cap);
void tlsm_obj_mark_stale(void);
/* The end event's "libs": every described instance with the hooks that resolved into it;
 * [] when they do not fit their share of the line. */
void tlsm_obj_end_write(struct tlsm_json *j);
int tlsm_next_lib_id(void);
/* The ABI of the registered object lm (TLSM_ABI_UNKNOWN if not registered or described);
 * with its version text in *version. */
enum tlsm_abi_kind tlsm_obj_abi(const struct link_map *lm, const char **version);
/* A libcrypto-only instance our hooks forward into: it holds no TLS record layer. */
bool tlsm_obj_crypto_only(const struct link_map *lm);
void tlsm_obj_atfork(bool take);
/* Write the lib line of every known instance into the trace file just opened. */
void tlsm_obj_replay_libs(unsigned gen);

#endif
