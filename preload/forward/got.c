/* got.c: rewrite the GOT slots of objects an RTLD_DEEPBIND dlopen brought in. Such an object
 * looks its imports up in that dlopen's own dependency list before the global scope (glibc's
 * _dl_new_object puts the loader's search list first), so its SSL_* and EVP_* calls bind past
 * tlsmeter: PHP's curl.so -> libcurl.so.4 -> libssl.so.3, a vendor plugin with its own
 * OpenSSL. Right after such a dlopen returns, each object it loaded gets its GOT slots for
 * the hooked names (hooks.def families S, E, G, and dlclose) pointed at the hooks; the
 * function a slot held becomes that caller's pinned forward answer (tlsm_got_answer, asked by
 * resolve.c), so every call still reaches the copy the loader chose.
 *
 * Safety rules (docs/forwarding.md, "Locking and lifetime"):
 * - no tlsmeter lock is held across a loader call (dlopen, dlsym, dlinfo, dl_iterate_phdr):
 *   tlsm_got_lock guards this file's records only, around memory stores and mprotect;
 * - nothing is written into an object tlsmeter does not hold: the slots are written while the
 *   program's dlopen has not yet returned its handle, so nothing can unload the object;
 *   a patched object is never written again (no revert at dlclose: its patches die with it);
 * - a record is tied to one load of its object: after every dlclose and before every
 *   patching dlopen, records whose object is no longer listed die; a record found again at
 *   the same place counts only while its slots still hold the hooks and its targets live. */
#include "forward/got.h"
#include "forward/got_priv.h"
#include "forward/listing.h"
#include "base/elfdyn.h"
#include "base/json.h"
#include "trace/log.h"
#include "forward/obj.h"
#include "trace/thread.h"
#include "trace/trace.h"
#include "base/glibc_compat.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static struct got_obj *_Atomic chunks[MAX_CHUNKS];
/* Advanced by every publish: a listing taken before a record was born says nothing of it. */
_Atomic uint64_t tlsm_got_births;
_Atomic int tlsm_got_n; /* published records, in chunk order */
pthread_mutex_t tlsm_got_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_flag full_said = ATOMIC_FLAG_INIT;

/* The fwd facts of reused records (caller path, target copy, functions a call came through),
 * for the fwd events at exit; under tlsm_got_lock. */
#define MAX_FOLDS 256
static struct fold {
    char path[512];
    const struct tlsm_obj *to;
    uint64_t fns;
} folds[MAX_FOLDS];
static int nfolds;

static const char *gnames[TLSM_FN_COUNT];
static int gids[TLSM_FN_COUNT], ngnames;
/* An attach (got_attach.c) also takes the handshake parts, exec and _exit: nothing else
 * leads an already running program to the hooks. */
static const char *anames[TLSM_FN_COUNT];
static int aids[TLSM_FN_COUNT], nanames;
void *tlsm_got_hook_addr[TLSM_FN_COUNT];
static __typeof__(&dlopen) libc_dlopen;

struct got_obj *tlsm_got_rec(int i)
{
    struct got_obj *c = atomic_load_explicit(&chunks[i / CHUNK_OBJS], memory_order_acquire);
    return c ? &c[i % CHUNK_OBJS] : NULL;
}

static unsigned read_begin(const struct got_obj *g)
{
    return atomic_load_explicit(&g->seq, memory_order_acquire);
}

/* The fields read since read_begin returned s are one record's. */
static bool read_ok(const struct got_obj *g, unsigned s)
{
    atomic_thread_fence(memory_order_acquire);
    return !(s & 1) && atomic_load_explicit(&g->seq, memory_order_relaxed) == s;
}

/* Under tlsm_got_lock: g dies unless it was rewritten since read_begin returned s. */
static void kill_if(struct got_obj *g, unsigned s)
{
    pthread_mutex_lock(&tlsm_got_lock);
    if (atomic_load(&g->seq) == s && atomic_load(&g->state) == G_LIVE)
        atomic_store(&g->state, G_DEAD);
    pthread_mutex_unlock(&tlsm_got_lock);
}

