/* folded.c: folded stacks weighted by crypto ns, for flamegraph.pl, speedscope, inferno.
 * Until the preload records stacks, the honest "stack" is process;connection;cipher;path. */
#include "report.h"

static void frame(FILE *out, const char *s)
{
    /* ';' separates frames and the last space separates the weight: keep both out. */
    for (; *s; s++)
        fputc(*s == ';' ? ':' : *s == '\n' ? ' ' : *s, out);
}

void report_folded(FILE *out, const struct model *m)
{
    size_t i;

    for (i = 0; i < m->nfolds; i++) {
        const struct fold *f = &m->folds[i];
        const struct trace *t = &m->traces[f->trace];

        if (!f->ns)
            continue;
        frame(out, trace_name(t));
        if (m->ntraces > 1)
            fprintf(out, " %lld", (long long)t->pid);
        fprintf(out, ";conn %lld;", (long long)f->conn);
        frame(out, *model__name(m, f->cipher) ? model__name(m, f->cipher) : "?");
        fputc(';', out);
        frame(out, *model__name(m, f->path) ? model__name(m, f->path) : "?");
        fprintf(out, " %llu\n", (unsigned long long)f->ns);
    }
}
