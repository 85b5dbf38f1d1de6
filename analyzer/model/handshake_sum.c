/* handshake_sum.c: the handshake figures over all connections (the `handshake` object of
 * --json, the text table, --compare and the handshake verdicts read them). Parts come from
 * the connections none of whose parts was switched out (hs.preempt): a switched-out part's
 * time is wall time, so like switched-out records it stays out of the per-part figures. */
#include "model/handshake.h"
#include "model/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static uint64_t pct(const uint64_t *v, size_t n, double p)
{
    size_t i;

    if (!n)
        return 0;
    i = (size_t)ceil(p * (double)n);
    return v[i ? i - 1 : 0];
}

static void add_cert(struct hs_summary *h, int64_t bytes, const char *key)
{
    int i;

    for (i = 0; i < h->ncerts; i++)
        if (h->certs[i].bytes == bytes && !strcmp(h->certs[i].key, key)) {
            h->certs[i].count++;
            return;
        }
    if (h->ncerts == HS_DISTINCT)
        return;
    h->certs[i].bytes = bytes;
    snprintf(h->certs[i].key, sizeof(h->certs[i].key), "%s", key);
    h->certs[i].count = 1;
    h->ncerts++;
}

static void add_sig(struct hs_summary *h, const char *key, bool sign, int64_t ns)
{
    int i;

    if (!*key || ns <= 0 || !strcmp(key, "hmac"))
        return;
    for (i = 0; i < h->nsigs; i++)
        if (h->sigs[i].sign == sign && !strcmp(h->sigs[i].key, key))
            break;
    if (i == h->nsigs) {
        if (h->nsigs == 8)
            return;
        snprintf(h->sigs[i].key, sizeof(h->sigs[i].key), "%s", key);
        h->sigs[i].sign = sign;
        h->nsigs++;
    }
    h->sigs[i].ns += (uint64_t)ns;
    h->sigs[i].conns++;
}

static void add_parts(struct hs_summary *h, const struct conn_hs *c)
{
    int64_t sum = 0;
    int k;

    h->parts_conns++;
    h->parts_total_ns += (uint64_t)c->ns;
    for (k = 0; k < HP_N; k++) {
        h->part_ns[k] += (uint64_t)c->part_ns[k];
        h->part_calls[k] += (uint64_t)c->part_calls[k];
        sum += c->part_ns[k];
    }
    h->part_ns[HP_OTHER] += c->ns > sum ? (uint64_t)(c->ns - sum) : 0;
    h->part_calls[HP_OTHER] += (uint64_t)c->calls;
    add_sig(h, c->sign_key, true, c->part_ns[HP_SIGN]);
    add_sig(h, c->verify_key, false, c->part_ns[HP_VERIFY]);
}

static void add_conn(struct hs_summary *h, const struct model *m, const struct conn *c)
{
    const struct conn_hs *x = &c->hs;
    const char *role = model__name(m, c->role);
    int i;

    h->conns++;
    h->ns += (uint64_t)x->ns;
    h->resumed += x->resumed == 1;
    h->full += x->resumed == 0;
    h->tickets += (uint64_t)x->tickets;
    h->servers += role && !strcmp(role, "server");
    h->clients += role && !strcmp(role, "client");
    h->certs_parsed += (uint64_t)x->part_calls[HP_CERT_PARSE];
    for (i = 0; i < x->ncerts; i++)
        add_cert(h, x->certs[i].bytes, x->certs[i].key);
    if (role && !strcmp(role, "server") && x->part_calls[HP_CHAIN_VERIFY] &&
        !x->part_calls[HP_CERT_PARSE])
        h->own_chain_conns++;
    if (x->preempt)
        h->preempted++;
    else
        add_parts(h, x);
}

/* The p-th percentile of hs.ns over connections whose resumed is `which` (2: any). */
static uint64_t conn_pct(const struct model *m, int which, double p)
{
    uint64_t *v = calloc(m->nconns ? m->nconns : 1, sizeof(*v)), r;
    size_t i, n = 0;

    if (!v)
        return 0;
    for (i = 0; i < m->nconns; i++)
        if (m->conns[i].hs.have && (which == 2 || m->conns[i].hs.resumed == which))
            v[n++] = (uint64_t)m->conns[i].hs.ns;
    qsort(v, n, sizeof(*v), cmp_u64);
    r = pct(v, n, p);
    free(v);
    return r;
}

