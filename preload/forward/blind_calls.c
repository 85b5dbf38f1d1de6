/* blind_calls.c: objects whose calls into libssl bind past tlsmeter's hooks. An object
 * loaded with RTLD_DEEPBIND (PHP loads its extensions so, and curl.so brings libcurl.so.4)
 * or into another link-map namespace looks its imports up in its own dependencies before
 * the global scope, so its SSL_read goes straight to libssl: when libssl itself was bound
 * globally its records still reach the EVP hooks, but its reads, read sizes and connection
 * totals never do. Found from the GOT: a slot for a hooked SSL_* name that points into
 * another object, although tlsmeter (earlier in the global scope) defines the name. Scanned
 * at exit, and during the run when a record is decrypted with no hooked SSL_* call in flight
 * on its thread (at most once a second, and only when objects were loaded since the last
 * scan): nothing but a compare on the per-record path. */
#include "forward/blind.h"
#include "base/caps.h"
#include "base/clock.h"
#include "base/elfdyn.h"
#include "base/glibc_compat.h"
#include "base/json.h"
#include "trace/log.h"
#include "forward/resolve.h"
#include "trace/thread.h"
#include "trace/trace.h"

#include <link.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define MAX_CALLERS 8
struct caller {
    const struct link_map *lm;
    char path[512], bound_to[512], needed_by[512];
    char build_id[80];
    bool deepbind; /* in the base namespace: only RTLD_DEEPBIND explains it */
    uint64_t fns;  /* hook ids whose GOT slot points past tlsmeter */
    int got_us, got_elsewhere;
    unsigned gen; /* trace generation its event went to; 0: not written yet */
    bool warned;
};
static struct caller callers[MAX_CALLERS];
static _Atomic int ncallers;
static _Atomic int busy;           /* one scan at a time; never waited for on the record path */
static _Atomic uint64_t next_scan; /* tick before which a runtime scan is not due */
static unsigned long long scanned_adds; /* dl_phdr_info.dlpi_adds at the last scan */
/* A record was decrypted outside every hooked SSL_* call: evidence that some object's calls
 * go past the hooks. Without it the objects found are named in the trace only (PHP's ftp.so
 * links libssl and is loaded RTLD_DEEPBIND in every PHP process, used or not): no notice. */
static _Atomic bool orphans;

/* The libssl entry points tlsmeter hooks (hooks.def family S), by hook id. */
static const char *ssl_names[TLSM_FN_COUNT];
static int ssl_ids[TLSM_FN_COUNT], nssl;

static void init_names(void)
{
    if (nssl)
        return;
    for (int id = 0; id < TLSM_FN_COUNT; id++)
        if (tlsm_hooks[id].family == 'S') {
            ssl_names[nssl] = tlsm_hooks[id].name;
            ssl_ids[nssl++] = id;
        }
}

/* The head of lm's namespace list (the program itself for the base namespace). */
static const struct link_map *ns_head(const struct link_map *lm)
{
    while (lm && lm->l_prev)
        lm = lm->l_prev;
    return lm;
}

/* Does a come before b in one namespace's load order (the global scope's order)? */
static bool before(const struct link_map *a, const struct link_map *b)
{
    for (const struct link_map *m = a; m; m = m->l_next)
        if (m == b)
            return true;
    return false;
}

struct judge {
    const struct link_map *lm, *self, *target;
    uint64_t fns;
    int got_us, got_elsewhere;
};

/* One relocation for a hooked SSL_* name. Its own definition (libssl calling itself) is the
 * record-layer scan's business (blind.c); a slot still pointing into the object is a lazy PLT
 * entry never called; an object ld.so puts before tlsmeter (the program, an earlier preload)
 * rightly wins. Anything else is a binding past the hooks. */
static void check_slot(int name, uintptr_t slot, uintptr_t value, void *arg)
{
    struct judge *j = arg;
    struct dl_find_object f;
    if (value)
        return;
    uintptr_t v = *(const uintptr_t *)slot;
    if (tlsm_is_self((const void *)v)) {
        j->got_us++;
        return;
    }
    if (_dl_find_object((void *)v, &f) != 0 || f.dlfo_link_map == j->lm ||
        (ns_head(f.dlfo_link_map) == ns_head(j->self) && before(f.dlfo_link_map, j->self)))
        return;
    j->fns |= 1ull << ssl_ids[name];
    j->got_elsewhere++;
    j->target = f.dlfo_link_map;
}

