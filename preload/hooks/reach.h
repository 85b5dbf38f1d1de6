/* reach.h: the hooks that reach OpenSSL copies past LD_PRELOAD, set up from the
 * constructor (main.c) in this order: provider tables (hook_table.c), then SSL_* entry
 * points (hook_entry.c), then, for a copy whose SSL_read neither reaches, its libc socket
 * reads (hook_sock.c). A copy whose tables have an unknown shape is left alone by all. */
#ifndef TLSM_REACH_H
#define TLSM_REACH_H

#include "forward/tables.h"

#include <link.h>
#include <stdbool.h>

void tlsm_table_reach_init(void);
void tlsm_entry_reach_init(void);
/* One copy (held by the caller), at start or once a dlopen loaded it: its provider tables;
 * its SSL_* entry points (and its socket reads where SSL_read stays out of reach). */
void tlsm_table_reach_copy(const struct tlsm_table_copy *c);
/* A copy the hooks reach, measured at its tables when TLSMETER_MEASURE=provider (and no
 * reroute): its tables wrapped and its per-record EVP and GCM calls bound past the hooks. */
void tlsm_table_reach_hooked(const struct tlsm_table_copy *c);
/* Is any copy measured that way (a dlopen then binds the new objects' calls past too)? */
bool tlsm_table_hooked_any(void);
void tlsm_entry_reach_copy(const struct tlsm_table_copy *c);
/* After a dlclose: table slots of copies that went away are reused. */
void tlsm_table_forget_gone(void);
/* Was lm's table shape refused (then nothing else touches it)? */
bool tlsm_table_refused(const struct link_map *lm);
/* c's SSL_read cannot be reached: rewrite its libc socket reads. */
void tlsm_sock_reach(const struct tlsm_table_copy *c);

#endif
