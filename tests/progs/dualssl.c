/* dualssl: one process, two OpenSSL copies: downloads PATH over the OpenSSL 3 it is linked
 * with, then over an OpenSSL 1.1.1 libssl loaded by path (dlopen RTLD_LOCAL; its libcrypto
 * comes from LD_LIBRARY_PATH), as a program beside a vendor library with its own copy does.
 * Usage: dualssl PORT PATH LIBSSL11. Prints "ossl3 got=N" and "ossl111 got=N" (bytes
 * SSL_read returned: header + body); exit 0 when both downloads finished, 1 otherwise.
 * No certificate check: the test is about which copy decrypts, on 127.0.0.1 only. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The calls both ABIs share, with the same prototypes (1.1.1's ssl.h and 3.x's). */
struct ssl_api {
    __typeof__(&TLS_client_method) client_method;
    __typeof__(&SSL_CTX_new) ctx_new;
    __typeof__(&SSL_CTX_free) ctx_free;
    __typeof__(&SSL_new) ssl_new;
    __typeof__(&SSL_set_fd) set_fd;
    __typeof__(&SSL_connect) connect;
    __typeof__(&SSL_write) write;
    __typeof__(&SSL_read) read;
    __typeof__(&SSL_free) free;
};

static int tcp(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One GET over api; the bytes SSL_read returned, -1 on failure. */
static long download(const struct ssl_api *api, int port, const char *path)
{
    SSL_CTX *ctx = api->ctx_new(api->client_method());
    int fd = ctx ? tcp(port) : -1;
    SSL *s = fd >= 0 ? api->ssl_new(ctx) : NULL;
    long got = -1;
    char req[512], buf[16384];
    if (s && api->set_fd(s, fd) == 1 && api->connect(s) == 1) {
        int n = snprintf(req, sizeof(req), "GET /%s HTTP/1.0\r\n\r\n", path);
        if (api->write(s, req, n) == n)
            for (got = 0; (n = api->read(s, buf, sizeof(buf))) > 0;)
                got += n;
    }
    if (s)
        api->free(s);
    if (fd >= 0)
        close(fd);
    if (ctx)
        api->ctx_free(ctx);
    return got;
}

static int load111(struct ssl_api *api, const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dualssl: %s\n", dlerror());
        return -1;
    }
#define SYM(field, name)                                                                           \
    if (!(api->field = (__typeof__(api->field))dlsym(h, name)))                                    \
        return fprintf(stderr, "dualssl: %s lacks %s\n", lib, name), -1;
    SYM(client_method, "TLS_client_method");
    SYM(ctx_new, "SSL_CTX_new");
    SYM(ctx_free, "SSL_CTX_free");
    SYM(ssl_new, "SSL_new");
    SYM(set_fd, "SSL_set_fd");
    SYM(connect, "SSL_connect");
    SYM(write, "SSL_write");
    SYM(read, "SSL_read");
    SYM(free, "SSL_free");
#undef SYM
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: dualssl PORT PATH LIBSSL11\n");
        return 2;
    }
    int port = atoi(argv[1]);
    const struct ssl_api v3 = {TLS_client_method, SSL_CTX_new, SSL_CTX_free, SSL_new,
                               SSL_set_fd,        SSL_connect, SSL_write,    SSL_read,
                               SSL_free};
    struct ssl_api v111;
    long a = download(&v3, port, argv[2]);
    printf("ossl3 got=%ld\n", a);
    long b = load111(&v111, argv[3]) == 0 ? download(&v111, port, argv[2]) : -1;
    printf("ossl111 got=%ld\n", b);
    return a > 0 && b > 0 ? 0 : 1;
}
