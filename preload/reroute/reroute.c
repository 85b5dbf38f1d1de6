/* reroute.c: shadow contexts and the per-record routing decision, for decrypt and encrypt
 * contexts alike. Everything here runs on the thread that drives the context; counters are
 * relaxed atomics, never locks. Encryption differs in three places: TLS 1.2 AES-GCM draws
 * its explicit nonces from a counter inside the context (seeded at random), so the native
 * context's counter is set to the shadow's after each sealed record; TLS 1.3 tags are read by
 * a ctrl after Final, answered from the shadow's; verification (verify.c) compares the whole
 * sealed record (ciphertext and tag) before libssl sends it. */
#include "base/tls.h"
#include "reroute/reroute.h"
#include "reroute/backend.h"
#include "reroute/calib.h"
#include "reroute/verify.h"
#include "trace/config.h"
#include "trace/log.h"
#include "trace/thread.h"

#include <openssl/core_names.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic uint64_t n_routed, n_fallback, n_shadow_fail;
/* Of those, the encrypting side's (end.reroute "out"). */
static _Atomic uint64_t n_routed_out;
static _Atomic uint64_t n_nonce_fail; /* sync_nonce failed (counted once per warning) */

/* A nonce has no secret value but is written over before the stack frame goes. */
static void wipe_iv(unsigned char *iv)
{
    volatile unsigned char *p = iv;
    for (int i = 0; i < 12; i++)
        p[i] = 0;
}
static __thread unsigned verify_tick TLSM_IE;
/* Per thread (OpenSSL's error queues are), one bit per backend mode: a backend call on this
 * thread may have left errors in that backend's queue since it was last emptied. */
static __thread unsigned char backend_dirty TLSM_IE;

/* A backend call failed (or may have queued errors: loads, fetches, attaches): the next
 * record's begin empties the queue first. */
static void mark_backend_errors(const struct tlsm_rec_state *st)
{
    if (st->backend)
        backend_dirty |= (unsigned char)(1u << st->backend->mode);
}

/* Stale errors of earlier failed mirrors, attaches or fetches must not be forwarded as the
 * errors of a later record: the backend's queue (per thread) is emptied after each. */
static void clear_backend_errors(struct tlsm_rec_state *st)
{
    if (!st->backend)
        return;
    st->backend->ERR_clear_error();
    backend_dirty &= (unsigned char)~(1u << st->backend->mode);
}

/* Record start: empty the queue only when a call since the last emptying may have filled
 * it. ERR_clear_error costs ~1,300 instructions (OpenSSL 3.0: thread state look-up, 16
 * slots freed), a third of the routing cost per record, and a successful call queues
 * nothing. */
static void clear_stale_errors(struct tlsm_rec_state *st)
{
    if (st->backend && (backend_dirty & (1u << st->backend->mode)))
        clear_backend_errors(st);
}

/* A metadata call could not be mirrored: no record is routed until the next re-key. A
 * record already routed whose data has not gone to the backend yet runs natively instead
 * (the native context saw every call so far); one whose data has, stays on its path. */
static void shadow_lost(struct tlsm_rec_state *st)
{
    st->shadow_ok = false;
    st->nonce_held = false;
    clear_backend_errors(st);
    if (!st->routed || st->data_sent || st->nonce_pinned)
        return;
    if (st->tag_owed && st->lib && st->lib->abi.ctx_ctrl) /* the native context opens it */
        st->lib->abi.ctx_ctrl(st->ctx, EVP_CTRL_AEAD_SET_TAG, st->tagl, st->tag);
    st->tag_owed = false;
    st->routed = false;
    st->verify = false;
    atomic_fetch_sub_explicit(&n_routed, 1, memory_order_relaxed);
    if (st->rsm.dir == TLSM_DIR_OUT)
        atomic_fetch_sub_explicit(&n_routed_out, 1, memory_order_relaxed);
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
    st->nonce_held = false;
    st->tag_owed = false;
}

