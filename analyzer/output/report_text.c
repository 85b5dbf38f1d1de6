/* report_text.c: the report a person reads in a minute: what ran, what it cost, what to do. */
#include "output/report.h"

#include "base/fmt.h"

#include <string.h>

#define U(v) ((unsigned long long)(v))

/* Set for one report: every section, histogram and table, also those that say nothing. */
static bool verbose;

/* What the answer's lines leave out about the process: an exec, bytes past SSL_read. */
static void process_notes(FILE *out, const struct summary *s)
{
    const struct model *m = s->m;
    const struct trace *t = &m->traces[0];
    struct fmtbuf a, b;

    if (m->ntraces == 1 && t->exec)
        fprintf(out, "exec         replaced itself with exec of %s: the trace ends there\n",
                t->exec);
    if (s->socket_bytes) /* a copy's SSL_read past the hooks: its bytes are in no read */
        fprintf(out,
                "received     %s through SSL_read, %s on the sockets of copies whose "
                "SSL_read tlsmeter cannot reach (socket-reads)\n",
                fmt_bytes(&a, m->st.got), fmt_bytes(&b, s->socket_bytes));
}

void text_hist(FILE *out, const struct hist *h, const char *indent)
{
    uint64_t top = 0;
    int k, lo = HIST_LOG2_N, hi = -1;
    struct fmtbuf a, b;
    char range[48];

    for (k = 0; k < HIST_LOG2_N; k++)
        if (h->log2[k]) {
            lo = k < lo ? k : lo;
            hi = k;
            top = h->log2[k] > top ? h->log2[k] : top;
        }
    for (k = lo; k <= hi; k++) {
        int bar = (int)((h->log2[k] * 30 + top - 1) / top);

        if (!h->log2[k])
            continue; /* keep the report short: empty buckets say nothing */
        if (k)
            snprintf(range, sizeof(range), "%s .. <%s", fmt_bytes(&a, hist__log2_lo(k)),
                     fmt_bytes(&b, hist__log2_lo(k) << 1));
        else
            snprintf(range, sizeof(range), "0 B");
        fprintf(out, "%s%-22s %10llu |%-30.*s|\n", indent, range, (unsigned long long)h->log2[k],
                bar, "******************************");
    }
}

/* The calls of the summary's direction: SSL_read* (decrypting) or SSL_write* (encrypting). */
static const char *call(const struct summary *s)
{
    return s->out ? "write" : "read";
}

static void reads(FILE *out, const struct summary *s)
{
    const struct model *m = s->m;
    const struct stats *st = &m->st;
    fprintf(out, "%-12s %llu calls: %llu %s data, %llu WANT_%s, %llu other\n",
            s->out ? "writes" : "reads", (unsigned long long)st->reads,
            (unsigned long long)st->reads_ok, s->out ? "wrote" : "returned",
            (unsigned long long)st->want_read, s->out ? "WRITE" : "READ",
            (unsigned long long)(st->reads_fail - st->want_read));
    if (!m->read_got.n)
        return;
    fprintf(out, "  bytes/%s p50 %llu, p90 %llu, p99 %llu, max %llu; asked p50 %llu\n", call(s),
            U(hist__pct(&m->read_got, 0.5)), U(hist__pct(&m->read_got, 0.9)),
            U(hist__pct(&m->read_got, 0.99)), U(m->read_got.max), U(hist__pct(&m->read_want, 0.5)));
    if (verbose)
        text_hist(out, &m->read_got, "    ");
}

