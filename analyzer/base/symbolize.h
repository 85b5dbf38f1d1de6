/* symbolize.h: function names for frame offsets, from the loaded objects' files on the analysis
 * host (elfutils libdwfl: .symtab, .dynsym, separate debug info, MiniDebugInfo), checked by
 * build id, optionally under a sysroot holding a copy of the device's files. */
#ifndef TLSM_SYMBOLIZE_H
#define TLSM_SYMBOLIZE_H

#include <stdint.h>
#include <stdio.h>

struct symbolizer;

/* sysroot NULL: the paths as recorded. warn NULL: no warnings. */
struct symbolizer *symbolizer__new(const char *sysroot, FILE *warn);
void symbolizer__free(struct symbolizer *sy);
/* A handle for the object recorded as path with build_id ("" unknown), opened and checked
 * once; -1 when it cannot be used (a warning said why). */
int symbolizer__module(struct symbolizer *sy, const char *path, const char *build_id);
/* The function holding the return address at off (relative to the load base), or NULL. */
const char *symbolizer__func(struct symbolizer *sy, int h, uint64_t off);

#endif
