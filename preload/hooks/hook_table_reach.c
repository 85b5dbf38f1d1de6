/* hook_table_reach.c: which copies get the provider-table wrappers (hooks/hook_table.c):
 * the copies the hooks cannot interpose, found at start and after each dlopen; and, when
 * TLSMETER_MEASURE=provider with no reroute, the OpenSSL 3 copies the hooks do interpose,
 * whose per-record EVP and GCM calls are then bound past the hooks (forward/bindpast.c). */
#include "forward/bindpast.h"
#include "forward/obj.h"
#include "forward/tables.h"
#include "hooks/reach.h"
#include "hooks/table_slot.h"
#include "trace/config.h"
#include "trace/log.h"
#include "trace/thread.h"

#include <openssl/core_dispatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* Copies whose tables did not have the expected shape: left alone by every technique. */
static const struct link_map *refused[8];
static int nrefused;

bool tlsm_table_refused(const struct link_map *lm)
{
    for (int i = 0; i < nrefused; i++)
        if (refused[i] == lm)
            return true;
    return false;
}

/* Slots are filled under fill_lock: copies loaded later are reached from the thread whose
 * dlopen loaded them, while others run. No loader call happens under it. */
static pthread_mutex_t fill_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_flag slots_said = ATOMIC_FLAG_INIT;

/* One copy: its tables, checked, each into a slot. hooked: a copy the hooks reach, whose
 * records are measured at its tables instead of its EVP calls (left to the hooks, silently,
 * when its tables do not have the expected shape). Returns the tables wrapped. */
static int reach(const struct tlsm_table_copy *c, bool hooked)
{
    struct tlsm_cipher_table found[3];
    char why[256];
    int n = tlsm_tables_find(c, found, 3, why, sizeof(why));
    const char *path = c->lm->l_name && c->lm->l_name[0] ? c->lm->l_name : "the program";
    if (hooked && (why[0] || !n))
        return 0;
    if (why[0] || !n) {
        tlsm_warn("%s holds %s but its provider tables do not have OpenSSL 3.0's shape (%s): "
                  "left alone, nothing of it is traced",
                  path, c->version, why[0] ? why : "no AES-GCM or ChaCha20-Poly1305 table found");
        pthread_mutex_lock(&fill_lock);
        if (nrefused < 8)
            refused[nrefused++] = c->lm;
        pthread_mutex_unlock(&fill_lock);
        return 0;
    }
    /* Registered from its code: for a position-dependent executable _dl_find_object reports
     * the range of the segment asked about, and the program's calls come from its code. */
    struct tlsm_obj *o = tlsm_obj_of((const void *)found[0].orig[OSSL_FUNC_CIPHER_UPDATE]);
    if (o && !o->platform[0]) /* before its lib line is written */
        snprintf(o->platform, sizeof(o->platform), "%s", c->platform);
    int left = 0, done = 0;
    pthread_mutex_lock(&fill_lock);
    for (int k = 0; k < n && o; k++) {
        int i = 0;
        while (i < tlsm_ntslots && !tlsm_tslots[i].free)
            i++;
        if (i == MAX_TSLOTS) {
            left = n - k;
            break;
        }
        struct tslot *s = &tlsm_tslots[i];
        memset(s, 0, sizeof(*s));
        s->copy = *c;
        s->t = found[k];
        s->t.lib = o;
        s->hooked = hooked;
        if (tlsm_tslot_install(s, i)) {
            tlsm_ntslots += i == tlsm_ntslots;
            done++;
        } else {
            s->free = true;
        }
    }
    pthread_mutex_unlock(&fill_lock);
    /* (A copy the hooks reach loses nothing: a cipher no wrapped table serves is measured at
     * its EVP calls, hooks/hook_evp.c tbl_keyed.) */
    if (left && !hooked && !atomic_flag_test_and_set(&slots_said))
        tlsm_warn("%s: %d provider table(s) not reached: all %d table slots are in use (one per "
                  "table of each copy reached); its records are not traced",
                  path, left, MAX_TSLOTS);
    if (o && done && !hooked)
        atomic_fetch_or(&o->reach, TLSM_REACH_TABLE);
    return done;
}

void tlsm_table_reach_copy(const struct tlsm_table_copy *c)
{
    reach(c, false);
}

static atomic_bool hooked_any;

bool tlsm_table_hooked_any(void)
{
    return atomic_load_explicit(&hooked_any, memory_order_relaxed);
}

/* Measure at the tables only where nothing needs the EVP calls themselves: the reroute
 * (TLSMETER_CRYPTO=hw|soft) mirrors them into its shadow contexts. */
static bool measure_at_tables(void)
{
    return tlsm_cfg.patch && tlsm_cfg.measure == TLSM_MEASURE_PROVIDER &&
           tlsm_cfg.crypto == TLSM_MODE_NATIVE;
}

void tlsm_table_reach_hooked(const struct tlsm_table_copy *c)
{
    if (!measure_at_tables())
        return;
    struct tlsm_obj *o = tlsm_obj_of((const void *)c->lm->l_ld);
    if (!o || !reach(c, true))
        return;
    /* Its GCM calls are bound past too where the tables read the code from the provider
     * context (note_impl: the versions whose layout was checked). */
    o->tbl_gcm = tlsm_table_gcm_layout_of(c->version) != 0;
    tlsm_bindpast_add_copy(c->lm);
    atomic_store(&o->tbl_records, true);
    atomic_store(&hooked_any, true);
}

/* After a dlclose (and tlsm_resolve_invalidate): the slots of copies that went away serve
 * again. Their wrappers are reachable only through the gone copy's tables. */
void tlsm_table_forget_gone(void)
{
    pthread_mutex_lock(&fill_lock);
    for (int i = 0; i < tlsm_ntslots; i++)
        if (!tlsm_tslots[i].free && tlsm_tslots[i].t.lib &&
            __atomic_load_n(&tlsm_tslots[i].t.lib->stale, __ATOMIC_ACQUIRE))
            tlsm_tslots[i].free = true;
    pthread_mutex_unlock(&fill_lock);
}

/* From the constructor, before main: the copies loaded with the program. */
void tlsm_table_reach_init(void)
{
    struct tlsm_table_copy copies[8];
    if (!tlsm_cfg.patch)
        return;
    tlsm_th.guard++;
    int n = tlsm_tables_copies(copies, 8);
    for (int i = 0; i < n; i++)
        tlsm_table_reach_copy(&copies[i]);
    n = measure_at_tables() ? tlsm_tables_hooked_copies(copies, 8) : 0;
    for (int i = 0; i < n; i++)
        tlsm_table_reach_hooked(&copies[i]);
    if (tlsm_table_hooked_any())
        tlsm_bindpast_scan();
    tlsm_th.guard--;
}
