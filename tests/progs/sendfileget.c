/* sendfileget: one HTTPS GET whose request goes out through SSL_sendfile (OpenSSL 3.0: kernel
 * TLS send only), or through SSL_write when SSL_sendfile fails (no kTLS), as a server falls
 * back. Prints what SSL_sendfile returned and left behind, so that a traced run can be
 * compared with an untraced one (tests only).
 *
 * Usage: sendfileget PORT CAFILE REQFILE
 * REQFILE holds the whole HTTP request. Prints two lines:
 *   sendfile ret=N errno=N ssl_error=N reason=N   (errno is EDOM when SSL_sendfile left it)
 *   got=N body=N sha256=HEX
 * Exit 0 when the GET succeeded, 1 otherwise, 2 on bad usage. */
#include "tlsget.h"

#include <sys/stat.h>

/* The request from reqfile through SSL_sendfile, else SSL_write; 0 when it went out. */
static int send_request(SSL *ssl, const char *reqfile, struct tlsget *r)
{
    char req[1024];
    struct stat st;
    int fd = open(reqfile, O_RDONLY | O_CLOEXEC), len;

    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size > (off_t)sizeof(req) ||
        read(fd, req, (size_t)st.st_size) != st.st_size) {
        snprintf(r->err, sizeof(r->err), "%s: cannot read the request", reqfile);
        return -1;
    }
    len = (int)st.st_size;
    ERR_clear_error();
    errno = EDOM; /* a value nothing on the way sets: changed only if SSL_sendfile changed it */
    ossl_ssize_t n = SSL_sendfile(ssl, fd, 0, (size_t)len, 0);
    int e = errno, se = SSL_get_error(ssl, n > 0 ? 1 : (int)n);
    printf("sendfile ret=%zd errno=%d ssl_error=%d reason=%d\n", (ssize_t)n, e, se,
           ERR_GET_REASON(ERR_peek_error()));
    ERR_clear_error();
    close(fd);
    if (n == len)
        return 0;
    if (n <= 0 && SSL_write(ssl, req, len) == len)
        return 0;
    snprintf(r->err, sizeof(r->err), "request: sendfile %zd of %d bytes", (ssize_t)n, len);
    return -1;
}

int main(int argc, char **argv)
{
    struct tlsget r = {0};
    SSL_CTX *ctx;
    SSL *ssl;
    int fd, ret;

    if (argc != 4) {
        fprintf(stderr, "usage: sendfileget PORT CAFILE REQFILE\n");
        return 2;
    }
    ctx = tlsget_ctx(argv[2]);
    fd = ctx ? tlsget_connect("127.0.0.1", atoi(argv[1])) : -1;
    if (fd < 0) {
        fprintf(stderr, "sendfileget: no context or no connection\n");
        return 1;
    }
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    SSL_set1_host(ssl, "localhost");
    SSL_set_tlsext_host_name(ssl, "localhost");
    if ((ret = SSL_connect(ssl)) != 1)
        tlsget_error(&r, "handshake", ssl, ret);
    else if (send_request(ssl, argv[3], &r) == 0)
        tlsget_body(ssl, &r);
    SSL_free(ssl);
    close(fd);
    SSL_CTX_free(ctx);
    if (r.err[0]) {
        fprintf(stderr, "sendfileget: %s\n", r.err);
        return 1;
    }
    printf("got=%zu body=%zu sha256=%s\n", r.got, r.body, r.sha256);
    return 0;
}
