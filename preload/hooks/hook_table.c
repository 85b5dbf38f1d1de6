/* hook_table.c: The wrappers tlsmeter puts into the provider dispatch tables of an OpenSSL 3
 * copy (forward/tables.c finds them; hooks/hook_table_reach.c says which copies: those the
 * hooks cannot interpose, and by default those they can, whose records are then measured
 * here only, docs/design.md section 2): the
 * provider's decrypt_init, encrypt_init, update, final, cipher, set_ctx_params and freectx,
 * called by the copy's own EVP code with the provider's cipher context. That context pointer
 * names the record context as EVP_CIPHER_CTX does for the EVP hooks, so the same record
 * adapter (core/record.h) sees the same sequence in both directions: key, per-record nonce,
 * tag, AAD update, payload update, final (TLS 1.3); key, fixed IV and AAD (set_ctx_params
 * "tlsivfixed", "tlsaad"), one update or cipher (TLS 1.2). The reroute observer follows the
 * decrypting contexts only. Each wrapper set serves one table of one copy; they are installed
 * before the program's first fetch (from the constructor). */
#include "base/tls.h"
#include "base/clock.h"
#include "core/impl.h"
#include "core/record.h"
#include "forward/obj.h"
#include "forward/tables.h"
#include "hooks/hook.h"
#include "hooks/reach.h"
#include "hooks/table_slot.h"
#include "reroute/reroute.h"
#include "trace/config.h"
#include "trace/log.h"

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <string.h>

struct tslot tlsm_tslots[MAX_TSLOTS];
int tlsm_ntslots;

typedef int (*init_fn)(void *, const unsigned char *, size_t, const unsigned char *, size_t,
                       const OSSL_PARAM *);
typedef int (*update_fn)(void *, unsigned char *, size_t *, size_t, const unsigned char *, size_t);
typedef int (*final_fn)(void *, unsigned char *, size_t *, size_t);
typedef void (*free_fn)(void *);
typedef int (*setp_fn)(void *, const OSSL_PARAM *);

#define ORIG(s, type, id) ((type)(s)->t.orig[id])

/* Not to trace, from loads only: tracing off, tlsmeter's own call, the thread exiting, or a
 * call nested in a traced EVP hook (its context is measured there). A traced path sets the
 * thread up (tlsm_traced_start) before it records. */
static inline __attribute__((always_inline)) bool untraced(void)
{
    return !atomic_load_explicit(&tlsm_active, memory_order_relaxed) || tlsm_th.guard ||
           tlsm_th.exiting || tlsm_th.evp_depth;
}

/* PROV_GCM_CTX (providers/implementations/include/prov/ciphercommon_gcm.h), LP64, of the two
 * versions checked against their binaries (core/impl.c says how): `hw` (its PROV_GCM_HW
 * table) at 240, the GCM128_CONTEXT at 248, `ctr` after it: 688 in 3.0, 696 in 3.5 (the
 * GCM context grew by its ginit pointer). The version is the one the copy reports; any other
 * is not read (its records are measured, its impl stays unknown: lib gcm_layout
 * "unverified"). Believed only after the pointers there look right. */
enum { GCM_HW_OFF = 240, GCM_CTX_OFF = 248 };

int tlsm_table_gcm_layout_of(const char *version)
{
    return !strncmp(version, "OpenSSL 3.0.", 12)   ? 30
           : !strncmp(version, "OpenSSL 3.5.", 12) ? 35
                                                   : 0;
}

static void note_impl(struct tslot *s, struct tlsm_rec_state *st, const char *vctx)
{
    if (!s->t.gcm || s->gcm_layout < 0 || tlsm_rec_impl_cached(st))
        return;
    int v = tlsm_table_gcm_layout_of(s->copy.version);
    const void *hw = *(const void *const *)(vctx + GCM_HW_OFF);
    const void *block = *(const void *const *)(vctx + GCM_CTX_OFF + (v == 35 ? 384 : 376));
    const void *ctr = *(const void *const *)(vctx + GCM_CTX_OFF + (v == 35 ? 448 : 440));
    if (!s->gcm_layout) {
        bool ok = v && tlsm_tables_holds(&s->copy, hw, false) &&
                  (!ctr || tlsm_tables_holds(&s->copy, ctr, true));
        if (ok && block) /* a context that names its code: the block is the copy's */
            ok = tlsm_tables_holds(&s->copy, block, true);
        else if (ok) /* 3.5's VAES kernel: its cipherupdate is */
            ok = v == 35 && tlsm_tables_holds(&s->copy, ((const void *const *)hw)[3], true);
        s->gcm_layout = ok ? 1 : -1;
    }
    if (s->gcm_layout > 0)
        tlsm_impl_note_prov(s->t.lib, vctx, hw);
}

