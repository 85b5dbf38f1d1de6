/* hist.c: log2 buckets for display, exact counts (bounded) and log-linear buckets for
 * percentiles: memory depends on the number of buckets, never on the trace length. */
#include "base/hist.h"

#include "base/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Both kinds keep n, sum, min and max alike (integer or real) and allocate their nb buckets
 * (member b) on first use: one merge of cnt > 0 samples with that sum, min lo and max hi
 * into h, for adding one value and for merging two. */
#define SUMMARY_MERGE(h, b, nb, cnt, s, lo, hi)                                                    \
    do {                                                                                           \
        if (!(h)->b)                                                                               \
            (h)->b = xcalloc((nb), sizeof(*(h)->b));                                               \
        if (!(h)->n || (lo) < (h)->min)                                                            \
            (h)->min = (lo);                                                                       \
        if (!(h)->n || (hi) > (h)->max)                                                            \
            (h)->max = (hi);                                                                       \
        (h)->n += (cnt);                                                                           \
        (h)->sum += (s);                                                                           \
    } while (0)

int hist__log2_idx(uint64_t v)
{
    return v ? 64 - __builtin_clzll(v) : 0;
}

uint64_t hist__log2_lo(int k)
{
    return k ? 1ULL << (k - 1) : 0;
}

static int ll_idx(uint64_t v)
{
    int e;

    if (v < 128)
        return (int)v;
    e = 63 - __builtin_clzll(v); /* >= 7 */
    return 128 + (e - 7) * HIST_LL_SUB + (int)((v >> (e - 6)) & (HIST_LL_SUB - 1));
}

static uint64_t ll_lo(int i)
{
    int e;

    if (i < 128)
        return (uint64_t)i;
    e = (i - 128) / HIST_LL_SUB + 7;
    return (1ULL << e) | ((uint64_t)((i - 128) % HIST_LL_SUB) << (e - 6));
}

static uint64_t slot_of(uint64_t v)
{
    return (v * 0x9e3779b97f4a7c15ULL) >> 51; /* 13 bits: 2 * HIST_EXACT_MAX slots */
}

/* Adds count to v's exact slot; returns the slot, or -1 when the exact counts are gone. */
static long exact_add(struct hist *h, uint64_t v, uint64_t count)
{
    uint64_t i;

    if (h->overflow)
        return -1;
    if (!h->exact)
        h->exact = xcalloc(2 * HIST_EXACT_MAX, sizeof(*h->exact));
    for (i = slot_of(v);; i = (i + 1) & (2 * HIST_EXACT_MAX - 1)) {
        struct hist_exact *s = &h->exact[i];

        if (s->count && s->val == v) {
            s->count += count;
            return (long)i;
        }
        if (!s->count)
            break;
    }
    if (h->nexact == HIST_EXACT_MAX) {
        /* Too many distinct values: fall back to the log-linear buckets for good. */
        h->overflow = true;
        free(h->exact);
        h->exact = NULL;
        return -1;
    }
    h->exact[i].val = v;
    h->exact[i].count = count;
    h->nexact++;
    return (long)i;
}

void hist__add_slow(struct hist *h, uint64_t v, uint64_t count)
{
    if (!count)
        return;
    SUMMARY_MERGE(h, ll, HIST_LL_N, count, v * count, v, v);
    h->last_log2 = (uint32_t)hist__log2_idx(v);
    h->last_ll = (uint32_t)ll_idx(v);
    h->log2[h->last_log2] += count;
    h->ll[h->last_ll] += count;
    long slot = exact_add(h, v, count);
    h->last_v = v;
    h->last_slot = slot < 0 ? 0 : (uint32_t)slot;
    h->last_ok = true;
}

void hist__merge(struct hist *dst, const struct hist *src)
{
    int i;

    if (!src->n)
        return;
    SUMMARY_MERGE(dst, ll, HIST_LL_N, src->n, src->sum, src->min, src->max);
    for (i = 0; i < HIST_LOG2_N; i++)
        dst->log2[i] += src->log2[i];
    for (i = 0; i < HIST_LL_N; i++)
        dst->ll[i] += src->ll[i];
    if (src->overflow) {
        dst->overflow = true;
        free(dst->exact);
        dst->exact = NULL;
        return;
    }
    for (i = 0; i < 2 * HIST_EXACT_MAX; i++)
        if (src->exact[i].count)
            exact_add(dst, src->exact[i].val, src->exact[i].count);
}

static int cmp_val(const void *a, const void *b)
{
    const struct hist_exact *x = a, *y = b;

    return x->val < y->val ? -1 : x->val > y->val;
}

static uint64_t exact_pct(const struct hist *h, uint64_t rank)
{
    struct hist_exact *v = xmalloc(h->nexact * sizeof(*v));
    uint64_t seen = 0, res = h->max;
    uint32_t i, k = 0;

    for (i = 0; i < 2 * HIST_EXACT_MAX; i++)
        if (h->exact[i].count)
            v[k++] = h->exact[i];
    qsort(v, k, sizeof(*v), cmp_val);
    for (i = 0; i < k; i++) {
        seen += v[i].count;
        if (seen >= rank) {
            res = v[i].val;
            break;
        }
    }
    free(v);
    return res;
}

/* The rank (1..n) of the p-th fraction of n samples, rounded up. */
static uint64_t rank_of(uint64_t n, double p)
{
    uint64_t rank = (uint64_t)(p * (double)n + 0.999999);

    return rank < 1 ? 1 : rank;
}