/* Once per key: may a TLS 1.3 record's nonce go to this shadow by parameter (nonce_by_ctrl),
 * and be held back to go with the record's tag (nonce_later)? An OpenSSL 3 AES-GCM shadow
 * only: 1.1.1 and the other ciphers (ChaCha20-Poly1305, CCM) refuse or differ. */
static void nonce_way(struct tlsm_rec_state *st)
{
    const char *c = st->rsm.cipher;
    st->nonce_ctrl = st->backend->abi == TLSM_ABI_OSSL3 && c && !memcmp(c, "AES-", 4) &&
                     strlen(c) == 11 && !memcmp(c + 7, "-GCM", 4);
    st->nonce_later = st->nonce_ctrl && st->backend->EVP_CIPHER_CTX_set_params;
    st->nonce_held = false;
}

void tlsm_reroute_attach(struct tlsm_rec_state *st, const unsigned char *key,
                         const unsigned char *iv, int enc)
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
    mark_backend_errors(st); /* the load, the fetch or a calibration may have queued some */
    st->shadow = b->EVP_CIPHER_CTX_new();
    st->shadow_ok = st->shadow && b->EVP_CipherInit_ex(st->shadow, c, NULL, key, iv, enc) > 0;
    if (!st->shadow_ok) {
        clear_backend_errors(st);
        atomic_fetch_add_explicit(&n_shadow_fail, 1, memory_order_relaxed);
    } else {
        nonce_way(st);
    }
    tlsm_th.guard--;
}

/* An Init with only a nonce (TLS 1.3 starts a record) in the shadow's direction, on a
 * shadow that takes nonces by parameter (nonce_way). */
static bool nonce_only(const struct tlsm_rec_state *st, const unsigned char *key,
                       const unsigned char *iv, int enc)
{
    return !key && iv && st->nonce_ctrl &&
           (enc == -1 || (enc != 0) == (st->rsm.dir == TLSM_DIR_OUT));
}

/* A TLS 1.3 record's nonce on an OpenSSL 3 AES-GCM shadow: set as the whole IV with ctrl
 * SET_IV_FIXED, length -1 (what sync_nonce does to the native context), which the GCM
 * provider takes as "copy the IV, use it at the next data call" exactly as an Init with
 * only an IV does. OpenSSL 3.0's Init asks the provider for the IV length on every call
 * (its parameter look-ups are ~500 of the Init's ~800 instructions, once per record). */
static bool nonce_by_ctrl(struct tlsm_rec_state *st, const unsigned char *key,
                          const unsigned char *iv, int enc)
{
    if (!nonce_only(st, key, iv, enc))
        return false;
    if (st->backend->EVP_CIPHER_CTX_ctrl(st->shadow, EVP_CTRL_AEAD_SET_IV_FIXED, -1, (void *)iv) >
        0)
        return true;
    mark_backend_errors(st);
    return false;
}

/* The held nonce (nonce_held), with the record's tag when tagl > 0, to the shadow in one
 * parameter call: what ctrl SET_IV_FIXED -1 and ctrl SET_TAG pass through EVP, less one pass
 * over the GCM provider's five parameter look-ups and EVP's ctrl translation (~480
 * instructions a ctrl, OpenSSL 3.0; the provider takes the two independently). Should the
 * copy refuse it, the nonce goes by Init and the tag by ctrl, as without holding. False: the
 * shadow does not match any more. */
static bool give_nonce(struct tlsm_rec_state *st, const void *tag, int tagl)
{
    struct tlsm_backend *b = st->backend;
    OSSL_PARAM p[3], *q = p;
    st->nonce_held = false;
    if (tagl > 0)
        *q++ = (OSSL_PARAM){OSSL_CIPHER_PARAM_AEAD_TAG, OSSL_PARAM_OCTET_STRING, (void *)tag,
                            (size_t)tagl, OSSL_PARAM_UNMODIFIED};
    *q++ = (OSSL_PARAM){OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED, OSSL_PARAM_OCTET_STRING, st->held_iv,
                        (size_t)-1, OSSL_PARAM_UNMODIFIED};
    *q = (OSSL_PARAM){NULL, 0, NULL, 0, 0};
    if (b->EVP_CIPHER_CTX_set_params(st->shadow, p) > 0)
        return true;
    mark_backend_errors(st);
    return b->EVP_CipherInit_ex(st->shadow, NULL, NULL, NULL, st->held_iv, -1) > 0 &&
           (tagl <= 0 ||
            b->EVP_CIPHER_CTX_ctrl(st->shadow, EVP_CTRL_AEAD_SET_TAG, tagl, (void *)tag) > 0);
}

