/* obj.h: loaded objects tlsmeter has met, as callers of hooked functions or as the OpenSSL
 * copies those calls land in (an "instance": gets a lib event and its helper functions). */
#ifndef TLSM_OBJ_H
#define TLSM_OBJ_H

#include "forward/resolve.h"

#include <link.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>

/* OpenSSL functions tlsmeter itself calls, looked up in one instance's own scope so a
 * question about an SSL* goes to the copy that made it. Any may be NULL. */
struct tlsm_api {
    __typeof__(&SSL_get_version) SSL_get_version;
    __typeof__(&SSL_get_current_cipher) SSL_get_current_cipher;
    __typeof__(&SSL_CIPHER_get_name) SSL_CIPHER_get_name;
    __typeof__(&SSL_is_server) SSL_is_server;
    __typeof__(&SSL_get_error) SSL_get_error;
    __typeof__(&SSL_is_init_finished) SSL_is_init_finished;
    __typeof__(&EVP_CIPHER_get_nid) EVP_CIPHER_get_nid;
    __typeof__(&EVP_CIPHER_CTX_get0_cipher) EVP_CIPHER_CTX_get0_cipher;
    __typeof__(&OpenSSL_version) OpenSSL_version;
    __typeof__(&OPENSSL_version_major) OPENSSL_version_major;
    __typeof__(&ERR_new) ERR_new;
    __typeof__(&ERR_set_debug) ERR_set_debug;
    __typeof__(&ERR_set_error) ERR_set_error;
    __typeof__(&SSL_get_rbio) SSL_get_rbio; /* with BIO_ctrl: BIO_get_ktls_recv (a macro) */
    __typeof__(&BIO_ctrl) BIO_ctrl;
    __typeof__(&BIO_method_type) BIO_method_type;
    __typeof__(&SSL_session_reused) SSL_session_reused; /* handshake parts (hs.h) */
    __typeof__(&X509_get0_pubkey) X509_get0_pubkey;
    __typeof__(&EVP_PKEY_get_base_id) EVP_PKEY_get_base_id;
    __typeof__(&EVP_PKEY_get_bits) EVP_PKEY_get_bits;
    __typeof__(&EVP_PKEY_is_a) EVP_PKEY_is_a;
};

struct tlsm_obj {
    const struct link_map *lm;
    uintptr_t start, end;
    char path[512];
    const char *want[TLSM_FN_COUNT]; /* version each of its references asks for */
    uint64_t refs;                   /* hooked names it imports through relocations */
    bool has_ssl, has_crypto;        /* defines SSL_read / EVP_CipherUpdate */
    _Atomic int described;
    int lib_id; /* id of its lib event; 0 = not an OpenSSL instance (yet) */
    int major;  /* OpenSSL major version, 0 unknown */
    /* OpenSSL 1.x (issue 7): left alone. Its api stays empty, so tlsmeter never calls into
     * it: record.c cannot name its ciphers (no EVP_CIPHER_get_nid) and tracks none of its
     * contexts, the EVP hooks only forward; conn.c asks it nothing. */
    bool old_abi;
    bool foreign;     /* with old_abi: an OpenSSL fork (BoringSSL, LibreSSL), left alone alike */
    char version[64]; /* OpenSSL_version(OPENSSL_VERSION), "" if unknown */
    _Atomic uint64_t hooks_into;
    struct tlsm_api api;
    bool stale;       /* dlclose() happened since: do not reuse for new callers */
    unsigned lib_gen; /* trace file generation its lib line was written to */
};

/* The object containing addr, registered on first sight (under the registry's own lock, taken
 * here only for a new object; callers hold no lock). NULL if no object or the registry is full. */
struct tlsm_obj *tlsm_obj_of(const void *addr);
/* First time a hook forwards into o: learn what it is, write its lib event. */
void tlsm_obj_describe(struct tlsm_obj *o);
void tlsm_obj_mark_stale(void);
/* The end event's "libs": every described instance with the hooks that resolved into it;
 * [] when they do not fit their share of the line. */
void tlsm_obj_end_write(struct tlsm_json *j);
int tlsm_next_lib_id(void);
/* The OpenSSL 1.x version text of the registered object lm, NULL if it is not one. */
const char *tlsm_obj_old_abi(const struct link_map *lm);
/* A libcrypto-only instance our hooks forward into: it holds no TLS record layer. */
bool tlsm_obj_crypto_only(const struct link_map *lm);
void tlsm_obj_atfork(bool take);
/* Write the lib line of every known instance into the trace file just opened. */
void tlsm_obj_replay_libs(unsigned gen);

#endif
