/* hist.h: bounded-memory histograms: exact percentiles for the integer values traces carry,
 * log-binned ones for per-record ns/B. */
#ifndef TLSM_HIST_H
#define TLSM_HIST_H

#include <stdbool.h>
#include <stdint.h>

/* Values below this many distinct keys are counted exactly (reads and records take few
 * distinct sizes); past it, percentiles come from log-linear buckets (< 1.6 % error). */
#define HIST_EXACT_MAX 4096
#define HIST_LOG2_N    65
#define HIST_LL_SUB    64
#define HIST_LL_N      (128 + 57 * HIST_LL_SUB)

struct hist_exact {
    uint64_t val, count; /* count 0 = empty slot */
};

struct hist {
    uint64_t n, sum, min, max;
    uint64_t log2[HIST_LOG2_N]; /* bucket k holds [2^(k-1), 2^k), bucket 0 holds 0 */
    uint64_t *ll;               /* log-linear buckets, allocated on first add */
    struct hist_exact *exact;   /* open addressing, HIST_EXACT_MAX * 2 slots */
    uint32_t nexact;
    bool overflow;
    /* The last value added and where it went (valid when last_ok): traces repeat a handful of
     * sizes, so most adds are one compare and three increments (hist.c). */
    bool last_ok;
    uint64_t last_v;
    uint32_t last_log2, last_ll, last_slot;
};

void hist__add_slow(struct hist *h, uint64_t v, uint64_t count);
/* Adds count samples of value v; a repeat of the last value is counted inline. */
static inline void hist__add(struct hist *h, uint64_t v, uint64_t count)
{
    if (h->last_ok && v == h->last_v && count) { /* seen before: min and max hold it */
        h->n += count;
        h->sum += v * count;
        h->log2[h->last_log2] += count;
        h->ll[h->last_ll] += count;
        if (!h->overflow) /* exact slots never move; they are dropped whole on overflow */
            h->exact[h->last_slot].count += count;
        return;
    }
    hist__add_slow(h, v, count);
}
void hist__merge(struct hist *dst, const struct hist *src);
/* Smallest value v such that at least p (0 < p <= 1) of the samples are <= v. */
uint64_t hist__pct(const struct hist *h, double p);
double hist__mean(const struct hist *h);
/* Bucket index of v in log2[] and its range. */
int hist__log2_idx(uint64_t v);
uint64_t hist__log2_lo(int k);
void hist__free(struct hist *h);

/* Ratios (ns per byte of one record): log-spaced bins, RHIST_PER_OCTAVE per doubling from
 * RHIST_LO (0.01 ns/B) over RHIST_OCTAVES doublings (to ~168 us/B): each bin is 1.09 % wide,
 * and a percentile is the geometric middle of its bin clamped to the samples' min and max, so
 * it is within 0.55 % of the exact sample value. Values outside the range land in the first or
 * last bin (their percentile is then the min or max). The mean is exact. */
#define RHIST_LO         0.01
#define RHIST_PER_OCTAVE 64
#define RHIST_OCTAVES    24
#define RHIST_N          (RHIST_PER_OCTAVE * RHIST_OCTAVES)

struct rhist {
    uint64_t n;
    double sum, min, max;
    uint32_t *bins; /* RHIST_N counts, allocated on first add */
    uint64_t big;   /* bins saturate at UINT32_MAX; past that the percentiles are rough */
};

void rhist__add(struct rhist *h, double v);
/* count samples of value v at once (summary traces: a bin's middle and its count). */
void rhist__add_n(struct rhist *h, double v, uint64_t count);
void rhist__merge(struct rhist *dst, const struct rhist *src);
/* Smallest v such that at least p (0 < p <= 1) of the samples are <= v; 0 when empty. */
double rhist__pct(const struct rhist *h, double p);
double rhist__mean(const struct rhist *h);
void rhist__free(struct rhist *h);

#endif
