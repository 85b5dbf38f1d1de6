/* report_answer.c: the first lines of the text report, the answer before the details: which
 * program, how much of its CPU went to TLS crypto, which code decrypted on each OpenSSL copy
 * and for how much of the bytes, what the trace could not see, and the headline verdict. */
#include "output/report.h"

#include "base/fmt.h"
#include "verdicts/reach.h"

#include <string.h>

#define MAX_COPIES 3 /* copies named on top; the rest are in the details */

/* The class in a newcomer's words, after its name. */
static const char *gloss(enum impl_class c)
{
    switch (c) {
    case IMPL_HARDWARE:
        return "AES instructions";
    case IMPL_VECTOR:
        return "software AES, vector instructions";
    case IMPL_TABLE:
        return "software AES, lookup tables";
    default:
        return "code tlsmeter could not name";
    }
}

/* A trace of `tlsmeter attach` covers the attach to the detach: say so, and what it could not
 * see of the connections that were open already. */
static void attached(FILE *out, const struct model *m)
{
    int64_t n = 0, joined = 0;
    bool hw = false;
    for (size_t i = 0; i < m->ntraces; i++) {
        const struct trace *t = &m->traces[i];
        n += t->attached;
        joined += t->attached ? t->joined : 0;
        hw |= t->attached && t->mode && strcmp(t->mode, "native");
    }
    if (!n)
        return;
    fprintf(out, "attached     the figures cover attach to detach, not the whole process");
    if (joined)
        fprintf(out,
                "; %lld connection(s) were open already: their handshakes are not in the "
                "trace%s",
                (long long)joined,
                hw ? ", and their records stay native (their keys were set before the attach)"
                   : "");
    fputc('\n', out);
}

static void program(FILE *out, const struct summary *s)
{
    const struct model *m = s->m;
    const struct trace *t = &m->traces[0];
    struct fmtbuf a, b, c, d;

    if (m->ntraces == 1)
        fprintf(out, "program      %s (pid %lld) %s, %s, %s\n", trace_name(t), (long long)t->pid,
                t->exe ? t->exe : "?", t->arch ? t->arch : "?", t->cpu ? t->cpu : "?");
    else
        fprintf(out, "programs     %zu traces (durations, CPU and bytes summed)\n", m->ntraces);
    fprintf(out, "duration     %s, received %s (%s)", fmt_ns(&a, (double)s->duration_ns),
            fmt_bytes(&b, m->st.got + s->socket_bytes), fmt_rate(&c, s->throughput));
    if (s->enc)
        fprintf(out, ", sent %s", fmt_bytes(&d, s->enc->m->st.got));
    fputc('\n', out);
    attached(out, m);
}

/* "15.5 %" or ">= 100 %" (crypto above the accounted CPU), or NULL when unknown. */
static const char *share(char *buf, size_t cap, const struct summary *s)
{
    struct fmtbuf b;

    if (s->share_cpu < 0)
        return NULL;
    snprintf(buf, cap, "%s%s", s->cpu_short_ns > 0 ? ">= " : "", fmt_pct(&b, s->share_cpu));
    return buf;
}

/* Older traces lack the CPU at their start: their CPU is the whole process's, start-up and
 * any image before an exec included, not only the span the trace covers. */
static bool cpu_whole(const struct summary *s)
{
    for (size_t i = 0; i < s->m->ntraces; i++)
        if (s->m->traces[i].start_cpu_ns < 0)
            return true;
    return false;
}

static void cpu(FILE *out, const struct summary *s)
{
    struct fmtbuf a, b, e;
    char c[48], d[48];
    const char *dec = share(c, sizeof(c), s), *enc = s->enc ? share(d, sizeof(d), s->enc) : NULL;

    if (s->cpu_ns < 0) {
        fprintf(out, "CPU          unknown (%s); crypto %s decrypting\n",
                s->cpu_overflow      ? "user + system time overflows 64 bits"
                : s->m->ntraces == 1 ? "the trace has no end line: the process died"
                                     : "a trace has no end line: its process died",
                fmt_ns(&a, (double)s->crypto_ns));
        return;
    }
    if (cpu_whole(s))
        fprintf(out,
                "CPU          %s (the whole process's: this trace does not say what ran "
                "before it opened)",
                fmt_ns(&a, (double)s->cpu_ns));
    else
        fprintf(out, "CPU          %s (%s of one core)", fmt_ns(&a, (double)s->cpu_ns),
                fmt_pct(&b, s->duration_ns > 0 ? (double)s->cpu_ns / (double)s->duration_ns : 0));
    fprintf(out, "; TLS crypto%s: decryption %s", s->blind ? " measured" : "", dec ? dec : "?");
    if (s->enc)
        fprintf(out, ", encryption %s", enc ? enc : "?");
    if (s->hs.conns && s->cpu_ns > 0)
        fprintf(out, "; handshakes %s", fmt_pct(&e, (double)s->hs.ns / (double)s->cpu_ns));
    fputc('\n', out);
}

