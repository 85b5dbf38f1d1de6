/* tests/unit/hs.c: the conn open event's `hs` object (preload/core/hs.c) from hand-built parts,
 * linked directly (no preload): exact text, key names, optional keys, a buffer too small. */
#include "core/hs.h"

#include <stdio.h>
#include <string.h>

static int failed;

static void expect(const char *what, const char *got, const char *want)
{
    if (strcmp(got, want)) {
        printf("FAIL hs %s:\n  got  %s\n  want %s\n", what, got, want);
        failed++;
    }
}

static void keys(void)
{
    char b[24];
    struct {
        struct tlsm_hs_key k;
        const char *want;
    } t[] = {
        {{2048, TLSM_KEY_RSA}, "rsa2048"},
        {{256, TLSM_KEY_EC}, "ec256"},
        {{253, TLSM_KEY_ED25519}, "ed25519"},
        {{3072, TLSM_KEY_RSA_PSS}, "rsapss3072"},
        {{0, TLSM_KEY_NONE}, ""},
        {{256, TLSM_KEY_MAC}, "hmac"},
        {{7, 200}, "other7"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        tlsm_hs_key_name(&t[i].k, b, sizeof(b));
        expect("key name", b, t[i].want);
    }
    tlsm_hs_key_name(&t[0].k, b, 4); /* does not fit: empty, never cut */
    expect("key name, small buffer", b, "");
}

static void objects(void)
{
    char b[1024];
    struct tlsm_hs hs;
    memset(&hs, 0, sizeof(hs));
    hs.ns = 700123;
    hs.calls = 2;
    size_t n = tlsm_hs_json(&hs, -1, b, sizeof(b));
    expect("empty", b, "{\"ns\":700123,\"calls\":2,\"parts\":{},\"certs\":[]}");
    if (n != strlen(b))
        printf("FAIL hs length %zu != %zu\n", n, strlen(b)), failed++;

    hs.preempt = 1;
    hs.part_ns[TLSM_HS_CERT_PARSE] = 142000, hs.part_calls[TLSM_HS_CERT_PARSE] = 2;
    hs.part_ns[TLSM_HS_SIGN] = 284000, hs.part_calls[TLSM_HS_SIGN] = 4;
    hs.sign_key = (struct tlsm_hs_key){2048, TLSM_KEY_RSA};
    hs.part_ns[TLSM_HS_VERIFY] = 40000, hs.part_calls[TLSM_HS_VERIFY] = 2; /* key unknown */
    hs.ncerts = 8; /* two beyond those listed */
    for (int i = 0; i < TLSM_HS_CERTS; i++)
        hs.certs[i] = (struct tlsm_hs_cert){(uint32_t)(800 + i), {256, TLSM_KEY_EC}, 0};
    hs.certs[0].der_id = 0x5889dbd85fddf591ull;
    hs.tickets = 2;
    tlsm_hs_json(&hs, 1, b, sizeof(b));
    expect("full", b,
           "{\"ns\":700123,\"calls\":2,\"preempt\":1,\"parts\":{\"cert_parse\":{\"ns\":142000,"
           "\"calls\":2},\"sign\":{\"ns\":284000,\"calls\":4,\"key\":\"rsa2048\"},\"verify\":{"
           "\"ns\":40000,\"calls\":2}},\"certs\":[{\"bytes\":800,\"key\":\"ec256\",\"der\":"
           "\"cert-5889dbd85fddf591.der\"},{\"bytes\":801,\"key\":\"ec256\"},{\"bytes\":802,"
           "\"key\":\"ec256\"},{\"bytes\":803,\"key\":\"ec256\"},{\"bytes\":804,\"key\":"
           "\"ec256\"},{\"bytes\":805,\"key\":\"ec256\"}],\"certs_more\":2,\"tickets\":2,"
           "\"resumed\":true}");
    size_t full = strlen(b);
    for (size_t cap = 1; cap <= full; cap++) /* every size too small: 0, nothing cut */
        if (tlsm_hs_json(&hs, 1, b, cap)) {
            printf("FAIL hs: a %zu-byte buffer took a %zu-byte object\n", cap, full + 1);
            failed++;
            break;
        }
    if (tlsm_hs_json(&hs, 1, b, full + 1) != full)
        printf("FAIL hs: the exact size did not fit\n"), failed++;
    tlsm_hs_json(&hs, 0, b, sizeof(b));
    if (!strstr(b, ",\"resumed\":false}"))
        printf("FAIL hs resumed false: %s\n", b), failed++;
}

int main(void)
{
    keys();
    objects();
    if (!failed)
        printf("PASS unit hs: key names, the hs object exactly, optional keys, never cut\n");
    return failed ? 1 : 0;
}