/* Once per process under TLSMETER_CRYPTO=hw|soft: this copy's sealed records are measured on
 * its own code, not rerouted (tbl_init says why); the trace's warn event tells the report. */
static void native_seal_notice(const struct tslot *s)
{
    static atomic_bool said;
    if (tlsm_cfg.crypto == TLSM_MODE_NATIVE || atomic_exchange(&said, true))
        return;
    tlsm_warn("TLSMETER_CRYPTO=%s: %s seals its records through its provider tables, which are "
              "measured on its own code (path native), not rerouted; its decryption is rerouted",
              tlsm_mode_name(tlsm_cfg.crypto),
              s->copy.lm->l_name && s->copy.lm->l_name[0] ? s->copy.lm->l_name : "the program");
}

/* decrypt_init and encrypt_init: a key makes the context a record source of that direction;
 * an IV alone is a TLS 1.3 record's nonce (enc as EVP passes it: 0 decrypt, 1 encrypt). */
static __attribute__((noinline)) int traced_init(struct tslot *s, int id, enum tlsm_dir dir,
                                                 void *v, const unsigned char *key, size_t kl,
                                                 const unsigned char *iv, size_t ivl,
                                                 const OSSL_PARAM *p)
{
    init_fn fn = ORIG(s, init_fn, id);
    if (s->hooked) {
        tlsm_th.tbl_seen = v;             /* the EVP init hook learns this table served the call */
        if (key && !tlsm_th.tbl_keying) { /* not libssl's: not a record source */
            tlsm_rec_forget(v);
            return fn(v, key, kl, iv, ivl, p);
        }
    }
    int enc = dir == TLSM_DIR_OUT;
    if (!key) { /* a TLS 1.3 record's nonce (or a cipher set anew): of a tracked context only */
        if (!tlsm_rec_lookup(v))
            return fn(v, key, kl, iv, ivl, p);
        tlsm_traced_start(&tlsm_th);
        tlsm_rec_on_init(v, NULL, NULL, iv, enc, NULL, s->t.lib, tlsm_now());
    }
    tlsm_traced_start(&tlsm_th);
    tlsm_th.evp_depth++;
    int ret = fn(v, key, kl, iv, ivl, p);
    tlsm_th.evp_depth--;
    int *ep = tlsm_errno(&tlsm_th), saved = *ep;
    if (key && ret > 0 && s->t.lib) {
        if (s->hooked)
            tlsm_obj_describe(s->t.lib);
        else
            tlsm_obj_describe_reached(s->t.lib, TLSM_REACH_TABLE, s->copy.version);
        if (dir == TLSM_DIR_OUT)
            native_seal_notice(s);
        /* Sealing stays on the copy's own code: the reroute would have to answer libssl's
         * tag query (get_ctx_params, not rewritten) and keep the copy's TLS 1.2 nonce
         * counter in step through an EVP_CIPHER_CTX this context is not. */
        tlsm_rec_track_as(v, s->t.cipher, dir, s->t.lib, key, iv, p && p[0].key,
                          dir == TLSM_DIR_OUT);
        struct tlsm_rec_state *st = tlsm_rec_lookup(v);
        if (st)
            st->impl_cache = true;
    } else if (!key && (tlsm_rec_obs.mirror_init || tlsm_rec_obs.record_begin)) {
        tlsm_rec_after_init(v, NULL, NULL, iv, enc, p, NULL, s->t.lib, ret);
    }
    *ep = saved;
    return ret;
}

static inline __attribute__((always_inline)) int
tbl_init(struct tslot *s, int id, enum tlsm_dir dir, void *v, const unsigned char *key, size_t kl,
         const unsigned char *iv, size_t ivl, const OSSL_PARAM *p)
{
    if (untraced())
        return ORIG(s, init_fn, id)(v, key, kl, iv, ivl, p);
    return traced_init(s, id, dir, v, key, kl, iv, ivl, p);
}

