/* reach.h: each OpenSSL copy of each trace, how tlsmeter reached it (lib.reach), what its
 * records carried and what arrived through its socket reads past the hooks: the
 * figures of the report's "copies and reach" section and of its socket-reads and
 * bytes-unseen verdicts. */
#ifndef TLSM_REACH_H
#define TLSM_REACH_H

#include "verdicts/summary.h"

#define REACH_MAX_FIGS 64
/* Socket bytes no record accounts for beyond this (and 1 % of them): records tlsmeter did
 * not see. Below it they are the handshake sent in clear (ServerHello, certificates). */
#define REACH_UNSEEN_MIN 65536

struct copy_fig {
    const struct trace *t;
    const struct lib *l;           /* the copy's lib event */
    const struct reach_copy *sock; /* its socket reads, or NULL */
    uint64_t recs, recs_app, pt;   /* records it decrypted (dir in), their plaintext */
    uint64_t wire;                 /* their bytes on the wire: len + the 5-byte header */
    /* its records rerouted to a backend (TLSMETER_CRYPTO=hw|soft), reach.c says which: how
     * many, application data, plaintext, wire bytes */
    uint64_t routed_recs, routed_app, routed_pt, routed_wire;
    uint64_t unseen; /* socket bytes no record covers (0 without socket reads) */
};

/* The app copies of every trace of s (backends left out), the first max of them; returns
 * how many it filled in, *more (if not NULL) those beyond max (a large fleet). */
int reach__copies(const struct summary *s, struct copy_fig *out, int max, int *more);
/* Whether the text report has anything to say about reach (a copy reached past the linker's
 * binding, socket reads, rewritten callers). */
bool reach__any(const struct summary *s);
/* lib.reach in words: "table+plt" -> "provider tables rewritten; socket reads traced". */
void reach__words(const char *reach, char *buf, size_t cap);

#endif
