/* summary.c: summary mode's totals and histograms (summary.h). Counters are atomics added
 * on the record and read paths with no lock; a snapshot writes what changed since the last
 * one (deltas: the analyzer adds every summary event), so a trace cut short by a crash
 * loses one interval, and a long run costs the same few lines per interval whatever its
 * traffic. Layout and keys: docs/trace-format.md, "summary". */
#include "core/summary.h"
#include "base/clock.h"
#include "base/json.h"
#include "trace/thread.h"
#include "trace/trace.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Keys as the JSON writer puts them (",\"name\":"): these events' keys come from tables. */
#define K(name) ",\"" name "\":"

/* Per (instance, cipher, path, size class): the rec event's sums. */
enum {
    R_RECS,
    R_APP,
    R_OTHER,
    R_TAG_FAIL,
    R_LEN,
    R_CT,
    R_PT,
    R_CRYPTO_NS,
    R_GCM_NS,
    R_GCM_DEC,
    R_GCM_CTR,
    R_GCM_BOTH,
    R_FL_RECS,
    R_FL_PT,
    R_FL_NS,
    R_FL_NOPT_NS,
    R_ST_RECS,
    R_ST_PT,
    R_ST_NS,
    R_IMPL_CT,
    R_IMPL_OTHER_CT,
    R_IMPL_NONE_CT,
    R_N
};
static const char *const rec_keys[R_N] = {
    K("recs"),    K("recs_app"),  K("recs_other"),    K("tag_fail"),    K("rec_len"), K("rec_ct"),
    K("rec_pt"),  K("crypto_ns"), K("gcm_ns"),        K("gcm_dec"),     K("gcm_ctr"), K("gcm_both"),
    K("fl_recs"), K("fl_pt"),     K("fl_ns"),         K("fl_nopt_ns"),  K("st_recs"), K("st_pt"),
    K("st_ns"),   K("impl_ct"),   K("impl_other_ct"), K("impl_none_ct")};

/* Per process and direction: the read event's sums, as written (for dir out the write
 * event's, under the same keys: asked as want, written as got; the analyzer reads writes as
 * reads). Counted per thread (summary.h, TLSM_SR); reads and read_ns derived at a snapshot. */
enum {
    D_READS,
    D_OK,
    D_FAIL,
    D_WANT_READ,
    D_ZERO_RET,
    D_GOT,
    D_WANT,
    D_WANT_BIG,
    D_NS,
    D_PEEKS,
    D_RECS_IN,
    D_N
};
static const char *const read_keys[D_N] = {
    K("reads"), K("reads_ok"), K("reads_fail"), K("want_read"), K("zero_ret"),     K("got"),
    K("want"),  K("want_big"), K("read_ns"),    K("peeks"),     K("recs_in_reads")};

/* ns/B bins: 64 linear steps per doubling from 2^-7 ns/B over 25 doublings (to 256 us/B),
 * indexed from the double's exponent and top mantissa bits (no libm on the record path). */
#define NSPB_SUB    64
#define NSPB_ELO    (-7)
#define NSPB_N      (25 * NSPB_SUB)
#define LOG2_N      TLSM_SUM_LOG2_N
#define MAX_BUCKETS 8
#define NCLASS      3 /* tiny < 256 B plaintext, small < 2048, bulk (the analyzer's classes) */

struct agg {
    _Atomic uint64_t v[R_N];
    _Atomic uint32_t nspb[NSPB_N], fl_nspb[NSPB_N]; /* not flagged / preempted records */
};
struct agg_last {
    uint64_t v[R_N];
    uint32_t nspb[NSPB_N], fl_nspb[NSPB_N];
};
struct bucket {
    _Atomic int state; /* 0 free, 1 being claimed, 2 in use */
    const char *cipher, *path;
    int64_t lib;
    bool out;
    _Atomic int64_t impl; /* the first impl id seen */
    struct agg cls[NCLASS];
};
static struct bucket buckets[MAX_BUCKETS];
static struct agg_last last_cls[MAX_BUCKETS][NCLASS];
static _Atomic uint64_t lost_recs; /* more (instance, cipher, path) keys than MAX_BUCKETS */