static void lm_path(const struct link_map *lm, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", lm && lm->l_name ? lm->l_name : "");
}

/* Who brought it in: the first object of its namespace that names it in DT_NEEDED (curl.so
 * for libcurl.so.4); "" when nobody does (it was dlopened itself). */
static void find_needer(const struct link_map *lm, char *buf, size_t cap)
{
    const char *so = tlsm_elf_soname(lm), *base = strrchr(lm->l_name, '/');
    buf[0] = 0;
    if (!so)
        so = base ? base + 1 : lm->l_name;
    for (const struct link_map *m = ns_head(lm); m && so[0]; m = m->l_next)
        if (m != lm && tlsm_elf_needs(m, so)) {
            lm_path(m, buf, cap);
            return;
        }
}

static bool known(const struct link_map *lm, const char *name)
{
    int n = atomic_load_explicit(&ncallers, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (callers[i].lm == lm && !strcmp(callers[i].path, name))
            return true;
    return false;
}

struct scan {
    bool forced, first;
    const struct link_map *self;
};

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct scan *s = arg;
    struct dl_find_object f;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    if (s->first) { /* nothing loaded since the last scan: nothing new to find */
        s->first = false;
        if (size >= offsetof(struct dl_phdr_info, dlpi_subs) && !s->forced &&
            info->dlpi_adds == scanned_adds)
            return 1;
        if (size >= offsetof(struct dl_phdr_info, dlpi_subs))
            scanned_adds = info->dlpi_adds;
    }
    /* The program (its own calls bind globally), tlsmeter's backends, the vDSO. */
    if (!name[0] || !strncmp(name, "/proc/self/fd/", 14) || !strncmp(name, "linux-", 6) ||
        !info->dlpi_phnum || atomic_load(&ncallers) >= MAX_CALLERS)
        return 0;
    if (_dl_find_object((void *)(info->dlpi_addr + info->dlpi_phdr[0].p_vaddr), &f) != 0 ||
        !f.dlfo_link_map || f.dlfo_link_map == s->self || known(f.dlfo_link_map, name))
        return 0;
    struct judge j = {.lm = f.dlfo_link_map, .self = s->self};
    tlsm_elf_slots(j.lm, ssl_names, nssl, check_slot, &j);
    if (!j.fns)
        return 0;
    int n = atomic_load(&ncallers);
    struct caller *c = &callers[n];
    memset(c, 0, sizeof(*c));
    c->lm = j.lm;
    lm_path(j.lm, c->path, sizeof(c->path));
    lm_path(j.target, c->bound_to, sizeof(c->bound_to));
    find_needer(j.lm, c->needed_by, sizeof(c->needed_by));
    c->deepbind = ns_head(j.lm) == ns_head(s->self);
    c->fns = j.fns;
    c->got_us = j.got_us;
    c->got_elsewhere = j.got_elsewhere;
    tlsm_build_id(j.lm, c->build_id, sizeof(c->build_id));
    atomic_store_explicit(&ncallers, n + 1, memory_order_release);
    return 0;
}

/* The functions' names as "a, b, c" (for the words). */
static void fns_words(uint64_t fns, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int id = 0; id < TLSM_FN_COUNT && n < cap; id++)
        if (fns & (1ull << id))
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", tlsm_hooks[id].name);
}

static const char *scope_words(const struct caller *c)
{
    return c->deepbind ? "loaded RTLD_DEEPBIND: its own dependencies are searched before the "
                         "global scope"
                       : "in another link-map namespace (dlmopen), where tlsmeter is not loaded";
}

static void write_event(struct caller *c)
{
    char line[TLSM_LINE_MAX], fns[512], text[1400];
    struct tlsm_json j;
    fns_words(c->fns, fns, sizeof(fns));
    snprintf(text, sizeof(text),
             "its GOT slots for %s point past tlsmeter's hooks, straight into %s (%s)", fns,
             c->bound_to, scope_words(c));
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(BLIND));
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(tlsm_now() - tlsm_trace_t0));
    tlsm_json_str(&j, "path", c->path);
    tlsm_json_str(&j, "build_id", c->build_id);
    tlsm_json_str(&j, "what", "calls");
    tlsm_blind_reasons_write(&j, 1u << TLSM_BLIND_CALLS_ELSEWHERE);
    tlsm_json_arr(&j, "why");
    tlsm_json_item_str(&j, text); /* it holds a path: escaped */
    tlsm_json_arr_end(&j);
    tlsm_hooks_write(&j, "fns", c->fns);
    tlsm_json_str(&j, "bound_to", c->bound_to);
    tlsm_json_str(&j, "scope", c->deepbind ? "deepbind" : "namespace");
    tlsm_json_str(&j, "needed_by", c->needed_by);
    tlsm_json_int(&j, "got_tlsmeter", c->got_us);
    tlsm_json_int(&j, "got_elsewhere", c->got_elsewhere);
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
}

