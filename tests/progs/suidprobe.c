/* suidprobe: tells whether tlsmeter got loaded and whether this is a secure-execution run. */
#include <stdlib.h>
#include <sys/auxv.h>

#include "tlsget.h"

/* Usage: suidprobe [PORT CAFILE PATH]
 *
 * Prints `preload=loaded|absent secure=0|1 uid=U euid=E` (preload: a mapping of a file
 * named libtlsmeter*; secure: getauxval(AT_SECURE)), then, with arguments, downloads PATH
 * and prints `got=N sha256=HEX` so the preload, if active, would have something to trace.
 * The test installs a copy setuid root and runs it as another user. */

static int preload_loaded(void)
{
    char line[4096];
    FILE *f = fopen("/proc/self/maps", "r");
    int found = 0;

    if (!f)
        return -1;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, "/libtlsmeter") != NULL;
    fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    struct tlsget r = {.want = 16384};
    SSL_CTX *ctx;

    printf("preload=%s secure=%lu uid=%d euid=%d\n", preload_loaded() ? "loaded" : "absent",
           getauxval(AT_SECURE), (int)getuid(), (int)geteuid());
    if (argc != 4)
        return 0;
    ctx = tlsget_ctx(argv[2]);
    if (!ctx)
        return 2;
    tlsget(ctx, "127.0.0.1", atoi(argv[1]), argv[3], &r);
    printf("got=%zu sha256=%s\n", r.got, r.sha256);
    if (r.err[0])
        fprintf(stderr, "suidprobe: %s\n", r.err);
    SSL_CTX_free(ctx);
    return r.err[0] ? 1 : 0;
}
