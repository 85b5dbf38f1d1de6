/* resolve.c: emulate the dynamic linker for forwarding. For a call from object C to name:
 * 1. the version C's reference asks for (its .gnu.version_r), looked up after us in the
 *    global scope (dlvsym/dlsym RTLD_NEXT) — two versioned OpenSSL copies stay apart;
 * 2. failing that, C's own scope (dlopen(C, RTLD_NOLOAD)): Python's _ssl loads libssl
 *    RTLD_LOCAL, invisible to RTLD_NEXT;
 * 3. never our own hook. Answers are cached per (function, caller object). */
#include "base/tls.h"
#include "forward/resolve.h"
#include "forward/entry.h"
#include "forward/got.h"
#include "trace/log.h"
#include "forward/obj.h"
#include "base/glibc_compat.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct tlsm_hook tlsm_hooks[TLSM_FN_COUNT] = {
#define X(n, fam, req) [TLSM_FN_##n] = {.name = #n, .family = #fam[0], .required = req},
#include "base/hooks.def"
#undef X
};

static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
uintptr_t tlsm_self_start, tlsm_self_end;
__thread uintptr_t tlsm_fwd_last TLSM_IE;
static __typeof__(&dlclose) libc_dlclose;

bool tlsm_is_self(const void *addr)
{
    return (uintptr_t)addr >= tlsm_self_start && (uintptr_t)addr < tlsm_self_end;
}

int tlsm_real_dlclose(void *handle)
{
    /* Resolved on first use too: the program's own library constructors run before ours
     * and may already dlclose. */
    __typeof__(&dlclose) f = __atomic_load_n(&libc_dlclose, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (__typeof__(&dlclose))dlsym(RTLD_NEXT, "dlclose");
        __atomic_store_n(&libc_dlclose, f, __ATOMIC_RELEASE);
    }
    return f ? f(handle) : -1;
}

void tlsm_resolve_init(void)
{
    struct dl_find_object f;
    if (_dl_find_object((void *)&tlsm_resolve_init, &f) == 0) {
        tlsm_self_start = (uintptr_t)f.dlfo_map_start;
        tlsm_self_end = (uintptr_t)f.dlfo_map_end;
    }
    libc_dlclose = (__typeof__(&dlclose))dlsym(RTLD_NEXT, "dlclose");
}

/* An address inside o, to resolve a tail call as o's own call. */
const void *tlsm_obj_addr(const struct tlsm_obj *o)
{
    return (const void *)o->start;
}

static void *usable(void *p)
{
    return p && !tlsm_is_self(p) ? p : NULL;
}

/* Is p an unversioned definition that a versioned reference accepts? The linker
 * binds a reference to name@VER to the first definition in scope order that either has
 * version VER or is unversioned in an object that defines no versions of its own. */
static bool unversioned_def(void *p, struct link_map **lm)
{
    const ElfW(Sym) *sym = NULL;
    Dl_info info;
    const ElfW(Sym) *symtab = NULL;
    const ElfW(Half) *versym = NULL;
    bool verdef = false;
    if (!dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
        !dladdr1(p, &info, (void **)lm, RTLD_DL_LINKMAP) || !*lm)
        return false;
    for (const ElfW(Dyn) *e = (*lm)->l_ld; e && e->d_tag != DT_NULL; e++) {
        uintptr_t v = e->d_un.d_ptr < (*lm)->l_addr ? (*lm)->l_addr + e->d_un.d_ptr : e->d_un.d_ptr;
        if (e->d_tag == DT_SYMTAB)
            symtab = (const void *)v;
        else if (e->d_tag == DT_VERSYM)
            versym = (const void *)v;
        else if (e->d_tag == DT_VERDEF)
            verdef = true;
    }
    if (!versym)
        return true;
    return !verdef && symtab && (versym[sym - symtab] & 0x7fff) == 1;
}

/* Does object a come before object b in load (= global scope) order? */
static bool loaded_before(const struct link_map *a, const struct link_map *b)
{
    for (const struct link_map *m = a; m; m = m->l_next)
        if (m == b)
            return true;
    return false;
}

/* dlvsym looks a version up as "hidden", so it never returns an unversioned definition;
 * the linker does (an embedded OpenSSL built without symbol versions, loaded first,
 * interposes the system libssl/libcrypto for every caller). Ask both ways and keep what
 * the linker would: the unversioned definition when it comes first in scope order. */
static void *lookup_next(const char *name, const char *ver)
{
    if (!ver)
        return usable(dlsym(RTLD_NEXT, name));
    void *v = usable(dlvsym(RTLD_NEXT, name, ver));
    void *d = usable(dlsym(RTLD_NEXT, name));
    struct link_map *dlm = NULL, *vlm = NULL;
    Dl_info info;
    if (!d || d == v || !unversioned_def(d, &dlm))
        return v;
    if (v && (!dladdr1(v, &info, (void **)&vlm, RTLD_DL_LINKMAP) || !loaded_before(dlm, vlm)))
        return v;
    return d;
}

