/* tests/unit/evprec.c: a test-only LD_PRELOAD recorder of the EVP calls libssl makes per
 * record, written as the data files tests/unit/recsm.c replays (tests/unit/evp/NAME.SIDE.evp).
 * Logs call kinds, context numbers, enc flags, sizes, return values and the public record
 * header fields (TLS 1.2 AAD type/length, TLS 1.3 header length, TLS 1.3 inner type and
 * padding): never key, nonce or plaintext bytes. Only calls from libssl are logged, as
 * the preload only tracks those. Build and use: tests/unit/evp/record.sh. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <openssl/evp.h>
#include <openssl/modes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Built against OpenSSL 3 or 1.1.1 headers (record.sh ROOT): 1.1.1 names the two calls
 * without "get"/"is". */
#if OPENSSL_VERSION_NUMBER < 0x30000000L
#define EVP_CIPHER_get_nid EVP_CIPHER_nid
#define EVP_CIPHER_CTX_is_encrypting EVP_CIPHER_CTX_encrypting
#endif

static FILE *out;
static int depth;
static const void *ctxs[256];
static int n_ctxs;
static const void *cur_ctx; /* the context of the data call in progress */
static int cur_tls13[256];  /* per context: the record in flight had a 5-byte AAD */

static int from_ssl(const void *ra)
{
    Dl_info di;
    return dladdr(ra, &di) && di.dli_fname && strstr(di.dli_fname, "libssl");
}

static int id_of(const void *ctx)
{
    for (int i = 0; i < n_ctxs; i++)
        if (ctxs[i] == ctx)
            return i + 1;
    if (n_ctxs == 256)
        return 0;
    ctxs[n_ctxs++] = ctx;
    return n_ctxs;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    if (!out) {
        const char *p = getenv("EVPREC_OUT");
        out = fopen(p ? p : "/dev/null", "a");
        if (!out)
            return;
        setvbuf(out, NULL, _IOLBF, 0);
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))
#define LOGGED(ra) (depth == 0 && from_ssl(ra))

static const char *cname(const EVP_CIPHER *c)
{
    return c ? OBJ_nid2sn(EVP_CIPHER_get_nid(c)) : "-";
}

static int init_common(const char *fn, EVP_CIPHER_CTX *ctx, const EVP_CIPHER *c,
                       const unsigned char *key, const unsigned char *iv, int enc, int ret,
                       const void *ra)
{
    if (LOGGED(ra))
        logf_("init %d %c%c%c %d %s ret=%d # %s\n", id_of(ctx), c ? 'c' : '-', key ? 'k' : '-',
              iv ? 'i' : '-', enc, cname(c), ret, fn);
    return ret;
}

