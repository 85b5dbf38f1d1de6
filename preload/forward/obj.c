/* obj.c: the registry of objects (append-only, grown in chunks; entries outlive dlclose as
 * stale) and the lib event of each OpenSSL instance. */
#include "base/tls.h"
#include "forward/obj.h"
#include "forward/blind.h"
#include "base/caps.h"
#include "base/clock.h"
#include "base/elfdyn.h"
#include "base/glibc_compat.h"
#include "base/json.h"
#include "trace/log.h"
#include "trace/thread.h"
#include "trace/trace.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_OBJS 128
#define MAX_CHUNKS 128 /* 16384 objects: a program reloading plugins gets a new one each time */

/* Append-only under obj_lock; readers see only fully built entries (nobjs is published
 * after the entry is written). Entries are never freed or reused (pointers to them are kept
 * by the forwarding caches and records); the registry grows by one mapped chunk at a time.
 * No loader call ever happens under this lock (dlsym and dlopen take the loader lock, and a
 * constructor running under the loader lock may call a hook; on glibc < 2.35 even
 * _dl_find_object takes it). */
static struct tlsm_obj first_chunk[CHUNK_OBJS]; /* in .bss: most programs need no more */
static struct tlsm_obj *_Atomic chunks[MAX_CHUNKS] = {first_chunk};
static _Atomic int nobjs;
static pthread_mutex_t obj_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_flag full_said = ATOMIC_FLAG_INIT;

/* Stale entries no long-lived pointer refers to (never described, never reached), to reuse: a
 * program that reloads plugins gets a new object each time. A thread may still hold one for
 * a moment (a lookup that found it just before it was marked, for a reload of the same file
 * at the same place): an entry is reused only after a quarantine of QUARANTINE_NS and
 * QUARANTINE_GENS dlopens/dlcloses, first in, first out. Under obj_lock. */
#define MAX_FREE        8192
#define QUARANTINE_NS   2000000000ull
#define QUARANTINE_GENS 64u
static struct freed {
    int id;
    unsigned gen;
    uint64_t ns;
} freed[MAX_FREE];
static int free_head, free_n;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The oldest freed entry whose quarantine is over, -1 if none. */
static int reusable(void)
{
    if (!free_n)
        return -1;
    const struct freed *f = &freed[free_head];
    unsigned gen = atomic_load_explicit(&tlsm_resolve_gen, memory_order_acquire);
    if (gen - f->gen < QUARANTINE_GENS || mono_ns() - f->ns < QUARANTINE_NS)
        return -1;
    free_head = (free_head + 1) % MAX_FREE;
    free_n--;
    return f->id;
}

/* Entry i (< nobjs), through its chunk. */
#define objs(i)                                                                                    \
    (atomic_load_explicit(&chunks[(i) / CHUNK_OBJS], memory_order_acquire)[(i) % CHUNK_OBJS])

static const char *const hook_names[TLSM_FN_COUNT] = {
#define X(name, fam, req) #name,
#include "base/hooks.def"
#undef X
};

static void obj_path(struct tlsm_obj *o)
{
    const char *n = o->lm->l_name;
    if (n && *n) {
        snprintf(o->path, sizeof(o->path), "%s", n);
        return;
    }
    ssize_t len = readlink("/proc/self/exe", o->path, sizeof(o->path) - 1);
    o->path[len > 0 ? len : 0] = 0;
}

/* The live entry of the object f describes. A link_map is freed at unload and its memory
 * reused for the next object: an entry whose range or name differs is a gone object's that
 * no dlclose has marked yet (another thread's, or a dlclose tlsmeter did not see), and its
 * version strings point into unmapped memory. It is not this object's. */
static struct tlsm_obj *find_obj(const struct dl_find_object *f)
{
    int n = atomic_load_explicit(&nobjs, memory_order_acquire);
    const char *name = f->dlfo_link_map->l_name;
    for (int i = 0; i < n; i++) {
        struct tlsm_obj *o = &objs(i);
        if (!__atomic_load_n(&o->stale, __ATOMIC_ACQUIRE) && o->lm == f->dlfo_link_map &&
            o->start == (uintptr_t)f->dlfo_map_start && o->end == (uintptr_t)f->dlfo_map_end &&
            (!name || !name[0] || !strcmp(name, o->path)))
            return o;
    }
    return NULL;
}

/* Per thread, the object the last lookup found and its range: the callers that ask (libssl
 * keying a context, 4 times per TLS 1.3 connection) are nearly always the same object, and
 * _dl_find_object reads the loader's tables, cold by then. Valid until a dlclose
 * (tlsm_resolve_gen moves before objects are marked stale) and while the entry is not stale. */
