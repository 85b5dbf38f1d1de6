/* hook_late.c: reach copies of OpenSSL that a dlopen brings in after start (late.h).
 *
 * glibc's dlopen names its caller by its own return address (search path, $ORIGIN, the new
 * objects' loader chain, the namespace), so the exported dlopen cannot simply call it: the
 * thunk jumps to it with its return address pointing at a return instruction inside the
 * caller's own object (found here once per object, in its executable segment), above a
 * frame whose return address leads back into the thunk. glibc sees the caller's object; the
 * return runs the after half, which reaches what the dlopen loaded, then returns to the
 * caller. Where no such return is found (or the CPU's shadow stack would refuse it) the
 * dlopen goes straight to libc, as before, and what it loads stays named by the blind scan. */
#include "base/tls.h"
#include "hooks/late.h"
#include "forward/bindpast.h"
#include "forward/got.h"
#include "forward/listing.h"
#include "forward/obj.h"
#include "forward/tables.h"
#include "hooks/reach.h"
#include "trace/config.h"
#include "trace/log.h"
#include "trace/thread.h"
#include "base/glibc_compat.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The listings of this thread's dlopens in progress (constructors may dlopen again). */
#define MAX_DEPTH 8
struct pending {
    struct tlsm_listing before; /* RTLD_DEEPBIND only: which objects are new (GOT stubs) */
    unsigned long long adds;    /* objects ever added when the dlopen began */
    uintptr_t sp;
    int mode;
};
static __thread struct pending pend[MAX_DEPTH] TLSM_IE;
static __thread int npend TLSM_IE;
/* dlopens between begin and end, all threads: while another is in flight, a dlopen that
 * loaded nothing itself may have returned an object that thread is still reaching. */
static _Atomic int inflight;
static bool late_ok; /* the start's objects are known: without that list, no late reach */

/* A CPU shadow stack (x86 CET) checks every return against the call that made it: the
 * borrowed return would be refused. Asked once; without /proc, assume none is enabled
 * (glibc enables it only when the program and every library were built for it). */
static bool shadow_stack(void)
{
    static int known; /* 1 yes, -1 no */
    if (!known) {
        char buf[4096];
        int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
            close(fd);
        buf[n > 0 ? n : 0] = 0;
        const char *t = strstr(buf, "x86_Thread_features:");
        const char *e = t ? strchr(t, '\n') : NULL;
        bool on = t && (e ? memmem(t, (size_t)(e - t), "shstk", 5) : strstr(t, "shstk"));
        known = on ? 1 : -1;
    }
    return known > 0;
}

/* The executable segments of the object holding ra (it is running: it stays loaded). */
struct text_find {
    const struct link_map *lm;
    uintptr_t lo[4], hi[4];
    int n;
};

static int text_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct text_find *t = arg;
    (void)size;
    if (info->dlpi_addr != t->lm->l_addr)
        return 0;
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum; i++)
        mine |= info->dlpi_phdr[i].p_type == PT_DYNAMIC &&
                info->dlpi_addr + info->dlpi_phdr[i].p_vaddr == (uintptr_t)t->lm->l_ld;
    for (int i = 0; mine && i < info->dlpi_phnum && t->n < 4; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            t->lo[t->n] = info->dlpi_addr + ph->p_vaddr;
            t->hi[t->n++] = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
        }
    }
    return mine;
}

/* A return in [lo, hi) that leaves the stack as a plain return does, so that an unwinder
 * passing through it mid-dlopen finds the thunk's frame above: on x86_64 a ret after a pop
 * or leave (the end of a function, CFA = rsp + 8); on aarch64 `ldp x29, x30, [sp], #16;
 * ret` (no pointer authentication: the thunk's return address is not signed). */