enum { H_REC_LEN, H_READ_GOT, H_READ_WANT, H_RECS_PER_READ, H_N };
_Static_assert(H_READ_WANT - H_READ_GOT == TLSM_SH_WANT &&
                   H_RECS_PER_READ - H_READ_GOT == TLSM_SH_RECS && TLSM_SH_GOT == 0,
               "the per-thread read histograms in H_ order");
static const char *const hist_keys[H_N] = {K("rec_len_log2"), K("read_got_log2"),
                                           K("read_want_log2"), K("recs_per_read_log2")};
/* [0]: decryption (reads, dir in records), [1]: encryption (writes, dir out records). The
 * read histograms are per thread (summary.h, TLSM_SH; H_READ_GOT.. in its order); the
 * record lengths here. */
static _Atomic uint64_t rec_len_hist[2][LOG2_N];
static uint64_t last_reads[2][D_N], last_hists[2][H_N][LOG2_N], last_lost;
/* Every thread's read sums, added up by the snapshot (under `writing`). */
static uint64_t sum_now[TLSM_THREAD_SUM_N];

/* Per copy: its socket reads past the hooks (hooks/hook_sock.c, sockread events in event
 * mode): calls, bytes, end of stream, would block, failed. */
enum { K_CALLS, K_BYTES, K_EOF, K_AGAIN, K_ERRORS, K_N };
static const char *const sock_keys[K_N] = {K("reads"), K("bytes"), K("eof"), K("would_block"),
                                           K("errors")};
static struct {
    _Atomic int64_t lib; /* 0: free */
    _Atomic uint64_t v[K_N];
    uint64_t last[K_N];
} socks[MAX_BUCKETS];
static _Atomic uint64_t lost_sock; /* socket reads of more copies than MAX_BUCKETS */
static uint64_t last_lost_sock;

static _Atomic int writing;
_Atomic uint64_t tlsm_summary_due;
static uint64_t interval_ticks;
static unsigned seq;

static void add(_Atomic uint64_t *p, uint64_t v)
{
    if (v)
        atomic_fetch_add_explicit(p, v, memory_order_relaxed);
}

static int nspb_bin(uint64_t ns, uint64_t pt)
{
    double r = (double)ns / (double)pt;
    uint64_t bits;
    memcpy(&bits, &r, sizeof(bits));
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    if (r <= 0 || e < NSPB_ELO)
        return 0;
    int k = (e - NSPB_ELO) * NSPB_SUB + (int)((bits >> 46) & (NSPB_SUB - 1));
    return k >= NSPB_N ? NSPB_N - 1 : k;
}

static struct bucket *bucket_of(const char *cipher, const char *path, int64_t lib, bool out)
{
    for (int i = 0; i < MAX_BUCKETS; i++) {
        struct bucket *b = &buckets[i];
        int st = atomic_load_explicit(&b->state, memory_order_acquire);
        if (st == 2 && b->cipher == cipher && b->path == path && b->lib == lib && b->out == out)
            return b;
        if (st == 0 && atomic_compare_exchange_strong(&b->state, &st, 1)) {
            b->cipher = cipher, b->path = path, b->lib = lib, b->out = out;
            atomic_store_explicit(&b->state, 2, memory_order_release);
            return b;
        }
        while (st == 1) /* another thread is filling it in: a few stores */
            st = atomic_load_explicit(&b->state, memory_order_acquire);
        if (st == 2 && b->cipher == cipher && b->path == path && b->lib == lib && b->out == out)
            return b;
    }
    return NULL;
}

/* Set by the first record, read or socket read: a process that had none (env, a shell, a
 * program that never spoke TLS) writes no summary, and so opens no trace for it, as event
 * mode writes none. */
_Atomic bool tlsm_summary_touched;

static inline void touch(void)
{
    if (!atomic_load_explicit(&tlsm_summary_touched, memory_order_relaxed))
        atomic_store_explicit(&tlsm_summary_touched, true, memory_order_relaxed);
}

