/* conn.c: connection ids, handshake timing, read and write events, per-connection totals. */
#include "base/tls.h"
#include "core/conn.h"
#include "forward/blind.h"
#include "base/clock.h"
#include "trace/config.h"
#include "trace/cputime.h"
#include "core/hs.h"
#include "base/json.h"
#include "core/stack.h"
#include "core/summary.h"
#include "base/table.h"
#include "trace/thread.h"
#include "trace/trace.h"
#include "trace/trace2_fixed.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct tlsm_conn_state {
    const SSL *key; /* the connection it is for, NULL once freed (the lookup cache) */
    uint32_t id;
    bool opened; /* open event written */
    struct tlsm_obj *lib;
    uint64_t hs_first; /* ticks at the first handshake call */
    uint64_t hs_ticks; /* time inside handshake calls */
    /* Per direction (in: reads, out: writes): calls, bytes returned / written, records. */
    struct {
        uint64_t calls, bytes, recs, crypto_ns, preempt;
    } tot[2];
    bool ktls_asked[2]; /* kTLS probed once per direction (blind.c) */
    bool joined;        /* open already when tlsmeter was attached */
    struct tlsm_hs hs;  /* the handshake's parts */
};

static struct tlsm_table conns;
static _Atomic uint32_t next_conn = 1;
static _Atomic uint64_t next_io[2] = {1, 1}; /* read ids, write ids */

int tlsm_conn_init(void)
{
    return tlsm_table_init(&conns, "connections", 16384, sizeof(struct tlsm_conn_state));
}

static int64_t ns_since_t0(uint64_t ticks)
{
    return (int64_t)tlsm_ticks_to_ns(ticks - tlsm_trace_t0);
}

/* The connection this thread entered last: a program reading in small pieces enters the same
 * one call after call, so one compare instead of a hash probe. Taken only while the state
 * still names ssl (SSL_free clears its key; a state reused for another SSL* names that). */
static __thread struct {
    const SSL *ssl;
    struct tlsm_conn_state *cs;
} last TLSM_IE;

_Atomic bool tlsm_conn_joining;

static void write_open(struct tlsm_conn_state *cs, const SSL *ssl, uint64_t now);

/* An attach: a connection met first with its handshake complete was open before tlsmeter came
 * (or its handshake ran unseen): it opens now, `joined`, with no handshake figures. */
static void join(struct tlsm_conn_state *cs, const SSL *ssl)
{
    const struct tlsm_abi *a = cs->lib ? &cs->lib->abi : NULL;
    if (!a || !a->ssl_init_finished || !tlsm_trace_ready())
        return;
    tlsm_th.guard++;
    int done = a->ssl_init_finished(ssl);
    tlsm_th.guard--;
    if (!done)
        return;
    cs->opened = cs->joined = true;
    write_open(cs, ssl, tlsm_now());
}

/* A detach (every other thread stopped): the next attach's file describes its connections
 * anew. */
void tlsm_conn_forget_all(void)
{
    tlsm_table_clear(&conns);
}

/* conn_of's table way (not inlined: the hot path of a read keeps no registers for it). */
static __attribute__((noinline)) struct tlsm_conn_state *conn_find(const SSL *ssl,
                                                                   struct tlsm_obj *lib)
{
    struct tlsm_conn_state *cs = tlsm_table_put(&conns, ssl);
    if (!cs)
        return NULL;
    if (!cs->id) {
        cs->id = atomic_fetch_add_explicit(&next_conn, 1, memory_order_relaxed);
        cs->lib = lib;
        __atomic_store_n(&cs->key, ssl, __ATOMIC_RELAXED);
        if (atomic_load_explicit(&tlsm_conn_joining, memory_order_relaxed))
            join(cs, ssl);
    }
    last.ssl = ssl, last.cs = cs;
    return cs;
}

static inline __attribute__((always_inline)) struct tlsm_conn_state *conn_of(const SSL *ssl,
                                                                             struct tlsm_obj *lib)
{
    struct tlsm_conn_state *cs = last.cs;
    if (__builtin_expect(ssl == last.ssl && cs != NULL, 1) &&
        __atomic_load_n(&cs->key, __ATOMIC_RELAXED) == ssl)
        return cs;
    return conn_find(ssl, lib);
}

/* A call on a connection whose handshake is not seen complete: its parts go to the
 * connection's hs from here (not inlined: once or twice a connection). */
