/* summary.c: totals, shares and the per-(cipher, path) rows. */
#include "verdicts/summary.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static struct row *row_get(struct summary *s, int cipher, int path)
{
    int i;

    for (i = 0; i < s->nrows; i++)
        if (s->rows[i].cipher == cipher && s->rows[i].path == path)
            return &s->rows[i];
    if (s->nrows == MAX_ROWS)
        return NULL;
    s->rows[s->nrows].cipher = cipher;
    s->rows[s->nrows].path = path;
    return &s->rows[s->nrows++];
}

struct keep_group {
    enum wgroup g;
};

/* Buckets whose class falls in one group (a part of a mixed row). */
static bool keep_group(const struct model *m, const struct bucket *b, void *ctx)
{
    struct impl_result r;

    impl__classify(m, b, &r);
    return wgroup_of(r.cls) == ((struct keep_group *)ctx)->g;
}

static bool row_takes(const struct model *m, const struct row *w, const struct bucket *b,
                      bool (*keep)(const struct model *, const struct bucket *, void *), void *ctx)
{
    return b->cipher == w->cipher && b->path == w->path && (!keep || keep(m, b, ctx));
}

/* The detail of the row's largest bucket of its class (the first bucket's when none has
 * bytes). */
static void row_detail(const struct summary *s, struct row *w,
                       bool (*keep)(const struct model *, const struct bucket *, void *), void *ctx)
{
    const struct model *m = s->m;
    bool found = false;
    uint64_t top = 0;
    size_t i;

    for (i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];
        struct impl_result r;

        if (!row_takes(m, w, b, keep, ctx))
            continue;
        impl__classify(m, b, &r);
        if (!found || (w->split.bytes && r.cls == w->cls && b->st.rec_ct > top)) {
            if (!w->split.bytes)
                w->cls = r.cls;
            if (r.cls == w->cls)
                top = b->st.rec_ct;
            snprintf(w->detail, sizeof(w->detail), "%s", r.detail);
            found = true;
        }
    }
}

/* The row's records (those keep() takes), its split, its class by bytes and what ran. */
static void fill_row(const struct summary *s, struct row *w,
                     bool (*keep)(const struct model *, const struct bucket *, void *), void *ctx)
{
    const struct model *m = s->m;
    size_t i;

    memset(&w->st, 0, sizeof(w->st));
    memset(&w->split, 0, sizeof(w->split));
    for (i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];
        struct impl_result r;

        if (!row_takes(m, w, b, keep, ctx))
            continue;
        impl__classify(m, b, &r);
        stats__add(&w->st, &b->st);
        wsplit__add(&w->split, r.cls, weights__bucket_copy(m, b), b->st.rec_ct,
                    bucket__crypto_ns(b));
    }
    w->cls = wsplit__class(&w->split);
    w->mixed = wsplit__mixed(&w->split);
    row_detail(s, w, keep, ctx);
}

static void build_rows(struct summary *s)
{
    const struct model *m = s->m;
    size_t i;
    int k;

    for (i = 0; i < m->nbuckets; i++)
        row_get(s, m->buckets[i].cipher, m->buckets[i].path);
    for (k = 0; k < s->nrows; k++)
        fill_row(s, &s->rows[k], NULL, NULL);
}

void summary__row_part(const struct summary *s, const struct row *w, enum wgroup g,
                       struct row *part)
{
    struct keep_group kg = {g};
    int k;

    memset(part, 0, sizeof(*part));
    part->cipher = w->cipher, part->path = w->path;
    fill_row(s, part, keep_group, &kg);
    summary__class_figs_if(s->m, w->cipher, w->path, keep_group, &kg, part->fig);
    for (k = 0; k < SC_N; k++)
        part->crypto_ns += part->fig[k].crypto_ns;
}

static void build_traces(struct summary *s)
{
    const struct model *m = s->m;
    size_t i;

    s->cpu_ns = m->ntraces ? 0 : -1;
    for (i = 0; i < m->ntraces; i++) {
        const struct trace *t = &m->traces[i];

        /* Checked sums: trace values are input, INT64_MAX must not overflow. */
        if (__builtin_add_overflow(s->duration_ns, trace__duration(t), &s->duration_ns))
            s->duration_ns = INT64_MAX;
        s->cpu_overflow |= t->cpu_overflow;
        if (trace__cpu_ns(t) < 0 || s->cpu_ns < 0)
            s->cpu_ns = -1;
        else if (__builtin_add_overflow(s->cpu_ns, trace__cpu_ns(t), &s->cpu_ns))
            s->cpu_ns = -1, s->cpu_overflow = true;
        s->lines += t->lines;
        s->lines_skipped += t->lines_skipped;
        s->lines_unknown += t->lines_unknown;
        s->dropped += t->dropped > 0 ? (uint64_t)t->dropped : 0;
        s->truncated |= !t->has_end || t->partial_last;
        s->emulated |= t->emulated;
    }
}