static uintptr_t find_return(uintptr_t lo, uintptr_t hi)
{
#if defined(__x86_64__)
    static const uint8_t pats[][2] = {{0x5d, 0xc3}, {0x5b, 0xc3}, {0xc9, 0xc3}};
    for (size_t k = 0; k < sizeof(pats) / sizeof(pats[0]); k++) {
        const uint8_t *p = memmem((const void *)lo, hi - lo, pats[k], 2);
        if (p)
            return (uintptr_t)p + 1;
    }
#elif defined(__aarch64__)
    static const uint8_t pat[8] = {0xfd, 0x7b, 0xc1, 0xa8, 0xc0, 0x03, 0x5f, 0xd6};
    for (uintptr_t a = (lo + 3) & ~(uintptr_t)3; a + 8 <= hi; a += 4) {
        const uint8_t *p = memmem((const void *)a, hi - a, pat, 8);
        if (!p)
            break;
        if (!((uintptr_t)p & 3))
            return (uintptr_t)p;
        a = (uintptr_t)p;
    }
#endif
    (void)lo, (void)hi;
    return 0;
}

static const void *gadget_of(const void *ra)
{
    struct tlsm_obj *o = tlsm_obj_of(ra);
    if (!o)
        return NULL;
    int st = atomic_load_explicit(&o->ret_state, memory_order_acquire);
    if (st)
        return st > 0 ? (const void *)o->ret_gadget : NULL;
    struct text_find t = {.lm = o->lm};
    dl_iterate_phdr(text_cb, &t);
    uintptr_t g = 0;
    for (int i = 0; i < t.n && !g; i++)
        g = find_return(t.lo[i], t.hi[i]);
    o->ret_gadget = g;
    atomic_store_explicit(&o->ret_state, g ? 1 : -1, memory_order_release);
    return (const void *)g;
}

/* The loader's count of objects ever added (dl_phdr_info's dlpi_adds): a dlopen that leaves
 * it unchanged loaded nothing, and has nothing to reach (a program may dlopen an object it
 * has already, in a loop: that must stay as cheap as without tlsmeter). */
static int adds_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs))
        *(unsigned long long *)arg = info->dlpi_adds;
    return 1;
}

static unsigned long long adds_now(void)
{
    unsigned long long a = 0;
    dl_iterate_phdr(adds_cb, &a);
    return a;
}

const void *tlsm_late_begin(int mode, const void *ra, uintptr_t sp)
{
    if (!late_ok || npend == MAX_DEPTH || (mode & RTLD_NOLOAD) || shadow_stack())
        return NULL; /* RTLD_NOLOAD loads nothing: straight to libc */
    tlsm_th.guard++;
    const void *g = gadget_of(ra);
    struct pending *p = &pend[npend];
    memset(p, 0, sizeof(*p));
    p->adds = g ? adds_now() : 0;
    if (g && (mode & RTLD_DEEPBIND) && !tlsm_listing_take(&p->before)) {
        tlsm_listing_free(&p->before);
        g = NULL;
    }
    tlsm_th.guard--;
    if (!g)
        return NULL;
    p->sp = sp;
    p->mode = mode;
    npend++;
    atomic_fetch_add(&inflight, 1);
    return g;
}

static bool at_start_has(const struct link_map *lm);

/* Was the object h names reached already (or is it the start's)? Asked when a dlopen loaded
 * nothing and no other was in flight: the common loop of dlopens of a loaded object. */
static bool reached(void *h)
{
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
        return true; /* nothing to go by: as before */
    struct tlsm_obj *o = tlsm_obj_of((const void *)lm->l_ld);
    return (o && atomic_load_explicit(&o->late_state, memory_order_acquire) == 2) ||
           at_start_has(lm);
}

void tlsm_late_end(void *h, uintptr_t sp)
{
    int saved = errno;
    /* Entries made below sp belong to dlopens a longjmp left: dropped. */
    while (npend > 0 && pend[npend - 1].sp < sp) {
        tlsm_listing_free(&pend[--npend].before);
        atomic_fetch_sub(&inflight, 1);
    }
    if (npend > 0 && pend[npend - 1].sp == sp) {
        struct pending *p = &pend[--npend];
        tlsm_resolve_bump(); /* an object may now be where an unloaded one was */
        if (h && (adds_now() != p->adds || atomic_load(&inflight) > 1 || !reached(h)))
            tlsm_reach_after(h, p->mode, &p->before);
        tlsm_listing_free(&p->before);
        atomic_fetch_sub(&inflight, 1);
    }
    errno = saved;
}

