/* listing.h: the loaded objects copied out of dl_iterate_phdr, and the objects a dlopen
 * handle's scope covers, each held while tlsmeter reads or writes it (docs/forwarding.md,
 * "Locking and lifetime"). Used by the GOT patching and the reach of copies loaded later. */
#ifndef TLSM_LISTING_H
#define TLSM_LISTING_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One listed object. Its identity is base, phdr and name (a hash of its file name): small
 * plugins share load bases and program-header offsets, and link maps are reused. ph may be
 * read only while the object is held. */
struct tlsm_listed {
    uintptr_t base;
    const void *phdr;
    uint64_t name;
    const ElfW(Phdr) * ph;
    int phnum;
    uintptr_t dyn; /* its PT_DYNAMIC (= its link map's l_ld), read while listing */
};
struct tlsm_listing {
    struct tlsm_listed *v;
    size_t n, cap, bytes;
    bool truncated;
    uint64_t stamp; /* tlsm_got_births before the objects were listed */
};

/* Every loaded object of this namespace; false (and maybe a partial listing) on failure.
 * The listing is in an anonymous mapping: tlsm_listing_free it (also on failure). */
bool tlsm_listing_take(struct tlsm_listing *l);
void tlsm_listing_free(struct tlsm_listing *l);
const struct tlsm_listed *tlsm_listing_find(const struct tlsm_listing *l, uintptr_t base,
                                            const void *phdr, uint64_t name);
/* The listing's entry of a held object (matched by base and PT_DYNAMIC; no listed object's
 * memory is read, it may be gone since), NULL if none. */
const struct tlsm_listed *tlsm_listing_entry_of(const struct tlsm_listing *l,
                                                const struct link_map *lm);

/* The objects a dlopen handle's scope covers: its object and its DT_NEEDED closure, each
 * found with dlopen(name, RTLD_NOLOAD) (as ld.so matched them) and held by h until
 * tlsm_scope_release. The root comes first, with h NULL. */
#define TLSM_SCOPE_MAX 64
struct tlsm_scope_obj {
    const struct link_map *lm;
    void *h;
};
int tlsm_scope_closure(void *root_h, struct tlsm_scope_obj *out, int cap);
void tlsm_scope_release(struct tlsm_scope_obj *objs, int n);

#endif
