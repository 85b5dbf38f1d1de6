/* abi.h: the OpenSSL ABIs tlsmeter speaks. One struct of typed entry points per loaded copy,
 * filled by the loader of that copy's ABI (abi_ossl3.c, abi_ossl111.c); which ABI a copy
 * speaks is decided once per object, here (tlsm_abi_decide), and nowhere else. Everything
 * tlsmeter asks a program's OpenSSL copy goes through this struct, so no OpenSSL-version
 * name appears outside the loaders. Types are the opaque OpenSSL structs, whose tags are the
 * same in 1.1.1 and 3.x; no OpenSSL header is needed to use it. */
#ifndef TLSM_ABI_H
#define TLSM_ABI_H

#include <stdbool.h>
#include <stddef.h>

struct ssl_st;
struct ssl_cipher_st;
struct bio_st;
struct evp_cipher_st;
struct evp_cipher_ctx_st;
struct x509_st;
struct evp_pkey_st;
struct evp_pkey_ctx_st;
struct ossl_provider_st;
struct ossl_param_st;
struct ossl_dispatch_st;
struct engine_st;

/* What a copy is. Only the first two are traced: the others are forwarded, left alone. */
enum tlsm_abi_kind {
    TLSM_ABI_UNKNOWN = 0, /* not described yet, or no OpenSSL at all */
    TLSM_ABI_OSSL3,       /* OpenSSL 3.x (providers; OPENSSL_version_major) */
    TLSM_ABI_OSSL111,     /* OpenSSL 1.1.1 (no providers; EVP_CIPHER_nid, ERR_put_error) */
    TLSM_ABI_OLD,         /* OpenSSL 1.1.0 and older: structures and calls not checked here */
    TLSM_ABI_FOREIGN,     /* an OpenSSL fork (BoringSSL, LibreSSL): otherlib.c names it */
};

/* OpenSSL_version's selectors that mean the same in 1.1.1 and 3.x. */
enum { TLSM_ABI_VERSION_TEXT = 0, TLSM_ABI_CFLAGS = 1, TLSM_ABI_PLATFORM = 3 };

struct tlsm_abi {
    enum tlsm_abi_kind kind;
    int major, minor; /* from the version text, 0 unknown */
    /* libssl (NULL in a libcrypto-only copy, or where the ABI has no such call) */
    const char *(*ssl_version)(const struct ssl_st *s);
    const struct ssl_cipher_st *(*ssl_current_cipher)(const struct ssl_st *s);
    const char *(*ssl_cipher_name)(const struct ssl_cipher_st *c);
    int (*ssl_is_server)(const struct ssl_st *s);
    int (*ssl_error)(const struct ssl_st *s, int ret);
    int (*ssl_init_finished)(const struct ssl_st *s);
    int (*ssl_session_reused)(const struct ssl_st *s);
    /* certificate keys (handshake parts, hooks/hook_hs.c) */
    struct evp_pkey_st *(*x509_pubkey)(const struct x509_st *x);
    int (*pkey_base_id)(const struct evp_pkey_st *pk);
    int (*pkey_bits)(const struct evp_pkey_st *pk);
    int (*pkey_is_a)(const struct evp_pkey_st *pk, const char *name); /* 3.x only */
    /* EVP_PKEY_CTX_get0_pkey (both ABIs): NULL for a KDF context (1.1.1's HKDF, TLS1-PRF) */
    struct evp_pkey_st *(*pkey_ctx_pkey)(struct evp_pkey_ctx_st *ctx);
    /* kTLS receive on the read BIO, send on the write BIO: 1 on, 0 off; NULL where the ABI
     * has no kTLS (1.1.1). */
    int (*ssl_ktls_recv)(const struct tlsm_abi *a, const struct ssl_st *s);
    int (*ssl_ktls_send)(const struct tlsm_abi *a, const struct ssl_st *s);
    /* libcrypto */
    int (*cipher_nid)(const struct evp_cipher_st *c);
    const struct evp_cipher_st *(*ctx_cipher)(const struct evp_cipher_ctx_st *ctx);
    int (*ctx_encrypting)(const struct evp_cipher_ctx_st *ctx);
    /* EVP_CIPHER_CTX_ctrl of the copy (same name and meaning in both ABIs): the reroute keeps
     * a sealing context's nonce counter in step and reads its tag (reroute/reroute.c). */
    int (*ctx_ctrl)(struct evp_cipher_ctx_st *ctx, int type, int arg, void *ptr);
    const char *(*version_text)(int which);
    /* Who decrypts a context's records (core/prov.c), asked once per cipher: its provider
     * (3.x: EVP_CIPHER_get0_provider, OSSL_PROVIDER_get0_name, _get_params, _get0_dispatch;
     * NULL in 1.1.1) and the ENGINE a context was bound to (ENGINE_get_id, ENGINE_get_name:
     * both ABIs, deprecated in 3.x but exported; NULL in a copy built without engines). */
    const struct ossl_provider_st *(*cipher_provider)(const struct evp_cipher_st *c);
    const char *(*provider_name)(const struct ossl_provider_st *p);
    int (*provider_params)(const struct ossl_provider_st *p, struct ossl_param_st *params);
    const struct ossl_dispatch_st *(*provider_dispatch)(const struct ossl_provider_st *p);
    const char *(*engine_id)(const struct engine_st *e);
    const char *(*engine_name)(const struct engine_st *e);
    /* The capability words the copy runs with, as 3.x's OPENSSL_CPU_INFO text
     * ("OPENSSL_ia32cap=0x..:0x.." / "OPENSSL_armcap=0x.."); "" when unknown. */
    void (*cpuinfo)(const struct tlsm_abi *a, char *buf, size_t cap);
    /* What this ABI's EVP_Cipher returns for a TLS 1.2 AEAD record of in_len bytes (explicit
     * nonce eiv bytes, 16-byte tag) when it succeeds; NULL: what a 3.x backend returns
     * (abi_ossl3.c). A record rerouted to a backend of the other ABI must return what the
     * program's copy would. */
    int (*tls_cipher_ret)(int in_len, int eiv, bool enc);
    /* Raise an error on the calling thread's queue of this copy, as its own code would. */
    void (*put_error)(const struct tlsm_abi *a, int lib, int reason, const char *file, int line,
                      const char *func);
    /* The loader's own: the copy's functions behind the entry points above. */
    void (*raw[7])(void);
};

