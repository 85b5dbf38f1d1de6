/* late.h: copies of OpenSSL that a dlopen brings in after start, reached before that dlopen
 * returns to its caller, with the techniques used at start (GOT slots for RTLD_DEEPBIND,
 * provider tables, entry points, socket reads). docs/forwarding.md, "Copies loaded later". */
#ifndef TLSM_LATE_H
#define TLSM_LATE_H

#include <stdbool.h>
#include <stdint.h>

struct tlsm_listing;

/* In the constructor, before the start's reach: the objects loaded with the program. */
void tlsm_late_init(void);
/* After the dlopen that returned h (mode as asked) and began when `before` was listed: the
 * objects its scope covers are patched (GOT slots, for RTLD_DEEPBIND) and those new since
 * `before` are searched for copies. Touches dlerror only when h is not NULL (to clear it). */
void tlsm_reach_after(void *h, int mode, const struct tlsm_listing *before);

/* The exported dlopen's two halves (hooks/hook_dl.c, arch/ARCH/dlopen_thunk.c). begin: an
 * address inside the caller's own object holding a return that the real dlopen can be made to
 * return through (so that glibc sees the caller as its caller), with the listing taken and
 * kept for this thread; NULL when none (then no after half runs). sp identifies the call:
 * end pops every begin of this thread made at or below it (a longjmp may skip an end). */
const void *tlsm_late_begin(int mode, const void *ra, uintptr_t sp);
void tlsm_late_end(void *h, uintptr_t sp);

#endif
