/* classes.c: per-record ns/B by size class, and the on-CPU rule for records the thread was
 * switched out of (docs/analyzer.md, "Per-record ns/B"): streaming, so memory stays flat in
 * the number of records. */
#include "model/model.h"

#include <string.h>

enum size_class size_class__of(int64_t pt)
{
    return pt < SC_SMALL_MIN ? SC_TINY : pt < SC_BULK_MIN ? SC_SMALL : SC_BULK;
}

const char *size_class__name(enum size_class c)
{
    static const char *const n[SC_N] = {"tiny", "small", "bulk"};

    return n[c];
}

static uint64_t pos(int64_t v)
{
    return v > 0 ? (uint64_t)v : 0;
}

/* Only a method that cannot give on-CPU time makes a flagged record's crypto_ns suspect:
 * under perf-clock it is exact whatever the switches. */
void classes__rec(struct trace *t, struct bucket *b, const struct event *e)
{
    uint64_t pt = pos(e->i[I_PT]), ns = pos(e->i[I_CRYPTO_NS]);
    struct class_stats *c = &b->cls[size_class__of((int64_t)pt)];
    bool flagged = e->i[I_PREEMPT] > 0;

    c->recs++;
    c->crypto_ns += ns;
    if (event__has(e, I_WALL_NS) && t->cputime_exact && e->i[I_WALL_NS] > e->i[I_CRYPTO_NS])
        t->offcpu_ns += (uint64_t)(e->i[I_WALL_NS] - e->i[I_CRYPTO_NS]);
    if (flagged) {
        c->flagged++;
        t->recs_flagged++;
    }
    if (flagged && !t->cputime_exact) {
        c->left_out++;
        t->recs_left_out++;
        if (pt) {
            c->left_pt += pt;
            c->left_ns += ns;
        } else {
            c->left_nopt_ns += ns;
        }
        return;
    }
    if (pt)
        rhist__add(&c->nspb, (double)ns / (double)pt);
}

uint64_t class_stats__crypto_ns(const struct class_stats *c)
{
    uint64_t kept = c->crypto_ns - c->left_ns;
    double est;

    if (!c->left_pt || !c->nspb.n)
        return c->crypto_ns;
    est = (double)c->left_pt * rhist__pct(&c->nspb, 0.5) + 0.5;
    if (est >= 9e18 || kept > UINT64_MAX - (uint64_t)est) /* a hostile trace: saturate */
        return UINT64_MAX;
    return kept + (uint64_t)est;
}

double bucket__bulk_median(const struct bucket *b)
{
    const struct rhist *h = &b->cls[SC_BULK].nspb;

    return h->n >= BULK_MIN_RECORDS ? rhist__pct(h, 0.5) : -1;
}

uint64_t bucket__crypto_ns(const struct bucket *b)
{
    uint64_t ns = 0;
    int k;

    for (k = 0; k < SC_N; k++) {
        uint64_t c = class_stats__crypto_ns(&b->cls[k]);

        ns = ns > UINT64_MAX - c ? UINT64_MAX : ns + c;
    }
    return ns;
}

void class_stats__merge(struct class_stats *d, const struct class_stats *s)
{
    d->recs += s->recs;
    d->crypto_ns += s->crypto_ns;
    d->left_out += s->left_out;
    d->left_pt += s->left_pt;
    d->left_ns += s->left_ns;
    d->left_nopt_ns += s->left_nopt_ns;
    d->flagged += s->flagged;
    rhist__merge(&d->nspb, &s->nspb);
}

void class_stats__free(struct class_stats *c)
{
    rhist__free(&c->nspb);
}