static inline __attribute__((always_inline)) int tbl_dinit(struct tslot *s, void *v,
                                                           const unsigned char *key, size_t kl,
                                                           const unsigned char *iv, size_t ivl,
                                                           const OSSL_PARAM *p)
{
    return tbl_init(s, OSSL_FUNC_CIPHER_DECRYPT_INIT, TLSM_DIR_IN, v, key, kl, iv, ivl, p);
}

static inline __attribute__((always_inline)) int tbl_einit(struct tslot *s, void *v,
                                                           const unsigned char *key, size_t kl,
                                                           const unsigned char *iv, size_t ivl,
                                                           const OSSL_PARAM *p)
{
    return tbl_init(s, OSSL_FUNC_CIPHER_ENCRYPT_INIT, TLSM_DIR_OUT, v, key, kl, iv, ivl, p);
}

/* For TLSMETER_VERIFY on a rerouted record: the native provider call, shaped like EVP's. */
static __thread struct {
    struct tslot *s;
    size_t outsize;
} cur TLSM_IE;

static int native_update(EVP_CIPHER_CTX *ctx, unsigned char *out, int *outl,
                         const unsigned char *in, int inl)
{
    size_t o = 0;
    int r =
        ORIG(cur.s, update_fn, OSSL_FUNC_CIPHER_UPDATE)(ctx, out, &o, cur.outsize, in, (size_t)inl);
    *outl = (int)o;
    return r;
}

static int native_cipher(EVP_CIPHER_CTX *ctx, unsigned char *out, const unsigned char *in,
                         unsigned int inl)
{
    size_t o = 0; /* EVP_Cipher's answer for a provider cipher: the length, or -1 */
    return ORIG(cur.s, update_fn, OSSL_FUNC_CIPHER_CIPHER)(ctx, out, &o, cur.outsize, in, inl)
               ? (int)o
               : -1;
}

static int native_final(EVP_CIPHER_CTX *ctx, unsigned char *out, int *outl)
{
    size_t o = 0;
    int r = ORIG(cur.s, final_fn, OSSL_FUNC_CIPHER_FINAL)(ctx, out, &o, cur.outsize);
    *outl = (int)o;
    return r;
}

#define DATA_CALL_BEGIN(st)                                                                        \
    struct tlsm_rsm_ctx *outer = tlsm_th.rec_cur;                                                  \
    tlsm_th.rec_cur = (st)->rsm.in_rec ? &(st)->rsm : NULL;                                        \
    tlsm_th.evp_depth++
#define DATA_CALL_END()                                                                            \
    tlsm_th.evp_depth--;                                                                           \
    tlsm_th.rec_cur = outer

/* Each wrapper is a front, inlined into the slot's function, that forwards what is not to be
 * traced by a tail call (no register saved, no frame), and a traced part (noinline). */
static __attribute__((noinline)) int traced_update(struct tslot *s, void *v, unsigned char *out,
                                                   size_t *outl, size_t outsize,
                                                   const unsigned char *in, size_t inl)
{
    update_fn fn = ORIG(s, update_fn, OSSL_FUNC_CIPHER_UPDATE);
    struct tlsm_rec_state *st = tlsm_rec_lookup(v);
    if (!st || inl > 0x7fffffff)
        return fn(v, out, outl, outsize, in, inl);
    tlsm_traced_start(&tlsm_th);
    /* ... the payload and its 16-byte tag (every cipher these tables serve has one). */
    if (out && st->rsm.in_rec && st->rsm.tls != TLSM_TLS12 && st->rsm.len < 0)
        st->rsm.len = (int32_t)inl + 16;
    tlsm_rec_before_update(st, out, in, (int)inl); /* sealed in place: read it now */
    DATA_CALL_BEGIN(st);
    int ret, ol = 0;
    if (st->rsm.in_rec && st->routed) {
        cur.s = s, cur.outsize = outsize;
        ret = tlsm_reroute_update(st, native_update, v, out, &ol, in, (int)inl);
        if (ret > 0 && outl)
            *outl = (size_t)ol;
        /* Rejected payload (TLS 1.2 checks the tag here): as in tbl_cipher. */
        if (ret <= 0 && out)
            ret = fn(v, out, outl, outsize, in, inl);
    } else {
        if (out && st->rsm.in_rec)
            note_impl(s, st, v);
        ret = fn(v, out, outl, outsize, in, inl);
    }
    DATA_CALL_END();
    int *ep = tlsm_errno(&tlsm_th), saved = *ep;
    ol = ret > 0 && outl ? (int)*outl : 0;
    tlsm_rec_on_update(st, out, &ol, in, (int)inl, ret);
    *ep = saved;
    return ret;
}

