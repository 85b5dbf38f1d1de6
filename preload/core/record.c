/* record.c: the adapter from the EVP hooks to the record machine (recsm.c), and its sink:
 * the rec line, connection and read totals, reroute, stacks. */
#include "base/tls.h"
#include "core/record.h"
#include "forward/blind.h"
#include "base/clock.h"
#include "trace/config.h"
#include "core/conn.h"
#include "trace/cputime.h"
#include "trace/cputime_check.h"
#include "core/impl.h"
#include "core/prov.h"
#include "base/json.h"
#include "core/recsm.h"
#include "core/stack.h"
#include "core/summary.h"
#include "base/table.h"
#include "trace/thread.h"
#include "trace/trace.h"
#include "trace/trace2_fixed.h"

#include <openssl/obj_mac.h>
#include <string.h>

struct tlsm_rec_observer tlsm_rec_obs;

static struct tlsm_table ctxs;

/* The machine's sink (below): the only consumer of finished records in the preload. */
static void rec_begin(void *arg, struct tlsm_rsm_ctx *c);
static void rec_done(void *arg, struct tlsm_rsm_ctx *c, bool ok, int32_t pt);
static void rec_forgotten(void *arg, struct tlsm_rsm_ctx *c, bool was_open);
const struct tlsm_rsm_sink tlsm_rec_sink = {NULL, rec_begin, rec_done, rec_forgotten};

/* What a finished record's event is made of (rec_done to its writers). */
struct rec_line {
    const struct tlsm_rsm_ctx *c;
    const struct tlsm_rec_state *st;
    const struct tlsm_cpu_span *sp;
    bool ok;
    int32_t pt;
    int impl;
    uint32_t stack;
    int64_t thread_ns; /* TLSMETER_CPUTIME_CHECK: the thread clock over the record, else -1 */
};
static bool rec_fixed(const struct tlsm_thread *th, const struct rec_line *r);
static void rec_json(const struct tlsm_thread *th, const struct rec_line *r);

/* The state of the context c belongs to (c is its first member). */
static struct tlsm_rec_state *state_of(struct tlsm_rsm_ctx *c)
{
    return (struct tlsm_rec_state *)(void *)c;
}

int tlsm_rec_init(void)
{
    return tlsm_table_init(&ctxs, "cipher contexts", 16384, sizeof(struct tlsm_rec_state));
}

uint64_t tlsm_rec_untracked(void)
{
    return ctxs.full;
}

__thread struct tlsm_rec_last tlsm_rec_last TLSM_IE;
/* The one before: a server answering a request reads on one context and writes on another,
 * so the two alternate; the swap keeps the one in use first. */
static __thread struct tlsm_rec_last rec_prev TLSM_IE;

struct tlsm_rec_state *tlsm_rec_lookup_slow(const void *ctx)
{
    struct tlsm_rec_state *st = rec_prev.st;
    if (ctx && ctx == rec_prev.ctx && st && __atomic_load_n(&st->key, __ATOMIC_RELAXED) == ctx) {
        rec_prev = tlsm_rec_last;
        tlsm_rec_last = (struct tlsm_rec_last){ctx, st};
        return st;
    }
    st = ctx ? tlsm_table_get(&ctxs, ctx) : NULL;
    if (st && __atomic_load_n(&st->key, __ATOMIC_RELAXED) == ctx) {
        rec_prev = tlsm_rec_last;
        tlsm_rec_last = (struct tlsm_rec_last){ctx, st};
    }
    return st;
}

void tlsm_rec_forget(const EVP_CIPHER_CTX *ctx)
{
    struct tlsm_rec_state *st = tlsm_rec_lookup(ctx);
    if (!st)
        return;
    tlsm_rsm_forget(&tlsm_rec_sink, &st->rsm);          /* the sink's forgotten() lets reroute go */
    __atomic_store_n(&st->key, NULL, __ATOMIC_RELAXED); /* before the slot can be reused */
    tlsm_table_del(&ctxs, ctx);
}

/* Only record ciphers are tracked: TLS AEADs. Names are ours, never the library's
 * strings, so an event never points into memory that may go away. */
static const char *aead_name(int nid, bool *gcm)
{
    *gcm = false;
    switch (nid) {
    case NID_aes_128_gcm:
        return *gcm = true, "AES-128-GCM";
    case NID_aes_256_gcm:
        return *gcm = true, "AES-256-GCM";
    case NID_aes_192_gcm:
        return *gcm = true, "AES-192-GCM";
    case NID_chacha20_poly1305:
        return "ChaCha20-Poly1305";
    case NID_aes_128_ccm:
        return "AES-128-CCM";
    case NID_aes_256_ccm:
        return "AES-256-CCM";
    default:
        return NULL;
    }
}

