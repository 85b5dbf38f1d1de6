/* execclient: HTTPS download, then exec another program without exiting (an OTA updater
 * that downloads an image and execs the installer). */
#include <stdlib.h>

#include "tlsget.h"

/* Usage: execclient PORT CAFILE PATH PROGRAM [ARGS...]
 * Prints "got=N sha256=HEX", then execv(PROGRAM, ARGS). If the exec fails it says so and
 * exits 3 through exit(), so destructors run. */
int main(int argc, char **argv)
{
    struct tlsget r = {.want = 16384};
    SSL_CTX *ctx;

    if (argc < 5) {
        fprintf(stderr, "usage: execclient PORT CAFILE PATH PROGRAM [ARGS...]\n");
        return 2;
    }
    ctx = tlsget_ctx(argv[2]);
    if (!ctx)
        return 1;
    tlsget(ctx, "127.0.0.1", atoi(argv[1]), argv[3], &r);
    printf("got=%zu sha256=%s\n", r.got, r.sha256);
    fflush(stdout);
    if (r.err[0]) {
        fprintf(stderr, "execclient: %s\n", r.err);
        return 1;
    }
    execv(argv[4], argv + 4);
    perror("execclient: exec");
    SSL_CTX_free(ctx);
    exit(3);
}