static inline __attribute__((always_inline)) int tbl_update(struct tslot *s, void *v,
                                                            unsigned char *out, size_t *outl,
                                                            size_t outsize, const unsigned char *in,
                                                            size_t inl)
{
    /* A TLS 1.3 record's AAD (its 5-byte header; no output) with no reroute to feed: only
     * forwarded. The header says the record's length, which its payload says as well. */
    if ((!out && tlsm_cfg.crypto == TLSM_MODE_NATIVE) || untraced())
        return ORIG(s, update_fn, OSSL_FUNC_CIPHER_UPDATE)(v, out, outl, outsize, in, inl);
    return traced_update(s, v, out, outl, outsize, in, inl);
}

static __attribute__((noinline)) int traced_final(struct tslot *s, void *v, unsigned char *out,
                                                  size_t *outl, size_t outsize)
{
    final_fn fn = ORIG(s, final_fn, OSSL_FUNC_CIPHER_FINAL);
    struct tlsm_rec_state *st = tlsm_rec_lookup(v);
    if (!st)
        return fn(v, out, outl, outsize);
    tlsm_traced_start(&tlsm_th);
    DATA_CALL_BEGIN(st);
    int ret, ol = 0;
    if (st->rsm.in_rec && st->routed) {
        cur.s = s, cur.outsize = outsize;
        ret = tlsm_reroute_final(st, native_final, v, out, &ol);
        if (ret > 0 && outl)
            *outl = (size_t)ol;
    } else {
        ret = fn(v, out, outl, outsize);
    }
    DATA_CALL_END();
    int *ep = tlsm_errno(&tlsm_th), saved = *ep;
    tlsm_rec_on_final(st, ret);
    *ep = saved;
    return ret;
}

static inline __attribute__((always_inline)) int
tbl_final(struct tslot *s, void *v, unsigned char *out, size_t *outl, size_t outsize)
{
    if (untraced())
        return ORIG(s, final_fn, OSSL_FUNC_CIPHER_FINAL)(v, out, outl, outsize);
    return traced_final(s, v, out, outl, outsize);
}

/* TLS 1.2: one call decrypts and checks the record (after its AAD, below). */
static int tbl_cipher(struct tslot *s, void *v, unsigned char *out, size_t *outl, size_t outsize,
                      const unsigned char *in, size_t inl)
{
    update_fn fn = ORIG(s, update_fn, OSSL_FUNC_CIPHER_CIPHER);
    struct tlsm_rec_state *st = untraced() ? NULL : tlsm_rec_lookup(v);
    if (!st || inl > 0x7fffffff)
        return fn(v, out, outl, outsize, in, inl);
    tlsm_traced_start(&tlsm_th);
    DATA_CALL_BEGIN(st);
    int ret;
    if (st->rsm.in_rec && st->routed) {
        cur.s = s, cur.outsize = outsize;
        int r = tlsm_reroute_cipher(st, native_cipher, v, out, in, (unsigned int)inl);
        ret = r >= 0;
        if (ret && outl)
            *outl = (size_t)r;
        /* Rejected (a tampered record): the copy's own call fails the same way and leaves its
         * own error on its queue, which tlsmeter cannot push into a copy it does not call
         * (the EVP hooks forward the backend's error through the instance's ERR_* instead). */
        if (!ret)
            ret = fn(v, out, outl, outsize, in, inl);
    } else {
        if (out && st->rsm.in_rec)
            note_impl(s, st, v);
        ret = fn(v, out, outl, outsize, in, inl);
    }
    DATA_CALL_END();
    int *ep = tlsm_errno(&tlsm_th), saved = *ep;
    tlsm_rec_on_cipher(st, out, (int)inl, ret && outl ? (int)*outl : -1);
    *ep = saved;
    return ret;
}

