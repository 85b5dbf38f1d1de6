/* reroute.c: shadow contexts and the per-record routing decision. Everything here runs on
 * the thread that drives the context; counters are relaxed atomics, never locks. */
#include "reroute/reroute.h"
#include "reroute/backend.h"
#include "reroute/calib.h"
#include "trace/config.h"
#include "trace/log.h"
#include "trace/thread.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic uint64_t n_routed, n_fallback, n_verified, n_mismatch, n_shadow_fail;
static __thread unsigned verify_tick;

/* Stale errors of earlier failed mirrors, attaches or fetches must not be forwarded as the
 * errors of a later record: the backend's queue (per thread) is emptied after each. */
static void clear_backend_errors(struct tlsm_rec_state *st)
{
    if (st->backend)
        st->backend->ERR_clear_error();
}

/* A metadata call could not be mirrored: no record is routed until the next re-key. A
 * record already routed whose data has not gone to the backend yet runs natively instead
 * (the native context saw every call so far); one whose data has, stays on its path. */
static void shadow_lost(struct tlsm_rec_state *st)
{
    st->shadow_ok = false;
    clear_backend_errors(st);
    if (!st->routed || st->data_sent)
        return;
    st->routed = false;
    st->verify = false;
    atomic_fetch_sub_explicit(&n_routed, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&n_fallback, 1, memory_order_relaxed);
}

void tlsm_reroute_detach(struct tlsm_rec_state *st)
{
    tlsm_reroute_end(st);
    if (st->shadow && st->backend) {
        tlsm_th.guard++;
        st->backend->EVP_CIPHER_CTX_free(st->shadow);
        tlsm_th.guard--;
    }
    st->shadow = NULL;
    st->shadow_ok = false;
    st->routed = false;
}

void tlsm_reroute_attach(struct tlsm_rec_state *st, const unsigned char *key,
                         const unsigned char *iv)
{
    tlsm_reroute_detach(st);
    if (tlsm_cfg.crypto == TLSM_MODE_NATIVE)
        return;
    struct tlsm_backend *b = tlsm_backend_get(tlsm_cfg.crypto, st->lib ? st->lib->path : NULL);
    EVP_CIPHER *c = b ? tlsm_backend_cipher(b, tlsm_backend_cipher_index(st->rsm.cipher)) : NULL;
    if (!c) {
        if (b)
            atomic_fetch_add_explicit(&n_shadow_fail, 1, memory_order_relaxed);
        return;
    }
    tlsm_th.guard++;
    st->backend = b;
    st->backend_lib = b->lib_id;
    st->shadow = b->EVP_CIPHER_CTX_new();
    st->shadow_ok = st->shadow && b->EVP_CipherInit_ex(st->shadow, c, NULL, key, iv, 0) > 0;
    if (!st->shadow_ok) {
        clear_backend_errors(st);
        atomic_fetch_add_explicit(&n_shadow_fail, 1, memory_order_relaxed);
    }
    tlsm_th.guard--;
}

void tlsm_reroute_mirror_init(struct tlsm_rec_state *st, const unsigned char *key,
                              const unsigned char *iv, int enc, bool has_params)
{
    if (!st->shadow_ok)
        return;
    tlsm_th.guard++;
    /* Params (EVP_*Init_ex2) are not mirrored: the shadow would miss what they set. */
    if (has_params || st->backend->EVP_CipherInit_ex(st->shadow, NULL, NULL, key, iv, enc) <= 0)
        shadow_lost(st);
    tlsm_th.guard--;
}

/* Same ctrl, same answer expected: a different one means the shadow no longer matches. */
void tlsm_reroute_mirror_ctrl(struct tlsm_rec_state *st, int type, int arg, void *ptr, int ret)
{
    if (!st->shadow_ok)
        return;
    tlsm_th.guard++;
    int r = st->backend->EVP_CIPHER_CTX_ctrl(st->shadow, type, arg, ptr);
    if (r != ret)
        shadow_lost(st);
    tlsm_th.guard--;
}

void tlsm_reroute_begin(struct tlsm_rec_state *st)
{
    tlsm_reroute_end(st); /* a verified TLS 1.3 record that never reached Final */
    st->routed = false;
    st->verify = false;
    st->data_sent = false;
    st->verdict = 0;
    if (tlsm_cfg.crypto == TLSM_MODE_NATIVE)
        return;
    if (!st->shadow_ok) {
        atomic_fetch_add_explicit(&n_fallback, 1, memory_order_relaxed);
        return;
    }
    tlsm_th.guard++;
    clear_backend_errors(st); /* only this record's own errors are forwarded */
    tlsm_th.guard--;
    st->routed = true;
    atomic_fetch_add_explicit(&n_routed, 1, memory_order_relaxed);
    if (tlsm_cfg.verify && ++verify_tick >= tlsm_cfg.verify) {
        verify_tick = 0;
        st->verify = true;
    }
}

