/* metrics.h: what a trace adds to a host's Prometheus counters (the --openmetrics output):
 * series of named families, each a label tuple and an integer in the family's base unit
 * (records, bytes, nanoseconds), summed over traces and written as the Prometheus text
 * exposition (openmetrics.c). docs/fleet.md lists the families and their labels. */
#ifndef TLSM_METRICS_H
#define TLSM_METRICS_H

#include "model/model.h"
#include "verdicts/summary.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum metric_fam {
    MF_CRYPTO_SECONDS,  /* on-CPU crypto time of records (the analyzer's weights) */
    MF_RECORDS,         /* records decrypted or encrypted */
    MF_PLAINTEXT_BYTES, /* their plaintext */
    MF_RECORD_BYTES,    /* their ciphertext (the bytes the class split weighs) */
    MF_SSL_CALLS,       /* SSL_read* (in) and SSL_write* (out) calls */
    MF_SSL_BYTES,       /* bytes they returned or wrote */
    MF_HANDSHAKES,
    MF_HANDSHAKE_SECONDS,
    MF_HANDSHAKE_PART_SECONDS,
    MF_TRACES,       /* traced processes */
    MF_BLIND_TRACES, /* traced processes with TLS tlsmeter could not measure, per copy */
    MF_UNMEASURED_BYTES /* socket bytes of a copy that no record covers */,
    MF_LOST, /* what a trace says it lost: records, socket reads, events, threads */
    MF_N
};

#define METRIC_LABELS 7

struct metric_fam_def {
    const char *name, *help;
    const char *labels[METRIC_LABELS]; /* NULL-terminated when fewer */
    bool seconds;                      /* values are ns, written as seconds */
};
extern const struct metric_fam_def metric_fams[MF_N];
int metric_fam__nlabels(enum metric_fam f);
/* The family whose name is s, or -1. */
int metric_fam__find(const char *s);

struct series {
    int fam;
    char *val[METRIC_LABELS]; /* owned; label values in the family's order */
    uint64_t v;
};

/* A set of series; after mset__merge no two share a family and label values. */
struct mset {
    struct series *s;
    size_t n, cap;
};

void mset__free(struct mset *ms);
/* Adds v to the series (fam, val...), a new one at the end (merge later); 0, or -1 on ENOMEM. */
int mset__add(struct mset *ms, int fam, const char *const *val, uint64_t v);
/* Sorts by family then label values and sums the series that are equal. */
void mset__merge(struct mset *ms);
/* Each series of `now` at least as large as the same series of `before` (both merged): what a
 * process's trace counted stays counted if a later reading of it gives less. A series of
 * `before` whose bucket now reads under another class keeps its value, and the new class's
 * series counts the rest of the bucket. */
int mset__max_with(struct mset *now, const struct mset *before);
/* dst += src, one series at a time (merge dst after). */
int mset__add_all(struct mset *dst, const struct mset *src);

/* The series one trace adds: `in` holds that single trace read for decryption, `out` the same
 * trace read for encryption or NULL, s the decrypting side's summary of `in`. */
int metrics__trace(struct mset *ms, const struct model *in, const struct model *out,
                   const struct summary *s);

#endif