static void *lookup_in_scope(const struct tlsm_obj *caller, const char *name, const char *ver)
{
    const char *path = caller->lm->l_name[0] ? caller->lm->l_name : NULL;
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return NULL;
    void *p = usable(ver ? dlvsym(h, name, ver) : dlsym(h, name));
    if (!p && ver) /* e.g. a reference to a version the scope defines only as default */
        p = usable(dlsym(h, name));
    tlsm_real_dlclose(h);
    return p;
}

/* Last resort for callers we cannot place (JIT code, no object): any loaded definition,
 * looked up in each object's own scope. dl_iterate_phdr holds the loader's list lock during
 * its callback and dlopen takes the loader lock, which a concurrent dlopen holds while it
 * waits for the list lock: so the callback only copies the k-th object's name out, and the
 * dlopen/dlsym happen after it returns. Quadratic in the number of objects, once per
 * function (the answer is cached for the caller's page). */
struct nth_name {
    int k, i;
    char name[512];
    bool found;
};

static int nth_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct nth_name *s = arg;
    (void)size;
    if (s->i++ < s->k)
        return 0;
    snprintf(s->name, sizeof(s->name), "%s", info->dlpi_name ? info->dlpi_name : "");
    s->found = true;
    return 1;
}

static void *lookup_anywhere(const char *name)
{
    void *p = usable(dlsym(RTLD_DEFAULT, name));
    for (int k = 0; !p && k < 4096; k++) {
        struct nth_name s = {.k = k};
        dl_iterate_phdr(nth_cb, &s);
        if (!s.found)
            break;
        void *h = s.name[0] ? dlopen(s.name, RTLD_LAZY | RTLD_NOLOAD) : NULL;
        if (h) {
            p = usable(dlsym(h, name));
            tlsm_real_dlclose(h);
        }
    }
    return p;
}

/* Entries come from pools mapped as needed and are never freed (a reader may hold one while
 * it is unpublished): each dlclose that forgets a few costs a few more; when MAX_POOLS are
 * gone, calls still resolve, uncached. */
#define POOL_ENTRIES 4096
#define MAX_POOLS    64
static struct tlsm_fwd_entry first_pool[POOL_ENTRIES]; /* in .bss: most programs need no more */
static struct tlsm_fwd_entry *pool = first_pool;
static int pool_used, npools = 1;

