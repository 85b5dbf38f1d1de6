/* stack.h: sampled call stacks (TLSMETER_STACKS=N), interned, written as raw return
 * addresses (module + offset) so symbolization happens offline, on the analysis host. */
#ifndef TLSM_STACK_H
#define TLSM_STACK_H

#include <stdbool.h>
#include <stdint.h>

void tlsm_stack_init(void);
enum tlsm_stack_kind { TLSM_STACK_REC, TLSM_STACK_READ };

/* Stack id for an event of this kind at this call site: every Nth event per (site, kind),
 * the first always (records and reads count apart, so strict rec/read alternation with an
 * even N still samples both); 0 when not sampled or stacks are off. Writes stack/module
 * events on first sight. */
uint32_t tlsm_stack_sample(const void *site, enum tlsm_stack_kind kind);
uint64_t tlsm_stack_count(void);
void tlsm_stack_atfork(bool take);

#endif
