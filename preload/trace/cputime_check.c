/* cputime_check.c: the sums behind TLSMETER_CPUTIME_CHECK (cputime_check.h). */
#include "trace/cputime_check.h"
#include "trace/config.h"

#include <stdatomic.h>
#include <time.h>

static _Atomic uint64_t n_recs, n_preempted, sum_crypto, sum_thread, sum_pair;
static _Atomic uint64_t n_stalled, st_crypto, st_thread;

uint64_t tlsm_cpu_check_now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void tlsm_cpu_check_add(uint64_t crypto_ns, uint64_t thread_ns, uint64_t pair_ns, bool preempted,
                        bool stalled)
{
    if (stalled) { /* the method's span against the thread clock's, apart */
        atomic_fetch_add_explicit(&n_stalled, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&st_crypto, crypto_ns, memory_order_relaxed);
        atomic_fetch_add_explicit(&st_thread, thread_ns, memory_order_relaxed);
        return;
    }
    if (preempted) { /* its crypto_ns is an estimate's input, not on-CPU time: not compared */
        atomic_fetch_add_explicit(&n_preempted, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&n_recs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&sum_crypto, crypto_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&sum_thread, thread_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&sum_pair, pair_ns, memory_order_relaxed);
}

/* What one clock read costs on the thread clock itself: the median of back-to-back pairs,
 * which every record's thread figure carries once (the read after the span's start). */
static uint64_t pair_ns(void)
{
    uint64_t d[31];
    for (int i = 0; i < 31; i++) {
        uint64_t a = tlsm_cpu_check_now();
        d[i] = tlsm_cpu_check_now() - a;
    }
    for (int i = 1; i < 31; i++) /* insertion sort: 31 values */
        for (int k = i; k > 0 && d[k - 1] > d[k]; k--) {
            uint64_t t = d[k];
            d[k] = d[k - 1];
            d[k - 1] = t;
        }
    return d[15];
}

void tlsm_cpu_check_write(struct tlsm_json *j)
{
    if (!tlsm_cfg.cputime_check)
        return;
    tlsm_json_obj(j, "cputime_check");
    tlsm_json_int(j, "records", (int64_t)atomic_load(&n_recs));
    tlsm_json_int(j, "preempted", (int64_t)atomic_load(&n_preempted));
    tlsm_json_int(j, "crypto_ns", (int64_t)atomic_load(&sum_crypto));
    tlsm_json_int(j, "thread_ns", (int64_t)atomic_load(&sum_thread));
    tlsm_json_int(j, "stalled", (int64_t)atomic_load(&n_stalled));
    tlsm_json_int(j, "stalled_crypto_ns", (int64_t)atomic_load(&st_crypto));
    tlsm_json_int(j, "stalled_thread_ns", (int64_t)atomic_load(&st_thread));
    tlsm_json_int(j, "pair_ns", (int64_t)pair_ns());
    tlsm_json_int(j, "pair_sum_ns", (int64_t)atomic_load(&sum_pair));
    tlsm_json_obj_end(j);
}