/* The objects loaded with the program: the start's reach is theirs (main.c). */
static struct tlsm_listing at_start;

static bool at_start_has(const struct link_map *lm)
{
    const struct tlsm_listed *o = tlsm_listing_entry_of(&at_start, lm);
    return o != NULL;
}

void tlsm_late_init(void)
{
    late_ok = tlsm_listing_take(&at_start);
    if (!late_ok)
        tlsm_listing_free(&at_start);
}

/* Threads whose dlopens returned the same object loaded after start (new for one, loaded
 * already for another that listed after it) each come here: one reaches it;
 * the other waits until that is done (bounded), so that neither uses the copy before it is
 * reached. No loader lock is held here: the reaching thread's loader calls can proceed. */
static bool claim(struct tlsm_obj *o)
{
    int st = 0;
    if (atomic_compare_exchange_strong(&o->late_state, &st, 1))
        return true;
    for (int i = 0; i < 20000 && atomic_load_explicit(&o->late_state, memory_order_acquire) == 1;
         i++) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* One object loaded after start, not reached yet: a copy the hooks cannot interpose is reached
 * through its tables and entry points, as at start, and says it was reached after its constructors
 * ran (what they did with TLS before that is not seen). */
static void late_copy(const struct tlsm_listed *o, const struct link_map *lm)
{
    struct dl_phdr_info info;
    struct tlsm_table_copy c;
    memset(&info, 0, sizeof(info));
    info.dlpi_addr = o->base;
    info.dlpi_name = lm->l_name;
    info.dlpi_phdr = o->ph;
    info.dlpi_phnum = (ElfW(Half))o->phnum;
    struct tlsm_obj *obj = tlsm_obj_of((const void *)lm->l_ld);
    if (!obj || !claim(obj))
        return;
    if (tlsm_tables_judge(&info, lm, &c)) {
        obj->late = true;
        tlsm_table_reach_copy(&c);
        if (!tlsm_table_refused(lm))
            tlsm_entry_reach_copy(&c);
    } else if (tlsm_tables_judge_hooked(&info, lm, &c)) {
        tlsm_table_reach_hooked(&c); /* its records at its tables, as at start */
    }
    atomic_store_explicit(&obj->late_state, 2, memory_order_release);
}

void tlsm_reach_after(void *h, int mode, const struct tlsm_listing *before)
{
    struct tlsm_listing after = {0};
    struct tlsm_scope_obj objs[TLSM_SCOPE_MAX];
    if (!h || !atomic_load_explicit(&tlsm_active, memory_order_relaxed) || !tlsm_cfg.patch)
        return;
    tlsm_th.guard++;
    if (tlsm_listing_take(&after)) {
        tlsm_got_sweep(&after);
        int n = tlsm_scope_closure(h, objs, TLSM_SCOPE_MAX);
        for (int i = 0; i < n; i++) {
            const struct tlsm_listed *o = tlsm_listing_entry_of(&after, objs[i].lm);
            if (!o || !o->phnum)
                continue;
            bool fresh = !tlsm_listing_find(before, o->base, o->phdr, o->name);
            if (mode & RTLD_DEEPBIND)
                tlsm_got_patch_held(h, o, fresh);
            if (!tlsm_listing_find(&at_start, o->base, o->phdr, o->name))
                late_copy(o, objs[i].lm);
        }
        /* The objects it covers (held until released) whose calls bind to a copy measured at
         * its tables (a libssl a plugin needs, the copy itself) call that copy directly too. */
        for (int i = 0; i < n && tlsm_table_hooked_any(); i++) {
            const struct tlsm_listed *o = tlsm_listing_entry_of(&after, objs[i].lm);
            if (o && o->phnum)
                tlsm_bindpast_object(objs[i].lm, o->ph, o->phnum);
        }
        tlsm_scope_release(objs, n);
    }
    tlsm_listing_free(&after);
    dlerror(); /* our lookups' misses are not the program's: its dlopen succeeded */
    tlsm_th.guard--;
}
