/* hook.h: what every hook does first: find the real function for this caller, count the
 * call, and decide whether to trace (inert until set up, never inside our own calls). */
#ifndef TLSM_HOOK_H
#define TLSM_HOOK_H

#include "resolve.h"
#include "thread.h"

#include <errno.h>
#include <stdatomic.h>

#define TLSM_EXPORT __attribute__((visibility("default"), noinline))

/* Set once the constructor finished and tracing is on; cleared on quiet and at exit. */
extern _Atomic bool tlsm_active;

static inline bool tlsm_tracing(struct tlsm_thread *th)
{
    if (!atomic_load_explicit(&tlsm_active, memory_order_relaxed) || th->guard || th->exiting)
        return false;
    if (__builtin_expect(!th->started, 0))
        tlsm_thread_start(th);
    return true;
}

/* Resolve and count. A function with no real definition anywhere cannot be forwarded:
 * the hook then fails the call the way a missing function would (ENOSYS). */
#define TLSM_HOOK_ENTER(name, fwd)                                                                 \
    struct tlsm_fwd fwd = tlsm_forward(TLSM_FN_##name, __builtin_return_address(0));               \
    tlsm_th.calls[TLSM_FN_##name]++

#endif
