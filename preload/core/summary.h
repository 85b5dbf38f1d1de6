/* summary.h: summary mode (TLSMETER_EVENTS=summary): the records and reads of the process
 * kept as totals and histograms in memory, written as `summary` events every
 * TLSMETER_INTERVAL seconds and at exit instead of a line per record and per read. */
#ifndef TLSM_SUMMARY_H
#define TLSM_SUMMARY_H

#include "trace/config.h"
#include "trace/thread.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

static inline bool tlsm_summary_on(void)
{
    return tlsm_cfg.events == TLSM_EVENTS_SUMMARY || tlsm_cfg.events == TLSM_EVENTS_BOTH;
}

/* rec and read lines: not in summary mode only (TLSMETER_EVENTS=both writes the two). */
static inline bool tlsm_event_lines_on(void)
{
    return tlsm_cfg.events != TLSM_EVENTS_SUMMARY;
}

/* One decrypted or encrypted record, with the rec event's values (cipher and path: static
 * names). */
struct tlsm_sum_rec {
    const char *cipher, *path;
    int64_t lib, impl;
    int type, len, pt;
    bool tls12, out, tag_ok, preempted; /* out: an encrypted record */
    bool stalled; /* too slow for its context's pace with no switch seen (core/record.c) */
    uint64_t crypto_ns, gcm_ns, gcm_bytes;
    int gcm_fn; /* 0 none, 1 decrypt, 2 ctr32, 3 both */
};
void tlsm_summary_rec(const struct tlsm_sum_rec *r);
/* Write what changed since the last snapshot: when the interval is due (now, in ticks), or
 * always (at exit, before the end line). */
void tlsm_summary_flush(bool always);

/* A read's or write's sums and histograms, per thread in tlsm_th.sum (trace/thread.h): the
 * thread adds with plain stores, the snapshot adds up every thread's (tlsm_thread_sum_all).
 * Slot TLSM_SR(out, k) holds sum k of the direction (out: writes), TLSM_SH(out, h, b) bucket
 * b of its histogram h. reads = ok + fail and read_ns from the ticks, when written. */
enum {
    TLSM_SR_OK,
    TLSM_SR_FAIL,
    TLSM_SR_WANT_READ,
    TLSM_SR_ZERO_RET,
    TLSM_SR_GOT,
    TLSM_SR_WANT,
    TLSM_SR_WANT_BIG,
    TLSM_SR_TICKS,
    TLSM_SR_PEEKS,
    TLSM_SR_RECS_IN,
    TLSM_SR_N
};
enum { TLSM_SH_GOT, TLSM_SH_WANT, TLSM_SH_RECS, TLSM_SH_N };
#define TLSM_SUM_LOG2_N    65 /* bucket k: [2^(k-1), 2^k); 0 holds 0 (the analyzer's hist.log2) */
#define TLSM_SR(out, k)    ((out)*TLSM_SR_N + (k))
#define TLSM_SH(out, h, b) (2 * TLSM_SR_N + ((out)*TLSM_SH_N + (h)) * TLSM_SUM_LOG2_N + (b))
#define TLSM_SUM_SLOTS     (2 * TLSM_SR_N + 2 * TLSM_SH_N * TLSM_SUM_LOG2_N)
_Static_assert(TLSM_SUM_SLOTS == TLSM_THREAD_SUM_N, "struct tlsm_thread's sum[] must fit");

static inline int tlsm_log2_idx(uint64_t v)
{
    return v ? 64 - __builtin_clzll(v) : 0;
}

/* Set by the first record, read or socket read (a process with none writes no summary);
 * the tick at which the next interval snapshot is due (0: not started). */
extern _Atomic bool tlsm_summary_touched;
extern _Atomic uint64_t tlsm_summary_due;

/* One SSL_read or SSL_peek call (and the _ex forms), or with out one SSL_write call (want:
 * asked, got: written): what its read or write event would have said (err: SSL_get_error,
 * -1 when not asked; ticks: its time; t1: when it returned). Inline: a read costs a few
 * adds to this thread's own counters. */
static inline __attribute__((always_inline)) void
tlsm_summary_read(struct tlsm_thread *th, bool out, bool peek, int64_t want, int64_t got, int err,
                  uint64_t ticks, uint32_t recs, uint64_t t1)
{
    uint64_t *c = th->sum;
    int o = out;
    if (__builtin_expect(!atomic_load_explicit(&tlsm_summary_touched, memory_order_relaxed), 0))
        atomic_store_explicit(&tlsm_summary_touched, true, memory_order_relaxed);
    c[TLSM_SR(o, TLSM_SR_RECS_IN)] += recs;
    c[TLSM_SH(o, TLSM_SH_WANT, tlsm_log2_idx(want > 0 ? (uint64_t)want : 0))]++;
    c[TLSM_SH(o, TLSM_SH_RECS, tlsm_log2_idx(recs))]++;
    if (got > 0)
        c[TLSM_SH(o, TLSM_SH_GOT, tlsm_log2_idx((uint64_t)got))]++;
    if (peek) { /* its bytes are read again: counted with the read that returns them */
        c[TLSM_SR(o, TLSM_SR_PEEKS)]++;
    } else {
        if (got > 0) {
            c[TLSM_SR(o, TLSM_SR_OK)]++;
            c[TLSM_SR(o, TLSM_SR_GOT)] += (uint64_t)got;
        } else {
            c[TLSM_SR(o, TLSM_SR_FAIL)]++;
            c[TLSM_SR(o, TLSM_SR_WANT_READ)] += err == 2;
            c[TLSM_SR(o, TLSM_SR_ZERO_RET)] += err == 6;
        }
        c[TLSM_SR(o, TLSM_SR_WANT)] += want > 0 ? (uint64_t)want : 0;
        c[TLSM_SR(o, TLSM_SR_WANT_BIG)] += want > 16384;
        c[TLSM_SR(o, TLSM_SR_TICKS)] += ticks;
    }
    if (tlsm_cfg.interval && t1 >= atomic_load_explicit(&tlsm_summary_due, memory_order_relaxed))
        tlsm_summary_flush(false);
}
/* One socket read of a copy whose SSL_read is unreachable (what a sockread event says; err:
 * errno when got is -1): summed per copy, written as a "sockets" part. */
void tlsm_summary_sockread(int64_t lib, int64_t got, int err);
/* fork(): the child's trace starts from zero (what the parent counted is the parent's). */
void tlsm_summary_atfork_child(void);

#endif
