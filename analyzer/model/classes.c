/* classes.c: per-record ns/B by size class, and the on-CPU weight of every record, switched
 * out or not (docs/analyzer.md, "Per-record ns/B", "Crypto time and shares"): streaming, so
 * memory stays flat in the number of records. */
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

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* pt bytes at the ns/B of s, at most wall_ns (on-CPU time is never more than the wall time
 * around it); wall_ns when s has no bytes yet. */
static uint64_t estimate(const struct oncpu_sums *s, uint64_t pt, uint64_t wall_ns)
{
    unsigned __int128 est;

    if (!pt || !s->pt)
        return wall_ns;
    est = (unsigned __int128)pt * s->ns / s->pt;
    return est < wall_ns ? (uint64_t)est : wall_ns;
}

uint64_t oncpu__rec(struct oncpu_sums *s, bool exact, uint64_t pt, uint64_t ns, bool flagged)
{
    if (flagged && !exact)
        return estimate(s, pt, ns);
    s->ns = sat_add(s->ns, ns);
    s->pt = sat_add(s->pt, pt);
    return ns;
}

uint64_t oncpu__batch(struct oncpu_sums *s, bool exact, uint64_t pt, uint64_t ns, uint64_t fl_pt,
                      uint64_t fl_ns, uint64_t fl_nopt_ns)
{
    uint64_t kept_ns, fl = sat_add(fl_ns, fl_nopt_ns);

    if (exact || (!fl_pt && !fl)) {
        s->ns = sat_add(s->ns, ns);
        s->pt = sat_add(s->pt, pt);
        return ns;
    }
    kept_ns = ns > fl ? ns - fl : 0;
    s->ns = sat_add(s->ns, kept_ns);
    s->pt = sat_add(s->pt, pt > fl_pt ? pt - fl_pt : 0);
    return sat_add(sat_add(kept_ns, fl_nopt_ns), estimate(s, fl_pt, fl_ns));
}

/* A stalled record (rec.stall) before its class has any: at the ns/B of another class of the
 * bucket (at most its own crypto_ns), else nothing. Its span is known not to be crypto time
 * (the preload judged it far beyond any AES-GCM), so no figure at all beats counting it whole. */
static uint64_t stalled_first(const struct bucket *b, uint64_t pt, uint64_t ns)
{
    int k;

    for (k = SC_N - 1; k >= 0; k--)
        if (b->cls[k].sums.pt)
            return estimate(&b->cls[k].sums, pt, ns);
    return 0;
}

/* Only a method that cannot give on-CPU time makes a flagged record's crypto_ns suspect:
 * under perf-clock it is exact whatever the switches. */
uint64_t classes__rec(struct trace *t, struct bucket *b, const struct event *e)
{
    uint64_t pt = pos(e->i[I_PT]), ns = pos(e->i[I_CRYPTO_NS]), w;
    struct class_stats *c = &b->cls[size_class__of((int64_t)pt)];
    bool flagged = e->i[I_PREEMPT] > 0;
    /* Stalled (rec.stall): interrupts inside it, whatever the method: estimated too. */
    bool stall = e->i[I_STALL] > 0;
    bool exact = t->cputime_exact && !stall;

    c->recs++;
    c->crypto_ns += ns;
    if (stall && !c->sums.pt)
        w = stalled_first(b, pt, ns);
    else
        w = oncpu__rec(&c->sums, exact, pt, ns, flagged || stall);
    c->oncpu_ns = sat_add(c->oncpu_ns, w);
    if (event__has(e, I_WALL_NS) && t->cputime_exact && e->i[I_WALL_NS] > e->i[I_CRYPTO_NS])
        t->offcpu_ns += (uint64_t)(e->i[I_WALL_NS] - e->i[I_CRYPTO_NS]);
    if (flagged) {
        c->flagged++;
        t->recs_flagged++;
    }
    if (stall)
        t->recs_stalled++;
    if ((flagged || stall) && !exact) {
        c->left_out++;
        t->recs_left_out += !stall;
        if (pt) {
            c->left_pt += pt;
            c->left_ns += ns;
        } else {
            c->left_nopt_ns += ns;
        }
        return w;
    }
    if (pt)
        rhist__add(&c->nspb, (double)ns / (double)pt);
    return w;
}

uint64_t class_stats__crypto_ns(const struct class_stats *c)
{
    return c->oncpu_ns;
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
    d->oncpu_ns = sat_add(d->oncpu_ns, s->oncpu_ns);
    d->sums.ns = sat_add(d->sums.ns, s->sums.ns);
    d->sums.pt = sat_add(d->sums.pt, s->sums.pt);
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
