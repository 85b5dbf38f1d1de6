/* hist.h: bounded-memory histograms with exact percentiles for the values traces carry. */
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
};

void hist__add(struct hist *h, uint64_t v, uint64_t count);
void hist__merge(struct hist *dst, const struct hist *src);
/* Smallest value v such that at least p (0 < p <= 1) of the samples are <= v. */
uint64_t hist__pct(const struct hist *h, double p);
double hist__mean(const struct hist *h);
/* Bucket index of v in log2[] and its range. */
int hist__log2_idx(uint64_t v);
uint64_t hist__log2_lo(int k);
void hist__free(struct hist *h);

#endif
