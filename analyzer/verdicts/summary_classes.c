/* summary_classes.c: per-record ns/B figures by size class (mean, median, p90) over buckets,
 * and what the crypto time is (on-CPU or wall, how many switched-out records left out). */
#include "verdicts/summary.h"

#include <stdio.h>
#include <string.h>

static void fig_of(const struct class_stats *c, uint64_t crypto_ns, struct class_fig *f)
{
    f->recs = c->recs;
    f->used = c->nspb.n;
    f->left_out = c->left_out;
    f->crypto_ns = crypto_ns;
    f->mean = rhist__mean(&c->nspb);
    f->median = rhist__pct(&c->nspb, 0.5);
    f->p90 = rhist__pct(&c->nspb, 0.9);
}

void bucket__class_figs(const struct bucket *b, struct class_fig fig[SC_N])
{
    int k;

    for (k = 0; k < SC_N; k++)
        fig_of(&b->cls[k], class_stats__crypto_ns(&b->cls[k]), &fig[k]);
}

/* Merged histograms for the medians; the crypto estimate stays per bucket (a switched-out
 * record is estimated from its own bucket's median, not another instance's). */
void summary__class_figs(const struct model *m, int cipher, int path, struct class_fig fig[SC_N])
{
    summary__class_figs_if(m, cipher, path, NULL, NULL, fig);
}

void summary__class_figs_if(const struct model *m, int cipher, int path,
                            bool (*keep)(const struct model *m, const struct bucket *b, void *ctx),
                            void *ctx, struct class_fig fig[SC_N])
{
    struct class_stats all[SC_N];
    uint64_t ns[SC_N] = {0};
    size_t i;
    int k;

    memset(all, 0, sizeof(all));
    for (i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];

        if (b->cipher != cipher || (path >= 0 && b->path != path) || (keep && !keep(m, b, ctx)))
            continue;
        for (k = 0; k < SC_N; k++) {
            class_stats__merge(&all[k], &b->cls[k]);
            ns[k] += class_stats__crypto_ns(&b->cls[k]);
        }
    }
    for (k = 0; k < SC_N; k++) {
        fig_of(&all[k], ns[k], &fig[k]);
        class_stats__free(&all[k]);
    }
}

double row__bulk_median(const struct row *w)
{
    return w->fig[SC_BULK].used >= BULK_MIN_RECORDS ? w->fig[SC_BULK].median : -1;
}

static void cputime_method(struct summary *s)
{
    const struct model *m = s->m;
    size_t i;

    s->cputime[0] = '\0';
    for (i = 0; i < m->ntraces; i++) {
        const char *c = m->traces[i].cputime ? m->traces[i].cputime : "wall";

        if (!s->cputime[0])
            snprintf(s->cputime, sizeof(s->cputime), "%s", c);
        else if (strcmp(s->cputime, c))
            snprintf(s->cputime, sizeof(s->cputime), "mixed");
        s->recs_flagged += m->traces[i].recs_flagged;
        s->recs_left_out += m->traces[i].recs_left_out;
        s->recs_stalled += m->traces[i].recs_stalled;
    }
}

/* What a record's crypto time is, in words (the report's "time per record" line). */
static void cputime_text(struct summary *s)
{
    const struct trace *t = s->m->ntraces == 1 ? &s->m->traces[0] : NULL;
    const char *why = t && t->cputime_why && *t->cputime_why ? t->cputime_why : NULL;
    const char *how = !strcmp(s->cputime, "perf-switch") ? "the kernel's context-switch counts"
                      : !strcmp(s->cputime, "rseq")      ? "rseq"
                                                         : "context-switch checks";
    size_t n;

    if (!strcmp(s->cputime, "perf-clock"))
        snprintf(s->cputime_text, sizeof(s->cputime_text), "on-CPU time (perf task clock)");
    else if (!strcmp(s->cputime, "wall") && !s->recs_left_out)
        snprintf(s->cputime_text, sizeof(s->cputime_text), "wall time, not checked for preemption");
    else
        snprintf(s->cputime_text, sizeof(s->cputime_text),
                 "wall time; %llu of %llu records preempted (found by %s)%s",
                 (unsigned long long)s->recs_left_out, (unsigned long long)s->m->st.recs, how,
                 s->recs_left_out ? ", estimated at their group's ns/B and left out of the ns/B "
                                    "figures"
                                  : "");
    n = strlen(s->cputime_text);
    if (s->recs_stalled) /* preload/core/record.c stall_judge */
        n += (size_t)snprintf(s->cputime_text + n, sizeof(s->cputime_text) - n,
                              "; %llu %s took over 4x their connection's ns/B with no switch "
                              "seen (interrupts handled inside them), estimated %s",
                              (unsigned long long)s->recs_stalled,
                              s->recs_left_out ? "more" : "records",
                              s->recs_left_out ? "likewise"
                                               : "at their group's ns/B and left out of the "
                                                 "ns/B figures");
    if (n >= sizeof(s->cputime_text))
        n = sizeof(s->cputime_text) - 1;
    if (why && !strcmp(why, "no cap_user_time"))
        snprintf(s->cputime_text + n, sizeof(s->cputime_text) - n,
                 "; no on-CPU clock: the kernel's perf page lacks cap_user_time");
    else if (why)
        snprintf(s->cputime_text + n, sizeof(s->cputime_text) - n, "; %s: %s",
                 t->cputime ? t->cputime : "wall", why);
    else if (strcmp(s->cputime, "perf-clock") && strcmp(s->cputime, "wall"))
        snprintf(s->cputime_text + n, sizeof(s->cputime_text) - n, " [%s]", s->cputime);
}

/* A cipher seen for the first time gets its figures over all its paths. */
static void cipher_add(struct summary *s, int cipher)
{
    int i;

    for (i = 0; i < s->nciphers; i++)
        if (s->ciphers[i].cipher == cipher)
            return;
    if (s->nciphers == MAX_ROWS)
        return;
    s->ciphers[s->nciphers].cipher = cipher;
    summary__class_figs(s->m, cipher, -1, s->ciphers[s->nciphers++].fig);
}

void summary__classes(struct summary *s)
{
    int i;

    cputime_method(s);
    cputime_text(s);
    for (i = 0; i < s->nrows; i++) {
        struct row *w = &s->rows[i];
        int k;

        summary__class_figs(s->m, w->cipher, w->path, w->fig);
        w->crypto_ns = 0;
        for (k = 0; k < SC_N; k++)
            w->crypto_ns += w->fig[k].crypto_ns;
        cipher_add(s, w->cipher);
    }
}
