/* elfsym.h: a dynamic symbol's value read from an ELF file on disk, and the file's class. */
#ifndef TLSM_ATTACH_ELFSYM_H
#define TLSM_ATTACH_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

/* Looks NAME up among the dynamic symbols of the 64-bit ELF file at PATH ("name" picks the
 * default version, "name@VERSION" that version). On success *value is the symbol's st_value and
 * *vaddr_at_offset0 the address file offset 0 has before relocation, so that in a process the
 * symbol sits at (start of the mapping of offset 0) - *vaddr_at_offset0 + *value.
 * Returns 0, or -1 with a reason in why (not found, an IFUNC, not ELF). */
int elf_dynsym(const char *path, const char *name, uint64_t *value, uint64_t *vaddr_at_offset0,
               char *why, size_t whycap);

/* 32 or 64 for an ELF file, -1 when unreadable or not ELF. */
int elf_bits(const char *path);

#endif