static __attribute__((noinline)) void hs_begin(struct tlsm_conn_scope *sc,
                                               struct tlsm_conn_state *cs)
{
    struct tlsm_thread *th = &tlsm_th;
    sc->hs_parts0 = tlsm_hs_parts_ns(&cs->hs);
    sc->hs_own0 = th->hs_own_ns;
    sc->hs_cpu0 = tlsm_hs_cpu_now(th);
    th->hs_cur = &cs->hs;
    th->hs_part = TLSM_HS_NONE;
}

/* drives_hs: the call may drive the handshake (all but SSL_sendfile): while the connection is
 * not open, its time and parts are the handshake's. */
static inline __attribute__((always_inline)) void
conn_enter(struct tlsm_conn_scope *sc, const SSL *ssl, struct tlsm_obj *lib, bool drives_hs)
{
    struct tlsm_thread *th = &tlsm_th;
    struct tlsm_conn_state *cs = conn_of(ssl, lib);
    sc->prev_conn = th->conn;
    sc->prev_cs = th->conn_state;
    sc->cs = cs;
    th->conn = cs ? cs->id : 0;
    th->conn_state = cs;
    sc->prev_hs = th->hs_cur;
    sc->hs_on = drives_hs && cs && !cs->opened;
    if (sc->hs_on)
        hs_begin(sc, cs);
}

/* The handshake-driving call returned: its on-CPU time is the handshake's (once). */
static void hs_account(struct tlsm_conn_scope *sc)
{
    if (!sc->hs_on)
        return;
    sc->hs_on = false;
    struct tlsm_thread *th = &tlsm_th;
    struct tlsm_hs *hs = &sc->cs->hs;
    uint64_t ns = tlsm_hs_cpu_now(th) - sc->hs_cpu0, own = th->hs_own_ns - sc->hs_own0;
    ns =
        ns > own ? ns - own : 0; /* the calibration, if it ran in this call, is not the program's */
    hs->ns += ns;
    hs->calls++;
    /* Parts timed by wall (perf-switch, rseq) whose sum exceeds the call's CPU time held
     * time no switch detector sees (a VM's stolen time): flagged like switched-out parts. */
    if (tlsm_hs_parts_ns(hs) - sc->hs_parts0 > ns)
        hs->preempt++;
    th->hs_cur = sc->prev_hs;
}

static inline __attribute__((always_inline)) void conn_leave(struct tlsm_conn_scope *sc)
{
    hs_account(sc);
    tlsm_th.conn = sc->prev_conn;
    tlsm_th.conn_state = sc->prev_cs;
}

void tlsm_conn_enter(struct tlsm_conn_scope *sc, const SSL *ssl, struct tlsm_obj *lib)
{
    conn_enter(sc, ssl, lib, true);
}

void tlsm_conn_leave(struct tlsm_conn_scope *sc)
{
    conn_leave(sc);
}

uint32_t tlsm_conn_current(void)
{
    return tlsm_th.conn;
}

static void write_open(struct tlsm_conn_state *cs, const SSL *ssl, uint64_t now)
{
    const struct tlsm_abi *a = cs->lib ? &cs->lib->abi : NULL;
    const char *proto = "", *suite = "";
    int server = -1;
    tlsm_th.guard++;
    if (a && a->ssl_version)
        proto = a->ssl_version(ssl);
    if (a && a->ssl_current_cipher && a->ssl_cipher_name)
        suite = a->ssl_cipher_name(a->ssl_current_cipher(ssl));
    if (a && a->ssl_is_server)
        server = a->ssl_is_server(ssl);
    int resumed = a && a->ssl_session_reused ? a->ssl_session_reused(ssl) : -1;
    tlsm_th.guard--;
    char line[1536], hs[1024];
    struct tlsm_json j;
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(CONN));
    tlsm_json_int(&j, "t", ns_since_t0(now));
    tlsm_json_int(&j, "tid", tlsm_th.tid);
    tlsm_json_int(&j, "conn", cs->id);
    tlsm_json_str(&j, "phase", "open");
    tlsm_json_str(&j, "role", server == 1 ? "server" : server == 0 ? "client" : "?");
    tlsm_json_str(&j, "proto", proto ? proto : "");
    tlsm_json_str(&j, "suite", suite ? suite : "");
    tlsm_json_int(&j, "hs_ns", cs->hs_first ? (int64_t)tlsm_ticks_to_ns(now - cs->hs_first) : -1);
    tlsm_json_int(&j, "hs_call_ns", (int64_t)tlsm_ticks_to_ns(cs->hs_ticks));
    tlsm_json_int(&j, "lib", cs->lib ? cs->lib->lib_id : 0);
    if (cs->joined) /* open before an attach: its handshake is not in the trace */
        tlsm_json_bool(&j, "joined", true);
    /* No handshake-driving call seen (the first was SSL_sendfile, after a handshake libssl
     * drove itself): no `hs`, rather than a handshake of 0 ns in the analyzer's figures. */
    if (cs->hs.calls && tlsm_hs_json(&cs->hs, resumed, hs, sizeof(hs)))
        tlsm_json_raw(&j, "hs", hs);
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
}

