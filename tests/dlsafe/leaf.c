/* leaf.c: a plugin linked to libssl and libcrypto whose OpenSSL calls go through its own PLT
 * and GOT. Loaded with RTLD_DEEPBIND, those slots bind to libssl/libcrypto past the preload
 * (the preload rewrites them); loaded plainly, they bind to the preload's hooks. The cases
 * load copies of this file under other names: each copy is another object. */
#include <openssl/evp.h>
#include <openssl/ssl.h>

int leaf_calls(int n);

/* N calls of SSL_free(NULL) and EVP_CIPHER_CTX_free(NULL): no-ops in OpenSSL, each one a
 * hooked call made from this object (the trace's end.hooks counts them). Returns N. */
int leaf_calls(int n)
{
    for (int i = 0; i < n; i++) {
        SSL_free(NULL);
        EVP_CIPHER_CTX_free(NULL);
    }
    return n;
}
