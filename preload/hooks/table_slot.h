/* table_slot.h: the provider-table wrapper slots (hooks/hook_table.c), one per cipher table
 * of a copy reached, filled by hooks/hook_table_reach.c. */
#ifndef TLSM_TABLE_SLOT_H
#define TLSM_TABLE_SLOT_H

#include "forward/tables.h"

#include <stdbool.h>

#define MAX_TSLOTS 12

struct tslot {
    struct tlsm_table_copy copy;
    struct tlsm_cipher_table t;
    int gcm_layout; /* PROV_GCM_CTX of a verified version checked: 1 yes, -1 no, 0 not yet */
    bool free;      /* its copy was unloaded: the slot (and its wrappers) can serve another */
    /* A copy the hooks reach (obj->tbl_records): its contexts are record sources only when
     * libssl keys them, which the EVP init hook says (tlsm_th.tbl_keying). */
    bool hooked;
};
extern struct tslot tlsm_tslots[MAX_TSLOTS];
extern int tlsm_ntslots; /* slots ever used */

/* Point slot i's copy's table at slot i's wrappers (in an order that never leaves a record
 * half seen); false, with the table as it was, when an entry cannot be written. */
bool tlsm_tslot_install(struct tslot *s, int i);
/* The PROV_GCM_CTX layout of a copy's version text: 30, 35, or 0 (not verified). */
int tlsm_table_gcm_layout_of(const char *version);

#endif