static void maybe_open(struct tlsm_conn_state *cs, const SSL *ssl, uint64_t now)
{
    if (cs->opened || !tlsm_trace_ready())
        return;
    const struct tlsm_abi *a = cs->lib ? &cs->lib->abi : NULL;
    if (!a || !a->ssl_init_finished || !a->ssl_init_finished(ssl))
        return;
    cs->opened = true;
    write_open(cs, ssl, now);
}

void tlsm_conn_handshake_done(struct tlsm_conn_scope *sc, const SSL *ssl, uint64_t t0, uint64_t t1,
                              int ret)
{
    struct tlsm_conn_state *cs = sc->cs;
    if (!cs)
        return;
    hs_account(sc);
    if (!cs->hs_first)
        cs->hs_first = t0;
    cs->hs_ticks += t1 - t0;
    if (ret == 1)
        maybe_open(cs, ssl, t1);
}

/* A handshake driven by SSL_write or SSL_read (no SSL_connect/SSL_accept call, as in
 * openssl s_client): count the call as handshake time until the handshake is done. */
void tlsm_conn_implicit_handshake(struct tlsm_conn_scope *sc, const SSL *ssl, uint64_t t0,
                                  uint64_t t1)
{
    struct tlsm_conn_state *cs = sc->cs;
    hs_account(sc);
    if (!cs || cs->opened)
        return;
    if (!cs->hs_first)
        cs->hs_first = t0;
    cs->hs_ticks += t1 - t0;
    maybe_open(cs, ssl, t1);
}

static inline __attribute__((always_inline)) void io_begin(enum tlsm_dir dir)
{
    struct tlsm_io_tally *io = &tlsm_th.io[dir];
    io->active = true;
    io->id = atomic_fetch_add_explicit(&next_io[dir], 1, memory_order_relaxed);
    io->recs = 0;
    io->preempt = 0;
    io->crypto_ns = 0;
}

void tlsm_io_enter_in(struct tlsm_conn_scope *sc, const SSL *ssl, struct tlsm_obj *lib)
{
    conn_enter(sc, ssl, lib, true);
    io_begin(TLSM_DIR_IN);
}

void tlsm_io_enter_out(struct tlsm_conn_scope *sc, const SSL *ssl, struct tlsm_obj *lib)
{
    conn_enter(sc, ssl, lib, true);
    io_begin(TLSM_DIR_OUT);
}

void tlsm_io_enter_sendfile(struct tlsm_conn_scope *sc, const SSL *ssl, struct tlsm_obj *lib)
{
    conn_enter(sc, ssl, lib, false);
    io_begin(TLSM_DIR_OUT);
}

void tlsm_conn_add_record(enum tlsm_dir dir, uint64_t crypto_ns, bool preempted)
{
    struct tlsm_thread *th = &tlsm_th;
    /* A record of the handshake: its part `records`, unless the thread has no switch detector
     * (wall: a record's time is then wall time, unflagged, where the other parts read the
     * thread CPU clock; it stays in "other"). */
    if (th->hs_cur && !th->hs_part && th->cpu_kind != TLSM_CPU_WALL &&
        th->cpu_kind != TLSM_CPU_BLIND) {
        th->hs_cur->part_ns[TLSM_HS_RECORDS] += crypto_ns;
        th->hs_cur->part_calls[TLSM_HS_RECORDS]++;
        th->hs_cur->preempt += preempted;
    }
    struct tlsm_io_tally *io = &th->io[dir];
    if (io->active) {
        io->recs++;
        io->preempt += preempted;
        io->crypto_ns += crypto_ns;
    } else if (th->conn_state) {
        /* Records outside a call of their direction (handshake, a key update answered
         * inside a read) count for the connection directly. */
        th->conn_state->tot[dir].recs++;
        th->conn_state->tot[dir].preempt += preempted;
        th->conn_state->tot[dir].crypto_ns += crypto_ns;
    }
}

