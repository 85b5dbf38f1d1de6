/* verdict_hs.c: what the handshakes cost and what would remove it: handshake share of the
 * process's CPU, the certificate chain parsed and verified on every connection, RSA vs
 * ECDSA signature cost, full handshakes where resumption was possible. */
#include "verdicts/summary.h"

#include "base/fmt.h"

#include <string.h>

#define U(x) ((unsigned long long)(x))

static double per_conn(const struct hs_summary *h, int k)
{
    return hs_summary__per_conn(h, k);
}

static void share(struct summary *s)
{
    const struct hs_summary *h = &s->hs;
    struct fmtbuf a, b, c, d;
    struct verdict *v;
    int k, top = HP_OTHER;

    if (h->conns < 2 || s->cpu_ns <= 0 || (double)h->ns < 0.1 * (double)s->cpu_ns)
        return;
    for (k = 0; k < HP_N; k++)
        if (h->part_ns[k] > h->part_ns[top] || top == HP_OTHER)
            top = h->part_calls[k] ? k : top;
    v = summary__verdict(
        s, V_HANDSHAKE_SHARE, "info",
        "%llu handshakes took %s on-CPU (%s each, p50): %s of the process's "
        "CPU; the largest part is %s (%s of handshake time)",
        U(h->conns), fmt_ns(&a, (double)h->ns), fmt_ns(&b, (double)h->p50_ns),
        fmt_pct(&c, (double)h->ns / (double)s->cpu_ns), hs_part_names[top],
        h->parts_total_ns ? fmt_pct(&d, (double)h->part_ns[top] / (double)h->parts_total_ns) : "?");
    verdict__evidence(v, "connections", (double)h->conns);
    verdict__evidence(v, "handshake_ns", (double)h->ns);
    verdict__evidence(v, "share_cpu", (double)h->ns / (double)s->cpu_ns);
}

static void chain_bytes(const struct hs_summary *h, uint64_t *certs, uint64_t *bytes)
{
    int i;

    *certs = *bytes = 0;
    for (i = 0; i < h->ncerts; i++) {
        *certs += h->certs[i].count;
        *bytes += h->certs[i].count * (uint64_t)h->certs[i].bytes;
    }
}

/* Client side: the peer's chain parsed and verified in (nearly) every full handshake. */
static void chain(struct summary *s)
{
    const struct hs_summary *h = &s->hs;
    struct fmtbuf a, b, c, d, e;
    struct verdict *v;
    uint64_t certs, bytes;
    double each, load = per_conn(h, HP_CERT_LOAD);
    char store[200] = "";

    if (h->parts_conns < 2 || h->part_calls[HP_CHAIN_VERIFY] * 10 < h->parts_conns * 9 ||
        !h->part_calls[HP_CERT_PARSE])
        return;
    chain_bytes(h, &certs, &bytes);
    each = per_conn(h, HP_CERT_PARSE) + load + per_conn(h, HP_CHAIN_VERIFY);
    if (load > 0)
        snprintf(store, sizeof(store),
                 "; %s of it reads the trust store again in each handshake: a cached "
                 "X509_STORE (one per process, e.g. curl's CURLOPT_CA_CACHE_TIMEOUT) removes it",
                 fmt_ns(&e, load));
    v = summary__verdict(
        s, V_CHAIN_EVERY_CONNECTION, "problem",
        "certificate chain parsed and verified on every connection: %s each (parse %s, "
        "verify %s)%s; session resumption would skip it (%llu of %llu resumed), a smaller "
        "chain parses less (%.1f certificates, %s per connection)",
        fmt_ns(&a, each), fmt_ns(&b, per_conn(h, HP_CERT_PARSE)),
        fmt_ns(&c, per_conn(h, HP_CHAIN_VERIFY)), store, U(h->resumed), U(h->conns),
        h->conns ? (double)certs / (double)h->conns : 0,
        fmt_bytes(&d, h->conns ? bytes / h->conns : 0));
    verdict__evidence(v, "chain_ns_per_conn", each);
    verdict__evidence(v, "cert_parse_ns_per_conn", per_conn(h, HP_CERT_PARSE));
    verdict__evidence(v, "cert_load_ns_per_conn", load);
    verdict__evidence(v, "chain_verify_ns_per_conn", per_conn(h, HP_CHAIN_VERIFY));
    verdict__evidence(v, "certs_per_conn", h->conns ? (double)certs / (double)h->conns : 0);
}

/* Server side: X509_verify_cert with no peer certificate is libssl building the server's
 * own chain for its Certificate message, again in each handshake. */
