/* bindpast.h: for an OpenSSL copy whose records are measured at its provider tables
 * (hooks/hook_table.c, obj->tbl_records), the calls a record makes at the EVP and GCM level
 * are bound past the hooks: every loaded object's GOT slot for one of them that the linker
 * bound to the copy (libssl's EVP_CipherUpdate, the copy's own EVP_DecryptUpdate and
 * CRYPTO_gcm128_* calls) gets the copy's own function, so those calls cost what they cost
 * without tlsmeter. The init calls stay hooked: they tell which contexts libssl keys. */
#ifndef TLSM_BINDPAST_H
#define TLSM_BINDPAST_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

struct tlsm_obj;

/* copy (a link map) is measured at its tables: its own nested calls are bound past too. */
void tlsm_bindpast_add_copy(const struct link_map *copy);
/* Every loaded object not scanned yet: its slots bound to a copy measured at its tables (and
 * not given back to the hooks) are bound past them. Returns the slots written. From the
 * constructor only (no other thread can unload an object under the walk). */
int tlsm_bindpast_scan(void);
/* The same for one object, which the caller holds loaded (a dlopen's scope, hooks/hook_late.c). */
int tlsm_bindpast_object(const struct link_map *lm, const ElfW(Phdr) * phdr, int phnum);
/* After a dlclose: forget the slots and objects that went with it. */
void tlsm_bindpast_after_dlclose(void);
/* Give copy's calls back to the hooks, for good (a libssl context of it that its tables do
 * not serve is measured at the EVP calls): every slot written for it gets the hook again. */
void tlsm_bindpast_undo(struct tlsm_obj *copy);
/* Is slot one of those bound past, still (a caller tlsmeter measures at the copy's tables,
 * not one blind to it)? */
bool tlsm_bindpast_holds(uintptr_t slot);
/* The hooks (bit per enum tlsm_fn) some slot is bound past now: not called, yet not missed. */
uint64_t tlsm_bindpast_ids(void);
/* Slots bound past the hooks now (for the lib line and the tests). */
int tlsm_bindpast_count(const struct tlsm_obj *copy);

#endif
