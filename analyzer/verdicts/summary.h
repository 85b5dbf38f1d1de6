/* summary.h: the figures every output shares, derived once from a model after reading. */
#ifndef TLSM_SUMMARY_H
#define TLSM_SUMMARY_H

#include "model/impl.h"
#include "model/model.h"
#include "model/profile.h"
#include "verdicts/weights.h"

#define MAX_ROWS     64
#define MAX_VERDICTS 24
#define MAX_EVIDENCE 8

/* Per-record ns/B of one size class over some buckets (docs/analyzer.md). */
struct class_fig {
    uint64_t recs;      /* records of the class */
    uint64_t used;      /* in the ns/B figures: pt > 0 and not switched out */
    uint64_t left_out;  /* switched out, left out of the ns/B figures */
    uint64_t crypto_ns; /* on-CPU estimate (class_stats__crypto_ns per bucket, summed) */
    double mean, median, p90;
};

/* Records by (cipher, path) over all traces and instances. */
struct row {
    int cipher, path;
    struct stats st;
    uint64_t crypto_ns; /* on-CPU estimate: st.crypto_ns with switched-out records estimated */
    struct class_fig fig[SC_N];
    enum impl_class cls; /* by bytes (weights.h): the class of most of the row's bytes */
    bool mixed;          /* the row's bytes ran in more than one group (split) */
    char detail[192];    /* what ran, from the largest bucket of the row's class */
    struct wsplit split; /* bytes and crypto time per class and copy */
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

/* The same figures per cipher (all paths and instances). */
struct cipher_fig {
    int cipher;
    struct class_fig fig[SC_N];
};

struct summary {
    const struct model *m;
    bool out;                   /* of the encrypting side (m->out): words and verdicts follow */
    const struct summary *enc;  /* the encrypting side's summary beside this one, or NULL */
    const struct profile *prof; /* NULL: no caller attribution (compare) */
    int64_t duration_ns;        /* summed over traces: process-seconds for a fleet */
    int64_t cpu_ns;             /* -1 when any trace lacks its end line */
    bool cpu_overflow;          /* cpu_ns -1 because a figure or the sum overflowed 64 bits */
    uint64_t lines, lines_skipped, lines_unknown, dropped;
    bool truncated, emulated;
    double throughput, nspb, share_wall, share_cpu; /* share_cpu < 0: unknown */
    /* Crypto time: on-CPU estimate (switched-out records estimated) and as written. Shares
     * are of it, clamped to 1: cpu_short_ns > 0 when it exceeds the process CPU (the CPU
     * accounting undercounts by at least that), wall_short_ns > 0 when it exceeds the wall
     * time x decrypting threads (wall_threads_ns). */
    uint64_t crypto_ns, crypto_ns_raw;
    int64_t cpu_short_ns, wall_short_ns, wall_threads_ns;
    uint64_t nthreads_dec; /* threads that decrypted records, summed over traces */
    uint64_t recs_flagged, recs_left_out, recs_stalled;
    char cputime[24];       /* perf-clock, wall, the fallback's name, or mixed */
    char cputime_text[512]; /* what crypto time is, in words */
    struct cipher_fig ciphers[MAX_ROWS];
    int nciphers;
    enum impl_class impl;  /* the process's class by bytes (split) */
    struct wsplit split;   /* native records (all when none are), unmeasured socket bytes */
    uint64_t socket_bytes; /* arrived on the sockets of copies whose SSL_read is unreachable */
    int blind;             /* TLS the trace could not measure (weights__blind), all traces */
    const struct gate_result *gate; /* --require-hw's answer, NULL when not asked */
    struct row rows[MAX_ROWS];
    int nrows;
    struct hs_summary hs; /* handshake parts (handshake.h) */
    struct verdict v[MAX_VERDICTS];
    int nv;
    uint64_t unsealed; /* sending side: bytes written in no record seen (verdicts_blind_out) */
};

void summary__build(struct summary *s, const struct model *m);
/* Rows' and ciphers' class figures, crypto estimates and the cputime sentence. */
void summary__classes(struct summary *s);
/* Per-class figures over the buckets of cipher (and path, -1: any). */
void summary__class_figs(const struct model *m, int cipher, int path, struct class_fig fig[SC_N]);
/* The figures of one bucket. */
void bucket__class_figs(const struct bucket *b, struct class_fig fig[SC_N]);
/* The row's buckets of one group (software, hardware) as a row of their own, for the
 * verdicts on each part of a mixed row. */
void summary__row_part(const struct summary *s, const struct row *w, enum wgroup g,
                       struct row *part);
/* Per-class figures over the buckets of cipher and path that keep() takes (NULL: all). */
void summary__class_figs_if(const struct model *m, int cipher, int path,
                            bool (*keep)(const struct model *m, const struct bucket *b, void *ctx),
                            void *ctx, struct class_fig fig[SC_N]);
/* The bulk median ns/B of the cipher with most bulk records, -1 with fewer than
 * BULK_MIN_RECORDS (*used, if not NULL: its bulk records in the figures): the throughput
 * figure that fixed per-record costs do not move. */
double summary__bulk_median(const struct summary *s, uint64_t *used);
/* The bulk median ns/B of a row's records, or -1 with fewer than BULK_MIN_RECORDS. */
double row__bulk_median(const struct row *w);
/* Verdict ids: the schema's list (common/schema.def), the report's names for them. */
enum verdict_id {
#define SCHEMA_VERDICT(id, name) V_##id,
#include "common/schema.def"
    V_N
};
/* Adds one verdict; returns it so the caller can attach evidence. */
struct verdict *summary__verdict(struct summary *s, enum verdict_id id, const char *kind,
                                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void verdict__evidence(struct verdict *v, const char *key, double val);
void verdicts__build(struct summary *s);
/* The groups of verdicts, one file each. */
void verdicts_io(struct summary *s);
void verdicts_blind(struct summary *s);
/* provider: records another provider or an engine decrypted, one per provider (verdict_prov.c). */
void verdicts_prov(struct summary *s);
/* cpu-unexplained: per trace with TLS it could not measure, the share of the process's CPU
 * the trace accounts for and the copy it could not see. */
void verdicts_unexplained(struct summary *s);
/* The sending side's: bytes written that no sealed record accounts for (verdict_blind.c). */
void verdicts_blind_out(struct summary *s);
/* Unsealed bytes below this (one record's plaintext) are not called blind: a trace cut in
 * the middle of a write. */
#define UNSEALED_MIN 16384
void verdicts_hs(struct summary *s);
void verdicts_reach(struct summary *s); /* reach.c */

#endif
