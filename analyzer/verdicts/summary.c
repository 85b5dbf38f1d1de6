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

static void build_rows(struct summary *s)
{
    const struct model *m = s->m;
    struct impl_result r;
    size_t i;

    for (i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];
        struct row *w = row_get(s, b->cipher, b->path);
        bool first;

        if (!w)
            continue;
        first = !w->st.recs;
        impl__classify(m, b, &r);
        stats__add(&w->st, &b->st);
        if (first) {
            w->cls = r.cls;
            snprintf(w->detail, sizeof(w->detail), "%s", r.detail);
        } else if (w->cls != r.cls) {
            w->mixed = true;
        }
    }
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
    build_traces(s);
    build_rows(s);
    summary__classes(s);
    s->throughput = s->duration_ns > 0 ? (double)m->st.got * 1e9 / (double)s->duration_ns : 0;
    shares(s);
    s->nspb = m->st.rec_ct ? (double)s->crypto_ns / (double)m->st.rec_ct : 0;
    s->impl = impl__overall(m);
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
