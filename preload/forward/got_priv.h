/* got_priv.h: the GOT records of got.c, shared with got_attach.c (the slots an attach
 * rewrites and a detach puts back). Not for other files. */
#ifndef TLSM_GOT_PRIV_H
#define TLSM_GOT_PRIV_H

#include "forward/resolve.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define MAX_GOT_SLOTS 128
#define CHUNK_OBJS    32
#define MAX_CHUNKS    64 /* 2048 patched objects loaded at once; then one notice */

struct got_slot {
    uintptr_t addr, orig;
    int id;
};

enum { G_LIVE = 1, G_DEAD = 2 };

/* One patched load of one object. The registry grows in chunks; a dead record is reused
 * under got_lock, its fwd facts folded first. Readers take no lock: they copy what they need
 * between two reads of seq (odd while a record is rewritten) and drop the copy if it moved. */
struct got_obj {
    const struct link_map *lm;
    uintptr_t start, end, base;
    const void *phdr; /* identity; read only by a detach, once the load is checked live */
    int phnum;
    uint64_t name; /* hash of its file name: part of the identity */
    void *root;    /* handle of the dlopen that loaded it */
    char path[512];
    void *target[TLSM_FN_COUNT];
    uint64_t ids;          /* hook ids with at least one rewritten slot */
    _Atomic uint64_t used; /* ids a call came through (its fwd event, even once unloaded) */
    struct tlsm_obj *to[TLSM_FN_COUNT];
    struct { /* each target's object, to check that it is still the same load */
        uintptr_t start, end;
        const struct link_map *lm;
    } tgt[TLSM_FN_COUNT];
    struct got_slot slot[MAX_GOT_SLOTS];
    int nslots;
    _Atomic int state;
    _Atomic unsigned seq;
    uint64_t born; /* tlsm_got_births when it was published */
};

extern pthread_mutex_t tlsm_got_lock;
extern _Atomic int tlsm_got_n; /* published records, in chunk order */
extern void *tlsm_got_hook_addr[TLSM_FN_COUNT];
struct got_obj *tlsm_got_rec(int i);
/* An attach's slot (got_attach.c): false when it is left alone. */
bool tlsm_got_collect_bound(struct got_obj *g, const struct tlsm_obj *o, uintptr_t slot,
                            uintptr_t cur, int id);

#endif