struct tlsm_obj;
/* dlsym in the object's own scope, never our hooks; NULL when absent. */
typedef void *(*tlsm_abi_lookup_fn)(void *h, const char *name);

/* The one decision: which ABI the described object o speaks (h: its dlopen handle, may be
 * NULL). Fills o->version and o->abi (the matching loader's entry points; only kind for
 * copies left alone). Says once why an old copy is left alone. */
void tlsm_abi_decide(struct tlsm_obj *o, void *h, tlsm_abi_lookup_fn lookup);
/* The same rule from a version text alone, for objects no hook reached (blind.c reads it
 * from their read-only data): "OpenSSL 3.x" 3.x, "OpenSSL 1.1.1" 1.1.1, other "OpenSSL 1."
 * old, anything else unknown. */
enum tlsm_abi_kind tlsm_abi_of_text(const char *version);
/* Traced: its calls become records, connections, reads. */
static inline bool tlsm_abi_traced(const struct tlsm_abi *a)
{
    return a->kind == TLSM_ABI_OSSL3 || a->kind == TLSM_ABI_OSSL111;
}
/* Left alone: an old OpenSSL or a fork; its calls are forwarded and nothing else. */
static inline bool tlsm_abi_left_alone(const struct tlsm_abi *a)
{
    return a->kind == TLSM_ABI_OLD || a->kind == TLSM_ABI_FOREIGN;
}
/* Name of the ABI for the lib event ("3", "1.1.1", "old", "foreign", "unknown"). */
const char *tlsm_abi_name(enum tlsm_abi_kind k);

/* The layout of the copy's GCM and provider contexts that core/impl.c may read: only the
 * series whose structs were checked against a binary (docs/design.md, section 8), from the
 * version text the copy reports ("OpenSSL 3.5.9 29 Sep 2026") and its ABI; else NONE, and
 * nothing is read. */
enum tlsm_gcm_layout { TLSM_LAYOUT_NONE, TLSM_LAYOUT_30, TLSM_LAYOUT_35, TLSM_LAYOUT_111 };
enum tlsm_gcm_layout tlsm_abi_gcm_layout(const struct tlsm_abi *a, const char *version);
/* Its name for the lib event's gcm_layout and the impl event: "3.0", "3.5", "1.1.1",
 * "unverified". */
const char *tlsm_gcm_layout_name(enum tlsm_gcm_layout l);

/* The loaders, one per ABI: look every entry point up with lookup(h, name) and fill a. */
void tlsm_abi_load_ossl3(struct tlsm_abi *a, void *h, tlsm_abi_lookup_fn lookup);
void tlsm_abi_load_ossl111(struct tlsm_abi *a, void *h, tlsm_abi_lookup_fn lookup);

#endif
