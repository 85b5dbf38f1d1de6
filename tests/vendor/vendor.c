/* vendor.c: the stand-in for libfoundation.so: a vendor library with its own OpenSSL
 * (Debian's libssl.a + libcrypto.a linked in whole) that exports one HTTPS GET function.
 * Built in several layouts by tests/vendor/build (versioned, -Bsymbolic, hidden, ...). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define VENDOR_API __attribute__((visibility("default")))

/* libcrypto.a's capability vector (crypto/cryptlib.c, crypto/armcap.c); set up by
 * OPENSSL_cpuid_setup from the library's .init, before any constructor of ours. Weak: an
 * aarch64 build without assembler has no armcap.c, hence no vector (and nothing to mask). */
#if defined(__aarch64__)
extern unsigned int OPENSSL_armcap_P __attribute__((weak));
#else
extern unsigned int OPENSSL_ia32cap_P[4] __attribute__((weak));
#endif

/* Layout 8: this copy runs OpenSSL's software path (table AES + 4-bit GHASH) while the system
 * copy keeps AES-NI: clear AES-NI (57), PCLMULQDQ (33), SSSE3 (41) in word 0 (bits 32.. of
 * the 64-bit ia32cap are OPENSSL_ia32cap_P[1]) and VAES/VPCLMULQDQ in word 1. Only this copy's
 * vector changes; OPENSSL_ia32cap in the environment would mask every copy in the process. */
VENDOR_API void vendor_force_soft(void)
{
#if defined(__aarch64__)
    if (&OPENSSL_armcap_P)
        OPENSSL_armcap_P = 0; /* no NEON, AES, PMULL: what OPENSSL_armcap=0 does to one copy */
#else
    if (!OPENSSL_ia32cap_P)
        return;
    OPENSSL_ia32cap_P[1] &= ~((1u << (57 - 32)) | (1u << (33 - 32)) | (1u << (41 - 32)));
    OPENSSL_ia32cap_P[3] &= ~((1u << (41 - 32)) | (1u << (42 - 32)));
#endif
}

/* OpenSSL_version() of the copy the vendor's own call reaches (its own one unless the
 * dynamic linker bound the call elsewhere). */
VENDOR_API const char *vendor_openssl(int what)
{
    return OpenSSL_version(what);
}

static int tcp_connect(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
        return s;
    if (s >= 0)
        close(s);
    return -1;
}

/* Where the body goes: the SDK's own SHA-256 (vendor_https_get), or the caller's function
 * (vendor_https_get_to: an application that checks the image itself). */
typedef void (*vendor_sink)(const void *p, size_t n, void *arg);

static void md_sink(const void *p, size_t n, void *arg)
{
    EVP_DigestUpdate(arg, p, n);
}

/* Body after the HTTP header into the sink; hdr_state tracks "\r\n\r\n" across reads. */
static void body_update(vendor_sink sink, void *arg, const unsigned char *p, size_t n, int *state,
                        long *body)
{
    static const char end[] = "\r\n\r\n";
    size_t i = 0;
    for (; i < n && *state < 4; i++)
        *state = p[i] == (unsigned char)end[*state] ? *state + 1 : (p[i] == '\r');
    if (i < n) {
        sink(p + i, n - i, arg);
        *body += (long)(n - i);
    }
}

static int fetch(SSL *ssl, const char *path, vendor_sink sink, void *arg, long *body, size_t bufsz)
{
    char req[512];
    unsigned char buf[65536];
    int state = 0, n;
    snprintf(req, sizeof(req), "GET /%s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
    if (SSL_write(ssl, req, (int)strlen(req)) <= 0)
        return -1;
    if (bufsz > sizeof(buf))
        bufsz = sizeof(buf);
    while ((n = SSL_read(ssl, buf, (int)bufsz)) > 0)
        body_update(sink, arg, buf, (size_t)n, &state, body);
    int err = SSL_get_error(ssl, n);
    return err == SSL_ERROR_ZERO_RETURN || err == SSL_ERROR_SYSCALL ? 0 : -1;
}

/* GET https://127.0.0.1:port/path, verifying the server against cafile, the body to sink
 * (md: the SDK's SHA-256 of it, as hex into sha, 65 bytes). Returns the body length, or -1. */
static long get(int port, const char *path, const char *cafile, vendor_sink sink, void *arg,
                char *sha)
{
    long body = -1;
    unsigned char d[32];
    unsigned int dl = 0;
    int s = -1;
    SSL *ssl = NULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!md || !ctx || !SSL_CTX_load_verify_locations(ctx, cafile, NULL))
        goto out;
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if ((s = tcp_connect(port)) < 0 || !(ssl = SSL_new(ctx)) || !SSL_set_fd(ssl, s))
        goto out;
    SSL_set_tlsext_host_name(ssl, "localhost");
    if (SSL_connect(ssl) != 1 || (!sink && !EVP_DigestInit_ex(md, EVP_sha256(), NULL)))
        goto out;
    body = 0;
    if (fetch(ssl, path, sink ? sink : md_sink, sink ? arg : md, &body, 16384) ||
        (!sink && !EVP_DigestFinal_ex(md, d, &dl)))
        body = -1;
    for (unsigned i = 0; i < dl; i++)
        snprintf(sha + 2 * i, 3, "%02x", d[i]);
out:
    if (body < 0)
        ERR_print_errors_fp(stderr);
    if (ssl) {
        SSL_shutdown(ssl);
        SSL_free(ssl);
    }
    if (s >= 0)
        close(s);
    SSL_CTX_free(ctx);
    EVP_MD_CTX_free(md);
    return body;
}

VENDOR_API long vendor_https_get(int port, const char *path, const char *cafile, char *sha)
{
    return get(port, path, cafile, NULL, NULL, sha);
}

/* The same GET with the body handed to sink(p, n, arg) as it arrives (no digest here). */
VENDOR_API long vendor_https_get_to(int port, const char *path, const char *cafile,
                                    vendor_sink sink, void *arg)
{
    return get(port, path, cafile, sink, arg, NULL);
}
