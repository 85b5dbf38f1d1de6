/* stack.h: sampled call stacks (TLSMETER_STACKS=N), interned, written as raw return
 * addresses (module + offset) so symbolization happens offline, on the analysis host. */
#ifndef TLSM_STACK_H
#define TLSM_STACK_H

#include <stdint.h>

void tlsm_stack_init(void);
/* Stack id for an event at this call site: every Nth event per site (the first always);
 * 0 when not sampled or stacks are off. Writes stack/module events on first sight. */
uint32_t tlsm_stack_sample(const void *site);
uint64_t tlsm_stack_count(void);

#endif
