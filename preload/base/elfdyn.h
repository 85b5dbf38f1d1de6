/* elfdyn.h: read a loaded object's dynamic section: which hooked names it references
 * through relocations, which symbol version each reference asks for, where the GOT slots
 * of those references are, and whether the object binds to its own definitions first. */
#ifndef TLSM_ELFDYN_H
#define TLSM_ELFDYN_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

/* For names[0..n): vers[i] = version string the object's reference asks for (NULL when
 * unversioned or not referenced); returns a bitmask of the names it references. */
uint64_t tlsm_elf_refs(const struct link_map *lm, const char *const names[], int n,
                       const char *vers[]);

/* Called once per relocation of the object against names[name]: slot is the address the
 * relocation writes (a GOT entry for JUMP_SLOT/GLOB_DAT), value the symbol's st_value in
 * this object (non-zero when the object defines the name itself). */
typedef void (*tlsm_elf_slot_fn)(int name, uintptr_t slot, uintptr_t value, void *arg);
void tlsm_elf_slots(const struct link_map *lm, const char *const names[], int n,
                    tlsm_elf_slot_fn fn, void *arg);

/* Every relative relocation of the object (a pointer to its own data or code, filled with
 * base + addend at load: how a stripped object's tables point at its strings and functions):
 * fn(where, value, arg) with both addresses in memory; a non-zero return stops the walk. */
typedef int (*tlsm_elf_rel_fn)(uintptr_t where, uintptr_t value, void *arg);
void tlsm_elf_relatives(const struct link_map *lm, tlsm_elf_rel_fn fn, void *arg);

/* Might the object define name in its own dynamic symbols? false: it certainly does not (its
 * GNU hash table says so, or it has no dynamic symbols); true: it does, or it has only a
 * DT_HASH table, which is not read (a dlsym then decides). */
bool tlsm_elf_may_define(const struct link_map *lm, const char *name);

/* The dynamic flags that decide how the linker binds the object's own references. */
struct tlsm_elf_flags {
    bool symbolic;    /* DT_SYMBOLIC, or DF_SYMBOLIC in DT_FLAGS (-Bsymbolic) */
    uint64_t flags;   /* DT_FLAGS */
    uint64_t flags_1; /* DT_FLAGS_1 (DF_1_NOW, DF_1_GROUP, ...) */
};
struct tlsm_elf_flags tlsm_elf_flags(const struct link_map *lm);

/* Its DT_RPATH (the old tag the loader also applies to what its dependents load), or NULL. */
const char *tlsm_elf_rpath(const struct link_map *lm);
/* Its DT_SONAME, NULL if it has none. */
const char *tlsm_elf_soname(const struct link_map *lm);
/* Does it name soname in a DT_NEEDED entry? */
/* lm's DT_NEEDED names, in order, at most cap; their count. */
int tlsm_elf_needed(const struct link_map *lm, const char **out, int cap);
bool tlsm_elf_needs(const struct link_map *lm, const char *soname);

#endif