/* Threads that decrypted records in trace ti (at least 1: the wall time's own thread). */
static uint64_t decrypting_threads(const struct model *m, size_t ti)
{
    uint64_t n = 0;
    size_t i;

    for (i = 0; i < m->nthreads; i++)
        n += m->threads[i].trace == ti && m->threads[i].st.recs;
    return n ? n : 1;
}

/* Untrusted times: sums and products saturate instead of overflowing. */
static int64_t sat_add(int64_t a, int64_t b)
{
    return a > 0 && b > INT64_MAX - a ? INT64_MAX : a + b;
}

static int64_t sat_mul(int64_t a, uint64_t b)
{
    return a > 0 && b && (uint64_t)a > (uint64_t)INT64_MAX / b ? INT64_MAX : a * (int64_t)b;
}

/* How far crypto exceeds a bound (0 when it does not). */
static int64_t excess(uint64_t crypto, int64_t bound)
{
    uint64_t d;

    if (bound < 0 || crypto <= (uint64_t)bound)
        return 0;
    d = crypto - (uint64_t)bound;
    return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

/* Shares of the on-CPU crypto estimate, never above 1: crypto above the process CPU means
 * the CPU accounting undercounts (tick-based, or crypto_ns is wall time), crypto above wall
 * x threads means the times themselves are off; either is said with its bound. */
static void shares(struct summary *s)
{
    const struct model *m = s->m;
    size_t i;

    for (i = 0; i < m->nbuckets; i++)
        s->crypto_ns += bucket__crypto_ns(&m->buckets[i]);
    s->crypto_ns_raw = m->st.crypto_ns;
    for (i = 0; i < m->ntraces; i++) {
        uint64_t th = decrypting_threads(m, i);
        int64_t d = trace__duration(&m->traces[i]);

        s->nthreads_dec += th;
        s->wall_threads_ns = sat_add(s->wall_threads_ns, sat_mul(d > 0 ? d : 0, th));
    }
    if (s->wall_threads_ns > 0) {
        s->share_wall = (double)s->crypto_ns / (double)s->wall_threads_ns;
        s->wall_short_ns = excess(s->crypto_ns, s->wall_threads_ns);
    }
    s->share_cpu = -1;
    if (s->cpu_ns > 0) {
        s->share_cpu = (double)s->crypto_ns / (double)s->cpu_ns;
        s->cpu_short_ns = excess(s->crypto_ns, s->cpu_ns);
    }
    s->share_wall = s->share_wall > 1 ? 1 : s->share_wall;
    s->share_cpu = s->share_cpu > 1 ? 1 : s->share_cpu;
}

void summary__build(struct summary *s, const struct model *m)
{
    memset(s, 0, sizeof(*s));
    s->m = m;
    s->out = m->out;
    build_traces(s);
    build_rows(s);
    summary__classes(s);
    /* Bytes received: SSL_read's, and what arrived on the sockets of copies whose SSL_read
     * tlsmeter cannot reach (in no read figure, but the process received them). */
    s->socket_bytes = m->out ? 0 : weights__socket_bytes(m);
    s->throughput = s->duration_ns > 0
                        ? (double)(m->st.got + s->socket_bytes) * 1e9 / (double)s->duration_ns
                        : 0;
    shares(s);
    s->nspb = m->st.rec_ct ? (double)s->crypto_ns / (double)m->st.rec_ct : 0;
    weights__process(s, &s->split);
    s->impl = wsplit__class(&s->split);
    for (size_t i = 0; i < m->ntraces; i++)
        s->blind += weights__blind(s, &m->traces[i], NULL, 0);
    hs_summary__build(&s->hs, m);
    verdicts__build(s);
}

struct verdict *summary__verdict(struct summary *s, enum verdict_id id, const char *kind,
                                 const char *fmt, ...)
{
    static struct verdict spare;
    struct verdict *v = s->nv < MAX_VERDICTS ? &s->v[s->nv++] : &spare;
    va_list ap;

    memset(v, 0, sizeof(*v));
    v->id = tlsm_verdict_name((enum tlsm_verdict)id);
    v->kind = kind;
    va_start(ap, fmt);
    vsnprintf(v->text, sizeof(v->text), fmt, ap);
    va_end(ap);
    return v;
}

void verdict__evidence(struct verdict *v, const char *key, double val)
{
    if (v->nev < MAX_EVIDENCE) {
        v->ev[v->nev].key = key;
        v->ev[v->nev].val = val;
        v->nev++;
    }
}

double summary__bulk_median(const struct summary *s, uint64_t *used)
{
    const struct class_fig *best = NULL;

    for (int i = 0; i < s->nciphers; i++)
        if (!best || s->ciphers[i].fig[SC_BULK].used > best->used)
            best = &s->ciphers[i].fig[SC_BULK];
    if (used)
        *used = best ? best->used : 0;
    return best && best->used >= BULK_MIN_RECORDS ? best->median : -1;
}