/* Backend errors go to the program's error queue, as the program's own copy would
 * have raised them (same library and reason codes across OpenSSL 3 builds). */
static void forward_errors(struct tlsm_rec_state *st)
{
    const struct tlsm_api *a = st->lib ? &st->lib->api : NULL;
    const char *file, *func;
    int line;
    unsigned long e;
    for (int i = 0; i < 16 && (e = st->backend->ERR_get_error_all(&file, &line, &func, NULL, NULL));
         i++) {
        if (!a || !a->ERR_new || !a->ERR_set_debug || !a->ERR_set_error)
            continue;
        a->ERR_new();
        a->ERR_set_debug(file, line, func);
        a->ERR_set_error(ERR_GET_LIB(e), ERR_GET_REASON(e), NULL);
    }
}

static void mismatch(struct tlsm_rec_state *st)
{
    st->verdict = -1;
    if (atomic_fetch_add(&n_mismatch, 1) == 0)
        tlsm_warn("TLSMETER_VERIFY: the %s backend decrypted a %s record differently from "
                  "the program's own code; the native result was delivered",
                  tlsm_mode_name(tlsm_cfg.crypto), st->rsm.cipher);
}

/* Test-only (TLSMETER_TEST_CORRUPT): damage the backend's output of verified records, so
 * the tests can prove verification catches a wrong backend. The native result is what
 * the program then gets, so this never reaches the program. */
static void maybe_corrupt(struct tlsm_rec_state *st, unsigned char *out, int len)
{
    if (tlsm_cfg.test_corrupt && st->verify && out && len > 0)
        out[len / 2] ^= 0x01;
}

/* A mismatch: the program gets the native result. Native output goes over the backend's;
 * backend bytes beyond it are zeroed, so no backend plaintext leaves with a failure. n is
 * how much of the native buffer counts (the whole copy when in place), len the backend's. */
static void release_native(struct tlsm_rec_state *st, unsigned char *out, int n, int len)
{
    if (n < 0)
        n = 0;
    if (n > st->vcap)
        n = st->vcap;
    if (n)
        memcpy(out, st->vbuf, (size_t)n);
    if (len > n)
        memset(out + n, 0, (size_t)(len - n));
}

/* The native side decrypts a copy of the record in place (TLS 1.2 GCM insists on in-place
 * decryption), so both results lie at the same offsets of the same-sized buffer. */
static bool same_result(struct tlsm_rec_state *st, int ret, const unsigned char *out, int len,
                        bool whole)
{
    if ((ret > 0) != (st->vret > 0))
        return false;
    if (ret <= 0)
        return true;
    return len == st->vbuf_len && !memcmp(out, st->vbuf, (size_t)(whole ? st->vcap : len));
}

static int verified_payload(struct tlsm_rec_state *st, tlsm_update_fn native, EVP_CIPHER_CTX *ctx,
                            unsigned char *out, int *outl, const unsigned char *in, int inl)
{
    st->vbuf = malloc((size_t)inl + 64);
    if (!st->vbuf) {
        st->verify = false;
        return st->backend->EVP_CipherUpdate(st->shadow, out, outl, in, inl);
    }
    st->vcap = inl;
    memcpy(st->vbuf, in, (size_t)inl);
    st->vret = native(ctx, st->vbuf, &st->vbuf_len, st->vbuf, inl);
    int ret = st->backend->EVP_CipherUpdate(st->shadow, out, outl, in, inl);
    int len = ret > 0 && outl ? *outl : 0;
    maybe_corrupt(st, out, len);
    if (st->rsm.tls != 12)
        return ret; /* TLS 1.3: the tag is checked in Final, compare there */
    /* TLS 1.2: the one Update also checks the tag. */
    atomic_fetch_add_explicit(&n_verified, 1, memory_order_relaxed);
    st->verdict = 1;
    if (!same_result(st, ret, out, len, out == in)) {
        mismatch(st);
        /* In place, the whole copy (a failed native tag cleansed it); else the output. */
        release_native(st, out, out == in ? st->vcap : st->vret > 0 ? st->vbuf_len : 0, len);
        if (outl)
            *outl = st->vbuf_len;
        ret = st->vret;
    }
    return ret;
}

