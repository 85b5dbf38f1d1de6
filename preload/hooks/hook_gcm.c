/* hook_gcm.c: libcrypto's GCM internals. They tell which code path carried the bytes:
 * with AES-NI/ARMv8 AES the stitched kernel bypasses them for all but partial blocks;
 * table AES goes through _decrypt, vector AES through _decrypt_ctr32. Each call also notes
 * the context's AES and GHASH function pointers (impl.c): what code ran. */
#include "trace/cputime.h"
#include "hooks/hook.h"
#include "core/impl.h"
#include "core/recsm.h"

#include <openssl/modes.h>

TLSM_EXPORT int CRYPTO_gcm128_decrypt(GCM128_CONTEXT *ctx, const unsigned char *in,
                                      unsigned char *out, size_t len)
{
    TLSM_HOOK_ENTER(CRYPTO_gcm128_decrypt, f);
    if (!f.fn)
        return errno = ENOSYS, -1;
    struct tlsm_rsm_ctx *rec = tlsm_th.rec_cur;
    if (!rec || !tlsm_tracing(&tlsm_th))
        return TLSM_REAL(CRYPTO_gcm128_decrypt, f)(ctx, in, out, len);
    tlsm_impl_note_gcm(f.target, ctx, NULL);
    uint64_t t0 = tlsm_cpu_now(&tlsm_th);
    int ret = TLSM_REAL(CRYPTO_gcm128_decrypt, f)(ctx, in, out, len);
    tlsm_rsm_gcm(rec, tlsm_cpu_now(&tlsm_th) - t0, len, TLSM_RSM_GCM_PLAIN);
    return ret;
}

TLSM_EXPORT int CRYPTO_gcm128_decrypt_ctr32(GCM128_CONTEXT *ctx, const unsigned char *in,
                                            unsigned char *out, size_t len, ctr128_f stream)
{
    TLSM_HOOK_ENTER(CRYPTO_gcm128_decrypt_ctr32, f);
    if (!f.fn)
        return errno = ENOSYS, -1;
    struct tlsm_rsm_ctx *rec = tlsm_th.rec_cur;
    if (!rec || !tlsm_tracing(&tlsm_th))
        return TLSM_REAL(CRYPTO_gcm128_decrypt_ctr32, f)(ctx, in, out, len, stream);
    tlsm_impl_note_gcm(f.target, ctx, (const void *)stream);
    uint64_t t0 = tlsm_cpu_now(&tlsm_th);
    int ret = TLSM_REAL(CRYPTO_gcm128_decrypt_ctr32, f)(ctx, in, out, len, stream);
    tlsm_rsm_gcm(rec, tlsm_cpu_now(&tlsm_th) - t0, len, TLSM_RSM_GCM_CTR32);
    return ret;
}
