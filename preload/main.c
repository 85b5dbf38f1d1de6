/* main.c: libtlsmeter.so's life: set-up in the constructor (hooks stay inert until it is
 * done), fork handling, and the end event at exit. */
#include "forward/bindpast.h"
#include "forward/blind.h"
#include "forward/got.h"
#include "base/clock.h"
#include "trace/config.h"
#include "trace/cputime.h"
#include "trace/cputime_check.h"
#include "core/conn.h"
#include "hooks/hook.h"
#include "hooks/reach.h"
#include "base/json.h"
#include "trace/log.h"
#include "forward/obj.h"
#include "core/record.h"
#include "reroute/backend.h"
#include "hooks/late.h"
#include "reroute/reroute.h"
#include "core/stack.h"
#include "core/summary.h"
#include "trace/trace.h"
#include "hooks/attach.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <unistd.h>

/* Every lock of the preload is held across fork(), taken in one order that no other path
 * inverts (the backend load may open the trace; the end line reads thread counts under the
 * trace's open lock), so the child never finds one held by a thread it does not have. */
static void locks(bool take)
{
    if (take) {
        tlsm_got_atfork(
            true); /* first: held around the GOT stores only, never across a loader call */
        tlsm_backend_atfork(true);
        tlsm_stack_atfork(true);
        tlsm_trace_atfork_prepare(); /* open lock, then its buffers */
        tlsm_thread_atfork(true);
        tlsm_obj_atfork(true);
        tlsm_resolve_atfork(true);
    } else {
        tlsm_resolve_atfork(false);
        tlsm_obj_atfork(false);
        tlsm_thread_atfork(false);
        tlsm_stack_atfork(false);
        tlsm_backend_atfork(false);
        tlsm_got_atfork(false);
    }
}

static void atfork_prepare(void)
{
    locks(true);
}

static void atfork_parent(void)
{
    locks(false);
    tlsm_trace_atfork_parent();
}

static void atfork_child(void)
{
    locks(false);
    if (tlsm_attach_fork_child()) /* attached: the child gets nothing of tlsmeter */
        return;
    tlsm_thread_atfork_child();
    tlsm_cpu_atfork_child();
    tlsm_summary_atfork_child();
    tlsm_trace_atfork_child();
}

static size_t end_line(char *buf, size_t cap);

/* Loaded by a dlopen after start (tlsmeter attach, preload/hooks/attach.c) rather than preloaded:
 * then the library is not in the program's own search list (the executable, LD_PRELOAD and the
 * libraries linked at start: what dlsym on dlopen(NULL)'s handle searches), and nothing
 * happens until an attach asks. */
static bool loaded_late(void)
{
    void *prog = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    void *p = prog ? dlsym(prog, "tlsmeter_attach") : NULL;
    if (prog)
        dlclose(prog);
    /* Another tlsmeter there (libtlsmeter.so preloaded, this is libtlsmeter-attach.so): its
     * hooks hold the slots already; an attach must not trace the same calls twice. */
    tlsm_preloaded_other = p && p != (void *)&tlsmeter_attach;
    return p != (void *)&tlsmeter_attach;
}

/* Tracing on, once the settings are read: the constructor's second half when preloaded, or an
 * attach (which reaches what is loaded by itself). The tables and handlers are made once per
 * process, however often it is attached. */
bool tlsm_start_tracing(bool attach)
{
    static bool ready;
    if (!ready) {
        if (tlsm_rec_init() || tlsm_conn_init()) {
            tlsm_warn("cannot allocate tracking tables; tracing off");
            return false;
        }
        tlsm_reroute_observe();
        tlsm_thread_init();
        tlsm_stack_init();
        pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
        ready = true;
    }
    tlsm_trace_allow();
    atomic_store(&tlsm_active, true);
    if (attach)
        return true;
    tlsm_late_init();        /* what is loaded now is the start's; later dlopens: hook_late.c */
    tlsm_table_reach_init(); /* copies only their provider tables reach */
    tlsm_entry_reach_init(); /* ... and their SSL_* entry points, where no PLT leads */
    tlsm_backend_early();
    return true;
}

__attribute__((constructor)) static void tlsm_start(void)
{
    tlsm_trace_init();
    if (loaded_late()) {
        tlsm_loaded_late = true;
        return;
    }
    tlsm_trace_set_end_line(end_line);
    tlsm_trace_add_replay(tlsm_obj_replay_libs);
    tlsm_trace_add_replay(tlsm_backend_replay_libs);
    tlsm_log_init();
    tlsm_resolve_init();
    tlsm_config_load();
    if (tlsm_cfg.help)
        tlsm_config_print_help(STDERR_FILENO);
    /* setuid/setgid/capabilities: the environment is not the user's to trust. Write nothing. */
    if (getauxval(AT_SECURE) || tlsm_cfg.disable)
        return;
    tlsm_start_tracing(false);
}

