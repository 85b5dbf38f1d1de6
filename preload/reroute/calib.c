/* calib.c: decrypt a few 16 KiB TLS 1.3-shaped records on tlsmeter's backends (never the
 * program's contexts) and write their measured ns/B. Costs a few ms once, so it is opt-in. */
#include "reroute/calib.h"
#include "reroute/backend.h"
#include "base/clock.h"
#include "base/json.h"
#include "core/hs.h"
#include "trace/thread.h"
#include "trace/trace.h"

#include <stdatomic.h>
#include <string.h>

#define REC 16384

static _Atomic int done;

static enum tlsm_class impl_class(const struct tlsm_backend *b)
{
    struct tlsm_caps c = b->caps;
    if ((tlsm_caps_has(c, TLSM_CAP_AESNI) && tlsm_caps_has(c, TLSM_CAP_PCLMULQDQ)) ||
        (tlsm_caps_has(c, TLSM_CAP_AES) && tlsm_caps_has(c, TLSM_CAP_PMULL)))
        return TLSM_CLASS_HARDWARE;
    if (tlsm_caps_has(c, TLSM_CAP_SSSE3) || tlsm_caps_has(c, TLSM_CAP_NEON))
        return TLSM_CLASS_VECTOR;
    return TLSM_CLASS_TABLE;
}

/* One record: nonce, tag, AAD, payload, final: the calls libssl makes. */
static int decrypt_once(struct tlsm_backend *b, EVP_CIPHER_CTX *c, unsigned char *buf,
                        const unsigned char *ct, const unsigned char *tag)
{
    static const unsigned char nonce[12] = {1}, aad[5] = {0x17, 3, 3, 0x40, 0x11};
    int l;
    memcpy(buf, ct, REC);
    return b->EVP_CipherInit_ex(c, NULL, NULL, NULL, nonce, 0) > 0 &&
           b->EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, 16, (void *)tag) > 0 &&
           b->EVP_CipherUpdate(c, NULL, &l, aad, 5) > 0 &&
           b->EVP_CipherUpdate(c, buf, &l, buf, REC) > 0 && b->EVP_CipherFinal_ex(c, buf, &l) > 0;
}

static int encrypt_once(struct tlsm_backend *b, EVP_CIPHER *ci, unsigned char *ct,
                        unsigned char *tag, const unsigned char *key)
{
    static const unsigned char nonce[12] = {1}, aad[5] = {0x17, 3, 3, 0x40, 0x11};
    EVP_CIPHER_CTX *c = b->EVP_CIPHER_CTX_new();
    int l, ok = c && b->EVP_CipherInit_ex(c, ci, NULL, key, nonce, 1) > 0 &&
                b->EVP_CipherUpdate(c, NULL, &l, aad, 5) > 0 &&
                b->EVP_CipherUpdate(c, ct, &l, ct, REC) > 0 &&
                b->EVP_CipherFinal_ex(c, ct, &l) > 0 &&
                b->EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, tag) > 0;
    if (c)
        b->EVP_CIPHER_CTX_free(c);
    return ok;
}

/* Best of 3 rounds of n records: the least disturbed by the noisy machine. */
static double measure(struct tlsm_backend *b, int idx, int n)
{
    static unsigned char key[32] = {7}, ct[REC], buf[REC], tag[16];
    EVP_CIPHER *ci = tlsm_backend_cipher(b, idx);
    if (!ci || !encrypt_once(b, ci, ct, tag, key))
        return -1;
    EVP_CIPHER_CTX *c = b->EVP_CIPHER_CTX_new();
    if (!c || b->EVP_CipherInit_ex(c, ci, NULL, key, NULL, 0) <= 0)
        return -1;
    double best = -1;
    for (int round = 0; round < 3; round++) {
        uint64_t t0 = tlsm_now();
        for (int i = 0; i < n; i++)
            if (!decrypt_once(b, c, buf, ct, tag))
                return b->EVP_CIPHER_CTX_free(c), -1;
        double nspb = (double)tlsm_ticks_to_ns(tlsm_now() - t0) / ((double)n * REC);
        if (best < 0 || nspb < best)
            best = nspb;
    }
    b->EVP_CIPHER_CTX_free(c);
    return best;
}

static void emit(struct tlsm_backend *b, const char *cipher, double nspb, int n)
{
    char line[512];
    struct tlsm_json j;
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(CALIB));
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(tlsm_now() - tlsm_trace_t0));
    tlsm_json_str(&j, "cipher", cipher);
    /* ChaCha20 has no dedicated instructions: its fast path is SIMD (AVX2/NEON). */
    tlsm_json_safe(
        &j, "impl",
        tlsm_class_name(strncmp(cipher, "ChaCha", 6) ? impl_class(b) : TLSM_CLASS_VECTOR));
    tlsm_json_str(&j, "mode", tlsm_mode_name(b->mode));
    tlsm_json_int(&j, "lib", b->lib_id);
    tlsm_json_int(&j, "record", REC);
    tlsm_json_int(&j, "records", n);
    tlsm_json_num(&j, "ns_per_byte", nspb);
    size_t len = tlsm_json_end(&j, line);
    if (len)
        tlsm_trace_line(line, len);
}

void tlsm_calib_once(const char *app_crypto)
{
    static const char *const ciphers[] = {"AES-128-GCM", "AES-256-GCM", "ChaCha20-Poly1305"};
    if (atomic_exchange(&done, 1) || !tlsm_trace_ready())
        return;
    tlsm_th.guard++;
    /* Run inside the first handshake: its time is taken out of that handshake's (conn.c). */
    uint64_t t0 = tlsm_th.hs_cur ? tlsm_hs_cpu_now(&tlsm_th) : 0;
    for (int m = TLSM_MODE_HW; m <= TLSM_MODE_SOFT; m++) {
        struct tlsm_backend *b = tlsm_backend_get((enum tlsm_crypto_mode)m, app_crypto);
        for (int i = 0; b && i < 3; i++) {
            /* The AES what-if mask leaves ChaCha20 alone: measure it once, on hw. */
            if (m == TLSM_MODE_SOFT && i == 2)
                continue;
            int n = m == TLSM_MODE_HW ? 64 : 8;
            double nspb = measure(b, tlsm_backend_cipher_index(ciphers[i]), n);
            if (nspb > 0)
                emit(b, ciphers[i], nspb, n);
        }
    }
    if (tlsm_th.hs_cur)
        tlsm_th.hs_own_ns += tlsm_hs_cpu_now(&tlsm_th) - t0;
    tlsm_th.guard--;
}