static void maybe_flush(void)
{
    if (tlsm_cfg.interval &&
        tlsm_now() >= atomic_load_explicit(&tlsm_summary_due, memory_order_relaxed))
        tlsm_summary_flush(false);
}

void tlsm_summary_rec(const struct tlsm_sum_rec *r)
{
    touch();
    struct bucket *b = bucket_of(r->cipher, r->path, r->lib, r->out);
    uint64_t len = r->len > 0 ? (uint64_t)r->len : 0, pt = r->pt > 0 ? (uint64_t)r->pt : 0;
    uint64_t over = r->tls12 ? 24 : 16, ct = len > over ? len - over : 0;
    if (!b) {
        add(&lost_recs, 1);
        return;
    }
    struct agg *a = &b->cls[pt < 256 ? 0 : pt < 2048 ? 1 : 2];
    add(&a->v[R_RECS], 1);
    add(&a->v[r->type == 23 ? R_APP : R_OTHER], 1);
    add(&a->v[R_TAG_FAIL], !r->tag_ok);
    add(&a->v[R_LEN], len);
    add(&a->v[R_CT], ct);
    add(&a->v[R_PT], pt);
    add(&a->v[R_CRYPTO_NS], r->crypto_ns);
    add(&a->v[R_GCM_NS], r->gcm_ns);
    if (r->gcm_fn >= 1 && r->gcm_fn <= 3)
        add(&a->v[R_GCM_DEC + r->gcm_fn - 1], r->gcm_bytes);
    if (r->stalled) { /* no switch seen, yet too slow to be crypto (record.c): no ns/B bin */
        add(&a->v[R_ST_RECS], 1);
        add(&a->v[R_ST_PT], pt);
        add(&a->v[R_ST_NS], r->crypto_ns);
    } else if (r->preempted) {
        add(&a->v[R_FL_RECS], 1);
        add(&a->v[pt ? R_FL_PT : R_FL_NOPT_NS], pt ? pt : r->crypto_ns);
        add(&a->v[R_FL_NS], pt ? r->crypto_ns : 0);
    }
    if (pt && !r->stalled)
        atomic_fetch_add_explicit(
            &(r->preempted ? a->fl_nspb : a->nspb)[nspb_bin(r->crypto_ns, pt)], 1,
            memory_order_relaxed);
    /* The bucket's implementation is set by its first record that names one: a load, and
     * the compare-and-swap only while it is unset. */
    int64_t none = atomic_load_explicit(&b->impl, memory_order_relaxed);
    if (r->impl && none != r->impl &&
        (none || !atomic_compare_exchange_strong(&b->impl, &none, r->impl)) && none != r->impl)
        add(&a->v[R_IMPL_OTHER_CT], ct);
    else
        add(&a->v[r->impl ? R_IMPL_CT : R_IMPL_NONE_CT], ct);
    add(&rec_len_hist[r->out][tlsm_log2_idx(len)], 1);
    maybe_flush();
}

void tlsm_summary_sockread(int64_t lib, int64_t got, int err)
{
    touch();
    int i = 0;
    for (int64_t none = 0; i < MAX_BUCKETS; i++, none = 0)
        if (atomic_load(&socks[i].lib) == lib ||
            atomic_compare_exchange_strong(&socks[i].lib, &none, lib) || none == lib)
            break;
    if (i == MAX_BUCKETS) {
        add(&lost_sock, 1);
        return;
    }
    add(&socks[i].v[K_CALLS], 1);
    add(&socks[i].v[got > 0         ? K_BYTES
                    : got == 0      ? K_EOF
                    : err == EAGAIN ? K_AGAIN
                                    : K_ERRORS],
        got > 0 ? (uint64_t)got : 1);
    maybe_flush();
}