/* The two size keys of each direction's event, as written by TLSM_KEY (docs/
 * trace-format.md). */
#define IO_KEY(k)                                                                                  \
    {                                                                                              \
        TLSM_KEY(k)                                                                                \
    }
static const struct {
    struct {
        const char *k;
        size_t n;
    } want, got;
} io_keys[2] = {{IO_KEY("want"), IO_KEY("got")}, {IO_KEY("asked"), IO_KEY("written")}};

/* What a read or write event is made of (write_io to its two writers). */
struct io_line {
    const struct tlsm_conn_state *cs;
    const char *fn;
    int64_t want, got;
    bool has_err;
    int err;
    uint64_t t0, t1;
    uint32_t stack;
};

/* The read record of l at w (trace/trace2_fixed.h): its bytes, 0 when a value does not fit. */
static inline __attribute__((always_inline)) size_t
read_record(const struct tlsm_trace_room *w, const struct io_line *l, const struct tlsm_thread *th)
{
    const struct tlsm_io_tally *io = &th->io[TLSM_DIR_IN];
#define H(k) TLSM_B2_HAS(read, k)
    struct tlsm_b2_read v = {
        .have = H(t) | H(tid) | H(conn) | H(id) | H(fn) | H(want) | H(got) |
                (l->has_err ? H(err) : 0) | H(ns) | H(recs) | H(crypto_ns) |
                (io->preempt ? H(preempt) : 0),
#undef H
        .t = ns_since_t0(l->t0),
        .tid = th->tid,
        .conn = l->cs ? l->cs->id : 0,
        .id = (int64_t)io->id,
        .fn = l->fn,
        .want = l->want,
        .got = l->got,
        .err = l->err,
        .ns = (int64_t)tlsm_ticks_to_ns(l->t1 - l->t0),
        .recs = io->recs,
        .crypto_ns = (int64_t)io->crypto_ns,
        .preempt = io->preempt,
    };
    return tlsm_b2_fixed_read(w->s, w->p, w->end, &v, NULL, 0);
}

/* The write record of l at w: the write kind has no fn and ns fields, tlsm_b2_write_io writes
 * them as the tail the staged path writes. */
static inline __attribute__((always_inline)) size_t
write_record(const struct tlsm_trace_room *w, const struct io_line *l, const struct tlsm_thread *th)
{
    const struct tlsm_io_tally *io = &th->io[TLSM_DIR_OUT];
#define H(k) TLSM_B2_HAS(write, k)
    struct tlsm_b2_write v = {
        .have = H(t) | H(tid) | H(conn) | H(id) | H(asked) | H(written) |
                (l->has_err ? H(err) : 0) | H(recs) | H(crypto_ns) | (io->preempt ? H(preempt) : 0),
#undef H
        .t = ns_since_t0(l->t0),
        .tid = th->tid,
        .conn = l->cs ? l->cs->id : 0,
        .id = (int64_t)io->id,
        .asked = l->want,
        .written = l->got,
        .err = l->err,
        .recs = io->recs,
        .crypto_ns = (int64_t)io->crypto_ns,
        .preempt = io->preempt,
    };
    return tlsm_b2_write_io(w->s, w->p, w->end, &v, tlsm_ticks_to_ns(l->t1 - l->t0), l->fn);
}

/* Format 2: the read or write record straight into the thread's chunk; false when it must go
 * the line way: format 1, no room at hand, a value its field cannot hold, a stack id (neither
 * kind has a field for it: a tail of the staged path). */
static bool io_fixed(enum tlsm_dir dir, const struct io_line *l)
{
    struct tlsm_trace_room w;
    if (l->stack || !tlsm_trace_room_take(&w))
        return false;
    uint8_t nstr = w.s->nstr;
    int64_t base = w.s->base_t;
    size_t n = dir == TLSM_DIR_IN ? read_record(&w, l, &tlsm_th) : write_record(&w, l, &tlsm_th);
    if (!n)
        tlsm_b2_undo(w.s, nstr, base);
    tlsm_trace_room_done(n);
    return n != 0;
}

