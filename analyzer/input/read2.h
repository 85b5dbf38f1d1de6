/* read2.h: the reader of trace format 2 (binary), for reader.c. */
#ifndef TLSM_READ2_H
#define TLSM_READ2_H

#include "input/reader.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct rd;

/* The 8-byte magic that starts a format-2 file (common/trace2.def). */
bool read2__magic(const unsigned char *p, size_t n);
/* The rest of a format-2 trace: from f, or from mem[0..len) when f is NULL; head[0..headlen)
 * are its first bytes, already read (the magic at least). */
enum read_status read2__run(struct rd *r, FILE *f, const char *mem, size_t len,
                            const unsigned char *head, size_t headlen);

#endif