/* What ran in the copy's largest bucket, for the copy's line. */
static void copy_detail(const struct summary *s, const struct copy_fig *f, char *buf, size_t cap)
{
    const struct model *m = s->m;
    const struct bucket *best = NULL;
    struct impl_result r;

    buf[0] = 0;
    for (size_t i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];

        if (&m->traces[b->trace] == f->t && weights__bucket_copy(m, b) == f->l &&
            (!best || b->st.rec_ct > best->st.rec_ct))
            best = b;
    }
    if (!best)
        return;
    impl__classify(m, best, &r);
    snprintf(buf, cap, "%s", r.detail);
}

static const char *base(const char *path)
{
    const char *p = path ? strrchr(path, '/') : NULL;

    return p ? p + 1 : path ? path : "?";
}

/* One line per copy that decrypted bytes, most bytes first, then how many more. */
static void copies(FILE *out, const struct summary *s)
{
    static struct copy_fig f[REACH_MAX_FIGS];
    static struct wsplit w[REACH_MAX_FIGS];
    int n = reach__copies(s, f, REACH_MAX_FIGS, NULL), order[REACH_MAX_FIGS], k, i, shown = 0;
    int with = 0;
    char detail[224];
    struct fmtbuf a;

    for (k = 0; k < n; k++) {
        weights__copy(s, f[k].t, f[k].l, &w[k]);
        for (i = k; i > 0 && w[order[i - 1]].bytes < w[k].bytes; i--)
            order[i] = order[i - 1];
        order[i] = k;
        with += w[k].bytes > 0;
    }
    for (k = 0; k < n && shown < MAX_COPIES; k++) {
        const struct copy_fig *c = &f[order[k]];
        const struct wsplit *x = &w[order[k]];

        if (!x->bytes)
            break;
        copy_detail(s, c, detail, sizeof(detail));
        fprintf(out, "%-12s %s%s%s%s: %s for %s of the bytes%s%s%s\n", shown ? "" : "copy",
                base(c->l->path), c->l->version ? " (" : "", c->l->version ? c->l->version : "",
                c->l->version ? ")" : "", impl__name(wsplit__class(x)),
                fmt_pct(&a, s->split.bytes ? (double)x->bytes / (double)s->split.bytes : 0),
                wsplit__mixed(x) ? " (mixed: see below)"
                : detail[0]      ? ": "
                                 : " (",
                wsplit__mixed(x) ? ""
                : detail[0]      ? detail
                                 : gloss(wsplit__class(x)),
                wsplit__mixed(x) || detail[0] ? "" : ")");
        shown++;
    }
    if (with > shown)
        fprintf(out, "             and %d more cop%s, listed below\n", with - shown,
                with - shown == 1 ? "y" : "ies");
}

/* Records rerouted to tlsmeter's backend (TLSMETER_CRYPTO=hw or soft): whose code ran then. */
static void rerouted(FILE *out, const struct summary *s)
{
    struct fmtbuf a;

    for (int i = 0; i < s->nrows; i++) {
        const struct row *w = &s->rows[i];
        const char *path = model__name(s->m, w->path);

        if (strcmp(path, "hw") && strcmp(path, "soft"))
            continue;
        fprintf(out, "rerouted     %s of %s records to tlsmeter's %s backend: %s (%s)\n",
                fmt_bytes(&a, w->st.rec_ct), model__name(s->m, w->cipher), path, impl__name(w->cls),
                gloss(w->cls));
    }
}

/* TLS the trace could not measure, named on top: no verdict below speaks for it. */
static void blind(FILE *out, const struct summary *s)
{
    char name[512];
    int n = 0;

    for (size_t i = 0; i < s->m->ntraces; i++) {
        char one[512];
        int k = weights__blind(s, &s->m->traces[i], one, sizeof(one));

        if (k && !n)
            snprintf(name, sizeof(name), "%s", one);
        n += k;
    }
    if (n)
        fprintf(out, "not seen     %s%s: not in these figures\n", name,
                n > 1 ? " and more (see the verdicts)" : "");
}

/* The first verdict is where the CPU went (or what the trace could not see): the headline. */
static const struct verdict *headline(const struct summary *s)
{
    if (s->nv)
        return &s->v[0];
    if (s->enc && s->enc->nv && !s->split.bytes)
        return &s->enc->v[0]; /* an upload: the sending side is the answer */
    return NULL;
}

const struct verdict *report_headline(const struct summary *s)
{
    return headline(s);
}

void report_answer(FILE *out, const struct summary *s)
{
    const struct verdict *v = headline(s);

    program(out, s);
    cpu(out, s);
    copies(out, s->split.bytes || !s->enc ? s : s->enc); /* an upload: the copies that sealed */
    rerouted(out, s);
    blind(out, s);
    if (v)
        fprintf(out, "verdict      [%s] %s\n", v->id, v->text);
    else
        fprintf(out, "verdict      none: the trace shows nothing to act on\n");
}
