/* hook_evp.c: the EVP calls libssl makes per record. Each hook forwards unchanged; for
 * contexts record.c tracks it reports the call. Calls nested inside another EVP hook
 * (EVP_CipherUpdate tail-calling EVP_DecryptUpdate) are the same operation: forwarded only. */
#include "base/clock.h"
#include "hooks/hook.h"
#include "core/record.h"
#include "reroute/reroute.h"

#include <openssl/evp.h>

/* Around a tracked context's data call: GCM inner calls during it belong to its record (if
 * one is open: a record only begins at Init or ctrl, never inside a data call). */
#define DATA_CALL_BEGIN(st)                                                                        \
    struct tlsm_rsm_ctx *outer = tlsm_th.rec_cur;                                                  \
    tlsm_th.rec_cur = (st)->rsm.in_rec ? &(st)->rsm : NULL;                                        \
    tlsm_th.evp_depth++
#define DATA_CALL_END()                                                                            \
    tlsm_th.evp_depth--;                                                                           \
    tlsm_th.rec_cur = outer

/* Untraced: set-up not finished, our own call, or nested inside another EVP hook. */
static inline __attribute__((always_inline)) bool untraced_evp(void)
{
    return !tlsm_tracing(&tlsm_th) || tlsm_th.evp_depth;
}

#define INIT_HOOK(name, params, args, cipher, key, iv, enc, prm)                                   \
    TLSM_EXPORT int name params                                                                    \
    {                                                                                              \
        TLSM_HOOK_ENTER(name, f);                                                                  \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, 0;                                                              \
        if (untraced_evp())                                                                        \
            return TLSM_REAL(name, f) args;                                                        \
        tlsm_rec_on_init(ctx, cipher, key, iv, enc, __builtin_return_address(0), f.target,         \
                         tlsm_now());                                                              \
        tlsm_th.evp_depth++;                                                                       \
        int ret = TLSM_REAL(name, f) args;                                                         \
        tlsm_th.evp_depth--;                                                                       \
        int saved = errno;                                                                         \
        tlsm_rec_after_init(ctx, cipher, key, iv, enc, prm, __builtin_return_address(0), f.target, \
                            ret);                                                                  \
        errno = saved;                                                                             \
        return ret;                                                                                \
    }

INIT_HOOK(EVP_CipherInit_ex,
          (EVP_CIPHER_CTX * ctx, const EVP_CIPHER *cipher, ENGINE *impl, const unsigned char *key,
           const unsigned char *iv, int enc),
          (ctx, cipher, impl, key, iv, enc), cipher, key, iv, enc, NULL)
INIT_HOOK(EVP_CipherInit_ex2,
          (EVP_CIPHER_CTX * ctx, const EVP_CIPHER *cipher, const unsigned char *key,
           const unsigned char *iv, int enc, const OSSL_PARAM params[]),
          (ctx, cipher, key, iv, enc, params), cipher, key, iv, enc, params)
INIT_HOOK(EVP_DecryptInit_ex,
          (EVP_CIPHER_CTX * ctx, const EVP_CIPHER *cipher, ENGINE *impl, const unsigned char *key,
           const unsigned char *iv),
          (ctx, cipher, impl, key, iv), cipher, key, iv, 0, NULL)
INIT_HOOK(EVP_DecryptInit_ex2,
          (EVP_CIPHER_CTX * ctx, const EVP_CIPHER *cipher, const unsigned char *key,
           const unsigned char *iv, const OSSL_PARAM params[]),
          (ctx, cipher, key, iv, params), cipher, key, iv, 0, params)

TLSM_EXPORT int EVP_CIPHER_CTX_ctrl(EVP_CIPHER_CTX *ctx, int type, int arg, void *ptr)
{
    TLSM_HOOK_ENTER(EVP_CIPHER_CTX_ctrl, f);
    if (!f.fn)
        return errno = ENOSYS, 0;
    struct tlsm_rec_state *st = untraced_evp() ? NULL : tlsm_rec_lookup(ctx);
    if (!st)
        return TLSM_REAL(EVP_CIPHER_CTX_ctrl, f)(ctx, type, arg, ptr);
    if (type == EVP_CTRL_AEAD_TLS1_AAD)
        tlsm_rec_on_ctrl(st, type, arg, ptr, tlsm_now());
    int tag_ret; /* a rerouted seal's tag (TLS 1.3 GET_TAG after Final): the backend's */
    if (type == EVP_CTRL_AEAD_GET_TAG && st->routed &&
        tlsm_reroute_tag(st, type, arg, ptr, &tag_ret))
        return tag_ret;
    tlsm_th.evp_depth++;
    int ret = TLSM_REAL(EVP_CIPHER_CTX_ctrl, f)(ctx, type, arg, ptr);
    tlsm_th.evp_depth--;
    int saved = errno;
    tlsm_rec_after_ctrl(st, type, arg, ptr, ret);
    errno = saved;
    return ret;
}

/* The Update and Final hooks are split: the hook forwards with a tail call when the call is
 * not traced (the nested EVP_DecryptUpdate of every EVP_CipherUpdate, untracked contexts, and
 * TLSMETER_DISABLE=1), so that path saves and restores no registers; the traced part is a
 * function of its own. */
