/* fn.h: one id per function tlsmeter interposes (base/hooks.def), for tables indexed by
 * hook: forwarding (forward/resolve.h), per-thread call counts (trace/thread.h). */
#ifndef TLSM_FN_H
#define TLSM_FN_H

enum tlsm_fn {
#define X(name, fam, req) TLSM_FN_##name,
#include "base/hooks.def"
#undef X
    TLSM_FN_COUNT
};

#endif
