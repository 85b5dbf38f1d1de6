/* cputime_check.h: TLSMETER_CPUTIME_CHECK=1, a test of the on-CPU method: the thread CPU
 * clock (CLOCK_THREAD_CPUTIME_ID, the kernel's own account) read around every record as well,
 * summed over the records the method did not flag as preempted or stalled, beside the
 * method's own crypto_ns, and over the stalled ones apart (their thread time should be far
 * below their span's), written in the end line (`cputime_check`). Two system calls a record: for
 * tests, never on by default. */
#ifndef TLSM_CPUTIME_CHECK_H
#define TLSM_CPUTIME_CHECK_H

#include "base/json.h"

#include <stdbool.h>
#include <stdint.h>

/* The calling thread's CPU time in ns (0 when the clock cannot be read). */
uint64_t tlsm_cpu_check_now(void);
/* One finished record: the method's crypto_ns and the thread clock over the same span. */
/* pair_ns: one clock read's cost on the thread clock, measured just before the span. */
void tlsm_cpu_check_add(uint64_t crypto_ns, uint64_t thread_ns, uint64_t pair_ns, bool preempted,
                        bool stalled);
/* The end line's `cputime_check` object (nothing when the setting is off). */
void tlsm_cpu_check_write(struct tlsm_json *j);

#endif