#define UPDATE_HOOK(name)                                                                          \
    static __attribute__((noinline)) int traced_##name(void *fn, EVP_CIPHER_CTX *ctx,              \
                                                       unsigned char *out, int *outl,              \
                                                       const unsigned char *in, int inl)           \
    {                                                                                              \
        struct tlsm_rec_state *st = tlsm_rec_lookup(ctx);                                          \
        if (!st)                                                                                   \
            return ((__typeof__(&name))fn)(ctx, out, outl, in, inl);                               \
        tlsm_rec_before_update(st, out, in, inl);                                                  \
        DATA_CALL_BEGIN(st);                                                                       \
        int ret = st->rsm.in_rec && st->routed                                                     \
                      ? tlsm_reroute_update(st, (tlsm_update_fn)fn, ctx, out, outl, in, inl)       \
                      : ((__typeof__(&name))fn)(ctx, out, outl, in, inl);                          \
        DATA_CALL_END();                                                                           \
        int saved = errno;                                                                         \
        tlsm_rec_on_update(st, out, outl, in, inl, ret);                                           \
        errno = saved;                                                                             \
        return ret;                                                                                \
    }                                                                                              \
    TLSM_EXPORT int name(EVP_CIPHER_CTX *ctx, unsigned char *out, int *outl,                       \
                         const unsigned char *in, int inl)                                         \
    {                                                                                              \
        TLSM_HOOK_ENTER(name, f);                                                                  \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, 0;                                                              \
        if (untraced_evp())                                                                        \
            return TLSM_REAL(name, f)(ctx, out, outl, in, inl);                                    \
        return traced_##name(f.fn, ctx, out, outl, in, inl);                                       \
    }

UPDATE_HOOK(EVP_CipherUpdate)
UPDATE_HOOK(EVP_DecryptUpdate)

#define FINAL_HOOK(name)                                                                           \
    static __attribute__((noinline)) int traced_##name(void *fn, EVP_CIPHER_CTX *ctx,              \
                                                       unsigned char *outm, int *outl)             \
    {                                                                                              \
        struct tlsm_rec_state *st = tlsm_rec_lookup(ctx);                                          \
        if (!st)                                                                                   \
            return ((__typeof__(&name))fn)(ctx, outm, outl);                                       \
        DATA_CALL_BEGIN(st);                                                                       \
        int ret = st->rsm.in_rec && st->routed                                                     \
                      ? tlsm_reroute_final(st, (tlsm_final_fn)fn, ctx, outm, outl)                 \
                      : ((__typeof__(&name))fn)(ctx, outm, outl);                                  \
        DATA_CALL_END();                                                                           \
        int saved = errno;                                                                         \
        tlsm_rec_on_final(st, ret);                                                                \
        errno = saved;                                                                             \
        return ret;                                                                                \
    }                                                                                              \
    TLSM_EXPORT int name(EVP_CIPHER_CTX *ctx, unsigned char *outm, int *outl)                      \
    {                                                                                              \
        TLSM_HOOK_ENTER(name, f);                                                                  \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, 0;                                                              \
        if (untraced_evp())                                                                        \
            return TLSM_REAL(name, f)(ctx, outm, outl);                                            \
        return traced_##name(f.fn, ctx, outm, outl);                                               \
    }

FINAL_HOOK(EVP_CipherFinal_ex)
FINAL_HOOK(EVP_DecryptFinal_ex)

TLSM_EXPORT int EVP_Cipher(EVP_CIPHER_CTX *ctx, unsigned char *out, const unsigned char *in,
                           unsigned int inl)
{
    TLSM_HOOK_ENTER(EVP_Cipher, f);
    if (!f.fn)
        return errno = ENOSYS, -1;
    struct tlsm_rec_state *st = untraced_evp() ? NULL : tlsm_rec_lookup(ctx);
    if (!st)
        return TLSM_REAL(EVP_Cipher, f)(ctx, out, in, inl);
    DATA_CALL_BEGIN(st);
    int ret = st->rsm.in_rec && st->routed
                  ? tlsm_reroute_cipher(st, (tlsm_cipher_fn)f.fn, ctx, out, in, inl)
                  : TLSM_REAL(EVP_Cipher, f)(ctx, out, in, inl);
    DATA_CALL_END();
    int saved = errno;
    tlsm_rec_on_cipher(st, out, (int)inl, ret);
    errno = saved;
    return ret;
}

/* Forget before forwarding: once freed, another thread may get the same address. */
TLSM_EXPORT int EVP_CIPHER_CTX_reset(EVP_CIPHER_CTX *ctx)
{
    TLSM_HOOK_ENTER(EVP_CIPHER_CTX_reset, f);
    if (!f.fn)
        return errno = ENOSYS, 0;
    if (tlsm_tracing(&tlsm_th))
        tlsm_rec_forget(ctx);
    return TLSM_REAL(EVP_CIPHER_CTX_reset, f)(ctx);
}

TLSM_EXPORT void EVP_CIPHER_CTX_free(EVP_CIPHER_CTX *ctx)
{
    TLSM_HOOK_ENTER(EVP_CIPHER_CTX_free, f);
    if (!f.fn)
        return;
    if (tlsm_tracing(&tlsm_th))
        tlsm_rec_forget(ctx);
    TLSM_REAL(EVP_CIPHER_CTX_free, f)(ctx);
}
