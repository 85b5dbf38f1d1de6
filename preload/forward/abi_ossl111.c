/* abi_ossl111.c: the loader of OpenSSL 1.1.1 copies: the entry points of abi.h by 1.1.1's
 * names (EVP_CIPHER_nid, EVP_CIPHER_CTX_cipher, EVP_CIPHER_CTX_encrypting, ERR_put_error).
 * The prototypes are 1.1.1w's (include/openssl/{ssl,evp,err,crypto}.h), written out here:
 * the build sees OpenSSL 3's headers, where these names are macros or absent. 1.1.1 has no
 * OPENSSL_CPU_INFO and does not export its capability words (OPENSSL_ia32cap_P,
 * OPENSSL_armcap_P are hidden), so cpuinfo computes them as 1.1.1's OPENSSL_cpuid_setup
 * does (arch.h tlsm_arch_ossl111_cpuinfo). */
#include "forward/abi.h"
#include "arch/arch.h"

enum { RAW_PUT_ERROR };

/* void ERR_put_error(int lib, int func, int reason, const char *file, int line); 1.1.1 has
 * function codes where 3.x has names: 0 is "no function" (ERR_PUT_error's own default). */
typedef void (*put_error_fn)(int lib, int func, int reason, const char *file, int line);

static void put_error111(const struct tlsm_abi *a, int lib, int reason, const char *file, int line,
                         const char *func)
{
    put_error_fn put = (put_error_fn)a->raw[RAW_PUT_ERROR];
    (void)func;
    /* 1.1.1 packs reasons into 12 bits (ERR_PACK): a wider 3.x reason would alias. */
    if (put)
        put(lib & 0xff, 0, reason & 0xfff, file, line);
}

/* 1.1.1 keeps its capability words hidden: they are computed the way its own start-up does
 * (preload/arch/ARCH/ossl111caps.c). */
static void cpuinfo111(const struct tlsm_abi *a, char *buf, size_t cap)
{
    (void)a;
    tlsm_arch_ossl111_cpuinfo(buf, cap);
}

/* e_aes.c aes_gcm_tls_cipher / aes_ccm_tls_cipher: decryption returns the plaintext length,
 * encryption the whole record (nonce, ciphertext, tag); e_chacha20_poly1305.c (no explicit
 * nonce) returns the whole record both ways (tests/unit/evp/ossl111-tls12-*). */
static int tls_cipher_ret111(int in_len, int eiv, bool enc)
{
    return enc || !eiv ? in_len : in_len - eiv - 16;
}

#define ENTRY(field, name) a->field = (__typeof__(a->field))lookup(h, name)

void tlsm_abi_load_ossl111(struct tlsm_abi *a, void *h, tlsm_abi_lookup_fn lookup)
{
    /* Same names and prototypes as in 3.x. */
    ENTRY(ssl_version, "SSL_get_version");
    ENTRY(ssl_current_cipher, "SSL_get_current_cipher");
    ENTRY(ssl_cipher_name, "SSL_CIPHER_get_name");
    ENTRY(ssl_is_server, "SSL_is_server");
    ENTRY(ssl_error, "SSL_get_error");
    ENTRY(ssl_init_finished, "SSL_is_init_finished");
    ENTRY(version_text, "OpenSSL_version");
    ENTRY(ssl_session_reused, "SSL_session_reused");
    ENTRY(x509_pubkey, "X509_get0_pubkey");
    /* 1.1.1's names of 3.x's EVP_PKEY_get_base_id/get_bits; no EVP_PKEY_is_a (no providers). */
    ENTRY(pkey_base_id, "EVP_PKEY_base_id");
    ENTRY(pkey_bits, "EVP_PKEY_bits");
    ENTRY(pkey_ctx_pkey, "EVP_PKEY_CTX_get0_pkey");
    /* 1.1.1's own: int EVP_CIPHER_nid(const EVP_CIPHER *);
     * const EVP_CIPHER *EVP_CIPHER_CTX_cipher(const EVP_CIPHER_CTX *);
     * int EVP_CIPHER_CTX_encrypting(const EVP_CIPHER_CTX *). */
    ENTRY(cipher_nid, "EVP_CIPHER_nid");
    ENTRY(ctx_cipher, "EVP_CIPHER_CTX_cipher");
    ENTRY(ctx_encrypting, "EVP_CIPHER_CTX_encrypting");
    ENTRY(ctx_ctrl, "EVP_CIPHER_CTX_ctrl");
    /* No providers; engines with the same names and prototypes as in 3.x. */
    ENTRY(engine_id, "ENGINE_get_id");
    ENTRY(engine_name, "ENGINE_get_name");
    a->raw[RAW_PUT_ERROR] = (void (*)(void))lookup(h, "ERR_put_error");
    a->put_error = put_error111;
    a->cpuinfo = cpuinfo111;
    a->tls_cipher_ret = tls_cipher_ret111;
    a->ssl_ktls_recv = NULL; /* kTLS came with 3.0 */
    a->ssl_ktls_send = NULL;
}