static void own_chain(struct summary *s)
{
    const struct hs_summary *h = &s->hs;
    struct fmtbuf a;
    struct verdict *v;

    if (h->own_chain_conns < 2 || !h->parts_conns)
        return;
    v = summary__verdict(s, V_SERVER_CHAIN_BUILD, "info",
                         "the server builds its own certificate chain in each handshake "
                         "(X509_verify_cert, %s each, %llu handshakes): set the chain once "
                         "(SSL_CTX_build_cert_chain or SSL_CTX_add1_chain_cert) and "
                         "SSL_MODE_NO_AUTO_CHAIN",
                         fmt_ns(&a, per_conn(h, HP_CHAIN_VERIFY)), U(h->own_chain_conns));
    verdict__evidence(v, "chain_verify_ns_per_conn", per_conn(h, HP_CHAIN_VERIFY));
}

/* Is the sign part the largest of the timed parts? */
static bool sign_largest(const struct hs_summary *h)
{
    for (int k = 0; k < HP_N; k++)
        if (h->part_ns[k] > h->part_ns[HP_SIGN])
            return false;
    return h->part_ns[HP_SIGN] > 0;
}

static void signatures(struct summary *s)
{
    const struct hs_summary *h = &s->hs;
    struct fmtbuf a, b, c;
    struct verdict *v;
    int i, j;

    for (i = 0; i < h->nsigs; i++) {
        double ni = (double)h->sigs[i].ns / (double)h->sigs[i].conns;

        for (j = 0; j < h->nsigs; j++) {
            double nj = (double)h->sigs[j].ns / (double)h->sigs[j].conns;

            if (j == i || h->sigs[j].sign != h->sigs[i].sign || ni < 2 * nj)
                continue;
            v = summary__verdict(s, V_SIGNATURE_COST, "info",
                                 "%s %s cost %s per handshake against %s with %s (%s): the "
                                 "certificate's key type decides this part",
                                 h->sigs[i].key, h->sigs[i].sign ? "signatures" : "checks",
                                 fmt_ns(&a, ni), fmt_ns(&b, nj), h->sigs[j].key,
                                 fmt_ratio(&c, ni / nj));
            verdict__evidence(v, "slow_ns_per_conn", ni);
            verdict__evidence(v, "fast_ns_per_conn", nj);
            return;
        }
        if (h->sigs[i].sign && !strncmp(h->sigs[i].key, "rsa", 3) && h->parts_total_ns &&
            (sign_largest(h) || (double)h->part_ns[HP_SIGN] > 0.3 * (double)h->parts_total_ns)) {
            v = summary__verdict(
                s, V_SIGNATURE_COST, "info",
                "%s signatures are the largest part of the handshake or more than 30 %% of it: "
                "%s of handshake time, %s each; an ECDSA P-256 certificate signs several times "
                "faster (scripts/tlsmeter-certs measures both here)",
                h->sigs[i].key,
                fmt_pct(&a, (double)h->part_ns[HP_SIGN] / (double)h->parts_total_ns),
                fmt_ns(&b, ni));
            verdict__evidence(v, "sign_ns_per_conn", ni);
            return;
        }
    }
}

static void resumption(struct summary *s)
{
    const struct hs_summary *h = &s->hs;
    struct fmtbuf a;
    struct verdict *v;
    double saved = per_conn(h, HP_CERT_PARSE) + per_conn(h, HP_CERT_LOAD) +
                   per_conn(h, HP_CHAIN_VERIFY) + per_conn(h, HP_VERIFY);

    if (h->full < 3 || h->resumed)
        return;
    if (h->clients >= 3 && h->ncerts == 1 && h->certs[0].count >= 3)
        v = summary__verdict(s, V_NO_RESUMPTION, "problem",
                             "%llu full handshakes with a server presenting the same "
                             "certificate, none resumed: session resumption (keep the "
                             "SSL_SESSION or ticket, SSL_set_session) would skip certificate "
                             "work and the signature check, ~%s each",
                             U(h->full), fmt_ns(&a, saved));
    else if (h->servers >= 3 && h->tickets)
        v = summary__verdict(s, V_NO_RESUMPTION, "info",
                             "%llu full handshakes and %llu session tickets issued, none "
                             "used: clients do not resume (each full handshake signs again)",
                             U(h->full), U(h->tickets));
    else
        return;
    verdict__evidence(v, "full", (double)h->full);
    verdict__evidence(v, "saved_ns_per_conn", saved);
}

void verdicts_hs(struct summary *s)
{
    if (!s->hs.conns)
        return;
    share(s);
    chain(s);
    own_chain(s);
    signatures(s);
    resumption(s);
}
