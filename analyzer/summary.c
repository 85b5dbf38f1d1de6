/* summary.c: totals, shares and the per-(cipher, path) rows. */
#include "summary.h"

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

void summary__build(struct summary *s, const struct model *m)
{
    memset(s, 0, sizeof(*s));
    s->m = m;
    build_traces(s);
    build_rows(s);
    s->nspb = stats__ns_per_byte(&m->st);
    s->throughput = s->duration_ns > 0 ? (double)m->st.got * 1e9 / (double)s->duration_ns : 0;
    s->share_wall = s->duration_ns > 0 ? (double)m->st.crypto_ns / (double)s->duration_ns : 0;
    s->share_cpu = s->cpu_ns > 0 ? (double)m->st.crypto_ns / (double)s->cpu_ns : -1;
    s->impl = impl__overall(m);
    verdicts__build(s);
}

struct verdict *summary__verdict(struct summary *s, const char *id, const char *kind,
                                 const char *fmt, ...)
{
    static struct verdict spare;
    struct verdict *v = s->nv < MAX_VERDICTS ? &s->v[s->nv++] : &spare;
    va_list ap;

    memset(v, 0, sizeof(*v));
    v->id = id;
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