/* The event's common head: kind, time, snapshot number. */
static void head(struct tlsm_json *j, char *line, size_t cap, const char *what, bool final)
{
    tlsm_json_begin(j, line, cap, TLSM_EV(SUMMARY));
    tlsm_json_int(j, "t", (int64_t)tlsm_ticks_to_ns(tlsm_now() - tlsm_trace_t0));
    tlsm_json_int(j, "seq", seq);
    tlsm_json_safe(j, "what", what);
    if (final)
        tlsm_json_bool(j, "final", true);
}

static void line_out(struct tlsm_json *j, char *line)
{
    size_t n = tlsm_json_end(j, line);
    if (n)
        tlsm_trace_line(line, n);
}

/* Bins of cur that changed since last, from *from on, as "[[bin,count],...]": at most
 * max_pairs of them (an event stays far below TLSM_LINE_MAX); *from is where to go on. */
static void bins_delta(_Atomic uint32_t *cur, uint32_t *last, int n, int *from, char *buf,
                       size_t cap, int max_pairs)
{
    size_t w = (size_t)snprintf(buf, cap, "[");
    int pairs = 0, k = *from;
    for (; k < n && pairs < max_pairs; k++) {
        uint32_t c = atomic_load_explicit(&cur[k], memory_order_relaxed), d = c - last[k];
        if (!d)
            continue;
        last[k] = c;
        w += (size_t)snprintf(buf + w, cap - w, "%s[%d,%u]", pairs ? "," : "", k, d);
        pairs++;
    }
    *from = k;
    snprintf(buf + w, cap - w, "]");
}

static const char *const class_names[NCLASS] = {"tiny", "small", "bulk"};

/* One (bucket, class): its counters, then its ns/B bins over as many events as they need. */
static void flush_class(struct bucket *b, int cls, bool final)
{
    struct agg *a = &b->cls[cls];
    struct agg_last *l = &last_cls[b - buckets][cls];
    uint64_t d[R_N];
    bool any = false;
    for (int k = 0; k < R_N; k++) {
        uint64_t c = atomic_load_explicit(&a->v[k], memory_order_relaxed);
        d[k] = c - l->v[k];
        l->v[k] = c;
        any |= d[k] != 0;
    }
    char line[TLSM_LINE_MAX], bins[1400], fl[1400];
    int from = 0, fl_from = 0;
    for (int part = 0; any || from < NSPB_N || fl_from < NSPB_N; part++) {
        bins_delta(a->nspb, l->nspb, NSPB_N, &from, bins, sizeof(bins), 80);
        bins_delta(a->fl_nspb, l->fl_nspb, NSPB_N, &fl_from, fl, sizeof(fl), 80);
        if (!any && !strcmp(bins, "[]") && !strcmp(fl, "[]"))
            break;
        struct tlsm_json j;
        head(&j, line, sizeof(line), "records", final);
        tlsm_json_int(&j, "lib", b->lib);
        tlsm_json_safe(&j, "cipher", b->cipher);
        tlsm_json_safe(&j, "path", b->path);
        tlsm_json_safe(&j, "class", class_names[cls]);
        if (b->out)
            tlsm_json_safe(&j, "dir", "out");
        int64_t impl = atomic_load(&b->impl);
        if (impl)
            tlsm_json_int(&j, "impl", impl);
        for (int k = 0; any && k < R_N; k++)
            if (d[k])
                tlsm_json_int_k(&j, rec_keys[k], strlen(rec_keys[k]), (int64_t)d[k]);
        tlsm_json_raw(&j, "nspb", bins);
        tlsm_json_raw(&j, "fl_nspb", fl);
        line_out(&j, line);
        any = false;
    }
}