uint64_t hist__pct(const struct hist *h, double p)
{
    uint64_t rank, seen = 0;
    int i;

    if (!h->n)
        return 0;
    rank = rank_of(h->n, p);
    if (!h->overflow)
        return exact_pct(h, rank);
    for (i = 0; i < HIST_LL_N; i++) {
        seen += h->ll[i];
        if (seen >= rank)
            return ll_lo(i) > h->min ? ll_lo(i) : h->min;
    }
    return h->max;
}

double hist__mean(const struct hist *h)
{
    return h->n ? (double)h->sum / (double)h->n : 0.0;
}

void hist__free(struct hist *h)
{
    free(h->ll);
    free(h->exact);
    h->ll = NULL;
    h->exact = NULL;
    h->last_ok = false;
}

/* The bin of x = v / RHIST_LO (x >= 1), by its definition: one log2 per call. */
static int rbin_of_x(double x)
{
    double k = log2(x) * RHIST_PER_OCTAVE;

    return k >= RHIST_N - 1 ? RHIST_N - 1 : (int)k;
}

/* Every record adds one ratio, and log2 was a tenth of the format-2 reading time: bins are
 * looked up by cell instead, a cell being x's exponent and the top RB_CELL_BITS bits of its
 * mantissa (a 256th of an octave, narrower than a bin, so a cell holds at most one bin
 * boundary). Each cell learns, the first time a value falls in it, its bins and the exact
 * boundary between them, found with rbin_of_x itself (a bisection over the doubles of the
 * cell): the bin is rbin_of_x's for every double, only without the log2. */
#define RB_CELL_BITS 8
#define RB_EXPS      24 /* x < 2^24: bins up to RHIST_N - 1 */
struct rb_cell {
    double boundary; /* the smallest x of the cell in bin hi */
    uint16_t lo, hi;
    bool known, slow; /* slow: more than two bins (never for these sizes): rbin_of_x */
};
static struct rb_cell rb_cells[RB_EXPS << RB_CELL_BITS];

static double bits_double(uint64_t b)
{
    double d;

    memcpy(&d, &b, sizeof(d));
    return d;
}

static void rb_learn(struct rb_cell *c, uint64_t first, uint64_t last)
{
    int lo = rbin_of_x(bits_double(first)), hi = rbin_of_x(bits_double(last));

    c->lo = (uint16_t)lo, c->hi = (uint16_t)hi, c->known = true;
    c->slow = hi > lo + 1;
    if (hi == lo || c->slow)
        return;
    while (first < last) { /* positive doubles order as their bits: find the first in hi */
        uint64_t mid = first + (last - first) / 2;

        if (rbin_of_x(bits_double(mid)) >= hi)
            last = mid;
        else
            first = mid + 1;
    }
    c->boundary = bits_double(first);
}

static int rbin(double v)
{
    double x;
    uint64_t b, e, cell;
    struct rb_cell *c;

    if (!(v > RHIST_LO)) /* also NaN */
        return 0;
    x = v / RHIST_LO;
    memcpy(&b, &x, sizeof(b));
    e = (b >> 52) - 1023; /* x >= 1: a positive exponent */
    if (e >= RB_EXPS)
        return rbin_of_x(x);
    cell = e << RB_CELL_BITS | (b >> (52 - RB_CELL_BITS) & ((1u << RB_CELL_BITS) - 1));
    c = &rb_cells[cell];
    if (!c->known) {
        uint64_t first = b & ~((1ull << (52 - RB_CELL_BITS)) - 1);

        rb_learn(c, first, first + (1ull << (52 - RB_CELL_BITS)) - 1);
    }
    if (c->slow)
        return rbin_of_x(x);
    return c->lo == c->hi || x < c->boundary ? c->lo : c->hi;
}

static void rbin_add(struct rhist *h, int i, uint64_t count)
{
    uint64_t c = h->bins[i] + count;

    if (c > UINT32_MAX) {
        c = UINT32_MAX;
        h->big++;
    }
    h->bins[i] = (uint32_t)c;
}

void rhist__add(struct rhist *h, double v)
{
    SUMMARY_MERGE(h, bins, RHIST_N, 1, v, v, v);
    rbin_add(h, rbin(v), 1);
}

void rhist__add_n(struct rhist *h, double v, uint64_t count)
{
    if (!count)
        return;
    if (!h->bins)
        h->bins = xcalloc(RHIST_N, sizeof(*h->bins));
    if (!h->n || v < h->min)
        h->min = v;
    if (!h->n || v > h->max)
        h->max = v;
    h->n += count;
    h->sum += v * (double)count;
    rbin_add(h, rbin(v), count);
}

void rhist__merge(struct rhist *dst, const struct rhist *src)
{
    int i;

    if (!src->n)
        return;
    SUMMARY_MERGE(dst, bins, RHIST_N, src->n, src->sum, src->min, src->max);
    dst->big += src->big;
    for (i = 0; i < RHIST_N; i++)
        if (src->bins[i])
            rbin_add(dst, i, src->bins[i]);
}

double rhist__pct(const struct rhist *h, double p)
{
    uint64_t rank, seen = 0;
    double mid;
    int i;

    if (!h->n)
        return 0;
    rank = rank_of(h->n, p);
    for (i = 0; i < RHIST_N; i++) {
        seen += h->bins[i];
        if (seen >= rank)
            break;
    }
    if (i == RHIST_N)
        return h->max;
    /* The geometric middle of bin i, kept inside what was seen. */
    mid = RHIST_LO * exp2(((double)i + 0.5) / RHIST_PER_OCTAVE);
    return mid < h->min ? h->min : mid > h->max ? h->max : mid;
}

double rhist__mean(const struct rhist *h)
{
    return h->n ? h->sum / (double)h->n : 0.0;
}

void rhist__free(struct rhist *h)
{
    free(h->bins);
    h->bins = NULL;
}