static void records(FILE *out, const struct summary *s)
{
    const struct model *m = s->m;
    const struct stats *st = &m->st;
    fprintf(out, "records      %llu (%llu application data), %.2f per %s",
            (unsigned long long)st->recs, (unsigned long long)st->recs_app,
            st->reads ? (double)st->recs_in_reads / (double)st->reads : 0.0, call(s));
    if (st->tag_fail)
        fprintf(out, ", %llu failed tag", (unsigned long long)st->tag_fail);
    fputc('\n', out);
    if (!m->rec_len.n)
        return;
    fprintf(out, "  length p50 %llu, p90 %llu, p99 %llu, max %llu\n",
            U(hist__pct(&m->rec_len, 0.5)), U(hist__pct(&m->rec_len, 0.9)),
            U(hist__pct(&m->rec_len, 0.99)), U(m->rec_len.max));
    if (verbose)
        text_hist(out, &m->rec_len, "    ");
}

static void crypto_row(FILE *out, const struct summary *s, const struct row *w)
{
    struct fmtbuf a, b, c;
    double nspb = w->st.rec_ct ? (double)w->crypto_ns / (double)w->st.rec_ct : 0;

    fprintf(out, "  %-18s %-7s %8llu %10s %10s %7.2f %11s  %s%s\n", model__name(s->m, w->cipher),
            *model__name(s->m, w->path) ? model__name(s->m, w->path) : "?",
            (unsigned long long)w->st.recs, fmt_bytes(&a, w->st.rec_ct),
            fmt_ns(&b, (double)w->crypto_ns), nspb, nspb > 0 ? fmt_rate(&c, 1e9 / nspb) : "-",
            impl__name(w->cls), w->mixed ? " (mixed)" : "");
    if (w->mixed) { /* by bytes: the split, so that no part is hidden behind the class */
        char split[640];

        wsplit__text(&w->split, split, sizeof(split));
        fprintf(out, "    split: %s\n", split);
    }
}

/* One size class of one cipher: records, median and p90 ns/B (and the mean, verbose: over
 * tiny records it is dominated by a few slow ones and says little). */
static void class_line(FILE *out, const char *cipher, enum size_class k, const struct class_fig *f,
                       bool stalls)
{
    if (!f->recs)
        return;
    fprintf(out, "  %-18s %-7s %8llu", cipher, size_class__name(k), U(f->recs));
    if (f->used)
        fprintf(out, " %8.2f %8.2f", f->median, f->p90);
    else
        fprintf(out, " %8s %8s", "-", "-");
    if (verbose && f->used)
        fprintf(out, " %8.2f", f->mean);
    else if (verbose)
        fprintf(out, " %8s", "-");
    if (f->left_out)
        fprintf(out, "  (%llu %s, left out)", U(f->left_out),
                stalls ? "switched out or stalled" : "preempted");
    fputc('\n', out);
}

static void classes(FILE *out, const struct summary *s)
{
    int i, k;

    fprintf(out, "  ns/B per record by size (tiny < 256 B, small < 2 KiB, bulk >= 2 KiB):\n");
    fprintf(out, "  %-18s %-7s %8s %8s %8s%s\n", "cipher", "size", "records", "median", "p90",
            verbose ? "     mean" : "");
    for (i = 0; i < s->nciphers; i++)
        for (k = 0; k < SC_N; k++)
            class_line(out, model__name(s->m, s->ciphers[i].cipher), (enum size_class)k,
                       &s->ciphers[i].fig[k], s->recs_stalled > 0);
}

/* The shares are clamped at 100 %; what lies beyond is said with its bound. */
static void bounds(FILE *out, const struct summary *s)
{
    struct fmtbuf a, b;

    if (s->cpu_short_ns > 0)
        fprintf(out,
                "  crypto >= 100 %% of the CPU the kernel accounted: process CPU undercounted "
                "by at least %s\n",
                fmt_ns(&a, (double)s->cpu_short_ns));
    if (s->wall_short_ns > 0)
        fprintf(out,
                "  crypto exceeds wall time x %llu decrypting thread%s by %s (of %s): the "
                "record times are off\n",
                U(s->nthreads_dec), s->nthreads_dec == 1 ? "" : "s",
                fmt_ns(&a, (double)s->wall_short_ns), fmt_ns(&b, (double)s->wall_threads_ns));
}