/* The direction of a context keyed with enc as EVP takes it: 0 decrypt, anything else
 * encrypt (libssl passes 1 or, for TLS 1.3 keys, 2; -1 "unchanged" never keys a cipher). */
static enum tlsm_dir dir_of(int enc)
{
    return enc ? TLSM_DIR_OUT : TLSM_DIR_IN;
}

/* The record cipher name of cipher when a libssl object (caller) keys it in copy target,
 * else NULL. */
static const char *libssl_aead(const void *caller, const EVP_CIPHER *cipher,
                               struct tlsm_obj *target, bool *gcm)
{
    struct tlsm_obj *co = tlsm_obj_of(caller);
    if (co)
        tlsm_obj_describe(co);
    *gcm = false;
    if (co && co->has_ssl && target && tlsm_abi_traced(&target->abi) && target->abi.cipher_nid)
        return aead_name(target->abi.cipher_nid(cipher), gcm);
    return NULL;
}

/* A context libssl keys with an AEAD cipher becomes a record source, in its direction. */
static void track(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, const unsigned char *key,
                  const unsigned char *iv, int enc, bool has_params, const void *caller,
                  struct tlsm_obj *target)
{
    bool gcm;
    const char *name = libssl_aead(caller, cipher, target, &gcm);
    if (!name) {
        tlsm_rec_forget(ctx);
        return;
    }
    /* Before tracking: the observer (reroute) may act on the new state. */
    int prov = tlsm_prov_of(target, ctx, gcm);
    tlsm_rec_track_as(ctx, name, dir_of(enc), target, key, iv, has_params, false);
    struct tlsm_rec_state *st = prov ? tlsm_rec_lookup(ctx) : NULL;
    if (st)
        st->prov = prov;
}

void tlsm_rec_track_as(const void *ctx, const char *name, enum tlsm_dir dir,
                       struct tlsm_obj *target, const unsigned char *key, const unsigned char *iv,
                       bool has_params, bool native_only)
{
    struct tlsm_rec_state *st = tlsm_table_put(&ctxs, ctx);
    if (!st)
        return;
    if (tlsm_rec_obs.forget) /* re-keyed with a new cipher: the old shadow is stale */
        tlsm_rec_obs.forget(st);
    memset(st, 0, sizeof(*st));
    __atomic_store_n(&st->key, ctx, __ATOMIC_RELAXED);
    /* TLS 1.2 explicit nonce: 8 bytes for AES-GCM and AES-CCM, none for ChaCha20-Poly1305. */
    tlsm_rsm_key(&tlsm_rec_sink, &st->rsm, name, dir, strncmp(name, "AES", 3) ? 0 : 8);
    st->lib = target;
    /* Used for rerouted sealing contexts only (reroute.c), which are always EVP_CIPHER_CTXs:
     * the provider-table path (hooks/hook_table.c) tracks its sealing contexts native_only. */
    st->ctx = (EVP_CIPHER_CTX *)(uintptr_t)ctx;
    st->conn = tlsm_th.conn;
    st->native_only = native_only;
    if (native_only)
        return;
    if (tlsm_rec_obs.keyed)
        tlsm_rec_obs.keyed(st, key, iv, has_params);
}

_Atomic bool tlsm_rec_adopting;

/* An attach: libssl keyed this context before tlsmeter came, so no Init told what it is. The
 * copy's own API does: its cipher and direction. Measured only (native_only): its key was never
 * seen, so the reroute cannot have a shadow of it. */
struct tlsm_rec_state *tlsm_rec_adopt(EVP_CIPHER_CTX *ctx, const void *caller,
                                      struct tlsm_obj *target)
{
    const struct tlsm_abi *a = target ? &target->abi : NULL;
    struct tlsm_obj *co = tlsm_obj_of(caller); /* libssl's calls only: asked before the copy */
    if (co)
        tlsm_obj_describe(co);
    if (!co || !co->has_ssl || !a || !tlsm_abi_traced(a) || !a->ctx_cipher || !a->ctx_encrypting)
        return NULL;
    tlsm_th.guard++;
    const EVP_CIPHER *c = (const EVP_CIPHER *)a->ctx_cipher(ctx);
    int enc = c ? a->ctx_encrypting(ctx) : 0;
    tlsm_th.guard--;
    bool gcm;
    const char *name = c ? libssl_aead(caller, c, target, &gcm) : NULL;
    if (!name)
        return NULL;
    tlsm_rec_track_as(ctx, name, dir_of(enc), target, NULL, NULL, false, true);
    return tlsm_rec_lookup(ctx);
}