/* Resolved on first use: a library constructor may dlopen before ours ran. */
void *tlsm_real_dlopen_fn(void)
{
    __typeof__(&dlopen) f = __atomic_load_n(&libc_dlopen, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (__typeof__(&dlopen))dlsym(RTLD_NEXT, "dlopen");
        __atomic_store_n(&libc_dlopen, f, __ATOMIC_RELEASE);
    }
    return (void *)f;
}

void *tlsm_real_dlopen(const char *file, int mode)
{
    __typeof__(&dlopen) f = (__typeof__(&dlopen))tlsm_real_dlopen_fn();
    return f ? f(file, mode) : NULL;
}

/* Our own definitions of the hooked names, from our own scope (the global one may have the
 * executable's first: node exports SSL_read). dlclose is among them: a DEEPBIND object's
 * own dlclose binds to libc past the hook, and the hook is what tells tlsmeter that
 * objects went away. Filled once; a second thread racing here computes the same. */
static bool init_names(void)
{
    Dl_info di;
    if (__atomic_load_n(&ngnames, __ATOMIC_ACQUIRE))
        return true;
    if (!dladdr((void *)&init_names, &di) || !di.dli_fname)
        return false;
    void *self = tlsm_real_dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!self)
        return false;
    static const char *names[TLSM_FN_COUNT], *names_a[TLSM_FN_COUNT];
    static int ids[TLSM_FN_COUNT], ids_a[TLSM_FN_COUNT];
    static void *addr[TLSM_FN_COUNT];
    int n = 0, na = 0;
    for (int id = 0; id < TLSM_FN_COUNT; id++) {
        char fam = tlsm_hooks[id].family;
        bool want = fam == 'S' || fam == 'E' || fam == 'G' || id == TLSM_FN_dlclose;
        bool want_a = want || fam == 'H' || fam == 'D';
        void *p = want_a ? dlsym(self, tlsm_hooks[id].name) : 0;
        if (!p || !tlsm_is_self(p))
            continue;
        addr[id] = p;
        names_a[na] = tlsm_hooks[id].name;
        ids_a[na++] = id;
        if (want) {
            names[n] = tlsm_hooks[id].name;
            ids[n++] = id;
        }
    }
    tlsm_real_dlclose(self);
    pthread_mutex_lock(&tlsm_got_lock);
    if (!ngnames && n) {
        memcpy(tlsm_got_hook_addr, addr, sizeof(addr));
        memcpy(gnames, names, sizeof(names));
        memcpy(gids, ids, sizeof(ids));
        memcpy(anames, names_a, sizeof(names_a));
        memcpy(aids, ids_a, sizeof(ids_a));
        nanames = na;
        __atomic_store_n(&ngnames, n, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&tlsm_got_lock);
    return __atomic_load_n(&ngnames, __ATOMIC_ACQUIRE) > 0;
}

void *tlsm_got_self_hook(enum tlsm_fn id)
{
    return init_names() && id >= 0 && id < TLSM_FN_COUNT ? tlsm_got_hook_addr[id] : NULL;
}

/* Records whose object is not in a complete listing died with it. */
static void sweep(const struct tlsm_listing *l)
{
    int n = atomic_load_explicit(&tlsm_got_n, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        struct got_obj *g = tlsm_got_rec(i);
        if (!g)
            continue;
        unsigned sq = read_begin(g);
        bool gone =
            atomic_load(&g->state) == G_LIVE && !tlsm_listing_find(l, g->base, g->phdr, g->name);
        if (gone && read_ok(g, sq))
            kill_if(g, sq);
    }
}

void tlsm_got_sweep(const struct tlsm_listing *l)
{
    sweep(l);
}

