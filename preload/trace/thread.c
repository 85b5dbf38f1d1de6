/* thread.c: per-thread state and its end: flush the thread's trace buffer at thread exit
 * and fold its hook call counts into the process totals. */
#include "trace/thread.h"
#include "trace/cputime.h"
#include "trace/trace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

_Atomic bool tlsm_active;

__thread struct tlsm_thread tlsm_th __attribute__((tls_model("initial-exec")));

static pthread_key_t exit_key;
static bool key_ok;
static _Atomic uint64_t retired_calls[TLSM_FN_COUNT];
/* Live threads' call counters, for the end event (bounded; late threads only retire). */
#define MAX_LIVE 1024
static uint64_t *live_calls[MAX_LIVE];
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_thread_exit(void *arg)
{
    struct tlsm_thread *th = &tlsm_th;
    (void)arg;
    th->exiting = true;
    tlsm_trace_thread_exit();
    tlsm_cpu_thread_exit(th);
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < MAX_LIVE; i++)
        if (live_calls[i] == th->calls)
            live_calls[i] = NULL;
    pthread_mutex_unlock(&live_lock);
    for (int i = 0; i < TLSM_FN_COUNT; i++)
        atomic_fetch_add(&retired_calls[i], th->calls[i]);
    for (int i = 0; i < TLSM_FN_COUNT; i++)
        th->calls[i] = 0;
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
    for (int i = 0; i < MAX_LIVE; i++)
        if (!live_calls[i]) {
            live_calls[i] = th->calls;
            break;
        }
    pthread_mutex_unlock(&live_lock);
}

void tlsm_thread_calls_all(uint64_t out[TLSM_FN_COUNT])
{
    for (int fn = 0; fn < TLSM_FN_COUNT; fn++)
        out[fn] = atomic_load(&retired_calls[fn]);
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < MAX_LIVE; i++)
        for (int fn = 0; live_calls[i] && fn < TLSM_FN_COUNT; fn++)
            out[fn] += __atomic_load_n(&live_calls[i][fn], __ATOMIC_RELAXED);
    pthread_mutex_unlock(&live_lock);
}

uint64_t tlsm_thread_calls(int fn)
{
    uint64_t n = atomic_load(&retired_calls[fn]);
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < MAX_LIVE; i++)
        if (live_calls[i])
            n += __atomic_load_n(&live_calls[i][fn], __ATOMIC_RELAXED);
    pthread_mutex_unlock(&live_lock);
    return n;
}

/* After fork only the calling thread exists: forget the others, keep our own counts. */
void tlsm_thread_atfork_child(void)
{
    struct tlsm_thread *th = &tlsm_th;
    for (int i = 0; i < MAX_LIVE; i++)
        live_calls[i] = NULL;
    for (int i = 0; i < TLSM_FN_COUNT; i++)
        atomic_store(&retired_calls[i], 0);
    for (int i = 0; i < TLSM_FN_COUNT; i++)
        th->calls[i] = 0;
    th->tid = (int)gettid();
    if (th->started)
        live_calls[0] = th->calls;
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
