/* fwd.c: a forward-only LD_PRELOAD over the functions tlsmeter hooks: the bench's baseline. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <openssl/evp.h>
#include <openssl/modes.h>
#include <openssl/ssl.h>

/* Built by scripts/bench (cc -shared -fPIC), never by the Makefile's test-program rule. Each
 * hook calls the next definition through a pointer resolved once with dlsym(RTLD_NEXT): the
 * cheapest interposition there is, so "tlsmeter minus this" is tlsmeter's own bookkeeping.
 * With FWD_COUNT=1 the total number of hooked calls goes to stderr at exit.
 * The list follows preload/base/hooks.def (families S, E, G). */

static int counting;
static unsigned long calls;

#define COUNT()                                                                                    \
    do {                                                                                           \
        if (counting)                                                                              \
            __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);                                       \
    } while (0)

/* FWD(ret, name, (params), (args)): the hook and its lazily resolved real function. */
#define FWD(ret, name, params, args)                                                               \
    static __typeof__(&name) real_##name;                                                          \
    ret name params                                                                                \
    {                                                                                              \
        __typeof__(&name) f = __atomic_load_n(&real_##name, __ATOMIC_ACQUIRE);                     \
        if (!f) {                                                                                  \
            f = (__typeof__(&name))dlsym(RTLD_NEXT, #name);                                        \
            __atomic_store_n(&real_##name, f, __ATOMIC_RELEASE);                                   \
        }                                                                                          \
        COUNT();                                                                                   \
        return f args;                                                                             \
    }

FWD(int, SSL_read, (SSL * s, void *buf, int num), (s, buf, num))
FWD(int, SSL_read_ex, (SSL * s, void *buf, size_t num, size_t *n), (s, buf, num, n))
FWD(int, SSL_peek, (SSL * s, void *buf, int num), (s, buf, num))
FWD(int, SSL_peek_ex, (SSL * s, void *buf, size_t num, size_t *n), (s, buf, num, n))
FWD(int, SSL_do_handshake, (SSL * s), (s))
FWD(int, SSL_connect, (SSL * s), (s))
FWD(int, SSL_accept, (SSL * s), (s))
FWD(void, SSL_free, (SSL * s), (s))
FWD(int, EVP_CipherInit_ex,
    (EVP_CIPHER_CTX * c, const EVP_CIPHER *t, ENGINE *e, const unsigned char *k,
     const unsigned char *iv, int enc),
    (c, t, e, k, iv, enc))
FWD(int, EVP_CipherInit_ex2,
    (EVP_CIPHER_CTX * c, const EVP_CIPHER *t, const unsigned char *k, const unsigned char *iv,
     int enc, const OSSL_PARAM *p),
    (c, t, k, iv, enc, p))
FWD(int, EVP_DecryptInit_ex,
    (EVP_CIPHER_CTX * c, const EVP_CIPHER *t, ENGINE *e, const unsigned char *k,
     const unsigned char *iv),
    (c, t, e, k, iv))
FWD(int, EVP_DecryptInit_ex2,
    (EVP_CIPHER_CTX * c, const EVP_CIPHER *t, const unsigned char *k, const unsigned char *iv,
     const OSSL_PARAM *p),
    (c, t, k, iv, p))
FWD(int, EVP_CIPHER_CTX_ctrl, (EVP_CIPHER_CTX * c, int type, int arg, void *ptr),
    (c, type, arg, ptr))
FWD(int, EVP_CipherUpdate,
    (EVP_CIPHER_CTX * c, unsigned char *out, int *outl, const unsigned char *in, int inl),
    (c, out, outl, in, inl))
FWD(int, EVP_DecryptUpdate,
    (EVP_CIPHER_CTX * c, unsigned char *out, int *outl, const unsigned char *in, int inl),
    (c, out, outl, in, inl))
FWD(int, EVP_CipherFinal_ex, (EVP_CIPHER_CTX * c, unsigned char *out, int *outl), (c, out, outl))
FWD(int, EVP_DecryptFinal_ex, (EVP_CIPHER_CTX * c, unsigned char *out, int *outl), (c, out, outl))
FWD(int, EVP_Cipher,
    (EVP_CIPHER_CTX * c, unsigned char *out, const unsigned char *in, unsigned int inl),
    (c, out, in, inl))
FWD(int, EVP_CIPHER_CTX_reset, (EVP_CIPHER_CTX * c), (c))
FWD(void, EVP_CIPHER_CTX_free, (EVP_CIPHER_CTX * c), (c))
FWD(int, CRYPTO_gcm128_decrypt,
    (GCM128_CONTEXT * g, const unsigned char *in, unsigned char *out, size_t len),
    (g, in, out, len))
FWD(int, CRYPTO_gcm128_decrypt_ctr32,
    (GCM128_CONTEXT * g, const unsigned char *in, unsigned char *out, size_t len, ctr128_f stream),
    (g, in, out, len, stream))

__attribute__((constructor)) static void fwd_init(void)
{
    const char *c = getenv("FWD_COUNT");

    counting = c && c[0] == '1';
}

__attribute__((destructor)) static void fwd_fini(void)
{
    if (counting)
        fprintf(stderr, "fwd: calls=%lu\n", calls);
}