void tlsm_got_after_dlclose(void)
{
    struct tlsm_listing l = {0};
    if (atomic_load_explicit(&tlsm_got_n, memory_order_acquire) && tlsm_listing_take(&l))
        sweep(&l);
    tlsm_listing_free(&l);
}

/* Is [start, end) still the object lm (a target copy of a record)? */
static bool same_load(uintptr_t start, uintptr_t end, const struct link_map *lm)
{
    struct dl_find_object f;
    return _dl_find_object((void *)start, &f) == 0 && f.dlfo_link_map == lm &&
           (uintptr_t)f.dlfo_map_start == start && (uintptr_t)f.dlfo_map_end == end;
}

/* What the dlopen's scope binds name to, for the version the object asks for: dlsym on the
 * handle searches exactly the search list DEEPBIND put first. */
static void *scope_lookup(void *root, const char *name, const char *ver)
{
    void *p = ver ? dlvsym(root, name, ver) : NULL;
    if (!p)
        p = dlsym(root, name);
    return p && !tlsm_is_self(p) ? p : NULL;
}

struct collect {
    const int *ids; /* gids, or aids for an attach */
    struct got_obj *g;
    const struct tlsm_obj *o;
    void *root;
    uint64_t looked; /* ids whose target was looked up */
    int skipped;
    bool fresh; /* new since the listing before the dlopen: loaded with its scope */
};

/* One relocation of the object against a hooked name: keep it if its slot holds what the
 * scope defines (bound) or points into the object itself (a lazy PLT stub not called yet). */
static void collect_slot(int k, uintptr_t slot, uintptr_t value, void *arg)
{
    struct collect *c = arg;
    struct got_obj *g = c->g;
    int id = c->ids[k];
    uintptr_t cur = __atomic_load_n((uintptr_t *)slot, __ATOMIC_ACQUIRE);
    (void)value;
    if (tlsm_is_self((const void *)cur) || g->nslots >= MAX_GOT_SLOTS)
        return;
    if (!c->root) { /* an attach: the slot keeps going where the loader bound it */
        c->skipped += !tlsm_got_collect_bound(g, c->o, slot, cur, id);
        return;
    }
    if (!(c->looked & (1ull << id))) {
        c->looked |= 1ull << id;
        g->target[id] = scope_lookup(c->root, tlsm_hooks[id].name, c->o->want[id]);
    }
    uintptr_t t = (uintptr_t)g->target[id];
    /* A lazy stub is what the object's own scope will bind: the dlopen's scope only if this
     * dlopen loaded it, or if that scope and the global one agree. */
    bool stub = cur >= g->start && cur < g->end;
    if (!t || (cur != t && !stub) ||
        (stub && !c->fresh && t != (uintptr_t)dlsym(RTLD_NEXT, tlsm_hooks[id].name))) {
        c->skipped++;
        return;
    }
    g->slot[g->nslots++] = (struct got_slot){slot, cur, id};
    g->ids |= 1ull << id;
}

/* A live record of this load of the object: same place, slots still holding the hooks (a
 * reload at the same address has its own bindings there), targets still the same loads.
 * Records at the same place that fail this are dead: their object was unloaded. */
static bool patched_already(const struct got_obj *s)
{
    int n = atomic_load_explicit(&tlsm_got_n, memory_order_acquire);
    bool found = false;
    for (int i = 0; i < n; i++) {
        struct got_obj *g = tlsm_got_rec(i);
        if (!g)
            continue;
        unsigned sq = read_begin(g);
        if (atomic_load(&g->state) != G_LIVE || g->lm != s->lm || g->start != s->start ||
            g->base != s->base || g->phdr != s->phdr || g->name != s->name || !read_ok(g, sq))
            continue;
        /* The same place as the object s describes, which its dlopen holds: the slots of a
         * copy taken from one version of the record can be read there. */
        struct got_slot sl[MAX_GOT_SLOTS];
        int ns = g->nslots < MAX_GOT_SLOTS ? g->nslots : MAX_GOT_SLOTS;
        uint64_t ids = g->ids;
        memcpy(sl, g->slot, sizeof(sl[0]) * (size_t)ns);
        __typeof__(g->tgt) tgt;
        memcpy(tgt, g->tgt, sizeof(tgt));
        if (!read_ok(g, sq))
            continue;
        bool ok = true;
        for (int k = 0; k < ns && ok; k++)
            ok = __atomic_load_n((uintptr_t *)sl[k].addr, __ATOMIC_ACQUIRE) ==
                 (uintptr_t)tlsm_got_hook_addr[sl[k].id];
        for (int id = 0; id < TLSM_FN_COUNT && ok; id++)
            ok = !(ids & (1ull << id)) || !tgt[id].lm ||
                 same_load(tgt[id].start, tgt[id].end, tgt[id].lm);
        if (ok)
            found = true;
        else
            kill_if(g, sq);
    }
    return found;
}