/* Direction out's read sums as written (D_*), from every thread's (sum_now). */
static void read_totals(bool out, uint64_t v[D_N])
{
    const uint64_t *c = sum_now;
    int o = out;
    v[D_OK] = c[TLSM_SR(o, TLSM_SR_OK)];
    v[D_FAIL] = c[TLSM_SR(o, TLSM_SR_FAIL)];
    v[D_READS] = v[D_OK] + v[D_FAIL];
    v[D_WANT_READ] = c[TLSM_SR(o, TLSM_SR_WANT_READ)];
    v[D_ZERO_RET] = c[TLSM_SR(o, TLSM_SR_ZERO_RET)];
    v[D_GOT] = c[TLSM_SR(o, TLSM_SR_GOT)];
    v[D_WANT] = c[TLSM_SR(o, TLSM_SR_WANT)];
    v[D_WANT_BIG] = c[TLSM_SR(o, TLSM_SR_WANT_BIG)];
    v[D_NS] = tlsm_ticks_to_ns(c[TLSM_SR(o, TLSM_SR_TICKS)]);
    v[D_PEEKS] = c[TLSM_SR(o, TLSM_SR_PEEKS)];
    v[D_RECS_IN] = c[TLSM_SR(o, TLSM_SR_RECS_IN)];
}

/* Bucket k of direction out's histogram h (H_*) now. */
static uint64_t hist_now(bool out, int h, int k)
{
    if (h == H_REC_LEN)
        return atomic_load_explicit(&rec_len_hist[out][k], memory_order_relaxed);
    return sum_now[TLSM_SH((int)out, h - H_READ_GOT, k)];
}

/* The process-wide part of one direction: read (write) sums, the log2 histograms, and for
 * dir in the records no bucket could hold. The out event is written only when something
 * of that side changed (a download-only process writes none). sum_now is filled. */
static void flush_process(bool out, bool final)
{
    char line[TLSM_LINE_MAX], list[700];
    struct tlsm_json j;
    uint64_t lost = atomic_load(&lost_recs), c, v[D_N];
    unsigned unlisted = final && !out ? tlsm_thread_unlisted() : 0;
    read_totals(out, v);
    bool any = !out;
    for (int k = 0; k < D_N && !any; k++)
        any = v[k] != last_reads[out][k];
    for (int h = 0; h < H_N && !any; h++)
        for (int k = 0; k < LOG2_N && !any; k++)
            any = hist_now(out, h, k) != last_hists[out][h][k];
    if (!any)
        return;
    /* Its own name: a reader that knows only "process" must not add writes to reads. */
    head(&j, line, sizeof(line), out ? "process_out" : "process", final);
    if (out)
        tlsm_json_safe(&j, "dir", "out");
    for (int k = 0; k < D_N; k++) {
        if (v[k] - last_reads[out][k])
            tlsm_json_int_k(&j, read_keys[k], strlen(read_keys[k]),
                            (int64_t)(v[k] - last_reads[out][k]));
        last_reads[out][k] = v[k];
    }
    if (!out && lost - last_lost)
        tlsm_json_int(&j, "lost_recs", (int64_t)(lost - last_lost));
    if (!out)
        last_lost = lost;
    uint64_t lost_s = atomic_load(&lost_sock);
    if (!out && lost_s - last_lost_sock)
        tlsm_json_int(&j, "lost_sockreads", (int64_t)(lost_s - last_lost_sock));
    if (!out)
        last_lost_sock = lost_s;
    if (unlisted) /* their reads since they started are in no snapshot */
        tlsm_json_int(&j, "threads_unlisted", unlisted);
    for (int h = 0; h < H_N; h++) {
        size_t w = (size_t)snprintf(list, sizeof(list), "[");
        int pairs = 0;
        for (int k = 0; k < LOG2_N; k++) {
            c = hist_now(out, h, k);
            if (c != last_hists[out][h][k] && w < sizeof(list))
                w += (size_t)snprintf(list + w, sizeof(list) - w, "%s[%d,%llu]", pairs++ ? "," : "",
                                      k, (unsigned long long)(c - last_hists[out][h][k]));
            last_hists[out][h][k] = c;
        }
        if (w < sizeof(list) - 1) {
            snprintf(list + w, sizeof(list) - w, "]");
            tlsm_json_put(&j, hist_keys[h], strlen(hist_keys[h]));
            tlsm_json_put(&j, list, strlen(list));
        }
    }
    line_out(&j, line);
}

