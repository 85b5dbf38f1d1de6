/* attach.c: tlsmeter loaded into a program that is already running. The attaching tool
 * (attach/, `tlsmeter attach PID`) stops every thread with ptrace, makes one of them dlopen this
 * library (whose constructor then does nothing, main.c) and call tlsmeter_attach; later it
 * stops them again for tlsmeter_detach. Nothing was preloaded, so no import of the program
 * resolves to a hook: every loaded object's GOT slots for the hooked names are pointed at the
 * hooks instead (forward/got_attach.c), and the detach puts each back. Records are measured at
 * the EVP calls (provider tables only reach ciphers fetched after they are rewritten, and a
 * running libssl fetched its ciphers long ago); contexts and connections set up before the
 * attach are adopted at their next record (core/record.c, core/conn.c). docs/attach.md. */
#include "hooks/attach.h"
#include "base/json.h"
#include "core/conn.h"
#include "core/record.h"
#include "core/summary.h"
#include "forward/blind.h"
#include "forward/got.h"
#include "trace/config.h"
#include "trace/thread.h"
#include "trace/trace.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/auxv.h>

bool tlsm_loaded_late, tlsm_preloaded_other;
static bool attached;
static int slots_objects; /* objects whose slots the attach rewrote */

static int say(char *msg, size_t cap, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (msg && cap)
        vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    return code;
}

/* Everything an attach turned on, off again (a detach, or an attach that failed). */
static void stop_tracing(void)
{
    atomic_store(&tlsm_conn_joining, false);
    atomic_store(&tlsm_rec_adopting, false);
    atomic_store(&tlsm_active, false);
    tlsm_trace_disallow();
    tlsm_trace_detach();
    tlsm_conn_forget_all();
    tlsm_rec_forget_all();
    tlsm_trace_attached = false;
}

TLSM_EXPORT int tlsmeter_attach(const char *settings, char *msg, size_t cap)
{
    if (!tlsm_loaded_late || tlsm_preloaded_other)
        return say(msg, cap, 1,
                   "tlsmeter is preloaded into this process (LD_PRELOAD): it is traced already");
    if (attached)
        return say(msg, cap, 1, "tlsmeter is attached to this process already");
    if (getauxval(AT_SECURE))
        return say(msg, cap, 1,
                   "the process runs in secure-execution mode (setuid, setgid or file "
                   "capabilities): tlsmeter writes nothing there");
    if (!settings || !tlsm_config_load_given(settings))
        return say(msg, cap, 1, "the settings given do not fit in 8 KiB");
    if (tlsm_cfg.disable)
        return say(msg, cap, 1, "TLSMETER_DISABLE is set");
    tlsm_start_attached();
    tlsm_th.guard++;
    /* A running libssl keeps the ciphers it fetched: measured at the EVP calls. */
    tlsm_cfg.measure = TLSM_MEASURE_EVP;
    tlsm_trace_attached = true;
    if (!tlsm_start_tracing(true)) {
        tlsm_th.guard--;
        return say(msg, cap, 1, "cannot allocate tlsmeter's tracking tables");
    }
    tlsm_summary_atfork_child(); /* the summary's totals start from here */
    atomic_store(&tlsm_conn_joining, true);
    atomic_store(&tlsm_rec_adopting, true);
    if (!tlsm_trace_ready()) {
        int r = say(msg, cap, 1, "%s", tlsm_trace_quiet_reason());
        stop_tracing();
        tlsm_th.guard--;
        return r;
    }
    slots_objects = tlsm_got_attach_all();
    tlsm_th.guard--;
    if (slots_objects < 0) {
        stop_tracing();
        return say(msg, cap, 1, "the loaded objects could not be listed");
    }
    attached = true;
    return say(msg, cap, 0, "%s", tlsm_trace_file()); /* the tool names the file from it */
}

TLSM_EXPORT int tlsmeter_detach(char *msg, size_t cap)
{
    if (!attached)
        return say(msg, cap, 1, "tlsmeter is not attached to this process");
    /* A thread stopped inside the trace writer would write on after its file is closed. */
    if (tlsm_trace_writers_busy())
        return say(msg, cap, 2, "a thread is writing the trace; try again");
    tlsm_th.guard++;
    tlsm_summary_flush(true);
    tlsm_blind_at_exit(); /* what stayed blind (with the slots still rewritten), before the end */
    int put = tlsm_got_revert_all();
    stop_tracing();
    tlsm_th.guard--;
    attached = false;
    return say(msg, cap, 0, "%d GOT slot(s) put back", put);
}

bool tlsm_attach_fork_child(void)
{
    if (!attached)
        return false;
    attached = false;
    atomic_store(&tlsm_active, false);
    tlsm_got_revert_all();
    tlsm_trace_child_detach();
    return true;
}