/* After the scan (outside dl_iterate_phdr's lock): the notice and the event of each new
 * entry, and the event again in a forked child's own trace file. */
static void report(void)
{
    char fns[512];
    int n = atomic_load_explicit(&ncallers, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        struct caller *c = &callers[i];
        if (!c->warned && atomic_load_explicit(&orphans, memory_order_relaxed)) {
            c->warned = true;
            fns_words(c->fns, fns, sizeof(fns));
            tlsm_warn("%s%s%s%s calls %s past tlsmeter's hooks (%s): its reads are not in the "
                      "trace",
                      c->path, c->needed_by[0] ? " (needed by " : "", c->needed_by,
                      c->needed_by[0] ? ")" : "", fns,
                      c->deepbind ? "loaded RTLD_DEEPBIND" : "another link-map namespace");
        }
        /* Into a trace that TLS through the hooks opened: not a reason to open one (every
         * PHP process loads these objects, TLS or not). */
        if (tlsm_trace_generation() && tlsm_trace_ready() && c->gen != tlsm_trace_generation()) {
            c->gen = tlsm_trace_generation();
            write_event(c);
        }
    }
}

static void scan(bool forced)
{
    struct dl_find_object f;
    struct scan s = {forced, true, NULL};
    init_names();
    if (_dl_find_object((void *)&scan, &f) == 0)
        s.self = f.dlfo_link_map;
    if (!s.self)
        return;
    dl_iterate_phdr(scan_cb, &s);
    report();
}

void tlsm_blind_orphan_record(uint64_t now)
{
    if (now < atomic_load_explicit(&next_scan, memory_order_relaxed))
        return;
    atomic_store_explicit(&orphans, true, memory_order_relaxed);
    if (atomic_exchange_explicit(&busy, 1, memory_order_acquire))
        return;
    tlsm_th.guard++;
    scan(false);
    /* Due again a second later: from now, not from the record's start. */
    uint64_t t = tlsm_now(), second = 1;
    while (tlsm_ticks_to_ns(second) < 1000000000u && second < (1ull << 40))
        second <<= 1;
    atomic_store_explicit(&next_scan, t + second, memory_order_relaxed);
    tlsm_th.guard--;
    atomic_store_explicit(&busy, 0, memory_order_release);
}

/* PHP unloads its extensions (and libcurl with them) before exit: look before they go. Only
 * when something was loaded since the last scan, so a plugin loop pays one walk of the
 * loader's list per dlclose. */
void tlsm_blind_calls_before_dlclose(void)
{
    if (!atomic_load_explicit(&tlsm_active, memory_order_relaxed) ||
        atomic_exchange_explicit(&busy, 1, memory_order_acquire))
        return;
    tlsm_th.guard++;
    scan(false);
    tlsm_th.guard--;
    atomic_store_explicit(&busy, 0, memory_order_release);
}

void tlsm_blind_calls_at_exit(void)
{
    /* A runtime scan on another thread finishes in well under a millisecond; if it does not,
     * it reports what it finds itself. */
    for (int i = 0; atomic_exchange_explicit(&busy, 1, memory_order_acquire); i++) {
        if (i == 1000)
            return;
        sched_yield();
    }
    scan(true);
    atomic_store_explicit(&busy, 0, memory_order_release);
}

void tlsm_blind_calls_end_write(struct tlsm_json *j)
{
    int count = atomic_load_explicit(&ncallers, memory_order_acquire);
    for (int i = 0; i < count; i++) {
        char *mark = j->p;
        tlsm_json_obj_item(j);
        tlsm_json_str(j, "path", callers[i].path);
        tlsm_json_safe(j, "what", "calls");
        tlsm_blind_reasons_write(j, 1u << TLSM_BLIND_CALLS_ELSEWHERE);
        tlsm_hooks_write(j, "fns", callers[i].fns);
        tlsm_json_obj_end(j);
        tlsm_json_entry_kept(j, mark);
    }
}
