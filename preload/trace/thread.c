/* thread.c: per-thread state and its end: flush the thread's trace buffer at thread exit
 * and fold its hook call counts and summary sums into the process totals. */
#include "base/tls.h"
#include "trace/thread.h"
#include "trace/cputime.h"
#include "trace/trace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

_Atomic bool tlsm_active;

__thread struct tlsm_thread tlsm_th TLSM_IE;

static pthread_key_t exit_key;
static bool key_ok;
/* What exited threads counted: their hook calls and summary sums. */
static _Atomic uint64_t retired_calls[TLSM_FN_COUNT], retired_sum[TLSM_THREAD_SUM_N];
/* Live threads, whose counters are read in place: for the end event's calls and the
 * summary snapshots (bounded; a thread past it counts when it exits, `unlisted`). */
#define MAX_LIVE 1024
static struct tlsm_thread *live[MAX_LIVE];
static unsigned unlisted;
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

/* A thread's counters into the retired ones and out of the live list in one step under the
 * lock: a reader never sees them twice or not at all. */
static void on_thread_exit(void *arg)
{
    struct tlsm_thread *th = &tlsm_th;
    (void)arg;
    th->exiting = true;
    tlsm_trace_thread_exit();
    tlsm_cpu_thread_exit(th);
    pthread_mutex_lock(&live_lock);
    for (int i = 0; th->listed && i < MAX_LIVE; i++)
        if (live[i] == th)
            live[i] = NULL;
    if (!th->listed && th->started)
        unlisted--;
    th->listed = false;
    for (int i = 0; i < TLSM_FN_COUNT; i++)
        atomic_fetch_add_explicit(&retired_calls[i], th->calls[i], memory_order_relaxed);
    for (int i = 0; i < TLSM_THREAD_SUM_N; i++)
        if (th->sum[i])
            atomic_fetch_add_explicit(&retired_sum[i], th->sum[i], memory_order_relaxed);
    pthread_mutex_unlock(&live_lock);
    memset(th->calls, 0, sizeof(th->calls));
    memset(th->sum, 0, sizeof(th->sum));
}

void tlsm_thread_init(void)
{
    key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

void tlsm_thread_start(struct tlsm_thread *th)
{
    if (th->started)
        return;
    th->started = true;
    th->tid = (int)gettid();
    /* Any non-NULL value makes the destructor run at thread exit. */
    if (key_ok)
        pthread_setspecific(exit_key, th);
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < MAX_LIVE && !th->listed; i++)
        if (!live[i]) {
            live[i] = th;
            th->listed = true;
        }
    if (!th->listed)
        unlisted++;
    pthread_mutex_unlock(&live_lock);
}

/* The retired counts are read under the lock too: a thread retiring between the two reads
 * would otherwise be in neither (and a snapshot's delta go below zero). */
void tlsm_thread_calls_all(uint64_t out[TLSM_FN_COUNT])
{
    pthread_mutex_lock(&live_lock);
    for (int fn = 0; fn < TLSM_FN_COUNT; fn++)
        out[fn] = atomic_load(&retired_calls[fn]);
    for (int i = 0; i < MAX_LIVE; i++)
        for (int fn = 0; live[i] && fn < TLSM_FN_COUNT; fn++)
            out[fn] += __atomic_load_n(&live[i]->calls[fn], __ATOMIC_RELAXED);
    pthread_mutex_unlock(&live_lock);
}

uint64_t tlsm_thread_calls(int fn)
{
    pthread_mutex_lock(&live_lock);
    uint64_t n = atomic_load(&retired_calls[fn]);
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i])
            n += __atomic_load_n(&live[i]->calls[fn], __ATOMIC_RELAXED);
    pthread_mutex_unlock(&live_lock);
    return n;
}

void tlsm_thread_sum_all(uint64_t out[TLSM_THREAD_SUM_N])
{
    pthread_mutex_lock(&live_lock);
    for (int k = 0; k < TLSM_THREAD_SUM_N; k++)
        out[k] = atomic_load_explicit(&retired_sum[k], memory_order_relaxed);
    for (int i = 0; i < MAX_LIVE; i++)
        for (int k = 0; live[i] && k < TLSM_THREAD_SUM_N; k++)
            out[k] += __atomic_load_n(&live[i]->sum[k], __ATOMIC_RELAXED);
    pthread_mutex_unlock(&live_lock);
}

unsigned tlsm_thread_unlisted(void)
{
    pthread_mutex_lock(&live_lock);
    unsigned n = unlisted;
    pthread_mutex_unlock(&live_lock);
    return n;
}

/* After fork only the calling thread exists: forget the others; the counts start from zero
 * (what the parent counted is the parent's), the calling thread listed again. */
void tlsm_thread_atfork_child(void)
{
    struct tlsm_thread *th = &tlsm_th;
    for (int i = 0; i < MAX_LIVE; i++)
        live[i] = NULL;
    for (int i = 0; i < TLSM_FN_COUNT; i++)
        atomic_store(&retired_calls[i], 0);
    for (int i = 0; i < TLSM_THREAD_SUM_N; i++)
        atomic_store(&retired_sum[i], 0);
    memset(th->calls, 0, sizeof(th->calls));
    memset(th->sum, 0, sizeof(th->sum));
    unlisted = 0;
    th->tid = (int)gettid();
    th->listed = th->started;
    if (th->started)
        live[0] = th;
}

/* fork(): held across it so the child never inherits this lock taken by a thread that
 * does not exist there (main.c takes every lock in one fixed order). */
void tlsm_thread_atfork(bool take)
{
    if (take)
        pthread_mutex_lock(&live_lock);
    else
        pthread_mutex_unlock(&live_lock);
}
