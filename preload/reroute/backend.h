/* backend.h: tlsmeter's own libcrypto instance for rerouting (and calibrating) record
 * decryption: a memfd copy of a libcrypto (own soname, DF_SYMBOLIC), loaded RTLD_LOCAL so it shares
 * the one libc but none of the program's OpenSSL state, with the capability mask of our
 * choosing (hw: none, soft: table AES + 4-bit GHASH). */
#ifndef TLSM_BACKEND_H
#define TLSM_BACKEND_H

#include "base/caps.h"
#include "trace/config.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <stdbool.h>

struct tlsm_backend {
    enum tlsm_crypto_mode mode;
    int lib_id;
    char source[512];      /* the file that was copied */
    struct tlsm_caps caps; /* decoded capability bits */
    const char *propq;
    __typeof__(&EVP_CIPHER_CTX_new) EVP_CIPHER_CTX_new;
    __typeof__(&EVP_CIPHER_CTX_free) EVP_CIPHER_CTX_free;
    __typeof__(&EVP_CIPHER_fetch) EVP_CIPHER_fetch;
    __typeof__(&EVP_CipherInit_ex) EVP_CipherInit_ex;
    __typeof__(&EVP_CIPHER_CTX_ctrl) EVP_CIPHER_CTX_ctrl;
    __typeof__(&EVP_CipherUpdate) EVP_CipherUpdate;
    __typeof__(&EVP_CipherFinal_ex) EVP_CipherFinal_ex;
    __typeof__(&EVP_Cipher) EVP_Cipher;
    __typeof__(&ERR_get_error_all) ERR_get_error_all;
    __typeof__(&ERR_clear_error) ERR_clear_error;
    __typeof__(&OpenSSL_version) OpenSSL_version;
    EVP_CIPHER *ciphers[8]; /* fetched once, by our cipher index */
    unsigned lib_gen;       /* trace file generation its lib line was written to */
};

/* Names of the ciphers a backend can take over, indexed as in tlsm_backend.ciphers. */
int tlsm_backend_cipher_index(const char *name);
/* Load (once per mode) and return the backend, or NULL with one warning naming why.
 * app_crypto is the program's libcrypto path, the default source of the copy. */
struct tlsm_backend *tlsm_backend_get(enum tlsm_crypto_mode mode, const char *app_crypto);
/* Constructor time, while the process normally has one thread: load the backends the
 * configuration asks for (TLSMETER_CRYPTO=hw|soft; both with TLSMETER_CALIBRATE=1), so the
 * environ swap of the load (backend.c open_copy) races with no other thread's setenv. The
 * source is TLSMETER_BACKEND_LIB, else an already-loaded libcrypto.so.3, else the system's.
 * Writes no trace line: tlsm_backend_replay_libs does when the trace opens. */
void tlsm_backend_early(void);
/* Trace file generation gen just opened (header written): write the lib line of every
 * loaded backend. At most once per backend and file (a fork child's new file gets its own),
 * whichever of this and a lazy load comes first. Takes no lock (runs under the open lock). */
void tlsm_backend_replay_libs(unsigned gen);
/* The reason the last load failed ("" when none). */
const char *tlsm_backend_error(void);
void tlsm_backend_atfork(bool take);
EVP_CIPHER *tlsm_backend_cipher(struct tlsm_backend *b, int idx);

#endif
