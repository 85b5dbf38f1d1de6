/* hook_gcm.c: libcrypto's GCM internals, both directions. They tell which code path carried
 * the bytes: with AES-NI/ARMv8 AES the stitched kernel bypasses them for all but partial
 * blocks; table AES goes through _decrypt/_encrypt, vector AES through the _ctr32 ones. Each
 * call also notes the context's AES and GHASH function pointers (impl.c): what code ran. The
 * four hooks are one macro: same arguments but the _ctr32 stream, same bookkeeping. */
#include "trace/cputime.h"
#include "hooks/hook.h"
#include "core/impl.h"
#include "core/recsm.h"

#include <openssl/modes.h>

#define GCM_HOOK(name, which)                                                                      \
    TLSM_EXPORT int name(GCM128_CONTEXT *ctx, const unsigned char *in, unsigned char *out,         \
                         size_t len)                                                               \
    {                                                                                              \
        TLSM_HOOK_ENTER(name, f);                                                                  \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, -1;                                                             \
        struct tlsm_rsm_ctx *rec = tlsm_th.rec_cur;                                                \
        if (!rec || !tlsm_tracing(&tlsm_th))                                                       \
            return TLSM_REAL(name, f)(ctx, in, out, len);                                          \
        tlsm_impl_note_gcm(f.target, ctx, NULL);                                                   \
        uint64_t t0 = tlsm_cpu_now(&tlsm_th);                                                      \
        int ret = TLSM_REAL(name, f)(ctx, in, out, len);                                           \
        tlsm_rsm_gcm(rec, tlsm_cpu_now(&tlsm_th) - t0, len, which);                                \
        return ret;                                                                                \
    }

#define GCM_CTR32_HOOK(name, which)                                                                \
    TLSM_EXPORT int name(GCM128_CONTEXT *ctx, const unsigned char *in, unsigned char *out,         \
                         size_t len, ctr128_f stream)                                              \
    {                                                                                              \
        TLSM_HOOK_ENTER(name, f);                                                                  \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, -1;                                                             \
        struct tlsm_rsm_ctx *rec = tlsm_th.rec_cur;                                                \
        if (!rec || !tlsm_tracing(&tlsm_th))                                                       \
            return TLSM_REAL(name, f)(ctx, in, out, len, stream);                                  \
        tlsm_impl_note_gcm(f.target, ctx, (const void *)stream);                                   \
        uint64_t t0 = tlsm_cpu_now(&tlsm_th);                                                      \
        int ret = TLSM_REAL(name, f)(ctx, in, out, len, stream);                                   \
        tlsm_rsm_gcm(rec, tlsm_cpu_now(&tlsm_th) - t0, len, which);                                \
        return ret;                                                                                \
    }

GCM_HOOK(CRYPTO_gcm128_decrypt, TLSM_RSM_GCM_PLAIN)
GCM_HOOK(CRYPTO_gcm128_encrypt, TLSM_RSM_GCM_PLAIN)
GCM_CTR32_HOOK(CRYPTO_gcm128_decrypt_ctr32, TLSM_RSM_GCM_CTR32)
GCM_CTR32_HOOK(CRYPTO_gcm128_encrypt_ctr32, TLSM_RSM_GCM_CTR32)