void tlsm_rec_forget_all(void)
{
    tlsm_table_clear(&ctxs);
}

bool tlsm_rec_impl_cached(const struct tlsm_rec_state *st)
{
    return st->impl_cache && st->impl_id > 0 && st->impl_gen == tlsm_trace_generation();
}

bool tlsm_rec_keys_record(const void *caller, const EVP_CIPHER *cipher, struct tlsm_obj *target)
{
    bool gcm;
    return libssl_aead(caller, cipher, target, &gcm) != NULL;
}

void tlsm_rec_keyed(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, const unsigned char *key,
                    const unsigned char *iv, int enc, bool has_params, const void *caller,
                    struct tlsm_obj *target)
{
    track(ctx, cipher, key, iv, enc, has_params, caller, target);
}

static void rec_begin(void *arg, struct tlsm_rsm_ctx *c)
{
    struct tlsm_thread *th = &tlsm_th;
    if (__builtin_expect(th->cpu_kind == TLSM_CPU_UNSET, 0)) {
        tlsm_cpu_thread_setup(th); /* the thread's first record: not part of its time */
        c->t0 = tlsm_now();
    }
    if (__builtin_expect(tlsm_cfg.cputime_check, 0)) { /* two reads: the second's cost is what
                                                        * the span's figure carries once */
        uint64_t a = tlsm_cpu_check_now();
        c->chk_t0 = tlsm_cpu_check_now();
        c->chk_pair = c->chk_t0 - a;
        /* The record's wall clock starts after them: they are the check's, not the record's.
         * Each is a system call, whose wall time (~1 us on a KVM guest) is several times what
         * the thread clock sees of it, so a span begun before them ran ~2 us a record ahead
         * of the thread clock under the wall-based methods. */
        c->t0 = tlsm_now();
    }
    tlsm_cpu_begin(th, &c->mark); /* last: the record's clock starts here */
}

static void rec_forgotten(void *arg, struct tlsm_rsm_ctx *c, bool was_open)
{
    if (tlsm_rec_obs.forget)
        tlsm_rec_obs.forget(state_of(c));
}

/* Time a record's span holds that is neither crypto nor a context switch: the hypervisor
 * taking the virtual CPU away (steal), and interrupts handled on the thread's CPU (a loopback
 * peer's packets processed in softirq). No method here sees them: no switch happens, and
 * perf-clock's task clock runs on through them. On a KVM guest with the server pinned to the
 * client's CPU, 2 % of a download's 16 KiB records made two thirds of its wall time: some
 * ~1 ms long with ~20 us of thread CPU (CLOCK_THREAD_CPUTIME_ID leaves steal out), some
 * ~60 us against a 5 us median (that kernel, without IRQ_TIME_ACCOUNTING, charges
 * interrupts to the thread clock as well).
 * AES and GHASH cost the same per byte from record to record, so a record that took over
 * STALL_RATIO times its context's pace for its size class (the mean ns/B of its earlier
 * records; per record for tiny ones, < 256 B, whose per-call cost swamps their bytes), and
 * STALL_MIN_NS more than that, is not crypto time: flagged `stall`, estimated at its class's
 * ns/B like a switched-out one, and left out of the pace. Until STALL_WARMUP records have
 * set that mean, the pace is the fastest record so far and the bound STALL_WARMUP_RATIO
 * times it (a new key's first records run from cold caches; the first record never enters
 * the mean). The first record of a class is judged only against what no AES-GCM code takes,
 * STALL_MAX_NSPB a byte and STALL_UNPACED_NS more. */
#define STALL_RATIO        4
#define STALL_WARMUP_RATIO 8
#define STALL_MIN_NS       20000
#define STALL_WARMUP       8
#define STALL_MAX_NSPB     500
#define STALL_UNPACED_NS   1000000
#define STALL_HALVE_N      1024 /* then the sums are halved: the pace follows the CPU's clock */

