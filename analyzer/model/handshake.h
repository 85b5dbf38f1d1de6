/* handshake.h: the handshake parts of each connection (conn open event `hs`) and
 * the figures every output shares: connections, on-CPU time per connection, parts,
 * certificates (docs/trace-format.md "conn", docs/handshake.md). */
#ifndef TLSM_HANDSHAKE_H
#define TLSM_HANDSHAKE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The parts as the preload names them (preload/hs.h), then the remainder. */
enum hs_part {
    HP_CERT_PARSE,
    HP_CERT_LOAD,
    HP_CHAIN_VERIFY,
    HP_SIGN,
    HP_VERIFY,
    HP_KEY_EXCHANGE,
    HP_KEY_SCHEDULE,
    HP_RECORDS,
    HP_N,
    HP_OTHER = HP_N /* summary only: handshake time outside every part */
};

#define HS_CERTS 6

struct conn_hs {
    bool have;
    int64_t ns, calls, preempt, tickets;
    int resumed; /* 1, 0, -1 unknown */
    int64_t part_ns[HP_N], part_calls[HP_N];
    char sign_key[16], verify_key[16];
    int ncerts; /* listed */
    int64_t certs_more;
    struct {
        int64_t bytes;
        char key[16];
    } certs[HS_CERTS];
};

#define HS_DISTINCT 16

/* Over all connections with an hs object. */
struct hs_summary {
    uint64_t conns, resumed, full, preempted, servers, clients, tickets;
    uint64_t ns;                                      /* summed on-CPU handshake time */
    uint64_t p50_ns, p90_ns;                          /* per connection */
    uint64_t full_p50_ns, resumed_p50_ns;             /* per connection of each kind, 0: none */
    uint64_t part_ns[HP_N + 1], part_calls[HP_N + 1]; /* + other; from unflagged connections */
    uint64_t parts_conns;    /* connections the part figures come from (not switched out) */
    uint64_t parts_total_ns; /* their handshake time: the parts' denominator */
    uint64_t certs_parsed;
    struct {
        int64_t bytes;
        char key[16];
        uint64_t count;
    } certs[HS_DISTINCT];
    int ncerts;
    /* Signature parts by key ("rsa2048": ns and connections), from unflagged connections. */
    struct {
        char key[16];
        bool sign;
        uint64_t ns, conns;
    } sigs[8];
    int nsigs;
    uint64_t own_chain_conns; /* servers verifying a chain with no peer certificate */
};

extern const char *const hs_part_names[HP_N + 1];

struct model;
struct trace;
/* conn open event: its `hs` object into the connection (0, or -1 with a reason). */
int model__conn_hs(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen);
void hs_summary__build(struct hs_summary *h, const struct model *m);
/* Per-connection ns of a part (over the connections the parts come from). */
double hs_summary__per_conn(const struct hs_summary *h, int part);
/* The JSON `handshake` object. */
json_t *hs_summary__json(const struct hs_summary *h, int64_t cpu_ns);

#endif