/* Each copy's socket reads since the last snapshot: one "sockets" part per copy that read. */
static void flush_sockets(bool final)
{
    char line[512];
    for (int i = 0; i < MAX_BUCKETS && atomic_load(&socks[i].lib); i++) {
        uint64_t d[K_N];
        bool any = false;
        for (int k = 0; k < K_N; k++) {
            uint64_t c = atomic_load_explicit(&socks[i].v[k], memory_order_relaxed);
            d[k] = c - socks[i].last[k];
            socks[i].last[k] = c;
            any |= d[k] != 0;
        }
        if (!any)
            continue;
        struct tlsm_json j;
        head(&j, line, sizeof(line), "sockets", final);
        tlsm_json_int(&j, "lib", atomic_load(&socks[i].lib));
        for (int k = 0; k < K_N; k++)
            tlsm_json_int_k(&j, sock_keys[k], strlen(sock_keys[k]), (int64_t)d[k]);
        line_out(&j, line);
    }
}

void tlsm_summary_flush(bool always)
{
    if (!tlsm_summary_on())
        return;
    if (always && !atomic_load(&tlsm_summary_touched) && !tlsm_trace_is_open())
        return;            /* nothing counted, no trace: leave it unopened */
    if (!interval_ticks) { /* the interval in ticks, from the rate over 2^32 ticks */
        uint64_t probe = 1ull << 32, ns = tlsm_ticks_to_ns(probe);
        uint64_t want = (uint64_t)(tlsm_cfg.interval ? tlsm_cfg.interval : 1) * 1000000000u;
        interval_ticks = (uint64_t)((unsigned __int128)want * probe / (ns ? ns : 1));
        if (!interval_ticks)
            interval_ticks = 1;
    }
    for (int i = 0; atomic_exchange_explicit(&writing, 1, memory_order_acquire); i++)
        if (!always || i > 1000000)
            return; /* another thread writes this snapshot */
    uint64_t now = tlsm_now();
    if (!always && !atomic_load(&tlsm_summary_due)) /* the first record starts the clock */
        atomic_store(&tlsm_summary_due, now + interval_ticks);
    else if (always || now >= atomic_load(&tlsm_summary_due)) {
        atomic_store(&tlsm_summary_due, now + interval_ticks);
        if (tlsm_trace_ready()) {
            tlsm_thread_sum_all(sum_now);
            tlsm_th.guard++;
            for (int i = 0; i < MAX_BUCKETS; i++)
                for (int c = 0; atomic_load(&buckets[i].state) == 2 && c < NCLASS; c++)
                    flush_class(&buckets[i], c, always);
            flush_process(false, always);
            flush_process(true, always);
            flush_sockets(always);
            seq++;
            tlsm_th.guard--;
        }
    }
    atomic_store_explicit(&writing, 0, memory_order_release);
}

void tlsm_summary_atfork_child(void)
{
    for (int i = 0; i < MAX_BUCKETS; i++)
        for (int c = 0; c < NCLASS; c++) {
            struct agg *a = &buckets[i].cls[c];
            struct agg_last *l = &last_cls[i][c];
            for (int k = 0; k < R_N; k++)
                l->v[k] = atomic_load(&a->v[k]);
            for (int k = 0; k < NSPB_N; k++)
                l->nspb[k] = atomic_load(&a->nspb[k]), l->fl_nspb[k] = atomic_load(&a->fl_nspb[k]);
        }
    tlsm_thread_sum_all(sum_now); /* after tlsm_thread_atfork_child: this thread's alone */
    for (int o = 0; o < 2; o++) {
        read_totals(o, last_reads[o]);
        for (int h = 0; h < H_N; h++)
            for (int k = 0; k < LOG2_N; k++)
                last_hists[o][h][k] = hist_now(o, h, k);
    }
    last_lost = atomic_load(&lost_recs);
    last_lost_sock = atomic_load(&lost_sock);
    for (int i = 0; i < MAX_BUCKETS; i++)
        for (int k = 0; k < K_N; k++)
            socks[i].last[k] = atomic_load(&socks[i].v[k]);
    seq = 0;
    atomic_store(&writing, 0);
}
