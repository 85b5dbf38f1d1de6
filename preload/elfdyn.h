/* elfdyn.h: read a loaded object's dynamic section: which hooked names it references
 * through relocations, and which symbol version each reference asks for. */
#ifndef TLSM_ELFDYN_H
#define TLSM_ELFDYN_H

#include <link.h>
#include <stdint.h>

/* For names[0..n): vers[i] = version string the object's reference asks for (NULL when
 * unversioned or not referenced); returns a bitmask of the names it references. */
uint64_t tlsm_elf_refs(const struct link_map *lm, const char *const names[], int n,
                       const char *vers[]);

#endif