static bool stall_judge(struct tlsm_rec_state *st, int32_t pt, const struct tlsm_cpu_span *sp)
{
    if (pt < 1 || sp->preempt)
        return false;
    int k = pt < 256 ? 0 : pt < 2048 ? 1 : 2;
    __typeof__(st->pace[0]) *p = &st->pace[k];
    uint64_t units = k ? (uint64_t)pt : 1, scale = k ? 1024 : 1;
    bool warm = p->n >= STALL_WARMUP && p->units;
    if (!p->n) {
        if (sp->cpu_ns >= STALL_UNPACED_NS + (uint64_t)pt * STALL_MAX_NSPB)
            return true;
    } else if (sp->cpu_ns >= STALL_MIN_NS) { /* below it no record is judged: no division */
        uint64_t expect = warm ? (uint64_t)((unsigned __int128)p->ns * units / p->units)
                               : (uint64_t)p->min_q * units / scale;
        if (sp->cpu_ns > (warm ? STALL_RATIO : STALL_WARMUP_RATIO) * expect &&
            sp->cpu_ns - expect >= STALL_MIN_NS)
            return true;
    }
    if (!warm) {                                 /* the fastest record so far: the warm-up's pace */
        uint64_t q = sp->cpu_ns * scale / units; /* ns per KiB, or per record */
        q = q > UINT32_MAX ? UINT32_MAX : q;
        if (!p->n || q < p->min_q)
            p->min_q = (uint32_t)q;
    }
    if (!p->n++)
        return false; /* the first record never enters the mean */
    p->ns += sp->cpu_ns;
    p->units += units;
    if (p->n >= STALL_HALVE_N) {
        p->ns /= 2;
        p->units /= 2;
        p->n /= 2;
    }
    return false;
}

/* A finished record of either direction: the rec line (docs/trace-format.md), connection
 * and read or write totals. An "in" record names its enclosing read, an "out" one its
 * write (0: none, such as a key update sent inside a read). */
static void rec_done(void *arg, struct tlsm_rsm_ctx *c, bool ok, int32_t pt)
{
    struct tlsm_thread *th = &tlsm_th;
    struct tlsm_rec_state *st = state_of(c);
    struct tlsm_cpu_span sp;
    tlsm_cpu_end(th, c->t0, &c->mark, &sp);
    sp.stall = stall_judge(st, pt, &sp);
    int64_t thread_ns = -1;
    if (__builtin_expect(tlsm_cfg.cputime_check, 0)) {
        uint64_t th_ns = tlsm_cpu_check_now() - c->chk_t0;
        tlsm_cpu_check_add(sp.cpu_ns, th_ns, c->chk_pair, sp.preempt > 0, sp.stall);
        thread_ns = th_ns > c->chk_pair ? (int64_t)(th_ns - c->chk_pair) : 0; /* the span's */
    }
    if (sp.preempt)
        tlsm_cpu_count_preempted();
    else if (sp.stall)
        tlsm_cpu_count_stalled();
    uint32_t conn = th->conn ? th->conn : st->conn;
    if (conn)
        st->conn = conn;
    /* Its read bypassed the SSL_* hooks? (blind_calls.c). Not for a sealed record: libssl
     * seals outside reads and writes too (the close_notify of SSL_shutdown, not hooked). */
    if (!th->ssl_depth && c->dir == TLSM_DIR_IN)
        tlsm_blind_orphan_record(tlsm_now());
    tlsm_conn_add_record((enum tlsm_dir)c->dir, sp.cpu_ns, sp.preempt > 0 || sp.stall);
    if (tlsm_rec_obs.record_end)
        tlsm_rec_obs.record_end(st);
    /* Taken once per record, and only where it is written (it may write the impl event). A
     * record another provider or an engine decrypted notes that one's code first (prov.c). */
    bool written = tlsm_summary_on() || (tlsm_cfg.records && tlsm_trace_ready());
    if (__builtin_expect(st->prov != 0, 0) && written && !st->routed)
        tlsm_prov_record(st->prov, st->lib, st->ctx);
    int impl = 0;
    if (written && tlsm_rec_impl_cached(st)) {
        impl = st->impl_id;
    } else if (written) {
        impl = tlsm_impl_take();
        if (st->impl_cache)
            st->impl_id = impl, st->impl_gen = tlsm_trace_generation();
    }
    if (tlsm_summary_on()) { /* totals and histograms (summary.c); no line in summary mode */
        struct tlsm_sum_rec r = {
            .cipher = c->cipher,
            .path = st->routed ? tlsm_mode_name(tlsm_cfg.crypto) : "native",
            .lib = st->routed ? st->backend_lib
                   : st->lib  ? st->lib->lib_id
                              : 0,
            .type = c->type,
            .len = c->len,
            .pt = pt,
            .tls12 = c->tls == TLSM_TLS12,
            .out = c->dir == TLSM_DIR_OUT,
            .tag_ok = ok,
            .preempted = sp.preempt > 0,
            .stalled = sp.stall,
            .crypto_ns = sp.cpu_ns,
            .gcm_ns = tlsm_cpu_delta_ns(th, c->gcm_ticks),
            .gcm_bytes = c->gcm_bytes,
            .gcm_fn = c->gcm_fns & 3,
        };
        r.impl = impl;
        tlsm_summary_rec(&r);
        if (!tlsm_event_lines_on())
            return;
    }
    if (!tlsm_cfg.records || !tlsm_trace_ready())
        return;
    struct rec_line r = {
        .c = c,
        .st = st,
        .sp = &sp,
        .ok = ok,
        .pt = pt,
        .impl = impl,
        .stack = tlsm_cfg.stacks ? tlsm_stack_sample(th->site, TLSM_STACK_REC)
                                 : 0, /* may write its stack event */
        .thread_ns = thread_ns,
    };
    /* A stalled record (rare) and the check's figure have no fixed field: the line way. */
    if (thread_ns >= 0 || sp.stall || !rec_fixed(th, &r))
        rec_json(th, &r);
}