/* Under tlsm_got_lock: the fwd facts of g kept (one fold per caller path and target copy). */
static void fold(const struct got_obj *g)
{
    uint64_t left = atomic_load(&g->used);
    while (left) {
        const struct tlsm_obj *to = g->to[__builtin_ctzll(left)];
        uint64_t fns = 0;
        for (int id = 0; id < TLSM_FN_COUNT; id++)
            if ((left & (1ull << id)) && g->to[id] == to)
                fns |= 1ull << id;
        left &= ~fns;
        int k = 0;
        while (k < nfolds && !(folds[k].to == to && !strcmp(folds[k].path, g->path)))
            k++;
        if (k == nfolds && nfolds < MAX_FOLDS) {
            folds[nfolds].to = to;
            snprintf(folds[nfolds].path, sizeof(folds[nfolds].path), "%s", g->path);
            nfolds++;
        }
        if (k < nfolds)
            folds[k].fns |= fns;
    }
}

/* A record to write s into, under tlsm_got_lock: a dead one (its fwd facts folded), else a new
 * one (the registry grown by one chunk when needed). seq is left odd: being written. */
static struct got_obj *claim(void)
{
    int n = atomic_load_explicit(&tlsm_got_n, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        struct got_obj *g = tlsm_got_rec(i);
        if (g && atomic_load(&g->state) == G_DEAD) {
            fold(g);
            atomic_store_explicit(&g->seq, atomic_load(&g->seq) + 1, memory_order_relaxed);
            atomic_thread_fence(memory_order_release);
            return g;
        }
    }
    if (n >= MAX_CHUNKS * CHUNK_OBJS)
        return NULL;
    struct got_obj *c = atomic_load_explicit(&chunks[n / CHUNK_OBJS], memory_order_relaxed);
    if (!c) {
        void *p = mmap(NULL, sizeof(struct got_obj) * CHUNK_OBJS, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        c = p;
        atomic_store_explicit(&chunks[n / CHUNK_OBJS], c, memory_order_release);
    }
    struct got_obj *g = &c[n % CHUNK_OBJS];
    atomic_store(&g->seq, 1);
    atomic_store_explicit(&tlsm_got_n, n + 1, memory_order_release);
    return g;
}

/* Publish s with its slots rewritten. The object is held by the dlopen that has not returned
 * yet, so the stores cannot land in an unmapped page; tlsm_got_lock orders them with another
 * thread patching the same object (a second dlopen of it). */
static struct got_obj *publish(const struct got_obj *s, const ElfW(Phdr) * ph, int phnum)
{
    pthread_mutex_lock(&tlsm_got_lock);
    struct got_obj *g = claim();
    if (g) {
        unsigned sq = atomic_load(&g->seq); /* odd */
        memcpy((void *)g, s, offsetof(struct got_obj, state));
        int done = 0;
        for (int i = 0; i < g->nslots; i++) {
            struct got_slot *sl = &g->slot[i];
            if (__atomic_load_n((uintptr_t *)sl->addr, __ATOMIC_ACQUIRE) == sl->orig &&
                tlsm_got_write_ptr(ph, phnum, g->base, sl->addr,
                                   (uintptr_t)tlsm_got_hook_addr[sl->id]))
                done++;
        }
        atomic_store(&g->used, 0);
        g->born = atomic_fetch_add(&tlsm_got_births, 1) + 1;
        atomic_store(&g->state, done ? G_LIVE : G_DEAD);
        atomic_store_explicit(&g->seq, sq + 1, memory_order_release);
    }
    pthread_mutex_unlock(&tlsm_got_lock);
    return g;
}

/* One object the dlopen loaded: its slots and their targets found (dl* calls, no lock held),
 * then published with the slots rewritten. */
static void patch_object(void *root, const struct tlsm_listed *obj, bool fresh)
{
    struct got_obj s;
    struct dl_find_object f;
    uintptr_t at = 0;
    for (int i = 0; i < obj->phnum && !at; i++)
        if (obj->ph[i].p_type == PT_LOAD)
            at = obj->base + obj->ph[i].p_vaddr;
    if (!at || _dl_find_object((void *)at, &f) != 0 || tlsm_is_self((void *)at))
        return;
    struct tlsm_obj *o = tlsm_obj_of((void *)at);
    if (!o || o->lm != f.dlfo_link_map || o->start != (uintptr_t)f.dlfo_map_start)
        return; /* not this load's entry (cannot happen once memos are dropped at dlopen) */
    memset(&s, 0, sizeof(s));
    s.lm = f.dlfo_link_map;
    s.start = (uintptr_t)f.dlfo_map_start;
    s.end = (uintptr_t)f.dlfo_map_end;
    s.base = obj->base;
    s.phdr = obj->phdr;
    s.phnum = obj->phnum;
    s.name = obj->name;
    s.root = root;
    snprintf(s.path, sizeof(s.path), "%s", o->path);
    if (patched_already(&s))
        return;
    struct collect c = {root ? gids : aids, &s, o, root, 0, 0, fresh};
    tlsm_elf_slots(s.lm, root ? gnames : anames, root ? ngnames : nanames, collect_slot, &c);
    if (c.skipped && !root)
        tlsm_warn("%s: %d GOT slot(s) for hooked names hold neither a definition of the name nor "
                  "a stub the global scope binds: left alone, those calls are not traced",
                  o->path, c.skipped);
    else if (c.skipped)
        tlsm_warn("%s: %d GOT slot(s) for hooked names hold neither what its RTLD_DEEPBIND scope "
                  "defines nor its own PLT stub: left alone, those calls are not traced",
                  o->path, c.skipped);
    if (!s.nslots)
        return;
    for (int id = 0; id < TLSM_FN_COUNT; id++) {
        struct tlsm_obj *t =
            (s.ids & (1ull << id)) && id != TLSM_FN_dlclose ? tlsm_obj_of(s.target[id]) : NULL;
        s.to[id] = t;
        if (t) {
            s.tgt[id].start = t->start;
            s.tgt[id].end = t->end;
            s.tgt[id].lm = t->lm;
        }
    }
    if (!publish(&s, obj->ph, obj->phnum)) {
        if (!atomic_flag_test_and_set(&full_said))
            tlsm_warn("%s binds past the hooks (RTLD_DEEPBIND) but %d loads were patched "
                      "already: its calls and those of objects loaded after it that way are "
                      "not traced",
                      o->path, MAX_CHUNKS * CHUNK_OBJS);
        return;
    }
    /* The copies it calls into are reached through these slots: say so in their lib event. */
    for (int id = 0; id < TLSM_FN_COUNT; id++)
        if (s.to[id])
            atomic_fetch_or(&s.to[id]->reach, TLSM_REACH_GOT);
}

/* The GOT slots of one object a RTLD_DEEPBIND dlopen's scope covers (held by that dlopen);
 * h NULL: an attach, every thread stopped (got_attach.c). */
void tlsm_got_patch_held(void *h, const struct tlsm_listed *obj, bool fresh)
{
    if (init_names())
        patch_object(h, obj, fresh);
}

/* The target a patched caller's slot held, checked to be the same loads still (a record
 * not yet swept must not send a call into an unloaded copy). Lock-free. */
void *tlsm_got_answer(enum tlsm_fn id, const struct tlsm_obj *caller)
{
    int n = atomic_load_explicit(&tlsm_got_n, memory_order_acquire);
    for (int i = n - 1; i >= 0; i--) {
        struct got_obj *g = tlsm_got_rec(i);
        if (!g)
            continue;
        unsigned sq = read_begin(g);
        bool match = g->lm == caller->lm && g->start == caller->start && g->end == caller->end &&
                     atomic_load(&g->state) == G_LIVE && (g->ids & (1ull << id));
        void *target = g->target[id];
        uintptr_t ts = g->tgt[id].start, te = g->tgt[id].end;
        const struct link_map *tlm = g->tgt[id].lm;
        if (!read_ok(g, sq) || !match)
            continue;
        if (!tlm || !same_load(ts, te, tlm))
            return NULL;
        atomic_fetch_or(&g->used, 1ull << id);
        return target;
    }
    return NULL;
}

bool tlsm_got_patched(const struct tlsm_obj *caller)
{
    int n = atomic_load_explicit(&tlsm_got_n, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        struct got_obj *g = tlsm_got_rec(i);
        if (!g)
            continue;
        unsigned sq = read_begin(g);
        bool match = g->lm == caller->lm && g->start == caller->start &&
                     (g->ids & ~(1ull << TLSM_FN_dlclose));
        if (match && read_ok(g, sq))
            return true;
    }
    return false;
}

/* fork(): see main.c. */
void tlsm_got_atfork(bool take)
{
    if (take)
        pthread_mutex_lock(&tlsm_got_lock);
    else
        pthread_mutex_unlock(&tlsm_got_lock);
}

/* One fwd event (caller, target copy, functions) with reach "got". */
static void write_fwd(const char *from, const struct tlsm_obj *to, uint64_t fns)
{
    char line[TLSM_LINE_MAX], list[1024];
    size_t n = (size_t)snprintf(list, sizeof(list), "[");
    for (int id = 0; id < TLSM_FN_COUNT && n < sizeof(list); id++)
        if (fns & (1ull << id))
            n += (size_t)snprintf(list + n, sizeof(list) - n, "%s\"%s\"", n > 1 ? "," : "",
                                  tlsm_hooks[id].name);
    if (n >= sizeof(list) - 1)
        return;
    snprintf(list + n, sizeof(list) - n, "]");
    struct tlsm_json j;
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(FWD));
    tlsm_json_str(&j, "from", from);
    tlsm_json_int(&j, "lib", to->lib_id);
    tlsm_json_str(&j, "to", to->path);
    tlsm_json_raw(&j, "fns", list);
    tlsm_json_str(&j, "reach", "got");
    size_t len = tlsm_json_end(&j, line);
    if (len)
        tlsm_trace_line(line, len);
}

/* At exit: the fwd events of every patched caller (also of those unloaded since: PHP closes
 * its extensions before exit, and the forwarding cache forgets them), for the functions a
 * call came through, one per caller path and target copy (a plugin reloaded many times gets
 * one line per copy it reached). */
void tlsm_got_write_fwd(void)
{
    pthread_mutex_lock(&tlsm_got_lock);
    int n = atomic_load_explicit(&tlsm_got_n, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        struct got_obj *g = tlsm_got_rec(i);
        if (g && atomic_load(&g->state)) {
            fold(g);
            atomic_store(&g->used, 0);
        }
    }
    int m = nfolds;
    pthread_mutex_unlock(&tlsm_got_lock);
    for (int k = 0; k < m; k++)
        if (folds[k].to && folds[k].to->lib_id)
            write_fwd(folds[k].path, folds[k].to, folds[k].fns);
}
