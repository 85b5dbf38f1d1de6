/* stack.c: libunwind's unw_backtrace with a per-thread cache. Samples are rare by design
 * (1 in N per call site), so interning takes a mutex; the unsampled path is one table
 * lookup and one atomic increment. Frames inside libtlsmeter.so are dropped. */
#define UNW_LOCAL_ONLY
#include "core/stack.h"
#include "base/clock.h"
#include "trace/config.h"
#include "base/glibc_compat.h"
#include "base/json.h"
#include "trace/log.h"
#include "forward/resolve.h"
#include "base/table.h"
#include "trace/thread.h"
#include "trace/trace.h"
#include "base/caps.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEPTH   48
#define MAX_STACKS  65536
#define MAX_MODULES 256

struct site_state {
    _Atomic uint64_t events;
};

struct stack_entry {
    uint64_t hash;
    uint32_t id;
    uint16_t depth;
    uintptr_t frames[MAX_DEPTH];
};

static struct tlsm_table sites;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct stack_entry *stacks; /* open addressing by hash, MAX_STACKS slots */
static uint32_t nstacks;
static const struct link_map *modules[MAX_MODULES];
static int nmodules;

/* libunwind is loaded only when stacks are asked for: a board needs nothing but
 * libtlsmeter.so (and glibc) to trace, and libunwind.so.8 only for TLSMETER_STACKS.
 * The names are libunwind's macro-expanded ones (_ULx86_64_..., _ULaarch64_...). */
#define TLSM_STR(x)  #x
#define TLSM_XSTR(x) TLSM_STR(x)
static __typeof__(&unw_backtrace) unwind_backtrace;

static bool load_libunwind(void)
{
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        tlsm_warn("TLSMETER_STACKS needs libunwind.so.8, which is not installed; no stacks");
        return false;
    }
    __typeof__(&unw_set_caching_policy) policy =
        (__typeof__(policy))dlsym(h, TLSM_XSTR(unw_set_caching_policy));
    unw_addr_space_t *space = dlsym(h, TLSM_XSTR(unw_local_addr_space));
    unwind_backtrace = (__typeof__(unwind_backtrace))dlsym(h, "unw_backtrace");
    if (policy && space)
        policy(*space, UNW_CACHE_PER_THREAD);
    return unwind_backtrace != NULL;
}

void tlsm_stack_init(void)
{
    if (!tlsm_cfg.stacks || !load_libunwind())
        return;
    tlsm_table_init(&sites, "call sites", 4096, sizeof(struct site_state));
    struct tlsm_table st;
    if (tlsm_table_init(&st, "stacks", MAX_STACKS / 8, sizeof(struct stack_entry) * 8) == 0)
        stacks = (struct stack_entry *)st.states;
}

uint64_t tlsm_stack_count(void)
{
    return nstacks;
}

static bool due(const void *site_addr, enum tlsm_stack_kind kind)
{
    /* Table keys 0 and 1 are reserved (empty, deleted): shift past them. */
    const void *site = (const void *)((((uintptr_t)site_addr) << 1 | kind) + 2);
    struct site_state *s = tlsm_table_get(&sites, site);
    if (!s) {
        pthread_mutex_lock(&lock); /* sites are shared between threads: insert once */
        s = tlsm_table_get(&sites, site);
        if (!s)
            s = tlsm_table_put(&sites, site);
        pthread_mutex_unlock(&lock);
        if (!s)
            return false;
    }
    uint64_t n = atomic_fetch_add_explicit(&s->events, 1, memory_order_relaxed);
    return n % tlsm_cfg.stacks == 0;
}

