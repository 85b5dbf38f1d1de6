/* log.c: warnings as single write(2) calls, so they never interleave mid-line with the
 * program's own output and never touch the program's stdio buffers. */
#include "trace/log.h"
#include "trace/config.h"
#include "trace/trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

static dev_t err_dev;
static ino_t err_ino;
static bool err_known;

void tlsm_log_init(void)
{
    struct stat st;
    tlsm_log_tree_init(!getauxval(AT_SECURE));
    err_known = fstat(STDERR_FILENO, &st) == 0;
    err_dev = st.st_dev;
    err_ino = st.st_ino;
}

/* A daemon may close stderr and get descriptor 2 back for a socket or a file of its own:
 * write only to the stderr the program started with. */
static bool stderr_is_ours(void)
{
    struct stat st;
    return err_known && fstat(STDERR_FILENO, &st) == 0 && st.st_dev == err_dev &&
           st.st_ino == err_ino;
}

/* To stderr (when it is still the one we started with, TLSMETER_QUIET is off and no other
 * process of the tree printed the same warning) and, in
 * every case, into the trace as a `warn` event: a daemon's stderr is often its own log or
 * /dev/null, the trace is where the user looks. */
void tlsm_warn(const char *fmt, ...)
{
    static __thread bool inside; /* a warning about writing the trace, written to it */
    char line[512];
    int saved = errno;
    if (inside)
        return;
    inside = true;
    int n = snprintf(line, sizeof(line), "tlsmeter: ");
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n] = 0;
    tlsm_trace_warn(line + 10);
    /* Once per process tree on stderr (log_tree.c); every process's trace has it. */
    bool say = !tlsm_cfg.quiet && stderr_is_ours() && tlsm_log_tree_first(line + 10);
    line[n++] = '\n';
    if (say) {
        ssize_t w = write(STDERR_FILENO, line, (size_t)n);
        (void)w;
    }
    inside = false;
    errno = saved;
}