/* One parameter set on a tracked context, told to the shadow as the EVP ctrl that sets it
 * (EVP turns those ctrls into these parameters): the tag (TLS 1.3, before the payload), the
 * TLS 1.2 fixed IV (at key time) and AAD, the IV length. ret: the provider's answer; the EVP
 * ctrl answers a TLS 1.2 AAD with the tag length. Any other parameter cannot be mirrored:
 * the shadow no longer matches, its records stay native. */
static void mirror_param(struct tlsm_rec_state *st, const OSSL_PARAM *q, int ret)
{
    bool octets = q->data && q->data_type == OSSL_PARAM_OCTET_STRING;
    int n = (int)q->data_size;
    if (octets && !strcmp(q->key, OSSL_CIPHER_PARAM_AEAD_TAG))
        tlsm_rec_after_ctrl(st, EVP_CTRL_AEAD_SET_TAG, n, q->data, ret);
    else if (octets && !strcmp(q->key, OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED))
        tlsm_rec_after_ctrl(st, EVP_CTRL_AEAD_SET_IV_FIXED, n, q->data, ret);
    else if (octets && !strcmp(q->key, OSSL_CIPHER_PARAM_AEAD_TLS1_AAD))
        tlsm_rec_after_ctrl(st, EVP_CTRL_AEAD_TLS1_AAD, n, q->data,
                            ret > 0 ? EVP_GCM_TLS_TAG_LEN : ret);
    else if (!strcmp(q->key, OSSL_CIPHER_PARAM_AEAD_IVLEN) && q->data &&
             q->data_type == OSSL_PARAM_UNSIGNED_INTEGER && q->data_size == sizeof(size_t))
        tlsm_rec_after_ctrl(st, EVP_CTRL_AEAD_SET_IVLEN, (int)*(const size_t *)q->data, NULL, ret);
    else if (strcmp(q->key, OSSL_CIPHER_PARAM_TLS_VERSION) &&
             strcmp(q->key, OSSL_CIPHER_PARAM_TLS_MAC_SIZE))
        st->shadow_ok = false;
    /* (libssl sets the TLS version and MAC size on every TLS 1.2 context: for CBC-HMAC
     * ciphers; the AEAD providers do not read them, and EVP passes them without a ctrl.) */
}

static __attribute__((noinline)) int traced_setp(struct tslot *s, void *v, const OSSL_PARAM *p)
{
    setp_fn fn = ORIG(s, setp_fn, OSSL_FUNC_CIPHER_SET_CTX_PARAMS);
    struct tlsm_rec_state *st = !p ? NULL : tlsm_rec_lookup(v);
    if (!st)
        return fn(v, p);
    tlsm_traced_start(&tlsm_th);
    /* A TLS 1.2 AAD starts a record, as the EVP ctrl that passes it would. */
    for (int i = 0; p[i].key && i < 16; i++)
        if (!strcmp(p[i].key, OSSL_CIPHER_PARAM_AEAD_TLS1_AAD) && p[i].data &&
            p[i].data_type == OSSL_PARAM_OCTET_STRING)
            tlsm_rec_on_ctrl(st, EVP_CTRL_AEAD_TLS1_AAD, (int)p[i].data_size, p[i].data,
                             tlsm_now());
    tlsm_th.evp_depth++;
    int ret = fn(v, p);
    tlsm_th.evp_depth--;
    int *ep = tlsm_errno(&tlsm_th), saved = *ep;
    for (int i = 0; p[i].key && i < 16; i++)
        mirror_param(st, &p[i], ret);
    *ep = saved;
    return ret;
}

static inline __attribute__((always_inline)) int tbl_setp(struct tslot *s, void *v,
                                                          const OSSL_PARAM *p)
{
    /* A TLS 1.3 record's tag alone, with nobody to mirror it to: only forwarded. */
    if ((p && p[0].key && !p[1].key && !tlsm_rec_obs.mirror_ctrl && p[0].key[0] == 't' &&
         p[0].key[1] == 'a' && p[0].key[2] == 'g' && !p[0].key[3]) ||
        untraced())
        return ORIG(s, setp_fn, OSSL_FUNC_CIPHER_SET_CTX_PARAMS)(v, p);
    return traced_setp(s, v, p);
}

static void tbl_free(struct tslot *s, void *v)
{
    if (tlsm_tracing(&tlsm_th)) /* before: once freed, another context may get the address */
        tlsm_rec_forget(v);
    ORIG(s, free_fn, OSSL_FUNC_CIPHER_FREECTX)(v);
}