static void crypto(FILE *out, const struct summary *s)
{
    struct fmtbuf a, b, c, d;
    int i;

    fprintf(out, "crypto       %s, %.2f ns/B, %s; %s%s of wall time",
            fmt_ns(&a, (double)s->crypto_ns), s->nspb,
            s->nspb > 0 ? fmt_rate(&b, 1e9 / s->nspb) : "-", s->wall_short_ns > 0 ? ">= " : "",
            fmt_pct(&c, s->share_wall));
    if (s->nthreads_dec > s->m->ntraces) /* a fleet of one-thread processes: plain wall */
        fprintf(out, " x %llu threads", U(s->nthreads_dec));
    if (s->share_cpu >= 0)
        fprintf(out, ", %s%s of CPU", s->cpu_short_ns > 0 ? ">= " : "", fmt_pct(&d, s->share_cpu));
    fputc('\n', out);
    /* How the time was taken matters when it is not an on-CPU clock, or when records were
     * preempted and estimated. */
    if (verbose || s->recs_left_out || s->recs_stalled || strcmp(s->cputime, "perf-clock"))
        fprintf(out, "  time per record: %s\n", s->cputime_text);
    bounds(out, s);
    fprintf(out, "  %-18s %-7s %8s %10s %10s %7s %11s  %s\n", "cipher", "path", "records", "bytes",
            "time", "ns/B", "rate", "class");
    for (i = 0; i < s->nrows; i++)
        crypto_row(out, s, &s->rows[i]);
    classes(out, s);
}

static void lib_line(FILE *out, const struct lib *l)
{
    fprintf(out, "  lib %lld %s%s%s%s [%s]\n", (long long)l->id, l->path ? l->path : "?",
            l->version ? " (" : "", l->version ? l->version : "", l->version ? ")" : "",
            l->role ? l->role : "?");
}

/* A bucket's per-record ns/B by size class, on one line. */
static void bucket_classes(FILE *out, const struct bucket *b)
{
    struct class_fig f[SC_N];
    const char *sep = "      ns/B per record:";
    int k;

    bucket__class_figs(b, f);
    for (k = 0; k < SC_N; k++) {
        if (!f[k].used)
            continue;
        fprintf(out, "%s %s (%llu) mean %.2f, median %.2f, p90 %.2f", sep,
                size_class__name((enum size_class)k), U(f[k].used), f[k].mean, f[k].median,
                f[k].p90);
        sep = ";";
    }
    if (strcmp(sep, ";"))
        return;
    fputc('\n', out);
}

static void implementation(FILE *out, const struct summary *s)
{
    const struct model *m = s->m;
    struct impl_result r;
    size_t i;

    char split[640] = "";

    if (wsplit__mixed(&s->split))
        wsplit__text(&s->split, split, sizeof(split));
    fprintf(out, "implementation: %s%s%s%s\n", impl__name(s->impl), split[0] ? " (" : "", split,
            split[0] ? ")" : "");
    weights__copies_text(out, s);
    for (i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];
        const struct trace *t = &m->traces[b->trace];
        const struct lib *l = trace__bucket_lib(t, b, model__name(m, b->path));

        impl__classify(m, b, &r);
        if (l)
            lib_line(out, l);
        else
            fprintf(out, "  instance not identified in the trace\n");
        fprintf(out, "    %s %s: %s (%s)\n", model__name(m, b->cipher), model__name(m, b->path),
                impl__name(r.cls), r.detail);
        if (r.evidence[0])
            fprintf(out, "      evidence: %s\n", r.evidence);
        if (r.check[0])
            fprintf(out, "      check: %s\n", r.check);
        if (verbose || m->nbuckets > 1) /* one bucket: the size table above has its figures */
            bucket_classes(out, b);
    }
}

