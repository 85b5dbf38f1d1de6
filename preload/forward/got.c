/* got.c: issue 15, technique 1. An object that an RTLD_DEEPBIND dlopen brought in looks its
 * imports up in that dlopen's own dependency list before the global scope (glibc's
 * _dl_new_object puts the loader's search list first), so its SSL_* and EVP_* calls bind
 * past tlsmeter: PHP's curl.so -> libcurl.so.4 -> libssl.so.3, a vendor plugin with its own
 * OpenSSL. Right after such a dlopen returns, each new object's GOT slots for the hooked
 * names (hooks.def families S, E, G) are pointed at the hooks, and the function the slot
 * held becomes that caller's pinned forward answer (tlsm_got_answer, asked by resolve.c),
 * so every call still reaches the copy the loader chose. A slot is rewritten only when it
 * holds what the dlopen's scope defines for its name and version (or a lazy PLT stub of the
 * object itself), once per object; dlclose puts the old values back. */
#include "forward/got.h"
#include "base/elfdyn.h"
#include "base/json.h"
#include "trace/log.h"
#include "forward/obj.h"
#include "trace/thread.h"
#include "trace/trace.h"
#include "base/glibc_compat.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_GOT_OBJS  32
#define MAX_GOT_SLOTS 128
#define MAX_SEEN      1024
#define MAX_NEW       32

struct got_slot {
    uintptr_t addr, orig;
    int id;
};

/* One patched object. Entries are append-only; a dead one (unloaded) is never reused. */
struct got_obj {
    const struct link_map *lm;
    uintptr_t start, end;
    const ElfW(Phdr) * phdr; /* its program headers: which pages RELRO made read-only */
    int phnum;
    void *root; /* handle of the dlopen that loaded it */
    char path[512];
    void *target[TLSM_FN_COUNT];
    uint64_t ids;          /* hook ids with at least one rewritten slot */
    _Atomic uint64_t used; /* ids a call came through (its fwd event, even once unloaded) */
    struct tlsm_obj *to[TLSM_FN_COUNT];
    struct got_slot slot[MAX_GOT_SLOTS];
    int nslots;
    bool applied;
    _Atomic bool dead;
};
static struct got_obj gobjs[MAX_GOT_OBJS];
static _Atomic int ngobjs;
static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *gnames[TLSM_FN_COUNT];
static int gids[TLSM_FN_COUNT], ngnames;
static void *hook_addr[TLSM_FN_COUNT];
static __typeof__(&dlopen) libc_dlopen;

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
 * executable's first: node exports SSL_read). */
static bool init_names(void)
{
    Dl_info di;
    if (ngnames)
        return true;
    if (!dladdr((void *)&init_names, &di) || !di.dli_fname)
        return false;
    void *self = tlsm_real_dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!self)
        return false;
    int n = 0;
    for (int id = 0; id < TLSM_FN_COUNT; id++) {
        char fam = tlsm_hooks[id].family;
        void *p = (fam == 'S' || fam == 'E' || fam == 'G') ? dlsym(self, tlsm_hooks[id].name) : 0;
        if (p && tlsm_is_self(p)) {
            hook_addr[id] = p;
            gnames[n] = tlsm_hooks[id].name;
            gids[n++] = id;
        }
    }
    tlsm_real_dlclose(self);
    ngnames = n;
    return n > 0;
}

void *tlsm_got_self_hook(enum tlsm_fn id)
{
    return init_names() && id >= 0 && id < TLSM_FN_COUNT ? hook_addr[id] : NULL;
}

struct snap {
    const void *phdr[MAX_SEEN];
    int n;
};

static int snap_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct snap *s = arg;
    (void)size;
    if (s->n < MAX_SEEN)
        s->phdr[s->n++] = info->dlpi_phdr;
    return 0;
}

struct newobjs {
    const struct snap *before;
    struct dl_phdr_info list[MAX_NEW];
    int n;
};

static int new_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct newobjs *s = arg;
    (void)size;
    for (int i = 0; i < s->before->n; i++)
        if (s->before->phdr[i] == info->dlpi_phdr)
            return 0;
    if (s->n < MAX_NEW && info->dlpi_phnum && info->dlpi_name &&
        strncmp(info->dlpi_name, "/proc/self/fd/", 14))
        s->list[s->n++] = *info;
    return 0;
}

static void apply(struct got_obj *g, bool hooks)
{
    for (int i = 0; i < g->nslots; i++) {
        struct got_slot *s = &g->slot[i];
        tlsm_got_write_ptr(g->phdr, g->phnum, g->lm->l_addr, s->addr,
                           hooks ? (uintptr_t)hook_addr[s->id] : s->orig);
    }
    g->applied = hooks;
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
    struct got_obj *g;
    const struct tlsm_obj *o;
    void *root;
    uint64_t looked; /* ids whose target was looked up */
    int skipped;
};