/* The parts of the constructor an attach runs (preload/hooks/attach.c). */
void tlsm_start_attached(void)
{
    static bool once;
    if (once)
        return;
    once = true;
    tlsm_trace_set_end_line(end_line);
    tlsm_trace_add_replay(tlsm_obj_replay_libs);
    tlsm_trace_add_replay(tlsm_backend_replay_libs);
    tlsm_resolve_init();
}

__attribute__((destructor)) static void tlsm_stop(void)
{
    if (!atomic_load(&tlsm_active))
        return;
    tlsm_summary_flush(true); /* summary mode: the last interval's totals */
    tlsm_th.guard++;
    tlsm_blind_at_exit(); /* blind and fwd events, before the end line */
    tlsm_trace_finish();
    atomic_store(&tlsm_active, false);
}

static int64_t tv_ns(struct timeval tv)
{
    return (int64_t)tv.tv_sec * 1000000000 + (int64_t)tv.tv_usec * 1000;
}

/* "hooks": calls per hooked function; "unfired": the OpenSSL hooks never called. */
static void hooks_write(struct tlsm_json *j)
{
    uint64_t unfired = 0, calls[TLSM_FN_COUNT];
    tlsm_thread_calls_all(calls); /* one pass over the live threads, not one per hook */
    tlsm_json_obj(j, "hooks");
    for (int i = 0; i < TLSM_FN_COUNT; i++) {
        uint64_t c = calls[i];
        tlsm_json_key(j, tlsm_hooks[i].name);
        tlsm_json_int_k(j, TLSM_AFTER_KEY, (int64_t)c);
        /* Handshake parts (H) fire by role: a client never signs, a server parses no peer
         * certificate; their absence is no coverage gap. */
        if (!c && tlsm_hooks[i].family != 'D' && tlsm_hooks[i].family != 'F' &&
            tlsm_hooks[i].family != 'H')
            unfired |= 1ull << i;
    }
    tlsm_json_obj_end(j);
    /* Calls bound past the hooks on purpose (a copy measured at its provider tables) are
     * measured there, not missed. */
    tlsm_hooks_write(j, "unfired", unfired & ~tlsm_bindpast_ids());
}

static size_t end_line(char *buf, size_t cap)
{
    uint64_t events, dropped;
    struct rusage ru;
    struct tlsm_json j;
    tlsm_trace_counts(&events, &dropped);
    getrusage(RUSAGE_SELF, &ru);
    uint64_t now = tlsm_now();
    tlsm_json_begin(&j, buf, cap, TLSM_EV(END));
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(now - tlsm_trace_t0));
    tlsm_json_int(&j, "events", (int64_t)events + 1); /* + the header */
    tlsm_json_int(&j, "dropped", (int64_t)dropped);
    if (dropped)
        tlsm_json_int(&j, "dropped_bytes", (int64_t)tlsm_trace_dropped_bytes());
    tlsm_json_int(&j, "user_ns", tv_ns(ru.ru_utime));
    tlsm_json_int(&j, "sys_ns", tv_ns(ru.ru_stime));
    tlsm_json_int(&j, "maxrss_kb", ru.ru_maxrss);
    hooks_write(&j);
    tlsm_obj_end_write(&j);
    tlsm_blind_end_write(&j); /* objects tlsmeter cannot see */
    tlsm_json_int(&j, "untracked_ctx", (int64_t)tlsm_rec_untracked());
    tlsm_json_int(&j, "preempted", (int64_t)tlsm_cpu_preempted());
    if (tlsm_cpu_stalled())
        tlsm_json_int(&j, "stalled", (int64_t)tlsm_cpu_stalled());
    if (tlsm_cfg.stacks)
        tlsm_json_int(&j, "stacks", (int64_t)tlsm_stack_count());
    tlsm_json_obj(&j, "overhead_ns");
    tlsm_json_int(&j, "clock", (int64_t)tlsm_clock_cost_ns());
    tlsm_json_obj_end(&j);
    tlsm_cpu_check_write(&j);
    tlsm_reroute_write(&j);
    if (tlsm_trace_is_quiet())
        tlsm_json_str(&j, "quiet", tlsm_trace_quiet_reason());
    if (tlsm_exec_path)
        tlsm_json_str(&j, "exec", tlsm_exec_path);
    tlsm_json_int(&j, "warnings", (int64_t)tlsm_trace_warnings());
    tlsm_json_str(&j, "io", tlsm_trace_io());
    if (tlsm_trace_io_error())
        tlsm_json_str(&j, "io_error", tlsm_trace_io_error());
    return tlsm_json_end(&j, buf);
}