/* A data call of a routed record while its nonce is still held (no tag came, or a sealing
 * record): the nonce goes now. False: the shadow was lost, this record runs natively. */
static bool nonce_now(struct tlsm_rec_state *st)
{
    bool ok = give_nonce(st, NULL, 0);
    if (!ok)
        shadow_lost(st);
    return ok;
}

void tlsm_reroute_mirror_init(struct tlsm_rec_state *st, const unsigned char *key,
                              const unsigned char *iv, int enc, bool has_params)
{
    if (!st->shadow_ok)
        return;
    /* The nonce of a record waits for its tag (the next call, tlsm_reroute_mirror_ctrl); a
     * later nonce replaces a held one, as it would overwrite it in the shadow. */
    if (!has_params && st->nonce_later && nonce_only(st, key, iv, enc)) {
        memcpy(st->held_iv, iv, sizeof(st->held_iv));
        st->nonce_held = true;
        return;
    }
    tlsm_th.guard++;
    /* Params (EVP_*Init_ex2) are not mirrored: the shadow would miss what they set. */
    if ((st->nonce_held && !give_nonce(st, NULL, 0)) || has_params ||
        (!nonce_by_ctrl(st, key, iv, enc) &&
         st->backend->EVP_CipherInit_ex(st->shadow, NULL, NULL, key, iv, enc) <= 0))
        shadow_lost(st);
    tlsm_th.guard--;
}

/* TLS 1.2 AES-GCM sealing: the explicit nonce comes from the context's own counter. The
 * native context is set to the shadow's full IV (ctrl SET_IV_FIXED with length -1, which
 * OpenSSL 3 reads as "the whole IV") so a record sealed natively later (fallback,
 * verification) never reuses a nonce the shadow sent. Only the IV moves, never a key. */
static void sync_nonce(struct tlsm_rec_state *st)
{
    unsigned char iv[12];
    const struct tlsm_abi *a = st->lib ? &st->lib->abi : NULL;
    if (st->rsm.eiv != 8 || strncmp(st->rsm.cipher, "AES", 3) || strstr(st->rsm.cipher, "CCM"))
        return;
    bool ok = st->backend->EVP_CIPHER_CTX_get_updated_iv &&
              st->backend->EVP_CIPHER_CTX_get_updated_iv(st->shadow, iv, sizeof(iv)) > 0 && a &&
              a->ctx_ctrl && a->ctx_ctrl(st->ctx, EVP_CTRL_AEAD_SET_IV_FIXED, -1, iv) > 0;
    wipe_iv(iv);
    if (!ok && !atomic_fetch_add(&n_nonce_fail, 1))
        tlsm_warn("TLSMETER_CRYPTO: cannot keep the native %s nonce counter in step with the "
                  "%s backend; its records stay on the backend",
                  st->rsm.cipher, tlsm_mode_name(tlsm_cfg.crypto));
    if (!ok) {
        st->nonce_pinned = true;
        mark_backend_errors(st);
    }
}

