/* hs_certs.c: TLSMETER_CERTS=DIR: each peer certificate a handshake parses saved once as
 * DIR/cert-ID.der, for scripts/tlsmeter-certs (time parsing and verifying the same
 * certificates elsewhere). Off by default: certificates can be private. Files are 0600,
 * created new (never through a symlink, never over an existing file); nothing is written
 * in secure-execution mode (the trace is never ready there). */
#include "core/hs.h"
#include "trace/config.h"
#include "trace/log.h"
#include "trace/trace.h"
#include "trace/trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

/* FNV-1a over the DER: a file name, not a security property (the same bytes, the same
 * name: a certificate seen on many connections is saved once). Never 0. */
static uint64_t der_id(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h ? h : 1;
}

uint64_t tlsm_hs_save_cert(const unsigned char *der, size_t len)
{
    static _Atomic bool warned;
    const char *dir = tlsm_cfg.certs;
    if (!dir || !*dir || !der || !len || !tlsm_trace_ready())
        return 0;
    uint64_t id = der_id(der, len);
    char path[4096];
    if ((size_t)snprintf(path, sizeof(path), "%s/cert-%016llx.der", dir, (unsigned long long)id) >=
        sizeof(path))
        return 0;
    int saved = errno;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        bool exists = errno == EEXIST;
        if (!exists && !atomic_exchange(&warned, true))
            tlsm_warn("TLSMETER_CERTS: cannot create %s: certificates not saved", path);
        errno = saved;
        return exists ? id : 0;
    }
    bool ok = tlsm_trace_write(fd, false, (const char *)der, len); /* a regular file */
    close(fd);
    if (!ok)
        unlink(path);
    errno = saved;
    return ok ? id : 0;
}
