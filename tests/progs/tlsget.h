/* tlsget.h: one HTTPS/1.0 GET over libssl, shared by the C test clients (tests only). */
#ifndef TLSGET_H
#define TLSGET_H

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

struct tlsget {
    size_t got;      /* bytes SSL_read returned: HTTP header + body */
    size_t body;     /* body bytes */
    char sha256[65]; /* of the body */
    char err[200];   /* empty on success */
    FILE *out;       /* optional: body written here */
    size_t want;     /* bytes asked per read */
    int use_ex;      /* SSL_read_ex instead of SSL_read */
    int peek;        /* SSL_peek (or _ex) the same bytes before each read */
};

/* SSLKEYLOGFILE, as curl and Python honour it: the secrets test looks for them in traces.
 * One write(2) per line on an O_APPEND descriptor, so threads do not interleave. */
static void tlsget_keylog(const SSL *ssl, const char *line)
{
    const char *path = getenv("SSLKEYLOGFILE");
    char buf[1024];
    int fd, n;

    (void)ssl;
    if (!path || !*path)
        return;
    n = snprintf(buf, sizeof(buf), "%s\n", line);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (n > 0 && n < (int)sizeof(buf) && write(fd, buf, n) != n)
        n = -1;
    close(fd);
}

/* A client context trusting CAFILE. The test server (-WWW) closes without close_notify, so
 * an EOF is the normal end of the body. */
static SSL_CTX *tlsget_ctx(const char *cafile)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

    if (!ctx)
        return NULL;
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_keylog_callback(ctx, tlsget_keylog);
    if (SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static int tlsget_connect(const char *host, int port)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
    char portstr[16];
    int fd = -1;

    snprintf(portstr, sizeof(portstr), "%d", port);
    if (getaddrinfo(host, portstr, &hints, &res) != 0)
        return -1;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static void tlsget_error(struct tlsget *r, const char *what, SSL *ssl, int ret)
{
    unsigned long e = ERR_peek_last_error();
    char buf[120] = "";

    if (e)
        ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(r->err, sizeof(r->err), "%s: ssl_error=%d %s", what, ssl ? SSL_get_error(ssl, ret) : 0,
             buf);
    ERR_clear_error();
}

/* Consume the HTTP header byte by byte (it may straddle reads); returns bytes of BUF that
 * belong to the header. *STATE counts matched bytes of "\r\n\r\n"; 4 = header done. */
static size_t tlsget_header(const unsigned char *buf, size_t n, int *state)
{
    static const char end[] = "\r\n\r\n";
    size_t i;

    for (i = 0; i < n && *state < 4; i++) {
        if (buf[i] == (unsigned char)end[*state])
            (*state)++;
        else
            *state = buf[i] == '\r' ? 1 : 0;
    }
    return i;
}

static int tlsget_read(SSL *ssl, struct tlsget *r, unsigned char *buf, size_t want, size_t *n)
{
    int ret;

    /* Peek first: the read that follows returns the same bytes (a peek's failure is the
     * read's failure too, so its result is not used). */
    if (r->peek && r->use_ex)
        SSL_peek_ex(ssl, buf, want, n);
    else if (r->peek)
        SSL_peek(ssl, buf, (int)want);
    if (r->use_ex) {
        ret = SSL_read_ex(ssl, buf, want, n);
        return ret == 1 ? 1 : 0;
    }
    ret = SSL_read(ssl, buf, (int)want);
    *n = ret > 0 ? (size_t)ret : 0;
    return ret > 0 ? 1 : ret;
}

static int tlsget_body(SSL *ssl, struct tlsget *r)
{
    unsigned char buf[65536], md[32];
    size_t want = r->want && r->want <= sizeof(buf) ? r->want : 16384, n, h;
    EVP_MD_CTX *sha = EVP_MD_CTX_new();
    int state = 0, ret, i;
    unsigned int mdlen = 0;

    EVP_DigestInit_ex(sha, EVP_sha256(), NULL);
    while ((ret = tlsget_read(ssl, r, buf, want, &n)) == 1) {
        r->got += n;
        h = state < 4 ? tlsget_header(buf, n, &state) : 0;
        EVP_DigestUpdate(sha, buf + h, n - h);
        r->body += n - h;
        if (r->out && fwrite(buf + h, 1, n - h, r->out) != n - h)
            snprintf(r->err, sizeof(r->err), "write: %s", strerror(errno));
    }
    if (SSL_get_error(ssl, ret) != SSL_ERROR_ZERO_RETURN)
        tlsget_error(r, "read", ssl, ret);
    EVP_DigestFinal_ex(sha, md, &mdlen);
    EVP_MD_CTX_free(sha);
    for (i = 0; i < 32; i++)
        snprintf(r->sha256 + 2 * i, 3, "%02x", md[i]);
    return r->err[0] ? -1 : 0;
}

/* GET PATH from HOST:PORT; fills R. Returns 0 on success, -1 with R->err set. (Unused by a
 * client that sends its request its own way: sendfileget.c.) */
static __attribute__((unused)) int tlsget(SSL_CTX *ctx, const char *host, int port,
                                          const char *path, struct tlsget *r)
{
    char req[1024];
    int fd, ret, len;
    SSL *ssl;

    fd = tlsget_connect(host, port);
    if (fd < 0) {
        snprintf(r->err, sizeof(r->err), "connect: %s", strerror(errno));
        return -1;
    }
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set1_host(ssl, "localhost");
    SSL_set_tlsext_host_name(ssl, "localhost");
    len = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
    if ((ret = SSL_connect(ssl)) != 1)
        tlsget_error(r, "handshake", ssl, ret);
    else if ((ret = SSL_write(ssl, req, len)) != len)
        tlsget_error(r, "write", ssl, ret);
    else
        tlsget_body(ssl, r);
    SSL_free(ssl);
    close(fd);
    return r->err[0] ? -1 : 0;
}

#endif