static const char *const gcm_fns[2][4] = {{"none", "decrypt", "ctr32", "both"},
                                          {"none", "encrypt", "ctr32", "both"}};

static const char *tls_name(const struct tlsm_rsm_ctx *c)
{
    return c->tls == TLSM_TLS12 ? "1.2" : c->tls == TLSM_TLS13 ? "1.3" : "?";
}

/* wall_ns is written only where it tells something: perf-clock, and off crypto_ns by > 1 us. */
static bool wall_differs(const struct tlsm_thread *th, const struct tlsm_cpu_span *sp)
{
    return th->cpu_kind == TLSM_CPU_PERF_CLOCK &&
           (sp->wall_ns > sp->cpu_ns + 1000 || sp->cpu_ns > sp->wall_ns + 1000);
}

/* Format 2: the rec record straight into the thread's chunk (trace/trace2_fixed.h); false when
 * it must go the line way (format 1, no room at hand, a value its field cannot hold). */
static bool rec_fixed(const struct tlsm_thread *th, const struct rec_line *r)
{
    struct tlsm_trace_room w;
    if (!tlsm_trace_room_take(&w))
        return false;
    const struct tlsm_rsm_ctx *c = r->c;
    const struct tlsm_rec_state *st = r->st;
    bool out = c->dir == TLSM_DIR_OUT;
    const struct tlsm_io_tally *io = &th->io[out];
    bool wall = wall_differs(th, r->sp);
#define H(k) TLSM_B2_HAS(rec, k)
    struct tlsm_b2_rec v = {
        .have = H(t) | H(tid) | H(conn) | (out ? H(write) : H(read)) | H(dir) | H(tls) | H(type) |
                H(len) | H(pt) | H(cipher) | H(crypto_ns) | (r->sp->preempt ? H(preempt) : 0) |
                (wall ? H(wall_ns) : 0) | H(gcm_ns) | H(gcm_bytes) | H(gcm_fn) | H(path) |
                H(tag_ok) | H(lib) | (r->impl ? H(impl) : 0) | (st->verdict ? H(verify) : 0) |
                (r->stack ? H(stack) : 0),
#undef H
        .t = (int64_t)tlsm_ticks_to_ns(c->t0 - tlsm_trace_t0),
        .tid = th->tid,
        .conn = st->conn,
        .dir = out ? "out" : "in",
        .tls = tls_name(c),
        .type = c->type,
        .len = c->len,
        .pt = r->pt,
        .cipher = c->cipher,
        .crypto_ns = (int64_t)r->sp->cpu_ns,
        .preempt = r->sp->preempt,
        .wall_ns = wall ? (int64_t)r->sp->wall_ns : 0,
        .gcm_ns = (int64_t)tlsm_cpu_delta_ns(th, c->gcm_ticks),
        .gcm_bytes = (int64_t)c->gcm_bytes,
        .gcm_fn = gcm_fns[out][c->gcm_fns & 3],
        .path = st->routed ? tlsm_mode_name(tlsm_cfg.crypto) : "native",
        .tag_ok = r->ok,
        .lib = st->routed ? st->backend_lib
               : st->lib  ? st->lib->lib_id
                          : 0,
        .impl = r->impl,
        .verify = st->verdict ? (st->verdict > 0 ? "same" : "mismatch") : NULL,
        .stack = r->stack,
    };
    int64_t id = io->active ? (int64_t)io->id : 0;
    if (out)
        v.write = id;
    else
        v.read = id;
    size_t tail_n = 0; /* rec.prov has no field: the tail carries it */
    const char *tail = st->prov && !st->routed ? tlsm_prov_tail(st->prov, &tail_n) : NULL;
    uint8_t nstr = w.s->nstr;
    int64_t base = w.s->base_t;
    size_t n = tlsm_b2_fixed_rec(w.s, w.p, w.end, &v, tail, tail_n);
    if (!n)
        tlsm_b2_undo(w.s, nstr, base);
    tlsm_trace_room_done(n);
    return n != 0;
}

