/* backend.h: tlsmeter's own libcrypto instance for rerouting (and calibrating) record
 * decryption: a memfd copy of a libcrypto (own soname, DF_SYMBOLIC), loaded RTLD_LOCAL so it shares
 * the one libc but none of the program's OpenSSL state, with the capability mask of our
 * choosing (hw: none, soft: table AES + 4-bit GHASH). The copy is OpenSSL 3 or 1.1.1
 * (forward/abi.h): the program's own libcrypto, so a 1.1.1 program's records run on 1.1.1's
 * code. The calls the two share are typed from OpenSSL 3's prototypes (the same in 1.1.1);
 * the two that differ (cipher lookup, error queue) have one pointer per ABI. */
#ifndef TLSM_BACKEND_H
#define TLSM_BACKEND_H

#include "base/caps.h"
#include "forward/abi.h"
#include "trace/config.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <stdbool.h>

struct tlsm_backend {
    enum tlsm_crypto_mode mode;
    int lib_id;
    char source[512];       /* the file that was copied */
    struct tlsm_caps caps;  /* decoded capability bits */
    char cpuinfo[160];      /* its capability words, as its start-up saw them */
    enum tlsm_abi_kind abi; /* TLSM_ABI_OSSL3 or TLSM_ABI_OSSL111 */
    const char *propq;
    __typeof__(&EVP_CIPHER_CTX_new) EVP_CIPHER_CTX_new;
    __typeof__(&EVP_CIPHER_CTX_free) EVP_CIPHER_CTX_free;
    __typeof__(&EVP_CIPHER_fetch) EVP_CIPHER_fetch;              /* 3.x */
    const EVP_CIPHER *(*EVP_get_cipherbyname)(const char *name); /* 1.1.1 */
    __typeof__(&EVP_CipherInit_ex) EVP_CipherInit_ex;
    __typeof__(&EVP_CIPHER_CTX_ctrl) EVP_CIPHER_CTX_ctrl;
    __typeof__(&EVP_CIPHER_CTX_get_updated_iv) EVP_CIPHER_CTX_get_updated_iv; /* may be NULL */
    __typeof__(&EVP_CIPHER_CTX_set_params) EVP_CIPHER_CTX_set_params;         /* 3.x; may be NULL */
    __typeof__(&EVP_CipherUpdate) EVP_CipherUpdate;
    __typeof__(&EVP_CipherFinal_ex) EVP_CipherFinal_ex;
    __typeof__(&EVP_Cipher) EVP_Cipher;
    __typeof__(&ERR_get_error_all) ERR_get_error_all; /* 3.x */
    /* 1.1.1: unsigned long ERR_get_error_line_data(const char **file, int *line,
     * const char **data, int *flags) */
    unsigned long (*ERR_get_error_line_data)(const char **, int *, const char **, int *);
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
/* The oldest error of the backend's queue on this thread, taken off it: library and reason
 * codes decoded by the backend's own ABI; false when the queue is empty. */
bool tlsm_backend_next_error(struct tlsm_backend *b, int *lib, int *reason, const char **file,
                             int *line, const char **func);

#endif
