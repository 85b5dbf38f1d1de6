/* got.h: reach OpenSSL calls that bind past the hooks by rewriting the caller's GOT slots
 * objects an RTLD_DEEPBIND dlopen brought in look their imports
 * up in their own dependencies first, so their SSL_* and EVP_* calls never reach the hooks. */
#ifndef TLSM_GOT_H
#define TLSM_GOT_H

#include "forward/resolve.h"

#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>

struct tlsm_obj;

/* libc's dlopen, for tlsmeter's own use, and its address. */
void *tlsm_real_dlopen(const char *file, int mode);
void *tlsm_real_dlopen_fn(void);

/* The function a patched caller's slot held before (its pinned forward answer), NULL when
 * caller has no live patched slot for id or that function's copy is no longer the same load.
 * Lock-free: called on a forwarding cache miss. */
void *tlsm_got_answer(enum tlsm_fn id, const struct tlsm_obj *caller);
/* Were caller's GOT slots rewritten? Its fwd events are tlsm_got_write_fwd's, at exit. */
bool tlsm_got_patched(const struct tlsm_obj *caller);
void tlsm_got_write_fwd(void);
/* Point lm's GOT slots for names[0..n) at repl[]; orig[k] gets (or must already
 * be) what they called. Returns the slots rewritten. */
int tlsm_got_rewrite(const struct link_map *lm, const ElfW(Phdr) * phdr, int phnum,
                     const char *const names[], int n, void *const repl[], void *orig[]);
/* tlsmeter's own hook for id (families S, E, G), from its own scope; NULL if none. */
void *tlsm_got_self_hook(enum tlsm_fn id);
/* After a dlclose that succeeded: the records of objects no longer loaded die (a nested
 * dlclose may have been deferred to this one). */
void tlsm_got_after_dlclose(void);
struct tlsm_listing;
struct tlsm_listed;
/* Counts published records; a listing keeps its value from before it was taken. */
extern _Atomic uint64_t tlsm_got_births;
/* Records born before l was taken whose object is not in it die. */
void tlsm_got_sweep(const struct tlsm_listing *l);
/* The GOT slots of obj, an object the RTLD_DEEPBIND dlopen h loaded or covers, held by h
 * (fresh: new since that dlopen began, so loaded with its scope). */
void tlsm_got_patch_held(void *h, const struct tlsm_listed *obj, bool fresh);
void tlsm_got_atfork(bool take);
/* A detach, every other thread stopped: each slot still holding a hook gets back what it held
 * (tlsm_got_patch_held with h NULL rewrote it); returns the slots put back. */
int tlsm_got_revert_all(void);
/* An attach, every other thread stopped: every loaded object's slots for the hooked names
 * (families S, E, G, H and D) point at the hooks. Returns the records made, -1 when the
 * objects could not be listed. */
int tlsm_got_attach_all(void);
/* One aligned pointer store at addr in the object whose program headers and load base are
 * given, inside an mprotect of its page when the loader made it read-only (RELRO), restored
 * after. False (nothing written) when addr is in none of its segments or misaligned. */
bool tlsm_got_write_ptr(const ElfW(Phdr) * phdr, int phnum, uintptr_t base, uintptr_t addr,
                        uintptr_t val);

#endif
