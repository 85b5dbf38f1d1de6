/* abi_ossl3.c: the loader of OpenSSL 3.x copies: the entry points of abi.h by 3.x's names
 * (EVP_CIPHER_get_nid, ERR_new/ERR_set_debug/ERR_set_error, OPENSSL_CPU_INFO, ...). The only
 * file that may name an OpenSSL-3-only call of a program's copy. */
/* ENGINE_get_id/ENGINE_get_name are deprecated in 3.x but still exported: a copy's engines
 * are named through them (core/prov.c), so their declarations must not warn. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "forward/abi.h"

#include <openssl/bio.h>
#include <openssl/core.h>
#include <openssl/engine.h>
#include <openssl/provider.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>

enum {
    RAW_ERR_NEW,
    RAW_ERR_SET_DEBUG,
    RAW_ERR_SET_ERROR,
    RAW_RBIO,
    RAW_BIO_CTRL,
    RAW_BIO_TYPE,
    RAW_WBIO
};

static void put_error3(const struct tlsm_abi *a, int lib, int reason, const char *file, int line,
                       const char *func)
{
    __typeof__(&ERR_new) err_new = (__typeof__(err_new))a->raw[RAW_ERR_NEW];
    __typeof__(&ERR_set_debug) debug = (__typeof__(debug))a->raw[RAW_ERR_SET_DEBUG];
    __typeof__(&ERR_set_error) set = (__typeof__(set))a->raw[RAW_ERR_SET_ERROR];
    if (!err_new || !debug || !set)
        return;
    err_new();
    debug(file, line, func);
    set(lib, reason, NULL);
}

/* BIO_get_ktls_recv(b) and BIO_get_ktls_send(b) are these ctrls in OpenSSL 3 (macros; 0 when
 * built without kTLS). Only on OpenSSL's own socket BIO (the only one kTLS runs on): a
 * program's own BIO type would see a ctrl call it never asked for. */
static int ktls_ctrl3(const struct tlsm_abi *a, BIO *b, int cmd)
{
    __typeof__(&BIO_ctrl) ctrl = (__typeof__(ctrl))a->raw[RAW_BIO_CTRL];
    __typeof__(&BIO_method_type) type = (__typeof__(type))a->raw[RAW_BIO_TYPE];
    if (!ctrl || !type)
        return 0;
    return b && type(b) == BIO_TYPE_SOCKET && ctrl(b, cmd, 0, NULL) > 0;
}

static int ktls_recv3(const struct tlsm_abi *a, const struct ssl_st *s)
{
    __typeof__(&SSL_get_rbio) rbio_of = (__typeof__(rbio_of))a->raw[RAW_RBIO];
    return rbio_of && ktls_ctrl3(a, rbio_of(s), BIO_CTRL_GET_KTLS_RECV);
}

static int ktls_send3(const struct tlsm_abi *a, const struct ssl_st *s)
{
    __typeof__(&SSL_get_wbio) wbio_of = (__typeof__(wbio_of))a->raw[RAW_WBIO];
    return wbio_of && ktls_ctrl3(a, wbio_of(s), BIO_CTRL_GET_KTLS_SEND);
}

static void cpuinfo3(const struct tlsm_abi *a, char *buf, size_t cap)
{
    const char *s = a->version_text ? a->version_text(OPENSSL_CPU_INFO) : NULL;
    snprintf(buf, cap, "%s", s ? s : "");
}

/* Entry points typed from OpenSSL 3's own prototypes: a mismatch is a compile error. */
#define ENTRY(field, name, type)                                                                   \
    do {                                                                                           \
        __typeof__(&name) fn_ = (__typeof__(&name))lookup(h, #name);                               \
        a->field = (type)fn_;                                                                      \
    } while (0)
#define RAW(slot, name) a->raw[slot] = (void (*)(void))lookup(h, #name)

void tlsm_abi_load_ossl3(struct tlsm_abi *a, void *h, tlsm_abi_lookup_fn lookup)
{
    ENTRY(ssl_version, SSL_get_version, const char *(*)(const struct ssl_st *));
    ENTRY(ssl_current_cipher, SSL_get_current_cipher,
          const struct ssl_cipher_st *(*)(const struct ssl_st *));
    ENTRY(ssl_cipher_name, SSL_CIPHER_get_name, const char *(*)(const struct ssl_cipher_st *));
    ENTRY(ssl_is_server, SSL_is_server, int (*)(const struct ssl_st *));
    ENTRY(ssl_error, SSL_get_error, int (*)(const struct ssl_st *, int));
    ENTRY(ssl_init_finished, SSL_is_init_finished, int (*)(const struct ssl_st *));
    ENTRY(ssl_session_reused, SSL_session_reused, int (*)(const struct ssl_st *));
    ENTRY(x509_pubkey, X509_get0_pubkey, struct evp_pkey_st * (*)(const struct x509_st *));
    ENTRY(pkey_base_id, EVP_PKEY_get_base_id, int (*)(const struct evp_pkey_st *));
    ENTRY(pkey_bits, EVP_PKEY_get_bits, int (*)(const struct evp_pkey_st *));
    ENTRY(pkey_is_a, EVP_PKEY_is_a, int (*)(const struct evp_pkey_st *, const char *));
    ENTRY(pkey_ctx_pkey, EVP_PKEY_CTX_get0_pkey,
          struct evp_pkey_st * (*)(struct evp_pkey_ctx_st *));
    ENTRY(cipher_nid, EVP_CIPHER_get_nid, int (*)(const struct evp_cipher_st *));
    ENTRY(ctx_cipher, EVP_CIPHER_CTX_get0_cipher,
          const struct evp_cipher_st *(*)(const struct evp_cipher_ctx_st *));
    ENTRY(ctx_encrypting, EVP_CIPHER_CTX_is_encrypting, int (*)(const struct evp_cipher_ctx_st *));
    ENTRY(ctx_ctrl, EVP_CIPHER_CTX_ctrl, int (*)(struct evp_cipher_ctx_st *, int, int, void *));
    ENTRY(version_text, OpenSSL_version, const char *(*)(int));
    ENTRY(cipher_provider, EVP_CIPHER_get0_provider,
          const struct ossl_provider_st *(*)(const struct evp_cipher_st *));
    ENTRY(provider_name, OSSL_PROVIDER_get0_name, const char *(*)(const struct ossl_provider_st *));
    ENTRY(provider_params, OSSL_PROVIDER_get_params,
          int (*)(const struct ossl_provider_st *, struct ossl_param_st *));
    ENTRY(provider_dispatch, OSSL_PROVIDER_get0_dispatch,
          const struct ossl_dispatch_st *(*)(const struct ossl_provider_st *));
    ENTRY(engine_id, ENGINE_get_id, const char *(*)(const struct engine_st *));
    ENTRY(engine_name, ENGINE_get_name, const char *(*)(const struct engine_st *));
    RAW(RAW_ERR_NEW, ERR_new);
    RAW(RAW_ERR_SET_DEBUG, ERR_set_debug);
    RAW(RAW_ERR_SET_ERROR, ERR_set_error);
    RAW(RAW_RBIO, SSL_get_rbio);
    RAW(RAW_BIO_CTRL, BIO_ctrl);
    RAW(RAW_BIO_TYPE, BIO_method_type);
    RAW(RAW_WBIO, SSL_get_wbio);
    a->cpuinfo = cpuinfo3;
    a->put_error = put_error3;
    a->ssl_ktls_recv = a->raw[RAW_RBIO] ? ktls_recv3 : NULL;
    a->ssl_ktls_send = a->raw[RAW_WBIO] ? ktls_send3 : NULL;
}
