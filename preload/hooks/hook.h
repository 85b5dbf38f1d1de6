/* hook.h: what every hook file needs: the forwarding of a call to the function it would have
 * reached without us and its count (TLSM_HOOK_ENTER, forward/resolve.h), and the decision
 * whether to trace it (tlsm_tracing, trace/thread.h: inert until set up, never inside our
 * own calls). */
#ifndef TLSM_HOOK_H
#define TLSM_HOOK_H

#include "forward/resolve.h"
#include "trace/thread.h"

#include <errno.h>
#include <stdatomic.h>

#endif