/* The rec line through the JSON builder (docs/trace-format.md): format 1, and format 2's
 * records that rec_fixed gave up (staged, json.h: a JSON entry when a value does not fit). */
static void rec_json(const struct tlsm_thread *th, const struct rec_line *r)
{
    const struct tlsm_rsm_ctx *c = r->c;
    const struct tlsm_rec_state *st = r->st;
    const struct tlsm_cpu_span *sp = r->sp;
    bool out = c->dir == TLSM_DIR_OUT;
    const struct tlsm_io_tally *io = &th->io[out];
    char line[768];
    struct tlsm_json j;
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(REC));
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(c->t0 - tlsm_trace_t0));
    tlsm_json_int(&j, "tid", th->tid);
    tlsm_json_int(&j, "conn", st->conn);
    if (out)
        tlsm_json_int(&j, "write", io->active ? (int64_t)io->id : 0);
    else
        tlsm_json_int(&j, "read", io->active ? (int64_t)io->id : 0);
    tlsm_json_safe(&j, "dir", out ? "out" : "in");
    tlsm_json_safe(&j, "tls", tls_name(c));
    tlsm_json_int(&j, "type", c->type);
    tlsm_json_int(&j, "len", c->len);
    tlsm_json_int(&j, "pt", r->pt);
    tlsm_json_safe(&j, "cipher", c->cipher);
    tlsm_json_int(&j, "crypto_ns", (int64_t)sp->cpu_ns);
    if (sp->preempt)
        tlsm_json_int(&j, "preempt", sp->preempt);
    if (sp->stall)
        tlsm_json_int(&j, "stall", 1);
    if (r->thread_ns >= 0)
        tlsm_json_int(&j, "thread_ns", r->thread_ns);
    if (wall_differs(th, sp))
        tlsm_json_int(&j, "wall_ns", (int64_t)sp->wall_ns);
    tlsm_json_int(&j, "gcm_ns", (int64_t)tlsm_cpu_delta_ns(th, c->gcm_ticks));
    tlsm_json_int(&j, "gcm_bytes", (int64_t)c->gcm_bytes);
    tlsm_json_safe(&j, "gcm_fn", gcm_fns[out][c->gcm_fns & 3]);
    tlsm_json_safe(&j, "path", st->routed ? tlsm_mode_name(tlsm_cfg.crypto) : "native");
    tlsm_json_bool(&j, "tag_ok", r->ok);
    tlsm_json_int(&j, "lib", st->routed ? st->backend_lib : st->lib ? st->lib->lib_id : 0);
    if (r->impl)
        tlsm_json_int(&j, "impl", r->impl);
    if (st->verdict)
        tlsm_json_safe(&j, "verify", st->verdict > 0 ? "same" : "mismatch");
    if (r->stack)
        tlsm_json_int(&j, "stack", r->stack);
    if (st->prov && !st->routed)
        tlsm_json_int(&j, "prov", st->prov);
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
}

void tlsm_rec_after_ctrl(struct tlsm_rec_state *st, int type, int arg, void *ptr, int ret)
{
    if (tlsm_rec_obs.mirror_ctrl)
        tlsm_rec_obs.mirror_ctrl(st, type, arg, ptr, ret);
    if (type == EVP_CTRL_AEAD_TLS1_AAD && st->rsm.in_rec && tlsm_rec_obs.record_begin)
        tlsm_rec_obs.record_begin(st);
}
