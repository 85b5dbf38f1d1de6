/* weights.h: the implementation class of a row, a copy or the process weighted by the bytes
 * decrypted (crypto time beside them), so a small connection never outvotes a large one;
 * bytes tlsmeter could not measure are counted apart, never as hardware; what share of the
 * process's CPU the trace explains; and the --require-hw gate built on them. */
#ifndef TLSM_WEIGHTS_H
#define TLSM_WEIGHTS_H

#include "model/impl.h"
#include "model/model.h"

#include <jansson.h>
#include <stdio.h>

/* How bytes were decrypted, as the split names them: hardware; software (classes table and
 * vector); unknown (records whose code could not be named); unmeasured (bytes that arrived on
 * the sockets of a copy with no record tlsmeter saw for them). */
enum wgroup { WG_HARDWARE, WG_SOFTWARE, WG_UNKNOWN, WG_UNMEASURED, WG_N };

#define WSPLIT_COPIES 4

struct wpart {
    uint64_t bytes, ns;
    const struct lib *copies[WSPLIT_COPIES]; /* the copies these bytes are of, largest first */
    uint64_t copy_bytes[WSPLIT_COPIES];
    int ncopies;
    bool copies_more; /* more copies than listed */
};

struct wsplit {
    uint64_t cls_bytes[IMPL_N], cls_ns[IMPL_N]; /* per class of the records */
    struct wpart g[WG_N];
    uint64_t bytes, ns; /* every group */
};

struct summary;
struct bucket;

enum wgroup wgroup_of(enum impl_class c);
const char *wgroup__name(enum wgroup g);
/* Adds bytes and crypto time of class c decrypted by copy l (NULL: not identified). */
void wsplit__add(struct wsplit *w, enum impl_class c, const struct lib *l, uint64_t bytes,
                 uint64_t ns);
/* Bytes that arrived on copy l's sockets in no record tlsmeter saw. */
void wsplit__add_unmeasured(struct wsplit *w, const struct lib *l, uint64_t bytes);
/* The class by bytes: the class of most bytes, unmeasured bytes counted as unknown; on a tie
 * the worse class (unknown, then table, vector, hardware). */
enum impl_class wsplit__class(const struct wsplit *w);
/* More than one group has bytes. */
bool wsplit__mixed(const struct wsplit *w);
/* "software for 99.6 % of the bytes (1.31 s crypto), in libvendor.so; hardware for 0.4 %
 * (1.2 ms), in libcrypto.so.3" */
void wsplit__text(const struct wsplit *w, char *buf, size_t cap);
/* {"class", "mixed", "bytes", "crypto_ns", and per group ("hardware", "software", "unknown",
 * "unmeasured"): {"bytes", "share_bytes", "crypto_ns", "share_crypto", "copies": [path]}} */
json_t *wsplit__json(const struct wsplit *w);

/* The process split: the program's own (native) records of the decrypting side, all records
 * when none are native, and the unmeasured socket bytes of copies past the hooks. */
void weights__process(const struct summary *s, struct wsplit *w);
/* The split of one (cipher, path) row. */
void weights__row(const struct summary *s, int cipher, int path, struct wsplit *w);
/* The split of one copy (trace t's lib l): its native records and unmeasured socket bytes. */
void weights__copy(const struct summary *s, const struct trace *t, const struct lib *l,
                   struct wsplit *w);
/* The bucket's copy, for the split (the backend for rerouted records). */
const struct lib *weights__bucket_copy(const struct model *m, const struct bucket *b);
/* Socket bytes of copies whose SSL_read tlsmeter cannot reach (plt), over all traces: bytes
 * received that are in no read figure. */
uint64_t weights__socket_bytes(const struct model *m);
/* TLS in trace t the trace could not measure: blind copies, other TLS libraries, kernel TLS,
 * socket bytes in no record seen (the bytes-unseen rule). Returns how many, and names the first in
 * name (may be NULL). */
int weights__blind(const struct summary *s, const struct trace *t, char *name, size_t cap);
/* On-CPU time the trace accounts for in trace t: record crypto (the on-CPU estimate) and the
 * connections' handshakes. */
uint64_t weights__explained_ns(const struct model *m, uint32_t ti, uint64_t *hs_ns);
/* The per-copy figures added to each entry of --json "copies". */
void weights__copies_json(const struct summary *s, json_t *copies);
/* The copies' lines of the text report's implementation section. */
void weights__copies_text(FILE *out, const struct summary *s);

/* --require-hw[=PCT]: rejects when more than pct % of the decrypted bytes ran in software
 * and, unless allowed, when any were unknown or any TLS was unmeasured. */
struct gate {
    bool on, allow_unknown, allow_blind;
    double pct; /* the software share allowed, in percent */
};
struct gate_result {
    struct gate opt; /* what was asked */
    bool passed;
    double software, unknown, unmeasured; /* shares of the decrypted bytes */
    int blind;                            /* blind spots (weights__blind) over all traces */
    uint64_t bytes;
    char why[768]; /* the sentence: accepted or rejected, and why */
};
void gate__eval(const struct gate *g, const struct summary *s, struct gate_result *r);
json_t *gate__json(const struct gate_result *r);

#endif
