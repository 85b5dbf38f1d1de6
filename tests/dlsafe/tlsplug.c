/* tlsplug.c: a plugin linked to libssl that downloads over HTTPS (tests/progs/tlsget.h).
 * Loaded with RTLD_DEEPBIND its SSL_* calls bind to libssl past the preload, so they are
 * traced only through its rewritten GOT slots. */
#include "tlsget.h"

int tlsplug_get(const char *cafile, int port, const char *path, size_t *got, char *err,
                size_t errlen);

/* One GET of PATH from 127.0.0.1:PORT with a fresh context; *GOT += bytes SSL_read returned.
 * Returns 0 on success, -1 with ERR set. */
int tlsplug_get(const char *cafile, int port, const char *path, size_t *got, char *err,
                size_t errlen)
{
    struct tlsget r = {.want = 16384};
    SSL_CTX *ctx = tlsget_ctx(cafile);
    int ret;

    if (!ctx) {
        snprintf(err, errlen, "cannot load %s", cafile);
        return -1;
    }
    ret = tlsget(ctx, "127.0.0.1", port, path, &r);
    SSL_CTX_free(ctx);
    *got += r.got;
    if (ret)
        snprintf(err, errlen, "%s", r.err);
    return ret;
}