int tlsm_reroute_update(struct tlsm_rec_state *st, tlsm_update_fn native, EVP_CIPHER_CTX *ctx,
                        unsigned char *out, int *outl, const unsigned char *in, int inl)
{
    int ret;
    tlsm_th.guard++;
    st->data_sent = true;
    if (st->verify && out && in && inl > 0) {
        ret = verified_payload(st, native, ctx, out, outl, in, inl);
    } else {
        if (st->verify && !out) { /* AAD has no output: feed both sides */
            int l;
            native(ctx, NULL, &l, in, inl);
        }
        ret = st->backend->EVP_CipherUpdate(st->shadow, out, outl, in, inl);
    }
    if (ret <= 0)
        forward_errors(st);
    tlsm_th.guard--;
    return ret;
}

int tlsm_reroute_final(struct tlsm_rec_state *st, tlsm_final_fn native, EVP_CIPHER_CTX *ctx,
                       unsigned char *out, int *outl)
{
    tlsm_th.guard++;
    st->data_sent = true;
    int ret = st->backend->EVP_CipherFinal_ex(st->shadow, out, outl);
    if (ret <= 0)
        forward_errors(st);
    if (st->verify && st->vbuf) {
        unsigned char fin[64];
        int l = 0;
        int nret = native(ctx, fin, &l);
        st->vret = st->vret > 0 && nret > 0 ? 1 : 0;
        atomic_fetch_add_explicit(&n_verified, 1, memory_order_relaxed);
        st->verdict = 1;
        if (!same_result(st, ret, st->rsm.out, st->rsm.outl, false)) {
            mismatch(st);
            /* Even when the native tag failed: its Update output is what the program's own
             * code would have left in the buffer. */
            if (st->rsm.out) /* libssl's output buffer of the payload call */
                release_native(st, (unsigned char *)st->rsm.out, st->vbuf_len, st->rsm.outl);
            ret = nret;
        }
    }
    tlsm_th.guard--;
    return ret;
}

int tlsm_reroute_cipher(struct tlsm_rec_state *st, tlsm_cipher_fn native, EVP_CIPHER_CTX *ctx,
                        unsigned char *out, const unsigned char *in, unsigned int inl)
{
    (void)native;
    (void)ctx;
    tlsm_th.guard++;
    st->data_sent = true;
    int ret = st->backend->EVP_Cipher(st->shadow, out, in, inl);
    if (ret < 0)
        forward_errors(st);
    tlsm_th.guard--;
    return ret;
}

void tlsm_reroute_end(struct tlsm_rec_state *st)
{
    free(st->vbuf);
    st->vbuf = NULL;
    st->vbuf_len = 0;
}

void tlsm_reroute_write(struct tlsm_json *j)
{
    enum { WHY_MAX = 600 }; /* a backend error quotes paths: the line keeps its room */
    char why[WHY_MAX];
    snprintf(why, sizeof(why), "%s",
             tlsm_backend_error()[0] ? tlsm_backend_error() : tlsm_config_crypto_error);
    tlsm_json_obj(j, "reroute");
    tlsm_json_safe(j, "mode", tlsm_mode_name(tlsm_cfg.crypto));
    tlsm_json_int(j, "routed", (int64_t)n_routed);
    tlsm_json_int(j, "fallback", (int64_t)n_fallback);
    tlsm_json_int(j, "shadow_fail", (int64_t)n_shadow_fail);
    tlsm_json_int(j, "verified", (int64_t)n_verified);
    tlsm_json_int(j, "mismatches", (int64_t)n_mismatch);
    tlsm_json_str(j, "off_reason", why);
    tlsm_json_obj_end(j);
}

/* A context the core began to track: calibrate once (TLSMETER_CALIBRATE) and make its shadow. */
static void keyed(struct tlsm_rec_state *st, const unsigned char *key, const unsigned char *iv,
                  bool has_params)
{
    if (tlsm_cfg.calibrate && st->lib)
        tlsm_calib_once(st->lib->path);
    tlsm_reroute_attach(st, key, iv);
    if (has_params) /* set by the params, which the shadow did not get */
        tlsm_reroute_mirror_init(st, NULL, NULL, 0, true);
}

void tlsm_reroute_observe(void)
{
    tlsm_rec_obs = (struct tlsm_rec_observer){
        .keyed = keyed,
        .mirror_init = tlsm_reroute_mirror_init,
        .mirror_ctrl = tlsm_reroute_mirror_ctrl,
        .record_begin = tlsm_reroute_begin,
        .record_end = tlsm_reroute_end,
        .forget = tlsm_reroute_detach,
    };
}
