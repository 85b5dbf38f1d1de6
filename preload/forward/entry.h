/* entry.h: patch the entry of an SSL_* function that no PLT leads to
 * (a copy inside the executable, node's; a -Bsymbolic library's own calls), so that it jumps
 * to tlsmeter's hook; the hook forwards to a trampoline that runs the moved instructions
 * and continues in the original. CPU parts: arch/ARCH/entry.c. */
#ifndef TLSM_ENTRY_H
#define TLSM_ENTRY_H

#include <stdbool.h>
#include <stddef.h>

/* Make fn jump to hook. False when its first instructions cannot be relocated, no page near
 * it is free or its code cannot be written (why says which); fn is then untouched. Never
 * twice for one fn. With other threads running, exactly one instruction is replaced by one
 * atomic store, or the function is refused. */
bool tlsm_entry_patch(void *fn, void *hook, char *why, size_t whycap);
/* After a dlclose: the patches of functions whose object is gone are forgotten (their entries
 * and pages reused), so a new object at the same address is never sent to a stale trampoline. */
void tlsm_entry_forget_gone(void);
/* The trampoline that runs the original fn, when fn was patched; NULL otherwise. Lock-free. */
void *tlsm_entry_original(const void *fn);

#endif