static struct tlsm_fwd_entry *new_entry(void)
{
    if (pool_used == POOL_ENTRIES) {
        void *p = npools < MAX_POOLS
                      ? mmap(NULL, sizeof(*pool) * POOL_ENTRIES, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                      : MAP_FAILED;
        if (p == MAP_FAILED)
            return NULL;
        pool = p;
        pool_used = 0;
        npools++;
    }
    return &pool[pool_used++];
}

/* Callers in no object (JIT code) are cached by their page: _Atomic so the dlopen route
 * knows, without a lock, whether there is anything to forget. */
static _Atomic bool anon_cached;

static void cache(enum tlsm_fn id, uintptr_t start, uintptr_t end, struct tlsm_fwd fwd)
{
    struct tlsm_hook *h = &tlsm_hooks[id];
    pthread_mutex_lock(&slot_lock);
    int n = atomic_load_explicit(&h->nslots, memory_order_relaxed), i = 0;
    while (i < n && atomic_load_explicit(&h->slot[i], memory_order_relaxed))
        i++;
    struct tlsm_fwd_entry *e = i < TLSM_FWD_SLOTS ? new_entry() : NULL;
    if (e) {
        *e = (struct tlsm_fwd_entry){start, end, fwd, fwd.target ? fwd.target->start : 0};
        atomic_store_explicit(&h->slot[i], e, memory_order_release);
        if (i == n)
            atomic_store_explicit(&h->nslots, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&slot_lock);
}

/* A caller in no loaded object: cached for its page, until the next dlopen or dlclose (an
 * object could be loaded where the page was). */
static void cache_anon(enum tlsm_fn id, const void *ra, struct tlsm_fwd fwd)
{
    struct dl_find_object f;
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE), page = (uintptr_t)ra & ~(ps - 1);
    if (!ra || _dl_find_object((void *)ra, &f) == 0)
        return; /* an object the registry had no room for: not a JIT page */
    atomic_store(&anon_cached, true);
    cache(id, page, page + ps, fwd);
}

/* The answer for a call of id from ra; answer: a hook's (describe the target, keep the answer
 * for the hook's next call), else a question only (nothing described or kept). */
static struct tlsm_fwd resolve(enum tlsm_fn id, const void *ra, bool answer)
{
    const char *name = tlsm_hooks[id].name;
    struct tlsm_obj *caller = tlsm_obj_of(ra);
    struct tlsm_fwd fwd = {NULL, NULL};
    if (caller) {
        const char *ver = caller->want[id];
        /* A caller whose GOT slot was rewritten goes where the slot went. */
        fwd.fn = tlsm_got_answer(id, caller);
        if (!fwd.fn)
            fwd.fn = lookup_next(name, ver);
        if (!fwd.fn)
            fwd.fn = lookup_in_scope(caller, name, ver);
    }
    if (!fwd.fn)
        fwd.fn = lookup_anywhere(name);
    if (!fwd.fn) {
        /* Cannot happen for a real caller: the linker bound its call to us because some
         * object defines the name. Say so once per function; the hook fails the call. */
        static _Atomic uint64_t warned;
        if (!(atomic_fetch_or(&warned, 1ull << id) & (1ull << id)))
            tlsm_warn("no real %s found for a caller in %s", name, caller ? caller->path : "?");
        return fwd;
    }
    fwd.target = tlsm_obj_of(fwd.fn);
    /* A patched entry is reached through its trampoline (the target stays the copy). */
    void *orig = tlsm_entry_original(fwd.fn);
    if (orig)
        fwd.fn = orig;
    if (!answer)
        return fwd;
    if (fwd.target) {
        atomic_fetch_or(&fwd.target->hooks_into, 1ull << id);
        tlsm_obj_describe(fwd.target);
    }
    if (caller)
        cache(id, caller->start, caller->end, fwd);
    else
        cache_anon(id, ra, fwd);
    return fwd;
}

struct tlsm_fwd tlsm_resolve_slow(enum tlsm_fn id, const void *ra)
{
    return resolve(id, ra, true);
}

struct tlsm_fwd tlsm_resolve_peek(enum tlsm_fn id, const void *ra)
{
    return resolve(id, ra, false);
}

/* Is [start, end) still one loaded object's range? */
static bool range_alive(uintptr_t start, uintptr_t end)
{
    struct dl_find_object f;
    return _dl_find_object((void *)start, &f) == 0 && (uintptr_t)f.dlfo_map_start == start &&
           (uintptr_t)f.dlfo_map_end == end;
}

/* Unpublish the entries forget() says, each only if its slot still holds it. The loader is
 * asked outside slot_lock (on glibc < 2.35 _dl_find_object takes the loader's list lock). */
static void forget_where(bool (*forget)(const struct tlsm_fwd_entry *))
{
    for (int i = 0; i < TLSM_FN_COUNT; i++) {
        struct tlsm_hook *h = &tlsm_hooks[i];
        int n = atomic_load_explicit(&h->nslots, memory_order_acquire);
        for (int k = 0; k < n; k++) {
            struct tlsm_fwd_entry *e = atomic_load_explicit(&h->slot[k], memory_order_acquire);
            if (!e || !forget(e))
                continue;
            pthread_mutex_lock(&slot_lock);
            struct tlsm_fwd_entry *want = e;
            atomic_compare_exchange_strong(&h->slot[k], &want, NULL);
            pthread_mutex_unlock(&slot_lock);
        }
    }
}

static bool gone_entry(const struct tlsm_fwd_entry *e)
{
    return (e->fwd.target && __atomic_load_n(&e->fwd.target->stale, __ATOMIC_ACQUIRE)) ||
           !range_alive(e->start, e->end);
}

/* After a dlclose: forget only the answers whose caller or target object went away (one
 * atomic store each), so a program that loads and unloads plugins in a loop keeps its
 * cache and its object registry small. */
_Atomic unsigned tlsm_resolve_gen;

/* Every per-thread memo of an object (obj.c, hook_evp.c) is dropped: called around every
 * dlopen and dlclose, since a link map and an address range may belong to another object once
 * one is unloaded and another loaded, before any dlclose hook ran after it. */
void tlsm_resolve_bump(void)
{
    atomic_fetch_add_explicit(&tlsm_resolve_gen, 1, memory_order_acq_rel);
}

void tlsm_resolve_invalidate(void)
{
    atomic_fetch_add_explicit(&tlsm_resolve_gen, 1, memory_order_acq_rel);
    tlsm_obj_mark_stale();
    forget_where(gone_entry);
}

/* Before a dlopen: answers cached for JIT pages go (an object may be mapped there now). */
static bool anon_entry(const struct tlsm_fwd_entry *e)
{
    struct dl_find_object f;
    return _dl_find_object((void *)e->start, &f) != 0;
}

void tlsm_resolve_before_dlopen(void)
{
    if (atomic_exchange(&anon_cached, false))
        forget_where(anon_entry);
}

/* fork(): held across it so the child never inherits this lock taken by a thread that
 * does not exist there (main.c takes every lock in one fixed order). */
void tlsm_resolve_atfork(bool take)
{
    if (take)
        pthread_mutex_lock(&slot_lock);
    else
        pthread_mutex_unlock(&slot_lock);
}

/* Hook sets travel as 64-bit masks (end.unfired, blind calls): one bit per hooks.def line. */
_Static_assert(TLSM_FN_COUNT <= 64, "hook masks are 64 bits: widen them before adding hooks");

void tlsm_hooks_write(struct tlsm_json *j, const char *key, uint64_t fns)
{
    tlsm_json_key(j, key);
    tlsm_json_nest_k(j, TLSM_AFTER_KEY);
    for (int id = 0; id < TLSM_FN_COUNT; id++)
        if (fns & (1ull << id))
            tlsm_json_item_safe(j, tlsm_hooks[id].name);
    tlsm_json_arr_end(j);
}
