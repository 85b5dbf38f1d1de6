/* got_attach.c: the GOT slots of a program that tlsmeter was attached to while running
 * (preload/hooks/attach.c). Its library was not preloaded, so no import resolves to the hooks:
 * every loaded object's slot for a hooked name is pointed at the hook, keeping where the loader had
 * bound it as that caller's forward answer, and a detach puts every one back. Both run with
 * every other thread of the process stopped by the attaching tracer. */
#include "forward/got.h"
#include "forward/got_priv.h"
#include "forward/listing.h"
#include "forward/obj.h"
#include "base/glibc_compat.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

/* An attach (root NULL): a slot bound already keeps its target, checked to be a definition of
 * the name; a lazy stub gets what the global scope defines (an object loaded with its own
 * scope that was never called through it is left alone). */
bool tlsm_got_collect_bound(struct got_obj *g, const struct tlsm_obj *o, uintptr_t slot,
                            uintptr_t cur, int id)
{
    const char *name = tlsm_hooks[id].name;
    Dl_info di;
    uintptr_t t = 0;
    if (cur >= g->start && cur < g->end) {
        const char *ver = o->want[id];
        void *p = ver ? dlvsym(RTLD_DEFAULT, name, ver) : NULL;
        t = (uintptr_t)(p ? p : dlsym(RTLD_DEFAULT, name));
        if (t && tlsm_is_self((const void *)t))
            t = 0;
    } else if (dladdr((const void *)cur, &di) && (uintptr_t)di.dli_saddr == cur) {
        t = cur;
    }
    if (!t || (g->target[id] && (uintptr_t)g->target[id] != t) || g->nslots >= MAX_GOT_SLOTS)
        return false;
    g->target[id] = (void *)t;
    g->slot[g->nslots++] = (struct got_slot){slot, cur, id};
    g->ids |= 1ull << id;
    return true;
}

/* Every live record's slots that still hold the hooks get back what they held; the records
 * die. Only with every other thread stopped (a detach): a thread could be between reading a
 * slot and calling through it, but not one stopped by ptrace at an instruction boundary, and
 * the hooks it may be inside stay mapped. Returns the slots put back. */
int tlsm_got_revert_all(void)
{
    int put = 0, n = atomic_load_explicit(&tlsm_got_n, memory_order_acquire);
    pthread_mutex_lock(&tlsm_got_lock);
    for (int i = 0; i < n; i++) {
        struct got_obj *g = tlsm_got_rec(i);
        if (!g || atomic_load(&g->state) != G_LIVE)
            continue;
        struct dl_find_object f;
        if (_dl_find_object((void *)g->start, &f) != 0 || f.dlfo_link_map != g->lm)
            continue; /* unloaded: its slots went with it */
        const ElfW(Phdr) *ph = g->phdr;
        for (int k = 0; k < g->nslots; k++) {
            struct got_slot *sl = &g->slot[k];
            if (__atomic_load_n((uintptr_t *)sl->addr, __ATOMIC_ACQUIRE) ==
                    (uintptr_t)tlsm_got_hook_addr[sl->id] &&
                tlsm_got_write_ptr(ph, g->phnum, g->base, sl->addr, sl->orig))
                put++;
        }
        atomic_store(&g->state, G_DEAD);
    }
    pthread_mutex_unlock(&tlsm_got_lock);
    return put;
}

/* Every loaded object's slots (an attach). The listing holds nothing, but no object can be
 * unloaded meanwhile: every other thread is stopped, and this one is in the attach. */
int tlsm_got_attach_all(void)
{
    struct tlsm_listing l = {0};
    int before = atomic_load(&tlsm_got_n);
    if (!tlsm_listing_take(&l)) {
        tlsm_listing_free(&l);
        return -1;
    }
    for (size_t i = 0; i < l.n; i++)
        tlsm_got_patch_held(NULL, &l.v[i], true);
    tlsm_listing_free(&l);
    return atomic_load(&tlsm_got_n) - before;
}