void hs_summary__build(struct hs_summary *h, const struct model *m)
{
    size_t i;

    memset(h, 0, sizeof(*h));
    for (i = 0; i < m->nconns; i++)
        if (m->conns[i].hs.have)
            add_conn(h, m, &m->conns[i]);
    if (!h->conns)
        return;
    h->p50_ns = conn_pct(m, 2, 0.5);
    h->p90_ns = conn_pct(m, 2, 0.9);
    h->full_p50_ns = conn_pct(m, 0, 0.5);
    h->resumed_p50_ns = conn_pct(m, 1, 0.5);
}

double hs_summary__per_conn(const struct hs_summary *h, int part)
{
    return h->parts_conns ? (double)h->part_ns[part] / (double)h->parts_conns : 0;
}

static json_t *parts_obj(const struct hs_summary *h)
{
    json_t *o = json_object();
    int k;

    for (k = 0; k <= HP_OTHER; k++) {
        json_t *p;

        if (k < HP_OTHER && !h->part_calls[k])
            continue;
        p = json_object();
        json_object_set_new(p, "ns", json_integer((json_int_t)h->part_ns[k]));
        if (k < HP_OTHER)
            json_object_set_new(p, "calls", json_integer((json_int_t)h->part_calls[k]));
        json_object_set_new(p, "ns_per_conn", json_real(round(hs_summary__per_conn(h, k))));
        json_object_set_new(o, hs_part_names[k], p);
    }
    return o;
}

static json_t *certs_arr(const struct hs_summary *h)
{
    json_t *a = json_array();
    int i;

    for (i = 0; i < h->ncerts; i++) {
        json_t *c = json_object();

        json_object_set_new(c, "bytes", json_integer(h->certs[i].bytes));
        json_object_set_new(c, "key", json_string(h->certs[i].key));
        json_object_set_new(c, "count", json_integer((json_int_t)h->certs[i].count));
        json_array_append_new(a, c);
    }
    return a;
}

json_t *hs_summary__json(const struct hs_summary *h, int64_t cpu_ns)
{
    json_t *o = json_object();

    json_object_set_new(o, "connections", json_integer((json_int_t)h->conns));
    if (!h->conns)
        return o; /* a trace without handshake parts (older writer, or no handshake) */
    json_object_set_new(o, "full", json_integer((json_int_t)h->full));
    json_object_set_new(o, "resumed", json_integer((json_int_t)h->resumed));
    json_object_set_new(o, "clients", json_integer((json_int_t)h->clients));
    json_object_set_new(o, "servers", json_integer((json_int_t)h->servers));
    json_object_set_new(o, "ns", json_integer((json_int_t)h->ns));
    json_object_set_new(o, "p50_ns", json_integer((json_int_t)h->p50_ns));
    json_object_set_new(o, "p90_ns", json_integer((json_int_t)h->p90_ns));
    json_object_set_new(o, "full_p50_ns", json_integer((json_int_t)h->full_p50_ns));
    json_object_set_new(o, "resumed_p50_ns", json_integer((json_int_t)h->resumed_p50_ns));
    json_object_set_new(o, "share_cpu",
                        cpu_ns > 0 && h->conns ? json_real((double)h->ns / (double)cpu_ns)
                                               : json_null());
    json_object_set_new(o, "parts_connections", json_integer((json_int_t)h->parts_conns));
    json_object_set_new(o, "parts_left_out", json_integer((json_int_t)h->preempted));
    json_object_set_new(o, "parts_ns", json_integer((json_int_t)h->parts_total_ns));
    json_object_set_new(o, "parts", parts_obj(h));
    json_object_set_new(o, "certs_parsed", json_integer((json_int_t)h->certs_parsed));
    json_object_set_new(o, "cert_parse_ns_per_cert",
                        h->part_calls[HP_CERT_PARSE]
                            ? json_real(round((double)h->part_ns[HP_CERT_PARSE] /
                                              (double)h->part_calls[HP_CERT_PARSE]))
                            : json_null());
    json_object_set_new(o, "certs", certs_arr(h));
    json_object_set_new(o, "tickets", json_integer((json_int_t)h->tickets));
    return o;
}
