/* resolve.h: find the real function a hooked call would have reached without us,
 * the way the dynamic linker would: per caller object, honouring symbol versions. */
#ifndef TLSM_RESOLVE_H
#define TLSM_RESOLVE_H

#include "base/tls.h"
#include "base/json.h"
#include "base/fn.h"
#include "trace/thread.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct tlsm_obj;

/* Where one caller object's calls to one function go. Entries are immutable once
 * published and never reused: a reader may hold one while it is being unpublished. */
struct tlsm_fwd {
    void *fn;
    struct tlsm_obj *target; /* object that defines fn */
};

struct tlsm_fwd_entry {
    uintptr_t start, end; /* caller object's address range */
    struct tlsm_fwd fwd;
    uintptr_t target_start; /* its start (tlsm_fwd_last), 0 without a target */
};

#define TLSM_FWD_SLOTS 16

struct tlsm_hook {
    const char *name;
    char family;
    bool required;
    _Atomic int nslots; /* slots ever used: a bound for the scan */
    _Atomic int last;   /* the slot that answered last: tried first */
    struct tlsm_fwd_entry *_Atomic slot[TLSM_FWD_SLOTS]; /* NULL: free or forgotten */
};

extern struct tlsm_hook tlsm_hooks[TLSM_FN_COUNT];
/* An array member named key: the names of the hooked functions in fns (bit per id). */
void tlsm_hooks_write(struct tlsm_json *j, const char *key, uint64_t fns);

struct tlsm_fwd tlsm_resolve_slow(enum tlsm_fn id, const void *caller);
/* Where a call of id from caller would go, asked without calling: the target is not described
 * (no lib line, no trace file for a program that never calls it) and nothing is cached. */
struct tlsm_fwd tlsm_resolve_peek(enum tlsm_fn id, const void *caller);

/* libtlsmeter.so's own address range. */
extern uintptr_t tlsm_self_start, tlsm_self_end;
/* Where the object this thread last forwarded a call into starts. A hooked call whose
 * return address lies inside libtlsmeter is a tail call made by the real function a hook just
 * called (EVP_CipherUpdate -> jmp EVP_DecryptUpdate@plt, SSL_connect -> SSL_do_handshake):
 * the linker would have bound it as a call of that object, so resolve it as one. Taking
 * the hook's own return address instead sent a RTLD_LOCAL system libcrypto's tail calls
 * to whichever copy came first in the global scope (a vendor's). */
extern __thread uintptr_t tlsm_fwd_last TLSM_IE;
const void *tlsm_obj_addr(const struct tlsm_obj *o);

/* The slot whose entry holds caller, -1 for none; slot `last` is tried first. */
static inline int tlsm_forward_find(const struct tlsm_hook *h, const void *caller, int last)
{
    const struct tlsm_fwd_entry *e = atomic_load_explicit(&h->slot[last], memory_order_acquire);
    if (e && (uintptr_t)caller - e->start < e->end - e->start)
        return last;
    int n = atomic_load_explicit(&h->nslots, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        e = atomic_load_explicit(&h->slot[i], memory_order_acquire);
        if (e && (uintptr_t)caller - e->start < e->end - e->start)
            return i;
    }
    return -1;
}

static inline struct tlsm_fwd tlsm_forward_at(enum tlsm_fn id, const void *caller)
{
    struct tlsm_hook *h = &tlsm_hooks[id];
    int last = atomic_load_explicit(&h->last, memory_order_relaxed);
    int i = tlsm_forward_find(h, caller, last);
    const struct tlsm_fwd_entry *e =
        i < 0 ? NULL : atomic_load_explicit(&h->slot[i], memory_order_acquire);
    if (!e) /* none, or unpublished since: the slow way */
        return tlsm_resolve_slow(id, caller);
    if (i != last)
        atomic_store_explicit(&h->last, i, memory_order_relaxed);
    return e->fwd;
}

/* Hot path: the caller object that called this function last (libssl for the EVP calls) is
 * usually the caller again: one range compare on the slot that answered last (a slot, not an
 * entry, is remembered: what is read is always what is published). A hit on an entry that is
 * not libtlsmeter's own (object ranges never overlap, and an entry's range is its object's, as
 * tlsm_self_start is) also says the caller is not in libtlsmeter. A tail call (the caller in
 * libtlsmeter) is the call of the object the last forward went into: that slot again, then
 * the scan. */
