/* report_table.c: per connection, per thread and per trace tables of the text report,
 * largest first, cut to a screen. */
#include "output/report.h"

#include "base/fmt.h"
#include "base/util.h"

#include <stddef.h>
#include <stdlib.h>

#define TABLE_ROWS 10

struct order {
    size_t idx;
    uint64_t key;
};

static int by_key(const void *a, const void *b)
{
    const struct order *x = a, *y = b;

    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Indices of n items of size esz whose struct stats sits at offset st, largest got first. */
static struct order *sorted(const void *items, size_t n, size_t esz, size_t st)
{
    struct order *o = xmalloc(n * sizeof(*o));
    size_t i;

    for (i = 0; i < n; i++) {
        const struct stats *s = (const void *)((const char *)items + i * esz + st);

        o[i].idx = i;
        o[i].key = s->got + s->rec_ct;
    }
    qsort(o, n, sizeof(*o), by_key);
    return o;
}

static void stats_cols(FILE *out, const struct stats *st)
{
    struct fmtbuf a, b;

    fprintf(out, " %8llu %10s %8llu %10s %7.2f", (unsigned long long)st->reads,
            fmt_bytes(&a, st->got), (unsigned long long)st->recs, fmt_ns(&b, (double)st->oncpu_ns),
            st->rec_ct ? (double)st->oncpu_ns / (double)st->rec_ct : 0.0);
}

static void more(FILE *out, size_t n)
{
    if (n > TABLE_ROWS)
        fprintf(out, "  ... and %zu more\n", n - TABLE_ROWS);
}

static void conns(FILE *out, const struct model *m)
{
    const char *calls = m->out ? "writes" : "reads";
    struct order *o;
    struct fmtbuf a;
    size_t i;

    if (m->nconns < 2)
        return;
    o = sorted(m->conns, m->nconns, sizeof(*m->conns), offsetof(struct conn, st));
    fprintf(out, "connections  %zu\n  %-12s %-28s %8s %10s %8s %10s %7s %10s\n", m->nconns, "conn",
            "suite", calls, "bytes", "records", "crypto", "ns/B", "handshake");
    for (i = 0; i < m->nconns && i < TABLE_ROWS; i++) {
        const struct conn *c = &m->conns[o[i].idx];
        char id[32];

        snprintf(id, sizeof(id), "%s:%lld", trace_name(&m->traces[c->trace]), (long long)c->id);
        fprintf(out, "  %-12.12s %-28.28s", id, c->suite ? model__name(m, c->suite) : "?");
        stats_cols(out, &c->st);
        fprintf(out, " %10s\n", c->hs_ns >= 0 ? fmt_ns(&a, (double)c->hs_ns) : "-");
    }
    more(out, m->nconns);
    free(o);
}

static void threads(FILE *out, const struct model *m)
{
    struct order *o;
    size_t i;

    if (m->nthreads < 2)
        return;
    o = sorted(m->threads, m->nthreads, sizeof(*m->threads), offsetof(struct thread, st));
    fprintf(out, "threads      %zu\n  %-16s %8s %10s %8s %10s %7s\n", m->nthreads, "tid",
            m->out ? "writes" : "reads", "bytes", "records", "crypto", "ns/B");
    for (i = 0; i < m->nthreads && i < TABLE_ROWS; i++) {
        const struct thread *t = &m->threads[o[i].idx];
        char id[32];

        snprintf(id, sizeof(id), "%s:%lld", trace_name(&m->traces[t->trace]), (long long)t->tid);
        fprintf(out, "  %-16.16s", id);
        stats_cols(out, &t->st);
        fputc('\n', out);
    }
    more(out, m->nthreads);
    free(o);
}

static void traces(FILE *out, const struct model *m)
{
    struct order *o;
    struct fmtbuf a, b, c;
    size_t i;

    if (m->ntraces < 2)
        return;
    o = sorted(m->traces, m->ntraces, sizeof(*m->traces), offsetof(struct trace, st));
    fprintf(out, "traces       %zu\n  %-24s %8s %10s %10s %8s %10s %7s\n", m->ntraces, "file",
            "pid", "duration", "cpu", "reads", "bytes", "records");
    for (i = 0; i < m->ntraces && i < TABLE_ROWS; i++) {
        const struct trace *t = &m->traces[o[i].idx];

        fprintf(out, "  %-24.24s %8lld %10s %10s %8llu %10s %7llu\n", t->file, (long long)t->pid,
                fmt_ns(&a, (double)trace__duration(t)),
                t->cpu_known ? fmt_ns(&b, (double)trace__cpu_ns(t)) : "-",
                (unsigned long long)t->st.reads, fmt_bytes(&c, t->st.got),
                (unsigned long long)t->st.recs);
    }
    more(out, m->ntraces);
    free(o);
}

void report_conns(FILE *out, const struct summary *s)
{
    traces(out, s->m);
    conns(out, s->m);
    threads(out, s->m);
}