/* Same ctrl, same answer expected: a different one means the shadow no longer matches. */
void tlsm_reroute_mirror_ctrl(struct tlsm_rec_state *st, int type, int arg, void *ptr, int ret)
{
    /* A query changes nothing to mirror. 1.1.1's EVP_CIPHER_CTX_iv_length asks through ctrl;
     * the 3.x backend answers that through parameters and refuses the ctrl. */
    if (!st->shadow_ok || type == EVP_CTRL_GET_IVLEN)
        return;
    tlsm_th.guard++;
    if (st->nonce_held) { /* it goes first; with this ctrl when that is the record's tag */
        bool tag = type == EVP_CTRL_AEAD_SET_TAG && ret == 1 && st->rsm.dir == TLSM_DIR_IN && ptr &&
                   arg > 0 && arg <= (int)sizeof(st->tag);
        bool ok = give_nonce(st, tag ? ptr : NULL, tag ? arg : 0);
        if (!ok)
            shadow_lost(st);
        if (!ok || tag) {
            tlsm_th.guard--;
            return;
        }
    }
    int r = st->backend->EVP_CIPHER_CTX_ctrl(st->shadow, type, arg, ptr);
    if (r <= 0)
        mark_backend_errors(st); /* both refused it: the shadow's refusal stays queued */
    if (type == EVP_CTRL_AEAD_SET_IVLEN && r > 0) /* held nonces are 12 bytes */
        st->nonce_later = st->nonce_ctrl && st->backend->EVP_CIPHER_CTX_set_params && arg == 12;
    if (r != ret)
        shadow_lost(st);
    else if (type == EVP_CTRL_AEAD_SET_IV_FIXED && st->rsm.dir == TLSM_DIR_OUT)
        sync_nonce(st); /* each side drew its own random invocation field: use the shadow's */
    tlsm_th.guard--;
}

void tlsm_reroute_begin(struct tlsm_rec_state *st)
{
    tlsm_reroute_end(st); /* a verified TLS 1.3 record that never reached Final */
    st->routed = false;
    st->verify = false;
    st->data_sent = false;
    st->verdict = 0;
    if (tlsm_cfg.crypto == TLSM_MODE_NATIVE || st->native_only) /* never had a shadow */
        return;
    st->tag_owed = false;
    st->have_tag = false;
    st->vout = NULL;
    st->voutl = 0;
    if (!st->shadow_ok && !st->nonce_pinned) {
        atomic_fetch_add_explicit(&n_fallback, 1, memory_order_relaxed);
        return;
    }
    tlsm_th.guard++;
    clear_stale_errors(st); /* only this record's own errors are forwarded */
    tlsm_th.guard--;
    st->routed = true;
    atomic_fetch_add_explicit(&n_routed, 1, memory_order_relaxed);
    if (st->rsm.dir == TLSM_DIR_OUT)
        atomic_fetch_add_explicit(&n_routed_out, 1, memory_order_relaxed);
    if (tlsm_cfg.verify && !st->nonce_pinned && ++verify_tick >= tlsm_cfg.verify) {
        verify_tick = 0;
        st->verify = true;
    }
}

/* Backend errors go to the program's error queue, as the program's own copy would have
 * raised them (same library and reason codes across OpenSSL 3 builds; a 1.1.1 copy gets
 * the library code and a reason that may be numbered differently there). */
static void forward_errors(struct tlsm_rec_state *st)
{
    const struct tlsm_abi *a = st->lib ? &st->lib->abi : NULL;
    const char *file, *func;
    int line, lib, reason;
    mark_backend_errors(st); /* more than 16 may be queued */
    for (int i = 0;
         i < 16 && tlsm_backend_next_error(st->backend, &lib, &reason, &file, &line, &func); i++) {
        if (a && a->put_error)
            a->put_error(a, lib, reason, file, line, func);
    }
}

int tlsm_reroute_update(struct tlsm_rec_state *st, tlsm_update_fn native, EVP_CIPHER_CTX *ctx,
                        unsigned char *out, int *outl, const unsigned char *in, int inl)
{
    int ret;
    tlsm_th.guard++;
    if (st->nonce_held && !nonce_now(st)) {
        /* Native, under the guard as a verified record's native call (its GCM calls untimed). */
        ret = native(ctx, out, outl, in, inl);
        tlsm_th.guard--;
        return ret;
    }
    st->data_sent = true;
    if (st->verify && out && in && inl > 0) {
        ret = tlsm_verify_payload(st, native, ctx, out, outl, in, inl);
    } else {
        if (st->verify && !out) { /* AAD has no output: feed both sides */
            int l;
            native(ctx, NULL, &l, in, inl);
        }
        ret = st->backend->EVP_CipherUpdate(st->shadow, out, outl, in, inl);
    }
    if (ret <= 0)
        forward_errors(st);
    if (out && st->rsm.dir == TLSM_DIR_OUT && st->rsm.tls == 12)
        sync_nonce(st); /* the shadow's counter moved past this record's nonce */
    tlsm_th.guard--;
    return ret;
}

