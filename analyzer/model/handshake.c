/* handshake.c: conn open events' `hs` objects into the model, and the handshake figures
 * (connections, per-connection time, parts, certificates) the outputs and verdicts share. */
#include "model/handshake.h"
#include "model/model.h"

#include <stdlib.h>
#include <string.h>

const char *const hs_part_names[HP_N + 1] = {
    [HP_CERT_PARSE] = "cert_parse",
    [HP_CERT_LOAD] = "cert_load",
    [HP_CHAIN_VERIFY] = "chain_verify",
    [HP_SIGN] = "sign",
    [HP_VERIFY] = "verify",
    [HP_KEY_EXCHANGE] = "key_exchange",
    [HP_KEY_SCHEDULE] = "key_schedule",
    [HP_RECORDS] = "records",
    [HP_OTHER] = "other",
};

/* A non-negative integer member, or -1 with a reason naming it. */
static int get_int(json_t *o, const char *where, const char *k, int64_t *v, bool need, char *err,
                   size_t errlen)
{
    json_t *x = json_object_get(o, k);

    if (!x && !need)
        return 0;
    if (!json_is_integer(x) || json_integer_value(x) < 0) {
        snprintf(err, errlen, "conn.hs%s.%s: %s", where, k,
                 x ? "not a non-negative integer" : "missing");
        return -1;
    }
    *v = json_integer_value(x);
    return 0;
}

static void get_key(json_t *o, char *dst, size_t cap)
{
    json_t *k = json_object_get(o, "key");

    if (json_is_string(k))
        snprintf(dst, cap, "%s", json_string_value(k));
}

static int parts(struct conn_hs *h, json_t *p, char *err, size_t errlen)
{
    const char *name;
    json_t *v;
    char where[64];

    if (!json_is_object(p)) {
        snprintf(err, errlen, "conn.hs.parts: not an object");
        return -1;
    }
    json_object_foreach(p, name, v)
    {
        int k;

        for (k = 0; k < HP_N && strcmp(name, hs_part_names[k]); k++)
            ;
        if (k == HP_N)
            continue; /* a part a newer writer times: not an error */
        snprintf(where, sizeof(where), ".parts.%s", name);
        if (!json_is_object(v)) {
            snprintf(err, errlen, "conn.hs%s: not an object", where);
            return -1;
        }
        if (get_int(v, where, "ns", &h->part_ns[k], true, err, errlen) ||
            get_int(v, where, "calls", &h->part_calls[k], true, err, errlen))
            return -1;
        if (k == HP_SIGN)
            get_key(v, h->sign_key, sizeof(h->sign_key));
        if (k == HP_VERIFY)
            get_key(v, h->verify_key, sizeof(h->verify_key));
    }
    return 0;
}

static int certs(struct conn_hs *h, json_t *a, char *err, size_t errlen)
{
    size_t i;
    json_t *c;

    if (!a)
        return 0;
    if (!json_is_array(a)) {
        snprintf(err, errlen, "conn.hs.certs: not an array");
        return -1;
    }
    json_array_foreach(a, i, c)
    {
        int64_t bytes = 0;

        if (get_int(c, ".certs[]", "bytes", &bytes, true, err, errlen))
            return -1;
        if (h->ncerts >= HS_CERTS) {
            h->certs_more++;
            continue;
        }
        h->certs[h->ncerts].bytes = bytes;
        get_key(c, h->certs[h->ncerts].key, sizeof(h->certs[0].key));
        h->ncerts++;
    }
    return 0;
}

int model__conn_hs(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    json_t *hs = json_object_get(o, "hs"), *r, *id = json_object_get(o, "conn");
    struct conn_hs h = {.have = true, .resumed = -1};
    int64_t more = 0;

    if (!hs)
        return 0;
    if (!json_is_object(hs)) {
        snprintf(err, errlen, "conn.hs: not an object");
        return -1;
    }
    if (!json_is_integer(id))
        return 0; /* the flat fields' check names it */
    if (get_int(hs, "", "ns", &h.ns, true, err, errlen) ||
        get_int(hs, "", "calls", &h.calls, false, err, errlen) ||
        get_int(hs, "", "preempt", &h.preempt, false, err, errlen) ||
        get_int(hs, "", "tickets", &h.tickets, false, err, errlen) ||
        get_int(hs, "", "certs_more", &more, false, err, errlen))
        return -1;
    if (json_object_get(hs, "parts") && parts(&h, json_object_get(hs, "parts"), err, errlen))
        return -1;
    if (certs(&h, json_object_get(hs, "certs"), err, errlen))
        return -1;
    h.certs_more += more;
    r = json_object_get(hs, "resumed");
    if (r && !json_is_boolean(r)) {
        snprintf(err, errlen, "conn.hs.resumed: not true/false");
        return -1;
    }
    if (r)
        h.resumed = json_is_true(r);
    model__conn(m, t, json_integer_value(id))->hs = h;
    return 0;
}
