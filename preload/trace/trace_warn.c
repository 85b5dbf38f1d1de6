/* trace_warn.c: tlsmeter's warnings as warn events in the trace (log.c calls in): kept
 * until the file exists, then written in the thread's chunk or, from inside the writer,
 * straight to the file. */
#include "trace/trace.h"
#include "base/clock.h"
#include "base/json.h"
#include "trace/log.h"
#include "trace/thread.h"
#include "trace/trace_int.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_EARLY_WARN 4
static char early_warn[MAX_EARLY_WARN][TLSM_WARN_MAX]; /* warnings before the file existed */
_Atomic unsigned tlsm_tr_nearly_warn;

size_t tlsm_tr_warn_line(char *line, size_t cap, const char *msg, bool with_pid)
{
    struct tlsm_json j;
    tlsm_json_begin(&j, line, cap, TLSM_EV(WARN));
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(tlsm_now() - tlsm_trace_t0));
    if (with_pid)
        tlsm_json_int(&j, "pid", getpid());
    tlsm_json_str(&j, "msg", msg);
    return tlsm_json_end(&j, line);
}

/* log.c: every warning also goes into the trace, where the user finds it even when the
 * program sent its stderr elsewhere. Before the file exists it is kept for the header. */
void tlsm_trace_warn(const char *msg)
{
    char line[2 * TLSM_WARN_MAX];
    int s = atomic_load(&tlsm_tr_state);
    if (s == ST_UNOPENED || s == ST_RESERVED) {
        unsigned i = atomic_fetch_add(&tlsm_tr_nearly_warn, 1);
        if (i < MAX_EARLY_WARN)
            snprintf(early_warn[i], sizeof(early_warn[i]), "%s", msg);
        return;
    }
    if (s != ST_OPEN || getpid() != tlsm_tr_trace_pid)
        return;
    size_t n = tlsm_tr_warn_line(line, sizeof(line), msg, false);
    if (!n) {
        /* Escapes (a byte that is not UTF-8 takes five) made it too long for the line: the
         * start of it, cut so that it fits even if every byte needs one. */
        char part[(2 * TLSM_WARN_MAX - 128) / 6];
        size_t len = strlen(msg);
        snprintf(part, sizeof(part), "%s", msg);
        tlsm_log_cut(part, sizeof(part), len);
        n = tlsm_tr_warn_line(line, sizeof(line), part, false);
    }
    if (!n)
        return;
    /* In the thread's chunk (no zeroed space left behind) when it has one: no allocation,
     * no list lock, whatever lock the warning's caller holds. */
    if (!tlsm_tr_in_writer && tlsm_th.buf) {
        tlsm_trace_line(line, n);
        atomic_fetch_add(&tlsm_tr_warnings, 1);
    } else if (tlsm_tr_put_direct(tlsm_tr_fd, tlsm_tr_mapped, tlsm_tr_fd_is_pipe, line, n)) {
        atomic_fetch_add(&tlsm_tr_direct_lines, 1);
        atomic_fetch_add(&tlsm_tr_warnings, 1);
    }
}

uint64_t tlsm_trace_warnings(void)
{
    return atomic_load(&tlsm_tr_warnings);
}

void tlsm_tr_replay_early_warnings(void)
{
    unsigned n = atomic_exchange(&tlsm_tr_nearly_warn, 0);
    for (unsigned i = 0; i < n && i < MAX_EARLY_WARN; i++)
        tlsm_trace_warn(early_warn[i]);
}