/* The event through the JSON builder: format 1, and what io_fixed gave up. */
static void io_json(enum tlsm_dir dir, const struct io_line *l)
{
    struct tlsm_thread *th = &tlsm_th;
    struct tlsm_io_tally *io = &th->io[dir];
    char line[512];
    struct tlsm_json j;
    tlsm_json_begin(&j, line, sizeof(line), dir == TLSM_DIR_OUT ? TLSM_EV(WRITE) : TLSM_EV(READ));
    tlsm_json_int(&j, "t", ns_since_t0(l->t0));
    tlsm_json_int(&j, "tid", th->tid);
    tlsm_json_int(&j, "conn", l->cs ? l->cs->id : 0);
    tlsm_json_int(&j, "id", (int64_t)io->id);
    tlsm_json_safe(&j, "fn", l->fn);
    tlsm_json_int_k(&j, io_keys[dir].want.k, io_keys[dir].want.n, l->want);
    tlsm_json_int_k(&j, io_keys[dir].got.k, io_keys[dir].got.n, l->got);
    if (l->has_err)
        tlsm_json_int(&j, "err", l->err);
    tlsm_json_int(&j, "ns", (int64_t)tlsm_ticks_to_ns(l->t1 - l->t0));
    tlsm_json_int(&j, "recs", io->recs);
    tlsm_json_int(&j, "crypto_ns", (int64_t)io->crypto_ns);
    if (io->preempt)
        tlsm_json_int(&j, "preempt", io->preempt);
    if (l->stack)
        tlsm_json_int(&j, "stack", l->stack);
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
}

static void write_io(struct tlsm_conn_state *cs, const SSL *ssl, enum tlsm_dir dir, const char *fn,
                     int64_t want, int ret, int64_t got, uint64_t t0, uint64_t t1)
{
    struct tlsm_thread *th = &tlsm_th;
    struct io_line l = {.cs = cs, .fn = fn, .want = want, .got = got, .t0 = t0, .t1 = t1};
    if (got <= 0 && cs && cs->lib && cs->lib->abi.ssl_error) {
        th->guard++;
        l.err = cs->lib->abi.ssl_error(ssl, ret);
        l.has_err = true;
        th->guard--;
    }
    /* Reads and writes are both call-site samples (a write's site differs from a read's); the
     * sample may write its stack event, before this one. */
    l.stack = tlsm_cfg.stacks ? tlsm_stack_sample(th->site, TLSM_STACK_READ) : 0;
    if (!io_fixed(dir, &l))
        io_json(dir, &l);
}

static inline __attribute__((always_inline)) void io_end(struct tlsm_conn_scope *sc, const SSL *ssl,
                                                         enum tlsm_dir dir, bool drives_hs,
                                                         const char *fn, int64_t want, int ret,
                                                         int64_t got, uint64_t t0, uint64_t t1)
{
    struct tlsm_thread *th = &tlsm_th;
    struct tlsm_io_tally *io = &th->io[dir];
    struct tlsm_conn_state *cs = sc->cs;
    io->active = false;
    if (cs) {
        cs->tot[dir].calls++;
        /* A peek's bytes are returned again by a later read: count them once. */
        if (memcmp(fn, "SSL_peek", 8)) /* fn: a hook's name, 8 bytes or more */
            cs->tot[dir].bytes += got > 0 ? (uint64_t)got : 0;
        cs->tot[dir].recs += io->recs;
        cs->tot[dir].crypto_ns += io->crypto_ns;
        cs->tot[dir].preempt += io->preempt;
        if (!cs->opened && drives_hs) /* only while the handshake is not seen complete */
            tlsm_conn_implicit_handshake(sc, ssl, t0, t1);
        else if (!cs->opened) /* its handshake done unseen (in an SSL BIO): open, untimed */
            maybe_open(cs, ssl, t1);
        /* bytes, yet this call decrypted (sealed) no record: ask once per direction whether
         * the kernel does it for this connection (kTLS makes no EVP call). */
        if (got > 0 && !io->recs && !cs->ktls_asked[dir]) {
            cs->ktls_asked[dir] = true;
            tlsm_blind_ktls(cs->lib, ssl, &cs->id, tlsm_conn_new_id, dir == TLSM_DIR_OUT);
        }
    }
    if (tlsm_summary_on()) { /* both directions: writes are kept as reads are */
        int err = -1;
        if (got <= 0 && cs && cs->lib && cs->lib->abi.ssl_error) {
            tlsm_th.guard++;
            err = cs->lib->abi.ssl_error(ssl, ret);
            tlsm_th.guard--;
        }
        tlsm_summary_read(th, dir == TLSM_DIR_OUT, !memcmp(fn, "SSL_peek", 8), want, got, err,
                          t1 - t0, io->recs, t1);
    }
    bool want_ev = dir == TLSM_DIR_IN ? tlsm_cfg.reads : tlsm_cfg.writes;
    if (tlsm_event_lines_on() && want_ev && tlsm_trace_ready())
        write_io(cs, ssl, dir, fn, want, ret, got, t0, t1);
}

