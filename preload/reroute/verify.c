/* verify.c: TLSMETER_VERIFY on rerouted records (verify.h). The native side runs on a copy
 * of the record's input, so both results lie at the same offsets of same-sized buffers; a
 * mismatch is counted, warned about once per process, and the program gets the native
 * result. Runs under the caller's guard, on the thread that drives the context. */
#include "reroute/verify.h"
#include "reroute/backend.h"
#include "trace/config.h"
#include "trace/log.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static _Atomic uint64_t n_verified, n_mismatch;
/* Of those, the encrypting side's (end.reroute "out"). */
static _Atomic uint64_t n_verified_out, n_mismatch_out;

static void count_verified(const struct tlsm_rec_state *st)
{
    atomic_fetch_add_explicit(&n_verified, 1, memory_order_relaxed);
    if (st->rsm.dir == TLSM_DIR_OUT)
        atomic_fetch_add_explicit(&n_verified_out, 1, memory_order_relaxed);
}

static void mismatch(struct tlsm_rec_state *st)
{
    st->verdict = -1;
    bool out = st->rsm.dir == TLSM_DIR_OUT;
    if (out)
        atomic_fetch_add(&n_mismatch_out, 1);
    if (atomic_fetch_add(&n_mismatch, 1) == 0) /* once per process, whichever came first */
        tlsm_warn("TLSMETER_VERIFY: the %s backend %s a %s record differently from "
                  "the program's own code; the native result was %s",
                  tlsm_mode_name(tlsm_cfg.crypto),
                  st->rsm.dir == TLSM_DIR_OUT ? "encrypted" : "decrypted", st->rsm.cipher,
                  st->rsm.dir == TLSM_DIR_OUT ? "sent" : "delivered");
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

int tlsm_verify_payload(struct tlsm_rec_state *st, tlsm_update_fn native, EVP_CIPHER_CTX *ctx,
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
    st->vout = out;
    st->voutl = len;
    if (st->rsm.tls != 12)
        return ret; /* TLS 1.3: the tag is made or checked in Final, compare there */
    /* TLS 1.2: the one Update also checks the tag. */
    count_verified(st);
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

int tlsm_verify_open_final(struct tlsm_rec_state *st, tlsm_final_fn native, EVP_CIPHER_CTX *ctx,
                           int ret)
{
    unsigned char fin[64];
    int l = 0;
    int nret = native(ctx, fin, &l);
    st->vret = st->vret > 0 && nret > 0 ? 1 : 0;
    count_verified(st);
    st->verdict = 1;
    if (!same_result(st, ret, st->rsm.out, st->rsm.outl, false)) {
        mismatch(st);
        /* Even when the native tag failed: its Update output is what the program's own
         * code would have left in the buffer. */
        if (st->rsm.out) /* libssl's output buffer of the payload call */
            release_native(st, (unsigned char *)st->rsm.out, st->vbuf_len, st->rsm.outl);
        ret = nret;
    }
    return ret;
}

int tlsm_verify_seal(struct tlsm_rec_state *st, tlsm_final_fn native, EVP_CIPHER_CTX *ctx, int ret)
{
    const struct tlsm_abi *a = st->lib ? &st->lib->abi : NULL;
    unsigned char fin[64], ntag[16];
    int l = 0;
    int nret = native(ctx, fin, &l);
    bool ntag_ok =
        nret > 0 && a && a->ctx_ctrl && a->ctx_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, ntag) > 0;
    count_verified(st);
    st->verdict = 1;
    bool same = (ret > 0) == (nret > 0) && st->have_tag == ntag_ok && st->voutl == st->vbuf_len &&
                st->vret > 0 && st->vout && !memcmp(st->vout, st->vbuf, (size_t)st->voutl) &&
                (!ntag_ok || !memcmp(st->tag, ntag, sizeof(ntag)));
    if (!same) {
        mismatch(st);
        if (st->vout)
            release_native(st, st->vout, st->vbuf_len, st->voutl);
        memcpy(st->tag, ntag, sizeof(ntag));
        st->have_tag = ntag_ok;
        ret = nret;
    }
    return ret;
}

void tlsm_verify_counts(uint64_t v[4])
{
    v[0] = n_verified;
    v[1] = n_mismatch;
    v[2] = n_verified_out;
    v[3] = n_mismatch_out;
}
