/* summary.h: the figures every output shares, derived once from a model after reading. */
#ifndef TLSM_SUMMARY_H
#define TLSM_SUMMARY_H

#include "impl.h"
#include "model.h"
#include "profile.h"

#define MAX_ROWS     64
#define MAX_VERDICTS 24
#define MAX_EVIDENCE 8

/* Records by (cipher, path) over all traces and instances. */
struct row {
    int cipher, path;
    struct stats st;
    enum impl_class cls;
    bool mixed; /* buckets of this row were classified differently */
    char detail[96];
};

struct verdict {
    const char *id;
    const char *kind; /* "problem", "info", "blind" */
    char text[1024];
    int nev;
    struct {
        const char *key;
        double val;
    } ev[MAX_EVIDENCE];
};

struct summary {
    const struct model *m;
    const struct profile *prof; /* NULL: no caller attribution (compare) */
    int64_t duration_ns;        /* summed over traces: process-seconds for a fleet */
    int64_t cpu_ns;             /* -1 when any trace lacks its end line */
    bool cpu_overflow;          /* cpu_ns -1 because a figure or the sum overflowed 64 bits */
    uint64_t lines, lines_skipped, lines_unknown, dropped;
    bool truncated, emulated;
    double throughput, nspb, share_wall, share_cpu; /* share_cpu < 0: unknown */
    enum impl_class impl;
    struct row rows[MAX_ROWS];
    int nrows;
    struct verdict v[MAX_VERDICTS];
    int nv;
};

void summary__build(struct summary *s, const struct model *m);
/* Adds one verdict; returns it so the caller can attach evidence. */
struct verdict *summary__verdict(struct summary *s, const char *id, const char *kind,
                                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void verdict__evidence(struct verdict *v, const char *key, double val);
void verdicts__build(struct summary *s);
/* The groups of verdicts, one file each. */
void verdicts_io(struct summary *s);
void verdicts_blind(struct summary *s);

#endif
