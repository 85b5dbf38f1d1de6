/* cputime.c: choosing and setting up the on-CPU time method (cputime.h): once per process
 * (what the trace header says), then per thread at its first record. Nothing here runs per
 * record. */
#include "trace/cputime.h"
#include "trace/config.h"
#include "trace/log.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

const char *const tlsm_cpu_setting_names[] = {"auto", "perf", "rseq", "wall", NULL};

/* A range no thread ever executes (it is data), followed by the rseq abort signature and
 * the abort address. The kernel validates a descriptor before using it (version 0, abort_ip
 * outside the range, glibc's RSEQ_SIG in the 4 bytes before abort_ip) and kills the process
 * on a bad one; since the instruction pointer is never inside the range, all it ever does
 * with this one is clear the thread's pointer to it when the thread is switched out. */
static const struct {
    uint32_t range[4];
    uint32_t sig;
    uint32_t abort_here[4];
} rseq_target = {.sig = RSEQ_SIG};

__attribute__((aligned(32))) const struct rseq_cs tlsm_rseq_desc = {
    .version = 0,
    .flags = 0,
    .start_ip = (uintptr_t)rseq_target.range,
    .post_commit_offset = sizeof(rseq_target.range),
    .abort_ip = (uintptr_t)rseq_target.abort_here,
};

static pthread_once_t decide_once = PTHREAD_ONCE_INIT;
static enum tlsm_cpu_kind process_kind = TLSM_CPU_WALL;
static char why[160];
static _Atomic uint64_t preempted;
static _Atomic bool warned_thread;

void tlsm_cpu_count_preempted(void)
{
    atomic_fetch_add_explicit(&preempted, 1, memory_order_relaxed);
}

uint64_t tlsm_cpu_preempted(void)
{
    return atomic_load(&preempted);
}

static _Atomic uint64_t stalled;

void tlsm_cpu_count_stalled(void)
{
    atomic_fetch_add_explicit(&stalled, 1, memory_order_relaxed);
}

uint64_t tlsm_cpu_stalled(void)
{
    return atomic_load(&stalled);
}

/* This thread's task-clock page, the descriptor closed at once: the mapping holds the event,
 * so tlsmeter keeps no descriptor per thread (programs close all fds; RLIMIT_NOFILE). */
static const volatile struct perf_event_mmap_page *perf_page(int *err)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.exclude_kernel = 1; /* allowed unprivileged up to perf_event_paranoid 2 */
    a.exclude_hv = 1;
    long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        *err = errno;
        return NULL;
    }
    void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, (int)fd, 0);
    *err = errno;
    close((int)fd);
    return p == MAP_FAILED ? NULL : p;
}

static void unmap_page(const volatile struct perf_event_mmap_page *pg)
{
    if (pg)
        munmap((void *)(uintptr_t)pg, (size_t)sysconf(_SC_PAGESIZE));
}

/* glibc registered this thread's rseq area (not with glibc.pthread.rseq=0, not under
 * qemu-user, which has no rseq). */
static struct rseq *rseq_registered(void)
{
    if (!__rseq_size || __rseq_size < offsetof(struct rseq, rseq_cs) + 8)
        return NULL;
    struct rseq *r = tlsm_rseq_area();
    return r->cpu_id < 0x80000000u ? r : NULL; /* -1 uninitialized, -2 failed */
}

/* Once per process: does this kernel clear our descriptor when the thread is switched out?
 * A 1 ns sleep always is (~60 us once). */
static bool rseq_works(struct rseq *r)
{
    struct timespec ts = {0, 1};
    __atomic_store_n(&r->rseq_cs, (uint64_t)(uintptr_t)&tlsm_rseq_desc, __ATOMIC_RELAXED);
    for (int i = 0; i < 3 && __atomic_load_n(&r->rseq_cs, __ATOMIC_RELAXED); i++)
        nanosleep(&ts, NULL);
    bool cleared = !__atomic_load_n(&r->rseq_cs, __ATOMIC_RELAXED);
    __atomic_store_n(&r->rseq_cs, 0, __ATOMIC_RELAXED);
    return cleared;
}