/* The verdicts below the headline (all of them, verbose). */
static void verdicts(FILE *out, const struct summary *s, const struct verdict *top)
{
    int i, n = 0;

    for (i = 0; i < s->nv; i++)
        n += verbose || &s->v[i] != top;
    if (!n)
        return;
    fprintf(out, "%s\n", top && !verbose ? "more verdicts" : "verdicts");
    for (i = 0; i < s->nv; i++)
        if (verbose || &s->v[i] != top)
            fprintf(out, "  * [%s] %s\n", s->v[i].id, s->v[i].text);
}

/* --require-hw's answer, beside the verdicts it rests on. */
static void gate(FILE *out, const struct summary *s)
{
    if (s->gate)
        fprintf(out, "require-hw   %s\n", s->gate->why);
}

static void input(FILE *out, const struct summary *s)
{
    size_t i;
    int k;

    fprintf(out, "input        %zu file%s, %llu lines, %llu skipped%s\n", s->m->ntraces,
            s->m->ntraces == 1 ? "" : "s", U(s->lines), U(s->lines_skipped),
            s->truncated ? ", truncated" : "");
    for (i = 0; i < s->m->ntraces && i < 10; i++) {
        const struct trace *t = &s->m->traces[i];

        /* Hooks a program did not call are a coverage detail, not a finding, unless the
         * trace saw no TLS at all: then they say which entry points were watched. */
        if (!t->nunfired || (!verbose && (t->st.reads || t->st.recs)))
            continue;
        fprintf(out, "  %s: hooks that never fired:", t->file);
        for (k = 0; k < t->nunfired; k++)
            fprintf(out, " %s", t->unfired[k]);
        fputc('\n', out);
    }
}

/* The sending side says little when it sealed a few small records (a request, an alert)
 * under 1 % of the CPU: one line then, with the ids of its verdicts, unless one of them is a
 * blind spot. */
static bool encryption_small(const struct summary *e)
{
    if (verbose || e->share_cpu < 0 || e->share_cpu >= 0.01)
        return false;
    for (int i = 0; i < e->nv; i++)
        if (!strcmp(e->v[i].kind, "blind"))
            return false;
    return true;
}

/* The encrypting side (SSL_write* calls and the records sealed for them), beside the
 * decrypting one: the same sections from the same code. */
static void encryption(FILE *out, const struct summary *e, const struct verdict *top)
{
    struct fmtbuf a, b, c, d;

    if (encryption_small(e)) {
        fprintf(out, "encryption   %llu records sealed (%s plaintext), %s crypto, %s of CPU, %s",
                U(e->m->st.recs), fmt_bytes(&a, e->m->st.rec_ct), fmt_ns(&b, (double)e->crypto_ns),
                fmt_pct(&c, e->share_cpu), impl__name(e->impl));
        for (int i = 0; i < e->nv; i++)
            fprintf(out, "%s%s", i ? ", " : "; verdicts ", e->v[i].id);
        fprintf(out, " (--verbose for the details)\n");
        return;
    }
    fprintf(out, "\nencryption   records this process sealed and sent\n");
    fprintf(out, "sent         %s, %s over the duration\n", fmt_bytes(&a, e->m->st.got),
            fmt_rate(&d, e->throughput));
    reads(out, e);
    records(out, e);
    crypto(out, e);
    implementation(out, e);
    if (e->prof && e->prof->any_stacks)
        report_callers(out, e->prof);
    report_conns(out, e);
    verdicts(out, e, top);
}

void report_text(FILE *out, const struct summary *s, bool all)
{
    const struct verdict *top = report_headline(s);

    verbose = all;
    report_answer(out, s);
    fputc('\n', out);
    process_notes(out, s);
    reads(out, s);
    records(out, s);
    if (verbose || s->m->st.recs) { /* no record: no crypto figure, no code to name */
        crypto(out, s);
        implementation(out, s);
    }
    report_reach(out, s);
    if (s->prof && (verbose || s->prof->any_stacks))
        report_callers(out, s->prof);
    report_conns(out, s);
    report_handshake(out, s, verbose);
    verdicts(out, s, top);
    gate(out, s);
    if (s->enc)
        encryption(out, s->enc, top);
    input(out, s);
}