/* TLS 1.3 sealing, after the shadow's Final: its tag is kept for libssl's GET_TAG ctrl;
 * verification seals the native copy too and compares ciphertext and tag, so a mismatch
 * sends the native record. */
static int seal_final(struct tlsm_rec_state *st, tlsm_final_fn native, EVP_CIPHER_CTX *ctx, int ret)
{
    st->have_tag = ret > 0 && st->backend->EVP_CIPHER_CTX_ctrl(st->shadow, EVP_CTRL_AEAD_GET_TAG,
                                                               (int)sizeof(st->tag), st->tag) > 0;
    if (!st->have_tag)
        mark_backend_errors(st);
    return st->verify && st->vbuf ? tlsm_verify_seal(st, native, ctx, ret) : ret;
}

int tlsm_reroute_final(struct tlsm_rec_state *st, tlsm_final_fn native, EVP_CIPHER_CTX *ctx,
                       unsigned char *out, int *outl)
{
    tlsm_th.guard++;
    if (st->nonce_held && !nonce_now(st)) { /* as in tlsm_reroute_update */
        int ret = native(ctx, out, outl);
        tlsm_th.guard--;
        return ret;
    }
    st->data_sent = true;
    int ret = st->backend->EVP_CipherFinal_ex(st->shadow, out, outl);
    if (ret <= 0)
        forward_errors(st);
    if (st->rsm.dir == TLSM_DIR_OUT)
        ret = seal_final(st, native, ctx, ret);
    else if (st->verify && st->vbuf)
        ret = tlsm_verify_open_final(st, native, ctx, ret);
    tlsm_th.guard--;
    return ret;
}

/* An unverified routed record's tag for decryption (TLS 1.3 SET_TAG before its data): the
 * backend opens the record and checks the tag, so only the shadow gets it (with the held
 * nonce, give_nonce), saving the native ctrl (~480 instructions a record, OpenSSL 3.0). The
 * native context, which sees none of the record, is owed it (tag_owed): shadow_lost gives it
 * should the record fall back. A verified record's tag goes to both, as before. False:
 * forward it (the shadow refused: lost, the record is native). */
static bool tag_to_shadow(struct tlsm_rec_state *st, int arg, void *ptr, int *ret)
{
    if (st->rsm.dir != TLSM_DIR_IN || st->verify || st->data_sent || !st->shadow_ok || !ptr ||
        arg <= 0 || arg > (int)sizeof(st->tag) || !st->lib || !st->lib->abi.ctx_ctrl)
        return false;
    tlsm_th.guard++;
    bool ok = st->nonce_held ? give_nonce(st, ptr, arg)
                             : st->backend->EVP_CIPHER_CTX_ctrl(st->shadow, EVP_CTRL_AEAD_SET_TAG,
                                                                arg, ptr) > 0;
    if (ok) {
        if (arg == 16) /* TLS's tag: copied inline */
            memcpy(st->tag, ptr, 16);
        else
            memcpy(st->tag, ptr, (size_t)arg);
        st->tagl = (uint8_t)arg;
        st->tag_owed = true;
        *ret = 1;
    } else {
        mark_backend_errors(st);
        shadow_lost(st);
    }
    tlsm_th.guard--;
    return ok;
}

