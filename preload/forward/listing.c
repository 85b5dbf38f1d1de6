/* listing.c: the loaded objects copied out of dl_iterate_phdr, and a dlopen handle's scope
 * (listing.h). */
#include "forward/listing.h"
#include "base/elfdyn.h"
#include "forward/got.h"
#include "forward/resolve.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

/* The loaded objects as dl_iterate_phdr lists them, copied out of its callback (which runs
 * under the loader's lock: nothing but memory reads there). Sized by a first count, in an
 * anonymous mapping: no malloc, which a program may have replaced. */
static int count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info, (void)size;
    ++*(size_t *)arg;
    return 0;
}

static uint64_t name_hash(const char *n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; n && *n; n++)
        h = (h ^ (uint8_t)*n) * 0x100000001b3ull;
    return h;
}

static int list_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct tlsm_listing *l = arg;
    (void)size;
    if (l->n == l->cap) {
        l->truncated = true;
        return 1;
    }
    uintptr_t dyn = 0; /* read here, where the object cannot go away */
    for (int k = 0; k < info->dlpi_phnum && !dyn; k++)
        if (info->dlpi_phdr[k].p_type == PT_DYNAMIC)
            dyn = info->dlpi_addr + info->dlpi_phdr[k].p_vaddr;
    l->v[l->n++] =
        (struct tlsm_listed){info->dlpi_addr, info->dlpi_phdr,  name_hash(info->dlpi_name),
                             info->dlpi_phdr, info->dlpi_phnum, dyn};
    return 0;
}

bool tlsm_listing_take(struct tlsm_listing *l)
{
    size_t n = 0;
    dl_iterate_phdr(count_cb, &n);
    memset(l, 0, sizeof(*l));
    l->cap = n + 64; /* room for a few loaded between the two passes */
    l->bytes = (l->cap * sizeof(struct tlsm_listed) + 4095) & ~(size_t)4095;
    l->v = mmap(NULL, l->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (l->v == MAP_FAILED) {
        l->v = NULL;
        return false;
    }
    l->stamp = atomic_load(&tlsm_got_births);
    dl_iterate_phdr(list_cb, l);
    return !l->truncated;
}

void tlsm_listing_free(struct tlsm_listing *l)
{
    if (l->v)
        munmap(l->v, l->bytes);
    l->v = NULL;
    l->n = l->cap = 0; /* an empty listing: nothing in it, whatever was taken */
}

const struct tlsm_listed *tlsm_listing_find(const struct tlsm_listing *l, uintptr_t base,
                                            const void *phdr, uint64_t name)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].base == base && l->v[i].phdr == phdr && l->v[i].name == name)
            return &l->v[i];
    return NULL;
}

/* The objects this dlopen's scope covers: the handle's object and its DT_NEEDED closure,
 * each found by dlopen(name, RTLD_NOLOAD), which matches loaded objects by name and soname
 * exactly as ld.so matched them, and holds each one while tlsmeter reads and writes it (the
 * program's handle holds them too; another thread's objects are never read). Those new since
 * the listing before the dlopen were loaded with this scope first; the others get only the
 * slots bound to exactly what the scope defines. */

int tlsm_scope_closure(void *root_h, struct tlsm_scope_obj *out, int cap)
{
    struct link_map *root = NULL;
    if (dlinfo(root_h, RTLD_DI_LINKMAP, &root) != 0 || !root)
        return 0;
    int n = 0;
    out[n++] = (struct tlsm_scope_obj){root, NULL};
    for (int i = 0; i < n; i++) {
        const char *need[TLSM_SCOPE_MAX];
        int k = tlsm_elf_needed(out[i].lm, need, TLSM_SCOPE_MAX);
        for (int j = 0; j < k && n < cap; j++) {
            void *h = tlsm_real_dlopen(need[j], RTLD_LAZY | RTLD_NOLOAD);
            struct link_map *lm = NULL;
            if (!h)
                continue;
            bool seen = dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm;
            for (int m = 0; m < n && !seen; m++)
                seen = out[m].lm == lm;
            if (seen)
                tlsm_real_dlclose(h);
            else
                out[n++] = (struct tlsm_scope_obj){lm, h};
        }
    }
    return n;
}

/* The listing's entry of a held object: its base, and its PT_DYNAMIC where its l_ld is. */
const struct tlsm_listed *tlsm_listing_entry_of(const struct tlsm_listing *l,
                                                const struct link_map *lm)
{
    for (size_t i = 0; i < l->n; i++) {
        const struct tlsm_listed *o = &l->v[i];
        if (o->base == lm->l_addr && o->dyn && o->dyn == (uintptr_t)lm->l_ld)
            return o;
    }
    return NULL;
}

void tlsm_scope_release(struct tlsm_scope_obj *objs, int n)
{
    for (int i = 0; i < n; i++)
        if (objs[i].h)
            tlsm_real_dlclose(objs[i].h);
}
