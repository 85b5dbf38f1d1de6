/* sysget.c: libsysget.so, an HTTPS GET through the system libssl.so.3 (ordinary PLT calls,
 * as libcurl would make them), for vclient's "system copy in the same process" runs. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int tcp_connect(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

static long fetch(SSL *ssl, const char *path, EVP_MD_CTX *md)
{
    static unsigned char buf[16384];
    char req[512];
    int n, st = 0;
    long body = 0;
    snprintf(req, sizeof(req), "GET /%s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
    if (SSL_write(ssl, req, (int)strlen(req)) <= 0)
        return -1;
    while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0) {
        int i = 0;
        for (; i < n && st < 4; i++)
            st = buf[i] == "\r\n\r\n"[st] ? st + 1 : buf[i] == '\r';
        EVP_DigestUpdate(md, buf + i, (size_t)(n - i));
        body += n - i;
    }
    int e = SSL_get_error(ssl, n);
    return e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL ? body : -1;
}

/* Like vendor_https_get; info gets OpenSSL_version(OPENSSL_CPU_INFO) of the copy reached. */
long sys_https_get(int port, const char *path, const char *ca, char *sha, char *info, size_t icap)
{
    long n = -1;
    int fd = -1;
    SSL *ssl = NULL;
    unsigned char d[32];
    unsigned dl = 0;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx && SSL_CTX_load_verify_locations(ctx, ca, NULL) && (fd = tcp_connect(port)) >= 0 &&
        (ssl = SSL_new(ctx)) && SSL_set_fd(ssl, fd)) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        SSL_set_tlsext_host_name(ssl, "localhost");
        if (SSL_connect(ssl) == 1 && EVP_DigestInit_ex(md, EVP_sha256(), NULL))
            n = fetch(ssl, path, md);
        if (n >= 0 && !EVP_DigestFinal_ex(md, d, &dl))
            n = -1;
    }
    for (unsigned i = 0; i < dl; i++)
        snprintf(sha + 2 * i, 3, "%02x", d[i]);
    snprintf(info, icap, "%s", OpenSSL_version(OPENSSL_CPU_INFO));
    if (ssl) {
        SSL_shutdown(ssl);
        SSL_free(ssl);
    }
    if (fd >= 0)
        close(fd);
    SSL_CTX_free(ctx);
    EVP_MD_CTX_free(md);
    return n;
}