bool tlsm_reroute_tag(struct tlsm_rec_state *st, int type, int arg, void *ptr, int *ret)
{
    if (type == EVP_CTRL_AEAD_SET_TAG)
        return tag_to_shadow(st, arg, ptr, ret);
    if (type != EVP_CTRL_AEAD_GET_TAG || st->rsm.dir != TLSM_DIR_OUT || !st->routed ||
        !st->data_sent || !ptr)
        return false;
    if (st->have_tag && arg > 0 && arg <= (int)sizeof(st->tag)) {
        memcpy(ptr, st->tag, (size_t)arg);
        *ret = 1;
        return true;
    }
    tlsm_th.guard++;
    *ret = st->backend->EVP_CIPHER_CTX_ctrl(st->shadow, type, arg, ptr);
    if (*ret <= 0)
        mark_backend_errors(st);
    tlsm_th.guard--;
    return true;
}

int tlsm_reroute_cipher(struct tlsm_rec_state *st, tlsm_cipher_fn native, EVP_CIPHER_CTX *ctx,
                        unsigned char *out, const unsigned char *in, unsigned int inl)
{
    tlsm_th.guard++;
    if (st->nonce_held && !nonce_now(st)) { /* as in tlsm_reroute_update */
        int ret = native(ctx, out, in, inl);
        tlsm_th.guard--;
        return ret;
    }
    st->data_sent = true;
    int ret = st->backend->EVP_Cipher(st->shadow, out, in, inl);
    if (ret < 0)
        forward_errors(st);
    else if (st->lib && st->lib->abi.tls_cipher_ret && st->backend->abi != st->lib->abi.kind)
        /* A 1.1.1 copy on a 3.x backend (its own libcrypto could not be copied): return what
         * the program's copy would have. */
        ret = st->lib->abi.tls_cipher_ret((int)inl, st->rsm.eiv, st->rsm.dir == TLSM_DIR_OUT);
    if (out && st->rsm.dir == TLSM_DIR_OUT)
        sync_nonce(st);
    tlsm_th.guard--;
    return ret;
}

void tlsm_reroute_end(struct tlsm_rec_state *st)
{
    if (!st->vbuf) /* twice a record (its begin and end); a buffer only when verified */
        return;
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
    uint64_t v[4]; /* verified, mismatches; the encrypting side's */
    tlsm_verify_counts(v);
    tlsm_json_int(j, "verified", (int64_t)v[0]);
    tlsm_json_int(j, "mismatches", (int64_t)v[1]);
    tlsm_json_obj(j, "out"); /* the encrypting side's share of the three */
    tlsm_json_int(j, "routed", (int64_t)n_routed_out);
    tlsm_json_int(j, "verified", (int64_t)v[2]);
    tlsm_json_int(j, "mismatches", (int64_t)v[3]);
    tlsm_json_obj_end(j);
    tlsm_json_str(j, "off_reason", why);
    tlsm_json_obj_end(j);
}

/* A context the core began to track: calibrate once (TLSMETER_CALIBRATE) and make its shadow. */
static void keyed(struct tlsm_rec_state *st, const unsigned char *key, const unsigned char *iv,
                  bool has_params)
{
    if (tlsm_cfg.calibrate && st->lib)
        tlsm_calib_once(st->lib->path);
    tlsm_reroute_attach(st, key, iv, st->rsm.dir == TLSM_DIR_OUT); /* 1: encrypt */
    if (has_params) /* set by the params, which the shadow did not get */
        tlsm_reroute_mirror_init(st, NULL, NULL, 0, true);
}

void tlsm_reroute_observe(void)
{
    /* TLSMETER_CRYPTO=native (the default) without calibration: nothing to follow, and no
     * call per record and per context (~100 instructions a record of begin/end that only
     * cleared flags no record ever sets). The end line's reroute object stays all zero. */
    if (tlsm_cfg.crypto == TLSM_MODE_NATIVE && !tlsm_cfg.calibrate)
        return;
    tlsm_rec_obs = (struct tlsm_rec_observer){
        .keyed = keyed,
        .mirror_init = tlsm_reroute_mirror_init,
        .mirror_ctrl = tlsm_reroute_mirror_ctrl,
        .record_begin = tlsm_reroute_begin,
        .record_end = tlsm_reroute_end,
        .forget = tlsm_reroute_detach,
    };
}