#define WRAPSET(i)                                                                                 \
    static int dinit_##i(void *v, const unsigned char *k, size_t kl, const unsigned char *iv,      \
                         size_t ivl, const OSSL_PARAM *p)                                          \
    {                                                                                              \
        return tbl_dinit(&tlsm_tslots[i], v, k, kl, iv, ivl, p);                                   \
    }                                                                                              \
    static int einit_##i(void *v, const unsigned char *k, size_t kl, const unsigned char *iv,      \
                         size_t ivl, const OSSL_PARAM *p)                                          \
    {                                                                                              \
        return tbl_einit(&tlsm_tslots[i], v, k, kl, iv, ivl, p);                                   \
    }                                                                                              \
    static int update_##i(void *v, unsigned char *o, size_t *ol, size_t os,                        \
                          const unsigned char *in, size_t inl)                                     \
    {                                                                                              \
        return tbl_update(&tlsm_tslots[i], v, o, ol, os, in, inl);                                 \
    }                                                                                              \
    static int final_##i(void *v, unsigned char *o, size_t *ol, size_t os)                         \
    {                                                                                              \
        return tbl_final(&tlsm_tslots[i], v, o, ol, os);                                           \
    }                                                                                              \
    static int cipher_##i(void *v, unsigned char *o, size_t *ol, size_t os,                        \
                          const unsigned char *in, size_t inl)                                     \
    {                                                                                              \
        return tbl_cipher(&tlsm_tslots[i], v, o, ol, os, in, inl);                                 \
    }                                                                                              \
    static int setp_##i(void *v, const OSSL_PARAM *p)                                              \
    {                                                                                              \
        return tbl_setp(&tlsm_tslots[i], v, p);                                                    \
    }                                                                                              \
    static void free_##i(void *v)                                                                  \
    {                                                                                              \
        tbl_free(&tlsm_tslots[i], v);                                                              \
    }
WRAPSET(0)
WRAPSET(1)
WRAPSET(2)
WRAPSET(3)
WRAPSET(4)
WRAPSET(5)
WRAPSET(6)
WRAPSET(7)
WRAPSET(8)
WRAPSET(9)
WRAPSET(10)
WRAPSET(11)

typedef void (*any_fn)(void);
/* Per slot, by function id; written in this order (tracking starts at decrypt_init, so
 * everything that ends it or feeds it is in place first). */
static const int order[] = {OSSL_FUNC_CIPHER_FREECTX,        OSSL_FUNC_CIPHER_ENCRYPT_INIT,
                            OSSL_FUNC_CIPHER_SET_CTX_PARAMS, OSSL_FUNC_CIPHER_UPDATE,
                            OSSL_FUNC_CIPHER_FINAL,          OSSL_FUNC_CIPHER_CIPHER,
                            OSSL_FUNC_CIPHER_DECRYPT_INIT};
#define W(i)                                                                                       \
    {                                                                                              \
        [OSSL_FUNC_CIPHER_FREECTX] = (any_fn)free_##i,                                             \
        [OSSL_FUNC_CIPHER_ENCRYPT_INIT] = (any_fn)einit_##i,                                       \
        [OSSL_FUNC_CIPHER_SET_CTX_PARAMS] = (any_fn)setp_##i,                                      \
        [OSSL_FUNC_CIPHER_UPDATE] = (any_fn)update_##i,                                            \
        [OSSL_FUNC_CIPHER_FINAL] = (any_fn)final_##i,                                              \
        [OSSL_FUNC_CIPHER_CIPHER] = (any_fn)cipher_##i,                                            \
        [OSSL_FUNC_CIPHER_DECRYPT_INIT] = (any_fn)dinit_##i,                                       \
    }
static const any_fn wraps[MAX_TSLOTS][TLSM_TBL_FN_MAX + 1] = {W(0), W(1), W(2), W(3), W(4),  W(5),
                                                              W(6), W(7), W(8), W(9), W(10), W(11)};

bool tlsm_tslot_install(struct tslot *s, int i)
{
    for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++)
        if (!tlsm_tables_set(&s->copy, &s->t, order[k], wraps[i][order[k]])) {
            for (size_t u = k; u-- > 0;) /* undo in reverse: decrypt_init never got ours */
                tlsm_tables_set(&s->copy, &s->t, order[u], NULL);
            return false;
        }
    return true;
}
