/* hs.c: a connection's handshake parts as the conn open event's `hs` object. Written once
 * per connection, with the JSON builder's digit writer instead of snprintf (snprintf cost
 * ~12k instructions per connection, half of what the parts added: scripts/bench-handshake). */
#include "core/hs.h"
#include "base/json.h"

#include <string.h>

const char *const tlsm_hs_part_names[TLSM_HS_NPARTS] = {
    [TLSM_HS_NONE] = "",
    [TLSM_HS_CERT_PARSE] = "cert_parse",
    [TLSM_HS_CERT_LOAD] = "cert_load",
    [TLSM_HS_CHAIN_VERIFY] = "chain_verify",
    [TLSM_HS_SIGN] = "sign",
    [TLSM_HS_VERIFY] = "verify",
    [TLSM_HS_KEY_EXCHANGE] = "key_exchange",
    [TLSM_HS_KEY_SCHEDULE] = "key_schedule",
    [TLSM_HS_RECORDS] = "records",
};

/* An output buffer that stops at its end; full: the object is dropped, never written cut. */
struct out {
    char *p, *end;
    bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->full || (size_t)(o->end - o->p) < n) {
        o->full = true;
        return;
    }
    memcpy(o->p, s, n);
    o->p += n;
}

#define PUTS(o, lit) put((o), lit, sizeof(lit) - 1)

/* Digits straight into the buffer when a 20-digit number fits (no copy: 16 numbers a
 * connection); through a temporary near the end, so the object is still dropped, never cut. */
static void put_u(struct out *o, uint64_t v)
{
    if (!o->full && o->end - o->p >= 20) {
        o->p += tlsm_json_digits(o->p, v);
        return;
    }
    char d[24];
    put(o, d, tlsm_json_digits(d, v));
}

static void put_str(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

void tlsm_hs_key_name(const struct tlsm_hs_key *k, char *buf, size_t cap)
{
    static const char *const kinds[] = {
        [TLSM_KEY_NONE] = "",   [TLSM_KEY_RSA] = "rsa",         [TLSM_KEY_RSA_PSS] = "rsapss",
        [TLSM_KEY_EC] = "ec",   [TLSM_KEY_ED25519] = "ed25519", [TLSM_KEY_ED448] = "ed448",
        [TLSM_KEY_DSA] = "dsa", [TLSM_KEY_MAC] = "hmac",        [TLSM_KEY_OTHER] = "other",
    };
    const char *n = k->kind < sizeof(kinds) / sizeof(kinds[0]) ? kinds[k->kind] : "other";
    /* Edwards keys have one size each: the name says it. */
    bool sized = k->bits && k->kind != TLSM_KEY_ED25519 && k->kind != TLSM_KEY_ED448 &&
                 k->kind != TLSM_KEY_MAC && k->kind != TLSM_KEY_NONE;
    struct out o = {buf, buf + cap - 1, false};
    put_str(&o, n);
    if (sized)
        put_u(&o, k->bits);
    *(o.full ? buf : o.p) = 0;
}

static void put_key(struct out *o, const struct tlsm_hs_key *k)
{
    char key[24];
    tlsm_hs_key_name(k, key, sizeof(key));
    PUTS(o, "\"");
    put_str(o, key);
    PUTS(o, "\"");
}

static void put_parts(struct out *o, const struct tlsm_hs *hs)
{
    bool first = true;
    PUTS(o, ",\"parts\":{");
    for (int p = 1; p < TLSM_HS_NPARTS; p++) {
        if (!hs->part_calls[p])
            continue;
        if (!first)
            PUTS(o, ",");
        first = false;
        PUTS(o, "\"");
        put_str(o, tlsm_hs_part_names[p]);
        PUTS(o, "\":{\"ns\":");
        put_u(o, hs->part_ns[p]);
        PUTS(o, ",\"calls\":");
        put_u(o, hs->part_calls[p]);
        const struct tlsm_hs_key *k = p == TLSM_HS_SIGN     ? &hs->sign_key
                                      : p == TLSM_HS_VERIFY ? &hs->verify_key
                                                            : NULL;
        if (k && k->kind) {
            PUTS(o, ",\"key\":");
            put_key(o, k);
        }
        PUTS(o, "}");
    }
    PUTS(o, "}");
}

static void put_hex16(struct out *o, uint64_t v)
{
    char h[16];
    for (int i = 15; i >= 0; i--, v >>= 4)
        h[i] = "0123456789abcdef"[v & 15];
    put(o, h, 16);
}

static void put_certs(struct out *o, const struct tlsm_hs *hs)
{
    PUTS(o, ",\"certs\":[");
    for (int i = 0; i < hs->ncerts && i < TLSM_HS_CERTS; i++) {
        if (i)
            PUTS(o, ",");
        PUTS(o, "{\"bytes\":");
        put_u(o, hs->certs[i].bytes);
        PUTS(o, ",\"key\":");
        put_key(o, &hs->certs[i].key);
        if (hs->certs[i].der_id) {
            PUTS(o, ",\"der\":\"cert-");
            put_hex16(o, hs->certs[i].der_id);
            PUTS(o, ".der\"");
        }
        PUTS(o, "}");
    }
    PUTS(o, "]");
}

size_t tlsm_hs_json(const struct tlsm_hs *hs, int resumed, char *buf, size_t cap)
{
    struct out o = {buf, buf + cap - 1, false};
    PUTS(&o, "{\"ns\":");
    put_u(&o, hs->ns);
    PUTS(&o, ",\"calls\":");
    put_u(&o, hs->calls);
    if (hs->preempt) {
        PUTS(&o, ",\"preempt\":");
        put_u(&o, hs->preempt);
    }
    put_parts(&o, hs);
    put_certs(&o, hs);
    if (hs->ncerts > TLSM_HS_CERTS) {
        PUTS(&o, ",\"certs_more\":");
        put_u(&o, (uint64_t)(hs->ncerts - TLSM_HS_CERTS));
    }
    if (hs->tickets) {
        PUTS(&o, ",\"tickets\":");
        put_u(&o, hs->tickets);
    }
    if (resumed >= 0) {
        if (resumed)
            PUTS(&o, ",\"resumed\":true");
        else
            PUTS(&o, ",\"resumed\":false");
    }
    PUTS(&o, "}");
    if (o.full)
        return 0;
    *o.p = 0;
    return (size_t)(o.p - buf);
}
