/* summary.h: summary mode (TLSMETER_EVENTS=summary): the records and reads of the process
 * kept as totals and histograms in memory, written as `summary` events every
 * TLSMETER_INTERVAL seconds and at exit instead of a line per record and per read. */
#ifndef TLSM_SUMMARY_H
#define TLSM_SUMMARY_H

#include "trace/config.h"

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

/* One decrypted or encrypted record, with the rec event's values (cipher and path: static names). */
struct tlsm_sum_rec {
    const char *cipher, *path;
    int64_t lib, impl;
    int type, len, pt;
    bool tls12, out, tag_ok, preempted; /* out: an encrypted record */
    uint64_t crypto_ns, gcm_ns, gcm_bytes;
    int gcm_fn; /* 0 none, 1 decrypt, 2 ctr32, 3 both */
};
void tlsm_summary_rec(const struct tlsm_sum_rec *r);
/* One SSL_read or SSL_peek call (and the _ex forms), or with out one SSL_write call (want:
 * asked, got: written): what its read or write event would have said (err: SSL_get_error,
 * -1 when not asked). */
void tlsm_summary_read(bool out, bool peek, int64_t want, int64_t got, int err, uint64_t ns,
                       uint32_t recs);
/* One socket read of a copy whose SSL_read is unreachable (what a sockread event says; err:
 * errno when got is -1): summed per copy, written as a "sockets" part. */
void tlsm_summary_sockread(int64_t lib, int64_t got, int err);
/* Write what changed since the last snapshot: when the interval is due (now, in ticks), or
 * always (at exit, before the end line). */
void tlsm_summary_flush(bool always);
/* fork(): the child's trace starts from zero (what the parent counted is the parent's). */
void tlsm_summary_atfork_child(void);

#endif