struct obj_memo {
    uintptr_t start, end;
    struct tlsm_obj *o;
    unsigned gen;
};
static __thread struct obj_memo obj_memo TLSM_IE;

static struct tlsm_obj *memo(struct tlsm_obj *o, unsigned gen)
{
    if (o)
        obj_memo = (struct obj_memo){o->start, o->end, o, gen};
    return o;
}

/* Entry n, its chunk mapped if it is the first of one (under obj_lock); NULL when full. */
static struct tlsm_obj *slot(int n)
{
    if (n >= CHUNK_OBJS * MAX_CHUNKS)
        return NULL;
    struct tlsm_obj *c = atomic_load_explicit(&chunks[n / CHUNK_OBJS], memory_order_relaxed);
    if (!c) {
        void *p = mmap(NULL, sizeof(struct tlsm_obj) * CHUNK_OBJS, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        c = p;
        atomic_store_explicit(&chunks[n / CHUNK_OBJS], c, memory_order_release);
    }
    return &c[n % CHUNK_OBJS];
}

struct tlsm_obj *tlsm_obj_of(const void *addr)
{
    const struct obj_memo *m = &obj_memo;
    uintptr_t a = (uintptr_t)addr;
    unsigned gen = atomic_load_explicit(&tlsm_resolve_gen, memory_order_acquire);
    /* The entry must still be this range's: a stale entry may be reused for another object
     * (the generation moves first, but this thread may have read it before). */
    if (m->o && a - m->start < m->end - m->start && m->gen == gen && !m->o->stale &&
        m->o->start == m->start && m->o->end == m->end)
        return m->o;
    struct dl_find_object f;
    if (_dl_find_object((void *)addr, &f) != 0)
        return NULL;
    struct tlsm_obj *o = find_obj(&f);
    if (o)
        return memo(o, gen);
    struct tlsm_obj entry;
    memset(&entry, 0, sizeof(entry));
    entry.lm = f.dlfo_link_map;
    entry.start = (uintptr_t)f.dlfo_map_start;
    entry.end = (uintptr_t)f.dlfo_map_end;
    pthread_mutex_lock(&obj_lock);
    o = find_obj(&f);
    int n = atomic_load_explicit(&nobjs, memory_order_relaxed);
    bool reused = false, fresh = false;
    int id = o ? -1 : reusable();
    if (id >= 0) {
        /* Stale and never described: no record, connection or forward answer points at it.
         * Hidden from find_obj (stale) until it is whole; per-thread memos are dropped. */
        o = &objs(id);
        atomic_fetch_add_explicit(&tlsm_resolve_gen, 1, memory_order_acq_rel);
        entry.stale = true;
        *o = entry;
        reused = fresh = true;
    } else if (!o && (o = slot(n)) != NULL) {
        *o = entry;
        fresh = true;
    }
    if (fresh) {
        obj_path(o);
        o->refs = tlsm_elf_refs(o->lm, hook_names, TLSM_FN_COUNT, o->want);
        if (reused)
            __atomic_store_n(&o->stale, false, __ATOMIC_RELEASE);
        else
            atomic_store_explicit(&nobjs, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&obj_lock);
    if (!o && !atomic_flag_test_and_set(&full_said))
        tlsm_warn("%d objects registered: calls from objects loaded after that are forwarded "
                  "uncached, and copies loaded after that are not described",
                  CHUNK_OBJS * MAX_CHUNKS);
    return memo(o, gen);
}

/* Still the same loaded object? Its range must map to a live link_map with its name
 * (a new object may get both the address and the freed link_map's memory). */
static bool gone(const struct tlsm_obj *o)
{
    struct dl_find_object f;
    if (_dl_find_object((void *)o->start, &f) != 0 || f.dlfo_link_map != o->lm ||
        (uintptr_t)f.dlfo_map_start != o->start || (uintptr_t)f.dlfo_map_end != o->end)
        return true;
    const char *n = f.dlfo_link_map->l_name;
    return n && n[0] && strcmp(n, o->path) != 0;
}

/* After dlclose: only the objects that really went away become stale. Without obj_lock:
 * gone() asks the loader, and the flag only ever goes from false to true. */
void tlsm_obj_mark_stale(void)
{
    int n = atomic_load_explicit(&nobjs, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        struct tlsm_obj *o = &objs(i);
        if (__atomic_load_n(&o->stale, __ATOMIC_ACQUIRE) || !gone(o))
            continue;
        pthread_mutex_lock(&obj_lock);
        if (!o->stale) {
            __atomic_store_n(&o->stale, true, __ATOMIC_RELEASE);
            if (!atomic_load(&o->described) && !atomic_load(&o->reach) && free_n < MAX_FREE) {
                freed[(free_head + free_n) % MAX_FREE] = (struct freed){
                    i, atomic_load_explicit(&tlsm_resolve_gen, memory_order_acquire), mono_ns()};
                free_n++;
            }
        }
        pthread_mutex_unlock(&obj_lock);
    }
}

/* dlsym in the object's own scope; keep only definitions from this object or its
 * dependencies, never our own hooks. */
static void *scoped_sym(void *h, const char *name)
{
    void *p = h ? dlsym(h, name) : NULL;
    return p && !tlsm_is_self(p) ? p : NULL;
}

static bool defines(const struct tlsm_obj *o, void *h, const char *name)
{
    uintptr_t p = (uintptr_t)scoped_sym(h, name);
    return p >= o->start && p < o->end;
}

static const char *version_str(const struct tlsm_obj *o, int which)
{
    const char *s = o->abi.version_text ? o->abi.version_text(which) : NULL;
    if ((!s || !s[0]) && which == TLSM_ABI_PLATFORM)
        return o->platform;
    return s ? s : "";
}

enum tlsm_abi_kind tlsm_obj_abi(const struct link_map *lm, const char **version)
{
    int n = atomic_load_explicit(&nobjs, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (objs(i).lm == lm && atomic_load(&objs(i).described) && objs(i).lib_id) {
            *version = objs(i).version;
            return objs(i).abi.kind;
        }
    *version = "";
    return TLSM_ABI_UNKNOWN;
}

bool tlsm_obj_crypto_only(const struct link_map *lm)
{
    int n = atomic_load_explicit(&nobjs, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (objs(i).lm == lm && objs(i).lib_id && objs(i).has_crypto && !objs(i).has_ssl)
            return true;
    return false;
}

static void write_lib_event(struct tlsm_obj *o)
{
    unsigned gen = tlsm_trace_generation();
    if (o->lib_gen == gen) /* once per trace file */
        return;
    o->lib_gen = gen;
    char line[TLSM_LINE_MAX], base[24], bid[80], cpuinfo[160] = "";
    struct tlsm_json j;
    if (o->abi.cpuinfo)
        o->abi.cpuinfo(&o->abi, cpuinfo, sizeof(cpuinfo));
    snprintf(base, sizeof(base), "0x%lx", (unsigned long)o->lm->l_addr);
    tlsm_build_id(o->lm, bid, sizeof(bid));
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(LIB));
    tlsm_json_int(&j, "id", o->lib_id);
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(tlsm_now() - tlsm_trace_t0));
    tlsm_json_str(&j, "path", o->path);
    tlsm_json_str(&j, "base", base);
    tlsm_json_str(&j, "build_id", bid);
    tlsm_json_bool(&j, "has_ssl", o->has_ssl);
    tlsm_json_bool(&j, "has_crypto", o->has_crypto);
    tlsm_json_str(&j, "version", o->version);
    tlsm_json_safe(&j, "abi", tlsm_abi_name(o->abi.kind));
    tlsm_json_str(&j, "platform", version_str(o, TLSM_ABI_PLATFORM));
    tlsm_json_str(&j, "cflags", version_str(o, TLSM_ABI_CFLAGS));
    tlsm_json_str(&j, "cpuinfo", cpuinfo);
    tlsm_caps_write(&j, tlsm_caps_decode(cpuinfo));
    tlsm_json_str(&j, "role", "app");
    char reach[32];
    if (atomic_load(&o->reach))
        tlsm_json_str(&j, "reach", tlsm_reach_name(atomic_load(&o->reach), reach, sizeof(reach)));
    /* Whether its GCM context layout is read: only for versions checked against a binary. */
    if (o->has_crypto && (o->abi.kind == TLSM_ABI_OSSL3 || o->abi.kind == TLSM_ABI_OSSL111))
        tlsm_json_safe(&j, "gcm_layout",
                       tlsm_gcm_layout_name(tlsm_abi_gcm_layout(&o->abi, o->version)));
    /* Its records measured at its default provider's cipher functions, its libssl's EVP and
     * GCM calls bound past the hooks (hooks/hook_table.c, forward/bindpast.c). */
    if (atomic_load(&o->tbl_records))
        tlsm_json_safe(&j, "measured_at", "provider");
    if (o->late) /* reached once a dlopen had loaded it and run its constructors */
        tlsm_json_bool(&j, "late", true);
    if (o->abi.kind == TLSM_ABI_OLD || o->abi.kind == TLSM_ABI_FOREIGN)
        tlsm_json_str(&j, "left_alone",
                      o->abi.kind == TLSM_ABI_FOREIGN ? "other_tls" : "openssl_1");
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
}

static _Atomic int next_lib_id;

/* Lib ids are shared by the program's instances and tlsmeter's backends. */
int tlsm_next_lib_id(void)
{
    return atomic_fetch_add(&next_lib_id, 1) + 1;
}

void tlsm_obj_describe(struct tlsm_obj *o)
{
    int expect = 0;
    /* First caller describes; racing callers go on without waiting (lib id 0 meanwhile). */
    if (!atomic_compare_exchange_strong(&o->described, &expect, 1))
        return;
    /* tlsmeter's own backends (memfd copies) describe themselves, as role "backend". */
    if (!strncmp(o->path, "/proc/self/fd/", 14))
        return;
    void *h = dlopen(o->lm->l_name[0] ? o->lm->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
    o->has_ssl = defines(o, h, "SSL_read");
    o->has_crypto = defines(o, h, "EVP_CipherUpdate");
    if (!o->has_ssl && !o->has_crypto) {
        if (h)
            tlsm_real_dlclose(h);
        return;
    }
    tlsm_th.guard++;
    tlsm_abi_decide(o, h, scoped_sym); /* its ABI and entry points, once (forward/abi.c) */
    if (h)
        tlsm_real_dlclose(h);
    o->lib_id = tlsm_next_lib_id();
    if (tlsm_trace_ready())
        write_lib_event(o);
    tlsm_th.guard--;
}

/* A copy reached by other means than interposition (its provider tables) may export
 * nothing: then it gets its lib line here, version from the text it carries, no api (tlsmeter
 * calls none of its functions). */
const char *tlsm_reach_name(unsigned reach, char *buf, size_t cap)
{
    static const char *const names[] = {"got", "table", "entry", "plt"};
    size_t n = 0;
    buf[0] = 0;
    for (unsigned i = 0; i < 4 && n < cap; i++)
        if (reach & (1u << i))
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "+" : "", names[i]);
    return buf;
}

void tlsm_obj_describe_reached(struct tlsm_obj *o, unsigned reach, const char *version)
{
    atomic_fetch_or(&o->reach, reach);
    tlsm_obj_describe(o);
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    if (o->lib_id || tlsm_abi_left_alone(&o->abi))
        return;
    pthread_mutex_lock(&lock);
    if (!o->lib_id) {
        snprintf(o->version, sizeof(o->version), "%s", version);
        /* Found by its tables, not its exports: its ABI from the version text it holds (no
         * loader: nothing of it is called by name). */
        if (o->abi.kind == TLSM_ABI_UNKNOWN) {
            o->abi.kind = tlsm_abi_of_text(version);
            o->abi.major = o->abi.kind == TLSM_ABI_OSSL3 ? 3 : 0;
        }
        o->has_crypto = true; /* it holds libcrypto, exported or not */
        tlsm_th.guard++;
        o->lib_id = tlsm_next_lib_id();
        if (tlsm_trace_ready())
            write_lib_event(o);
        tlsm_th.guard--;
    }
    pthread_mutex_unlock(&lock);
}

unsigned tlsm_obj_reach_of(const struct link_map *lm)
{
    int n = atomic_load_explicit(&nobjs, memory_order_acquire);
    unsigned r = 0;
    for (int i = 0; i < n; i++)
        if (objs(i).lm == lm && !objs(i).stale)
            r |= atomic_load(&objs(i).reach);
    return r;
}

void tlsm_obj_end_write(struct tlsm_json *j)
{
    enum { LIBS_MAX = 2048 }; /* the end line's other members keep their room */
    char *start = j->p;
    int count = atomic_load_explicit(&nobjs, memory_order_acquire);
    tlsm_json_arr(j, "libs");
    for (int i = 0; i < count; i++) {
        if (!objs(i).lib_id)
            continue;
        tlsm_json_obj_item(j);
        tlsm_json_int(j, "id", objs(i).lib_id);
        tlsm_hooks_write(j, "hooks", objs(i).hooks_into);
        tlsm_json_obj_end(j);
    }
    tlsm_json_arr_end(j);
    if (j->full || j->p - start > LIBS_MAX) {
        tlsm_json_rewind(j, start);
        tlsm_json_arr(j, "libs");
        tlsm_json_arr_end(j);
    }
}

/* fork(): see main.c. */
void tlsm_obj_atfork(bool take)
{
    if (take)
        pthread_mutex_lock(&obj_lock);
    else
        pthread_mutex_unlock(&obj_lock);
}

/* A new trace file (first open, or a forked child's): every instance already known gets
 * its lib line there too, so rec.lib always points at a lib line of the same file. */
void tlsm_obj_replay_libs(unsigned gen)
{
    int n = atomic_load_explicit(&nobjs, memory_order_acquire);
    (void)gen;
    tlsm_th.guard++;
    for (int i = 0; i < n; i++)
        if (objs(i).lib_id && !objs(i).stale)
            write_lib_event(&objs(i));
    tlsm_th.guard--;
}