void tlsm_io_leave_in(struct tlsm_conn_scope *sc, const SSL *ssl, const char *fn, int64_t want,
                      int ret, int64_t got, uint64_t t0, uint64_t t1)
{
    io_end(sc, ssl, TLSM_DIR_IN, true, fn, want, ret, got, t0, t1);
    conn_leave(sc);
}

void tlsm_io_leave_out(struct tlsm_conn_scope *sc, const SSL *ssl, const char *fn, int64_t want,
                       int ret, int64_t got, uint64_t t0, uint64_t t1)
{
    io_end(sc, ssl, TLSM_DIR_OUT, true, fn, want, ret, got, t0, t1);
    conn_leave(sc);
}

void tlsm_io_leave_sendfile(struct tlsm_conn_scope *sc, const SSL *ssl, int64_t want, int ret,
                            int64_t got, uint64_t t0, uint64_t t1)
{
    io_end(sc, ssl, TLSM_DIR_OUT, false, "SSL_sendfile", want, ret, got, t0, t1);
    conn_leave(sc);
}

uint32_t tlsm_conn_new_id(void)
{
    return atomic_fetch_add_explicit(&next_conn, 1, memory_order_relaxed);
}

void tlsm_conn_free(const SSL *ssl, struct tlsm_obj *lib)
{
    struct tlsm_conn_state *cs = ssl ? tlsm_table_get(&conns, ssl) : NULL;
    /* A direction no hooked call carried a record of, not asked yet: it may have gone through
     * an SSL BIO (s_server -WWW writes with BIO_write, inside libssl) with kTLS doing the
     * crypto. OpenSSL's BIOs still say so here, before the real SSL_free. */
    uint32_t id = cs ? cs->id : 0;
    for (int dir = 0; ssl && dir < 2; dir++)
        if (!cs || (!cs->ktls_asked[dir] && !cs->tot[dir].recs)) {
            if (cs)
                cs->ktls_asked[dir] = true;
            tlsm_blind_ktls(cs && cs->lib ? cs->lib : lib, ssl, &id, tlsm_conn_new_id,
                            dir == TLSM_DIR_OUT);
        }
    if (!cs)
        return;
    if (cs->id && tlsm_trace_ready()) {
        char line[512];
        struct tlsm_json j;
        tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(CONN));
        tlsm_json_int(&j, "t", ns_since_t0(tlsm_now()));
        tlsm_json_int(&j, "tid", tlsm_th.tid);
        tlsm_json_int(&j, "conn", cs->id);
        tlsm_json_str(&j, "phase", "close");
        tlsm_json_int(&j, "reads", (int64_t)cs->tot[TLSM_DIR_IN].calls);
        tlsm_json_int(&j, "got", (int64_t)cs->tot[TLSM_DIR_IN].bytes);
        tlsm_json_int(&j, "recs", (int64_t)cs->tot[TLSM_DIR_IN].recs);
        tlsm_json_int(&j, "crypto_ns", (int64_t)cs->tot[TLSM_DIR_IN].crypto_ns);
        if (cs->tot[TLSM_DIR_IN].preempt)
            tlsm_json_int(&j, "preempt", (int64_t)cs->tot[TLSM_DIR_IN].preempt);
        /* The same totals of the sending side (docs/trace-format.md). */
        tlsm_json_int(&j, "writes", (int64_t)cs->tot[TLSM_DIR_OUT].calls);
        tlsm_json_int(&j, "wbytes", (int64_t)cs->tot[TLSM_DIR_OUT].bytes);
        tlsm_json_int(&j, "wrecs", (int64_t)cs->tot[TLSM_DIR_OUT].recs);
        tlsm_json_int(&j, "wcrypto_ns", (int64_t)cs->tot[TLSM_DIR_OUT].crypto_ns);
        if (cs->tot[TLSM_DIR_OUT].preempt)
            tlsm_json_int(&j, "wpreempt", (int64_t)cs->tot[TLSM_DIR_OUT].preempt);
        size_t n = tlsm_json_end(&j, line);
        if (n)
            tlsm_trace_line(line, n);
    }
    __atomic_store_n(&cs->key, NULL, __ATOMIC_RELAXED); /* before the slot can be reused */
    tlsm_table_del(&conns, ssl);
}