static void try_rseq(const char *perf_why)
{
    struct rseq *r = rseq_registered();
    if (r && rseq_works(r)) {
        process_kind = TLSM_CPU_RSEQ;
        snprintf(why, sizeof(why), "%s", perf_why);
        return;
    }
    process_kind = TLSM_CPU_WALL;
    snprintf(why, sizeof(why), "%s%srseq: %s", perf_why, *perf_why ? "; " : "",
             r ? "the kernel did not clear rseq_cs at a switch" : "not registered by glibc");
}

static void decide(void)
{
    enum tlsm_cpu_setting set = (enum tlsm_cpu_setting)tlsm_cfg.cputime;
    char perf_why[64] = "";
    if (set == TLSM_CPUSET_WALL) {
        snprintf(why, sizeof(why), "TLSMETER_CPUTIME=wall");
        return;
    }
    if (set == TLSM_CPUSET_RSEQ) {
        try_rseq("TLSMETER_CPUTIME=rseq");
        return;
    }
    int err = 0;
    const volatile struct perf_event_mmap_page *pg = perf_page(&err);
    if (pg) {
        process_kind = pg->cap_user_time ? TLSM_CPU_PERF_CLOCK : TLSM_CPU_PERF_SWITCH;
        if (!pg->cap_user_time)
            snprintf(why, sizeof(why), "no cap_user_time");
        unmap_page(pg);
        return;
    }
    snprintf(perf_why, sizeof(perf_why), "perf_event_open: %s", strerrorname_np(err) ?: "?");
    if (set == TLSM_CPUSET_PERF) {
        snprintf(why, sizeof(why), "%s", perf_why);
        return;
    }
    try_rseq(perf_why);
}

static void decide_now(void)
{
    pthread_once(&decide_once, decide);
}

const char *tlsm_cputime_name(void)
{
    decide_now();
    switch (process_kind) {
    case TLSM_CPU_PERF_CLOCK:
        return "perf-clock";
    case TLSM_CPU_PERF_SWITCH:
        return "perf-switch";
    case TLSM_CPU_RSEQ:
        return "rseq";
    default:
        return "wall";
    }
}

const char *tlsm_cputime_why(void)
{
    decide_now();
    return why;
}

/* A thread the process method does not work for (EMFILE, ENOMEM, rseq unregistered): the
 * next method down; with none, every record is flagged (BLIND), never silently wall. */
static void thread_fallback(struct tlsm_thread *th, const char *what, int err)
{
    struct rseq *r = rseq_registered();
    if (r && process_kind != TLSM_CPU_RSEQ && !rseq_works(r)) /* not tested by decide() */
        r = NULL;
    if (r)
        th->cpu_rseq = r, th->cpu_kind = TLSM_CPU_RSEQ;
    else
        th->cpu_kind = TLSM_CPU_BLIND;
    if (!atomic_exchange(&warned_thread, true))
        tlsm_warn("thread %d: %s failed (%s): its records %s", th->tid, what,
                  err ? strerrorname_np(err) : "not registered",
                  r ? "detect switches with rseq" : "are all flagged as switched out");
}

void tlsm_cpu_thread_setup(struct tlsm_thread *th)
{
    decide_now();
    int err = 0;
    switch (process_kind) {
    case TLSM_CPU_PERF_CLOCK:
    case TLSM_CPU_PERF_SWITCH:
        th->cpu_page = perf_page(&err);
        if (th->cpu_page)
            th->cpu_kind = (uint8_t)process_kind;
        else
            thread_fallback(th, "perf_event_open", err);
        break;
    case TLSM_CPU_RSEQ:
        th->cpu_rseq = rseq_registered();
        th->cpu_kind = TLSM_CPU_RSEQ;
        if (!th->cpu_rseq)
            thread_fallback(th, "rseq", 0);
        break;
    default:
        th->cpu_kind = TLSM_CPU_WALL;
        break;
    }
}

void tlsm_cpu_thread_exit(struct tlsm_thread *th)
{
    const volatile struct perf_event_mmap_page *pg = th->cpu_page;
    th->cpu_page = NULL;
    th->cpu_kind = TLSM_CPU_WALL; /* no re-setup for a late record: it is wall */
    unmap_page(pg);
}

void tlsm_cpu_atfork_child(void)
{
    tlsm_th.cpu_kind = TLSM_CPU_UNSET;
    tlsm_th.cpu_page = NULL; /* not mapped here: never touch or unmap it */
    tlsm_th.cpu_rseq = NULL;
    atomic_store(&preempted, 0);
    atomic_store(&stalled, 0);
}