#define INIT(name, enc_expr, params, args)                                                         \
    int name params                                                                                \
    {                                                                                              \
        const void *ra = __builtin_return_address(0);                                              \
        depth++;                                                                                   \
        int ret = REAL(name) args;                                                                 \
        depth--;                                                                                   \
        return init_common(#name, ctx, cipher, key, iv, enc_expr, ret, ra);                        \
    }
INIT(EVP_CipherInit_ex, enc,
     (EVP_CIPHER_CTX * ctx, const EVP_CIPHER *cipher, ENGINE *impl, const unsigned char *key,
      const unsigned char *iv, int enc),
     (ctx, cipher, impl, key, iv, enc))
INIT(EVP_DecryptInit_ex, 0,
     (EVP_CIPHER_CTX * ctx, const EVP_CIPHER *cipher, ENGINE *impl, const unsigned char *key,
      const unsigned char *iv),
     (ctx, cipher, impl, key, iv))
INIT(EVP_EncryptInit_ex, 1,
     (EVP_CIPHER_CTX * ctx, const EVP_CIPHER *cipher, ENGINE *impl, const unsigned char *key,
      const unsigned char *iv),
     (ctx, cipher, impl, key, iv))

int EVP_CIPHER_CTX_ctrl(EVP_CIPHER_CTX *ctx, int type, int arg, void *ptr)
{
    const void *ra = __builtin_return_address(0);
    int logged = LOGGED(ra);
    const unsigned char *a = ptr;
    int aad = logged && type == EVP_CTRL_AEAD_TLS1_AAD && arg == 13 && a;
    int rtype = aad ? a[8] : 0, rlen = aad ? a[11] << 8 | a[12] : 0;
    depth++;
    int ret = REAL(EVP_CIPHER_CTX_ctrl)(ctx, type, arg, ptr);
    depth--;
    if (aad)
        logf_("ctrl %d 0x%x %d ret=%d aad_type=%d aad_len=%d\n", id_of(ctx), type, arg, ret, rtype,
              rlen);
    else if (logged)
        logf_("ctrl %d 0x%x %d ret=%d\n", id_of(ctx), type, arg, ret);
    return ret;
}

/* TLS 1.3 inner plaintext: content type and zero padding at the end (public framing). */
static void tail(const unsigned char *p, int n, int *type, int *pad)
{
    int i = n - 1, stop = n > 256 ? n - 256 : 0;
    while (i >= stop && p[i] == 0)
        i--;
    *type = i >= stop ? p[i] : -1;
    *pad = i >= stop ? n - 1 - i : -1;
}

static int update_common(const char *fn, int enc, EVP_CIPHER_CTX *ctx, unsigned char *o, int *outl,
                         const unsigned char *in, int inl, const void *ra)
{
    __typeof__(&EVP_CipherUpdate) real = (__typeof__(&EVP_CipherUpdate))dlsym(RTLD_NEXT, fn);
    int logged = LOGGED(ra), id = logged ? id_of(ctx) : 0;
    int type = -1, pad = -1, hlen = -1;
    if (logged && !o && inl == 5 && in) {
        hlen = in[3] << 8 | in[4];
        cur_tls13[id & 255] = 1;
    }
    if (logged && o && enc == 1 && in && cur_tls13[id & 255])
        tail(in, inl, &type, &pad); /* sealed in place: read before the call */
    const void *outer = cur_ctx;
    cur_ctx = logged ? ctx : outer;
    depth++;
    int ret = real(ctx, o, outl, in, inl);
    depth--;
    cur_ctx = outer;
    if (!logged)
        return ret;
    int n = outl ? *outl : -1;
    if (o && enc != 1 && ret > 0 && cur_tls13[id & 255])
        tail(o, n, &type, &pad);
    if (!o)
        logf_("aad %d %d ret=%d hdr_len=%d\n", id, inl, ret, hlen);
    else
        logf_("update %d %d outl=%d ret=%d inner_type=%d pad=%d\n", id, inl, n, ret, type, pad);
    return ret;
}

static int enc_of(EVP_CIPHER_CTX *ctx, int fixed)
{
    return fixed >= 0 ? fixed : EVP_CIPHER_CTX_is_encrypting(ctx);
}

#define UPDATE(name, fixed)                                                                        \
    int name(EVP_CIPHER_CTX *ctx, unsigned char *o, int *outl, const unsigned char *in, int inl)   \
    {                                                                                              \
        return update_common(#name, enc_of(ctx, fixed), ctx, o, outl, in, inl,                     \
                             __builtin_return_address(0));                                         \
    }
UPDATE(EVP_CipherUpdate, -1)
UPDATE(EVP_DecryptUpdate, 0)
UPDATE(EVP_EncryptUpdate, 1)

int EVP_CipherFinal_ex(EVP_CIPHER_CTX *ctx, unsigned char *o, int *outl)
{
    const void *ra = __builtin_return_address(0);
    depth++;
    int ret = REAL(EVP_CipherFinal_ex)(ctx, o, outl);
    depth--;
    if (LOGGED(ra)) {
        int id = id_of(ctx);
        logf_("final %d ret=%d\n", id, ret);
        cur_tls13[id & 255] = 0;
    }
    return ret;
}

int EVP_Cipher(EVP_CIPHER_CTX *ctx, unsigned char *o, const unsigned char *in, unsigned int inl)
{
    const void *ra = __builtin_return_address(0);
    int logged = LOGGED(ra);
    const void *outer = cur_ctx;
    cur_ctx = logged ? ctx : outer;
    depth++;
    int ret = REAL(EVP_Cipher)(ctx, o, in, inl);
    depth--;
    cur_ctx = outer;
    if (logged)
        logf_("cipher %d %u out=%d ret=%d\n", id_of(ctx), inl, o != NULL, ret);
    return ret;
}

int EVP_CIPHER_CTX_reset(EVP_CIPHER_CTX *ctx)
{
    if (LOGGED(__builtin_return_address(0)))
        logf_("reset %d\n", id_of(ctx));
    return REAL(EVP_CIPHER_CTX_reset)(ctx);
}

void EVP_CIPHER_CTX_free(EVP_CIPHER_CTX *ctx)
{
    if (ctx && LOGGED(__builtin_return_address(0)))
        logf_("free %d\n", id_of(ctx));
    REAL(EVP_CIPHER_CTX_free)(ctx);
}

/* GCM inner calls come from libcrypto's provider: logged while a libssl data call runs. */
#define GCM(name, which, params, args)                                                             \
    int name params                                                                                \
    {                                                                                              \
        if (cur_ctx)                                                                               \
            logf_("gcm %d %s %zu\n", id_of(cur_ctx), which, len);                                  \
        return REAL(name) args;                                                                    \
    }
GCM(CRYPTO_gcm128_decrypt, "plain",
    (GCM128_CONTEXT * ctx, const unsigned char *in, unsigned char *o, size_t len),
    (ctx, in, o, len))
GCM(CRYPTO_gcm128_encrypt, "plain",
    (GCM128_CONTEXT * ctx, const unsigned char *in, unsigned char *o, size_t len),
    (ctx, in, o, len))
GCM(CRYPTO_gcm128_decrypt_ctr32, "ctr32",
    (GCM128_CONTEXT * ctx, const unsigned char *in, unsigned char *o, size_t len, ctr128_f stream),
    (ctx, in, o, len, stream))
GCM(CRYPTO_gcm128_encrypt_ctr32, "ctr32",
    (GCM128_CONTEXT * ctx, const unsigned char *in, unsigned char *o, size_t len, ctr128_f stream),
    (ctx, in, o, len, stream))
