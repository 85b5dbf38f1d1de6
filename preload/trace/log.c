/* log.c: warnings as single write(2) calls, so they never interleave mid-line with the
 * program's own output and never touch the program's stdio buffers. */
#include "trace/log.h"
#include "trace/config.h"
#include "trace/trace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
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

size_t tlsm_log_cut(char *msg, size_t cap, size_t total)
{
    char mark[48];
    size_t mlen = (size_t)snprintf(mark, sizeof(mark), " [cut: %zu more bytes]", total);
    if (cap < mlen + 2 || total < cap)
        return strlen(msg);
    size_t keep = cap - 1 - mlen, cut = keep;
    for (size_t i = keep; i > 0 && keep - i < 80; i--)
        if (msg[i] == ' ') {
            cut = i;
            break;
        }
    if (cut == keep) /* one long word (a path): cut it, but not inside a UTF-8 character */
        while (cut > 0 && ((unsigned char)msg[cut] & 0xc0) == 0x80)
            cut--;
    while (cut > 0 && msg[cut - 1] == ' ')
        cut--;
    return cut + (size_t)snprintf(msg + cut, cap - cut, " [cut: %zu more bytes]", total - cut);
}

/* To stderr (when it is still the one we started with, TLSMETER_QUIET is off and no other
 * process of the tree printed the same warning) and, in
 * every case, into the trace as a `warn` event: a daemon's stderr is often its own log or
 * /dev/null, the trace is where the user looks. Up to TLSM_WARN_MAX bytes with "tlsmeter: "
 * and the newline: every notice of ours with its paths; a longer one is cut as above. */
void tlsm_warn(const char *fmt, ...)
{
    static __thread bool inside; /* a warning about writing the trace, written to it */
    char line[TLSM_WARN_MAX];
    int saved = errno;
    if (inside)
        return;
    inside = true;
    /* The message after the prefix, with room left for the newline. */
    size_t pre = (size_t)snprintf(line, sizeof(line), "tlsmeter: "), room = sizeof(line) - pre - 1;
    va_list ap;
    va_start(ap, fmt);
    int t = vsnprintf(line + pre, room, fmt, ap);
    va_end(ap);
    size_t m = t < 0 ? 0 : (size_t)t;
    if (m >= room)
        m = tlsm_log_cut(line + pre, room, m);
    size_t n = pre + m;
    line[n] = 0;
    tlsm_trace_warn(line + pre);
    /* Once per process tree on stderr (log_tree.c); every process's trace has it. */
    bool say = !tlsm_cfg.quiet && stderr_is_ours() && tlsm_log_tree_first(line + pre);
    line[n++] = '\n';
    if (say) {
        ssize_t w = write(STDERR_FILENO, line, n);
        (void)w;
    }
    inside = false;
    errno = saved;
}
