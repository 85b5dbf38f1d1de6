/* read2_in.h: the format-2 reader's input (read2.c): a stream or a buffer, and how many of
 * its bytes were consumed, for the offsets messages and reader__resume name. */
#ifndef TLSM_READ2_IN_H
#define TLSM_READ2_IN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct in2 {
    FILE *f;
    const unsigned char *mem;
    size_t memlen, pos;
    uint64_t off; /* bytes consumed */
};

static inline size_t in_read(struct in2 *in, void *dst, size_t n)
{
    size_t k;
    if (!n)
        return 0; /* an empty chunk: dst may be NULL (nothing allocated yet) */
    if (in->f) {
        k = fread(dst, 1, n, in->f);
    } else {
        k = in->memlen - in->pos < n ? in->memlen - in->pos : n;
        memcpy(dst, in->mem + in->pos, k);
        in->pos += k;
    }
    in->off += k;
    return k;
}

static inline bool in_skip(struct in2 *in, uint64_t n)
{
    char sink[65536];
    while (n) {
        size_t want = n < sizeof(sink) ? (size_t)n : sizeof(sink), k = in_read(in, sink, want);
        if (!k)
            return false;
        n -= k;
    }
    return true;
}

#endif