/* Lock held. Module index of addr, writing a module event the first time. */
static int module_of(uintptr_t addr, uintptr_t *off)
{
    struct dl_find_object f;
    if (_dl_find_object((void *)addr, &f) != 0)
        return *off = addr, -1;
    *off = addr - f.dlfo_link_map->l_addr;
    for (int i = 0; i < nmodules; i++)
        if (modules[i] == f.dlfo_link_map)
            return i;
    if (nmodules == MAX_MODULES) /* past the cap: unnamed, so the absolute address */
        return *off = addr, -1;
    const struct link_map *lm = f.dlfo_link_map;
    modules[nmodules] = lm;
    char line[1024], base[24], bid[80], exe[512];
    const char *path = lm->l_name;
    if (!path[0]) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 0] = 0;
        path = exe;
    }
    snprintf(base, sizeof(base), "0x%lx", (unsigned long)lm->l_addr);
    tlsm_build_id(lm, bid, sizeof(bid));
    struct tlsm_json j;
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(MODULE));
    tlsm_json_int(&j, "id", nmodules);
    tlsm_json_str(&j, "path", path);
    tlsm_json_str(&j, "base", base);
    tlsm_json_str(&j, "build_id", bid);
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
    return nmodules++;
}

static void write_stack(const struct stack_entry *e)
{
    char line[TLSM_LINE_MAX]; /* MAX_DEPTH frames of at most 30 bytes fit */
    struct tlsm_json j;
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(STACK));
    tlsm_json_int(&j, "id", e->id);
    tlsm_json_arr(&j, "frames");
    for (int i = 0; i < e->depth; i++) {
        char off[24];
        uintptr_t o;
        int m = module_of(e->frames[i], &o);
        snprintf(off, sizeof(off), "0x%lx", (unsigned long)o);
        tlsm_json_arr_item(&j); /* [module, "0xOFFSET"] */
        tlsm_json_item_int(&j, m);
        tlsm_json_item_safe(&j, off);
        tlsm_json_arr_end(&j);
    }
    tlsm_json_arr_end(&j);
    size_t len = tlsm_json_end(&j, line);
    if (len)
        tlsm_trace_line(line, len);
}

static uint64_t hash_frames(const uintptr_t *f, int n)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        h = (h ^ f[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* Lock held. */
static uint32_t intern(const uintptr_t *f, int n)
{
    uint64_t h = hash_frames(f, n);
    for (uint32_t p = 0, i = (uint32_t)h & (MAX_STACKS - 1); p < 64;
         p++, i = (i + 1) & (MAX_STACKS - 1)) {
        struct stack_entry *e = &stacks[i];
        if (!e->hash) {
            if (nstacks >= MAX_STACKS / 2)
                return 0;
            e->hash = h;
            e->id = ++nstacks;
            e->depth = (uint16_t)n;
            memcpy(e->frames, f, (size_t)n * sizeof(*f));
            write_stack(e);
            return e->id;
        }
        if (e->hash == h && e->depth == n && !memcmp(e->frames, f, (size_t)n * sizeof(*f)))
            return e->id;
    }
    return 0;
}

uint32_t tlsm_stack_sample(const void *site, enum tlsm_stack_kind kind)
{
    if (!tlsm_cfg.stacks || !stacks || !due(site, kind))
        return 0;
    void *raw[MAX_DEPTH + 8];
    uintptr_t f[MAX_DEPTH];
    tlsm_th.guard++;
    int n = unwind_backtrace(raw, MAX_DEPTH + 8), k = 0;
    tlsm_th.guard--;
    for (int i = 0; i < n && k < MAX_DEPTH; i++)
        if (!tlsm_is_self(raw[i]))
            f[k++] = (uintptr_t)raw[i];
    if (!k)
        return 0;
    pthread_mutex_lock(&lock);
    uint32_t id = intern(f, k);
    pthread_mutex_unlock(&lock);
    return id;
}

/* fork(): held across it so the child never inherits this lock taken by a thread that
 * does not exist there (main.c takes every lock in one fixed order). */
void tlsm_stack_atfork(bool take)
{
    if (take)
        pthread_mutex_lock(&lock);
    else
        pthread_mutex_unlock(&lock);
}
