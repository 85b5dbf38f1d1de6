/* slowget.c: an HTTPS/1.0 GET through libssl that reads slowly and logs its running total
 * after every SSL_read (tests only): the attach tests compare the bytes an attached tlsmeter
 * saw with the reads the program made while it was attached.
 *   slowget PORT PATH LOG [DELAY_US [READ_SIZE [TLS12]]]
 * Each read asks for a different size (READ_SIZE at most), so the sequence of what the reads
 * returned identifies where in the download a run of them lies. LOG gets one line per read
 * that returned data: "<read number> <bytes> <running total>", flushed at once; stdout gets
 * "total=N sha256=HEX" (of the body, after the HTTP header) at the end; exit 0 on a clean
 * close. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static SSL *connect_to(SSL_CTX *ctx, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
        return NULL;
    SSL *s = SSL_new(ctx);
    SSL_set_fd(s, fd);
    return SSL_connect(s) == 1 ? s : NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: slowget PORT PATH LOG [DELAY_US [READ_SIZE [TLS12]]]\n");
        return 2;
    }
    int port = atoi(argv[1]);
    unsigned delay = argc > 4 ? (unsigned)atoi(argv[4]) : 2000;
    int size = argc > 5 ? atoi(argv[5]) : 16384;
    FILE *log = fopen(argv[3], "w");
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (argc > 6)
        SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
    SSL *s = ctx && log ? connect_to(ctx, port) : NULL;
    if (!s || size <= 0 || size > 1 << 20) {
        fprintf(stderr, "slowget: no connection\n");
        return 1;
    }
    char req[512], *buf = malloc((size_t)size);
    snprintf(req, sizeof(req), "GET /%s HTTP/1.0\r\n\r\n", argv[2]);
    SSL_write(s, req, (int)strlen(req));
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    unsigned long long total = 0, nread = 0;
    int n, hdr = 0; /* bytes of "\r\n\r\n" matched so far; 4: in the body */
    while ((n = SSL_read(s, buf, 1 + (int)((nread * 7919 + 16383) % (unsigned)size))) > 0) {
        total += (unsigned)n;
        fprintf(log, "%llu %d %llu\n", ++nread, n, total);
        fflush(log);
        int i = 0;
        for (; hdr < 4 && i < n; i++)
            hdr = buf[i] == "\r\n\r\n"[hdr] ? hdr + 1 : buf[i] == '\r';
        EVP_DigestUpdate(md, buf + i, (size_t)(n - i));
        if (delay)
            usleep(delay);
    }
    unsigned char d[32];
    unsigned dl = 0;
    EVP_DigestFinal_ex(md, d, &dl);
    printf("total=%llu sha256=", total);
    for (unsigned i = 0; i < dl; i++)
        printf("%02x", d[i]);
    printf("\n");
    int clean = SSL_get_error(s, n) == SSL_ERROR_ZERO_RETURN ||
                (SSL_get_error(s, n) == SSL_ERROR_SYSCALL && !ERR_peek_error());
    return clean ? 0 : 1;
}
