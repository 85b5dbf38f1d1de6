/* hook_gcm.c: libcrypto's GCM internals, both directions. They tell which code path carried
 * the bytes: with AES-NI/ARMv8 AES the stitched kernel bypasses them for all but partial
 * blocks; table AES goes through _decrypt/_encrypt, vector AES through the _ctr32 ones. Each
 * call also notes the context's AES and GHASH function pointers (impl.c): what code ran. The
 * four hooks are two macros: same arguments but the _ctr32 stream, same bookkeeping. A call
 * of no bytes carries none: OpenSSL 3 closes the AAD with _decrypt(ctx, NULL, NULL, 0) before
 * its stitched AES-NI/ARMv8 kernel in every record, then calls _ctr32 on the same context for
 * the tail (0 bytes or more). It is not timed and does not make the record's gcm_fn "both"
 * (docs/trace-format.md: the entry that carried bytes). */
#include "trace/cputime.h"
#include "hooks/hook.h"
#include "core/impl.h"
#include "core/recsm.h"

#include <openssl/modes.h>

/* _decrypt/_encrypt: a call of no bytes (every record's AAD close, above) is forwarded by a
 * tail call with no register saved; the _ctr32 call that follows it on the same context notes
 * the evidence. full_X is the rest. */
#define GCM_HOOK(name, which)                                                                      \
    static                                                                                         \
        __attribute__((noinline)) int full_##name(GCM128_CONTEXT *ctx, const unsigned char *in,    \
                                                  unsigned char *out, size_t len, const void *ra)  \
    {                                                                                              \
        struct tlsm_fwd f = tlsm_forward(TLSM_FN_##name, ra);                                      \
        tlsm_th.calls[TLSM_FN_##name]++;                                                           \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, -1;                                                             \
        struct tlsm_rsm_ctx *rec = tlsm_th.rec_cur;                                                \
        if (!rec || !tlsm_tracing(&tlsm_th))                                                       \
            return TLSM_REAL(name, f)(ctx, in, out, len);                                          \
        tlsm_impl_note_gcm(f.target, ctx, NULL);                                                   \
        if (!len)                                                                                  \
            return TLSM_REAL(name, f)(ctx, in, out, len);                                          \
        uint64_t t0 = tlsm_cpu_now(&tlsm_th);                                                      \
        int ret = TLSM_REAL(name, f)(ctx, in, out, len);                                           \
        tlsm_rsm_gcm(rec, tlsm_cpu_now(&tlsm_th) - t0, len, which);                                \
        return ret;                                                                                \
    }                                                                                              \
    TLSM_EXPORT int name(GCM128_CONTEXT *ctx, const unsigned char *in, unsigned char *out,         \
                         size_t len)                                                               \
    {                                                                                              \
        if (!len) {                                                                                \
            const struct tlsm_fwd *f =                                                             \
                tlsm_forward_fast(TLSM_FN_##name, __builtin_return_address(0));                    \
            if (f) {                                                                               \
                tlsm_th.calls[TLSM_FN_##name]++;                                                   \
                return TLSM_REAL(name, *f)(ctx, in, out, len);                                     \
            }                                                                                      \
        }                                                                                          \
        return full_##name(ctx, in, out, len, __builtin_return_address(0));                        \
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