/* One relocation of the object against a hooked name: keep it if its slot holds what the
 * scope defines (bound) or points into the object itself (a lazy PLT stub not called yet). */
static void collect_slot(int k, uintptr_t slot, uintptr_t value, void *arg)
{
    struct collect *c = arg;
    struct got_obj *g = c->g;
    int id = gids[k];
    uintptr_t cur = __atomic_load_n((uintptr_t *)slot, __ATOMIC_ACQUIRE);
    (void)value;
    if (tlsm_is_self((const void *)cur) || g->nslots >= MAX_GOT_SLOTS)
        return;
    if (!(c->looked & (1ull << id))) {
        c->looked |= 1ull << id;
        g->target[id] = scope_lookup(c->root, tlsm_hooks[id].name, c->o->want[id]);
    }
    uintptr_t t = (uintptr_t)g->target[id];
    if (!t || (cur != t && (cur < g->start || cur >= g->end))) {
        c->skipped++;
        return;
    }
    g->slot[g->nslots++] = (struct got_slot){slot, cur, id};
    g->ids |= 1ull << id;
}

static bool patched_already(const struct link_map *lm)
{
    int n = atomic_load_explicit(&ngobjs, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (gobjs[i].lm == lm && !atomic_load(&gobjs[i].dead))
            return true;
    return false;
}

/* Prepare one new object in a scratch entry (dl* calls happen here, outside the lock),
 * then publish it with its slots rewritten. */
static void patch_object(void *root, const struct dl_phdr_info *info)
{
    static struct got_obj scratch; /* under patch_lock: only tlsm_dlopen_patch calls this */
    struct dl_find_object f;
    uintptr_t at = info->dlpi_addr + info->dlpi_phdr[0].p_vaddr;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            at = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            break;
        }
    if (_dl_find_object((void *)at, &f) != 0 || tlsm_is_self((void *)at) ||
        patched_already(f.dlfo_link_map))
        return;
    struct tlsm_obj *o = tlsm_obj_of((void *)at);
    if (!o)
        return;
    memset(&scratch, 0, sizeof(scratch));
    struct got_obj *s = &scratch;
    s->lm = f.dlfo_link_map;
    s->start = (uintptr_t)f.dlfo_map_start;
    s->end = (uintptr_t)f.dlfo_map_end;
    s->phdr = info->dlpi_phdr;
    s->phnum = info->dlpi_phnum;
    s->root = root;
    snprintf(s->path, sizeof(s->path), "%s", o->path);
    struct collect c = {s, o, root, 0, 0};
    tlsm_elf_slots(s->lm, gnames, ngnames, collect_slot, &c);
    if (c.skipped)
        tlsm_warn("%s: %d GOT slot(s) for hooked names hold neither what its RTLD_DEEPBIND scope "
                  "defines nor its own PLT stub: left alone, those calls are not traced",
                  o->path, c.skipped);
    if (!s->nslots)
        return;
    pthread_mutex_lock(&got_lock);
    int n = atomic_load_explicit(&ngobjs, memory_order_relaxed);
    if (n < MAX_GOT_OBJS) {
        gobjs[n] = *s;
        apply(&gobjs[n], true);
        atomic_store_explicit(&ngobjs, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&got_lock);
    if (n >= MAX_GOT_OBJS) {
        tlsm_warn("%s binds past the hooks (RTLD_DEEPBIND) but %d objects were patched already: "
                  "its calls are not traced",
                  o->path, MAX_GOT_OBJS);
        return;
    }
    /* The copies it calls into are reached through these slots: say so in their lib event. */
    for (int id = 0; id < TLSM_FN_COUNT; id++) {
        struct tlsm_obj *t = (gobjs[n].ids & (1ull << id)) ? tlsm_obj_of(gobjs[n].target[id]) : 0;
        gobjs[n].to[id] = t;
        if (t)
            atomic_fetch_or(&t->reach, TLSM_REACH_GOT);
    }
}

/* One patching dlopen at a time, held across the real dlopen so that the objects new after
 * it are this dlopen's. A constructor it runs may fork: then this thread holds it already. */
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread bool holds_patch_lock __attribute__((tls_model("initial-exec")));
static bool atfork_took_patch;

void *tlsm_got_dlopen(const char *file, int mode)
{
    static struct snap before; /* under patch_lock */
    static struct newobjs after;
    /* A constructor of what this dlopen loads dlopens again: the outer call's scan after its
     * dlopen sees those objects too (and checks each slot against its own scope). */
    if (holds_patch_lock)
        return tlsm_real_dlopen(file, mode);
    pthread_mutex_lock(&patch_lock);
    holds_patch_lock = true;
    before.n = 0;
    dl_iterate_phdr(snap_cb, &before);
    void *h = tlsm_real_dlopen(file, mode);
    int saved = errno;
    if (h && before.n < MAX_SEEN && init_names()) {
        tlsm_th.guard++;
        after.before = &before;
        after.n = 0;
        dl_iterate_phdr(new_cb, &after);
        for (int i = 0; i < after.n; i++)
            patch_object(h, &after.list[i]);
        dlerror(); /* our lookups' misses are not the program's: its dlopen succeeded */
        tlsm_th.guard--;
    }
    holds_patch_lock = false;
    pthread_mutex_unlock(&patch_lock);
    errno = saved;
    return h;
}

void *tlsm_got_answer(enum tlsm_fn id, const struct tlsm_obj *caller)
{
    int n = atomic_load_explicit(&ngobjs, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        struct got_obj *g = &gobjs[i];
        if (g->lm == caller->lm && g->start == caller->start && !atomic_load(&g->dead) &&
            (g->ids & (1ull << id))) {
            atomic_fetch_or(&g->used, 1ull << id);
            return g->target[id];
        }
    }
    return NULL;
}

bool tlsm_got_patched(const struct tlsm_obj *caller)
{
    int n = atomic_load_explicit(&ngobjs, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (gobjs[i].lm == caller->lm && gobjs[i].start == caller->start)
            return true;
    return false;
}

void tlsm_got_before_dlclose(void *handle)
{
    pthread_mutex_lock(&got_lock);
    int n = atomic_load_explicit(&ngobjs, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        if (gobjs[i].root == handle && gobjs[i].applied && !atomic_load(&gobjs[i].dead))
            apply(&gobjs[i], false);
    pthread_mutex_unlock(&got_lock);
}

/* Still the same loaded object (its range maps to its link_map)? */
static bool alive(const struct got_obj *g)
{
    struct dl_find_object f;
    return _dl_find_object((void *)g->start, &f) == 0 && f.dlfo_link_map == g->lm &&
           (uintptr_t)f.dlfo_map_start == g->start && (uintptr_t)f.dlfo_map_end == g->end;
}

void tlsm_got_after_dlclose(void *handle)
{
    pthread_mutex_lock(&got_lock);
    int n = atomic_load_explicit(&ngobjs, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        struct got_obj *g = &gobjs[i];
        if (g->root != handle || g->applied || atomic_load(&g->dead))
            continue;
        if (alive(g))
            apply(g, true); /* another handle keeps it loaded */
        else
            atomic_store(&g->dead, true);
    }
    pthread_mutex_unlock(&got_lock);
}

/* fork(): see main.c. */
void tlsm_got_atfork(bool take)
{
    if (take) {
        atfork_took_patch = !holds_patch_lock;
        if (atfork_took_patch)
            pthread_mutex_lock(&patch_lock);
        pthread_mutex_lock(&got_lock);
    } else {
        pthread_mutex_unlock(&got_lock);
        if (atfork_took_patch)
            pthread_mutex_unlock(&patch_lock);
    }
}

/* One fwd event (caller, target copy, functions) with reach "got". */
static void write_fwd(const struct got_obj *g, const struct tlsm_obj *to, uint64_t fns)
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
    tlsm_json_str(&j, "from", g->path);
    tlsm_json_int(&j, "lib", to->lib_id);
    tlsm_json_str(&j, "to", to->path);
    tlsm_json_raw(&j, "fns", list);
    tlsm_json_str(&j, "reach", "got");
    size_t len = tlsm_json_end(&j, line);
    if (len)
        tlsm_trace_line(line, len);
}

/* At exit: the fwd events of every patched caller (also of those unloaded since: PHP closes
 * its extensions before exit, and the forwarding cache forgets them), for the functions
 * a call came through, one per target copy. */
void tlsm_got_write_fwd(void)
{
    int n = atomic_load_explicit(&ngobjs, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        const struct got_obj *g = &gobjs[i];
        uint64_t left = atomic_load(&g->used), fns;
        while (left) {
            const struct tlsm_obj *to = g->to[__builtin_ctzll(left)];
            fns = 0;
            for (int id = 0; id < TLSM_FN_COUNT; id++)
                if ((left & (1ull << id)) && g->to[id] == to)
                    fns |= 1ull << id;
            left &= ~fns;
            if (to && to->lib_id)
                write_fwd(g, to, fns);
        }
    }
}
