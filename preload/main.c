/* main.c: libtlsmeter.so's life: set-up in the constructor (hooks stay inert until it is
 * done), fork handling, and the end event at exit. */
#include "forward/blind.h"
#include "base/clock.h"
#include "trace/config.h"
#include "trace/cputime.h"
#include "core/conn.h"
#include "hooks/hook.h"
#include "base/json.h"
#include "trace/log.h"
#include "forward/obj.h"
#include "core/record.h"
#include "reroute/backend.h"
#include "reroute/reroute.h"
#include "core/stack.h"
#include "core/summary.h"
#include "trace/trace.h"

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
    tlsm_thread_atfork_child();
    tlsm_cpu_atfork_child();
    tlsm_summary_atfork_child();
    tlsm_trace_atfork_child();
}

static size_t end_line(char *buf, size_t cap);

__attribute__((constructor)) static void tlsm_start(void)
{
    tlsm_trace_init();
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
    if (tlsm_rec_init() || tlsm_conn_init()) {
        tlsm_warn("cannot allocate tracking tables; tracing off");
        return;
    }
    tlsm_reroute_observe();
    tlsm_thread_init();
    tlsm_stack_init();
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    tlsm_trace_allow();
    atomic_store(&tlsm_active, true);
    tlsm_backend_early();
}

__attribute__((destructor)) static void tlsm_stop(void)
{
    if (!atomic_load(&tlsm_active))
        return;
    tlsm_summary_flush(true); /* summary mode: the last interval's totals */
    tlsm_th.guard++;
    tlsm_blind_at_exit(); /* issue 7: blind and fwd events, before the end line */
    tlsm_trace_finish();
    atomic_store(&tlsm_active, false);
}

static int64_t tv_ns(struct timeval tv)
{
    return (int64_t)tv.tv_sec * 1000000000 + (int64_t)tv.tv_usec * 1000;
}

static void hooks_json(char *buf, size_t cap, char *unfired, size_t ucap)
{
    size_t n = (size_t)snprintf(buf, cap, "{"), u = (size_t)snprintf(unfired, ucap, "[");
    uint64_t calls[TLSM_FN_COUNT];
    tlsm_thread_calls_all(calls);
    for (int i = 0; i < TLSM_FN_COUNT && n < cap && u < ucap; i++) {
        uint64_t c = calls[i];
        n += (size_t)snprintf(buf + n, cap - n, "%s\"%s\":%llu", i ? "," : "", tlsm_hooks[i].name,
                              (unsigned long long)c);
        if (!c && tlsm_hooks[i].family != 'D' && tlsm_hooks[i].family != 'F')
            u += (size_t)snprintf(unfired + u, ucap - u, "%s\"%s\"", u > 1 ? "," : "",
                                  tlsm_hooks[i].name);
    }
    if (n < cap)
        snprintf(buf + n, cap - n, "}");
    if (u < ucap)
        snprintf(unfired + u, ucap - u, "]");
}

static size_t end_line(char *buf, size_t cap)
{
    char hooks[2048], unfired[1024], libs[2048], over[128], reroute[768], blind[1536];
    uint64_t events, dropped;
    struct rusage ru;
    struct tlsm_json j;
    tlsm_trace_counts(&events, &dropped);
    getrusage(RUSAGE_SELF, &ru);
    hooks_json(hooks, sizeof(hooks), unfired, sizeof(unfired));
    if (!tlsm_obj_end_json(libs, sizeof(libs)))
        snprintf(libs, sizeof(libs), "[]");
    snprintf(over, sizeof(over), "{\"clock\":%llu}", (unsigned long long)tlsm_clock_cost_ns());
    uint64_t now = tlsm_now();
    tlsm_json_begin(&j, buf, cap, "end");
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(now - tlsm_trace_t0));
    tlsm_json_int(&j, "events", (int64_t)events + 1); /* + the header */
    tlsm_json_int(&j, "dropped", (int64_t)dropped);
    if (dropped)
        tlsm_json_int(&j, "dropped_bytes", (int64_t)tlsm_trace_dropped_bytes());
    tlsm_json_int(&j, "user_ns", tv_ns(ru.ru_utime));
    tlsm_json_int(&j, "sys_ns", tv_ns(ru.ru_stime));
    tlsm_json_int(&j, "maxrss_kb", ru.ru_maxrss);
    tlsm_json_raw(&j, "hooks", hooks);
    tlsm_json_raw(&j, "unfired", unfired);
    tlsm_json_raw(&j, "libs", libs);
    if (!tlsm_blind_end_json(blind, sizeof(blind))) /* issue 7: objects tlsmeter cannot see */
        snprintf(blind, sizeof(blind), "[]");
    tlsm_json_raw(&j, "blind", blind);
    tlsm_json_int(&j, "untracked_ctx", (int64_t)tlsm_rec_untracked());
    tlsm_json_int(&j, "preempted", (int64_t)tlsm_cpu_preempted());
    if (tlsm_cfg.stacks)
        tlsm_json_int(&j, "stacks", (int64_t)tlsm_stack_count());
    tlsm_json_raw(&j, "overhead_ns", over);
    if (tlsm_reroute_json(reroute, sizeof(reroute)))
        tlsm_json_raw(&j, "reroute", reroute);
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
