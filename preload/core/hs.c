/* hs.c: a connection's handshake parts as the conn open event's `hs` object (written once
 * per connection, so snprintf is cheap enough here). */
#include "core/hs.h"

#include <stdio.h>

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
    if (sized)
        snprintf(buf, cap, "%s%u", n, (unsigned)k->bits);
    else
        snprintf(buf, cap, "%s", n);
}

/* Appends with snprintf semantics: *n may pass cap, the caller checks once at the end. */
#define PUT(...)                                                                                   \
    (*n += (size_t)snprintf(buf + (*n < cap ? *n : cap), *n < cap ? cap - *n : 0, __VA_ARGS__))

static void put_parts(const struct tlsm_hs *hs, char *buf, size_t cap, size_t *n)
{
    char key[24];
    bool first = true;
    PUT(",\"parts\":{");
    for (int p = 1; p < TLSM_HS_NPARTS; p++) {
        if (!hs->part_calls[p])
            continue;
        PUT("%s\"%s\":{\"ns\":%llu,\"calls\":%u", first ? "" : ",", tlsm_hs_part_names[p],
            (unsigned long long)hs->part_ns[p], hs->part_calls[p]);
        first = false;
        const struct tlsm_hs_key *k = p == TLSM_HS_SIGN     ? &hs->sign_key
                                      : p == TLSM_HS_VERIFY ? &hs->verify_key
                                                            : NULL;
        if (k && k->kind) {
            tlsm_hs_key_name(k, key, sizeof(key));
            PUT(",\"key\":\"%s\"", key);
        }
        PUT("}");
    }
    PUT("}");
}

size_t tlsm_hs_json(const struct tlsm_hs *hs, int resumed, char *buf, size_t cap)
{
    char key[24];
    size_t len = 0, *n = &len;
    PUT("{\"ns\":%llu,\"calls\":%u", (unsigned long long)hs->ns, hs->calls);
    if (hs->preempt)
        PUT(",\"preempt\":%u", hs->preempt);
    put_parts(hs, buf, cap, n);
    PUT(",\"certs\":[");
    for (int i = 0; i < hs->ncerts && i < TLSM_HS_CERTS; i++) {
        tlsm_hs_key_name(&hs->certs[i].key, key, sizeof(key));
        PUT("%s{\"bytes\":%u,\"key\":\"%s\"", i ? "," : "", hs->certs[i].bytes, key);
        if (hs->certs[i].der_id)
            PUT(",\"der\":\"cert-%016llx.der\"", (unsigned long long)hs->certs[i].der_id);
        PUT("}");
    }
    PUT("]");
    if (hs->ncerts > TLSM_HS_CERTS)
        PUT(",\"certs_more\":%u", (unsigned)(hs->ncerts - TLSM_HS_CERTS));
    if (hs->tickets)
        PUT(",\"tickets\":%u", hs->tickets);
    if (resumed >= 0)
        PUT(",\"resumed\":%s", resumed ? "true" : "false");
    PUT("}");
    return len < cap ? len : 0;
}
