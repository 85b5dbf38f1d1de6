/* smallread: N sequential HTTPS downloads in one process, WANT bytes per SSL_read (tests and
 * scripts/bench-instructions: the cost per read and per new connection). */
#include "tlsget.h"

/* Usage: smallread PORT CAFILE PATH WANT [CONNS]
 * Prints one line: conns=N got=N body=N sha256=HEX (of the last body). Exit 0 when every
 * connection succeeded, 1 otherwise, 2 on bad usage. */
int main(int argc, char **argv)
{
    int conns = argc > 5 ? atoi(argv[5]) : 1, i;
    size_t got = 0, body = 0;
    struct tlsget r = {0};
    SSL_CTX *ctx;

    if (argc < 5 || atoi(argv[4]) <= 0 || conns <= 0 || conns > 100000) {
        fprintf(stderr, "usage: smallread PORT CAFILE PATH WANT [CONNS]\n");
        return 2;
    }
    ctx = tlsget_ctx(argv[2]);
    if (!ctx) {
        fprintf(stderr, "smallread: cannot load %s\n", argv[2]);
        return 1;
    }
    for (i = 0; i < conns; i++) {
        memset(&r, 0, sizeof(r));
        r.want = (size_t)atoi(argv[4]);
        if (tlsget(ctx, "127.0.0.1", atoi(argv[1]), argv[3], &r)) {
            fprintf(stderr, "smallread: connection %d: %s\n", i, r.err);
            return 1;
        }
        got += r.got, body += r.body;
    }
    printf("conns=%d got=%zu body=%zu sha256=%s\n", conns, got, body, r.sha256);
    SSL_CTX_free(ctx);
    return 0;
}