static inline __attribute__((always_inline)) struct tlsm_fwd tlsm_forward(enum tlsm_fn id,
                                                                          const void *caller)
{
    struct tlsm_hook *h = &tlsm_hooks[id];
    const struct tlsm_fwd_entry *e = atomic_load_explicit(
        &h->slot[atomic_load_explicit(&h->last, memory_order_relaxed)], memory_order_acquire);
    uintptr_t c = (uintptr_t)caller;
    if (__builtin_expect(e && c - e->start < e->end - e->start && e->start != tlsm_self_start, 1))
        goto hit;
    if (c - tlsm_self_start < tlsm_self_end - tlsm_self_start && tlsm_fwd_last) {
        c = tlsm_fwd_last;
        if (e && c - e->start < e->end - e->start)
            goto hit;
    }
    struct tlsm_fwd f = tlsm_forward_at(id, (const void *)c);
    if (f.target)
        tlsm_fwd_last = (uintptr_t)tlsm_obj_addr(f.target);
    return f;
hit:
    if (e->target_start)
        tlsm_fwd_last = e->target_start;
    return e->fwd;
}

/* The same answer for a hook whose fast path makes no call before its tail call (so it saves
 * no register: the EVP, GCM and SSL_read/write hooks run several times per record): the
 * published answer of the slot that answered last when it holds this caller (or, for a tail
 * call, the object the last forward went into) and a function. NULL sends the hook the full
 * way (tlsm_forward): a miss, a function defined nowhere. The answer is an immutable entry's:
 * it may be held through the call. */
static inline __attribute__((always_inline)) const struct tlsm_fwd *
tlsm_forward_fast(enum tlsm_fn id, const void *caller)
{
    struct tlsm_hook *h = &tlsm_hooks[id];
    const struct tlsm_fwd_entry *e = atomic_load_explicit(
        &h->slot[atomic_load_explicit(&h->last, memory_order_relaxed)], memory_order_acquire);
    if (__builtin_expect(!e, 0))
        return NULL;
    uintptr_t c = (uintptr_t)caller;
    if (__builtin_expect(c - e->start >= e->end - e->start || e->start == tlsm_self_start, 0)) {
        if (c - tlsm_self_start >= tlsm_self_end - tlsm_self_start || !tlsm_fwd_last)
            return NULL;
        c = tlsm_fwd_last;
        if (c - e->start >= e->end - e->start)
            return NULL;
    }
    if (__builtin_expect(!e->fwd.fn, 0))
        return NULL;
    if (e->target_start)
        tlsm_fwd_last = e->target_start;
    return &e->fwd;
}

/* The real function, typed like the OpenSSL declaration: REAL(SSL_read, ra). */
#define TLSM_REAL(name, fwd) ((__typeof__(&name))(fwd).fn)

/* Objects were unloaded: forget the cached answers whose caller or target went away. */
void tlsm_resolve_invalidate(void);
/* Drop every per-thread memo of an object: around each dlopen and dlclose. */
void tlsm_resolve_bump(void);
/* Before every dlopen: forget the answers cached for callers in no object (JIT pages). */
void tlsm_resolve_before_dlopen(void);
/* Advanced by every tlsm_resolve_invalidate: an answer a hook keeps itself (hook_evp.c) is
 * good while this has not moved. */
extern _Atomic unsigned tlsm_resolve_gen;
/* libc's dlclose, for tlsmeter's own use (our exported dlclose is a hook). */
int tlsm_real_dlclose(void *handle);
/* Does this address lie in libtlsmeter.so itself? */
bool tlsm_is_self(const void *addr);
void tlsm_resolve_init(void);
void tlsm_resolve_atfork(bool take);

/* Resolve and count. A function with no real definition anywhere cannot be forwarded:
 * the hook then fails the call the way a missing function would (ENOSYS). */
#define TLSM_HOOK_ENTER(name, fwd)                                                                 \
    struct tlsm_fwd fwd = tlsm_forward(TLSM_FN_##name, __builtin_return_address(0));               \
    tlsm_th.calls[TLSM_FN_##name]++

#endif
