/* log.c: warnings as single write(2) calls, so they never interleave mid-line with the
 * program's own output and never touch the program's stdio buffers. */
#include "log.h"
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

void tlsm_warn(const char *fmt, ...)
{
    char line[512];
    int saved = errno;
    if (tlsm_cfg.quiet)
        return;
    int n = snprintf(line, sizeof(line), "tlsmeter: ");
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
    errno = saved;
}
