/* pb.c: protocol-buffer wire encoding for the Perfetto writer (see pb.h). */
#include "base/pb.h"

#include "base/util.h"

#include <stdlib.h>
#include <string.h>

void pb_reset(struct pb *p)
{
    p->n = 0;
}

void pb_free(struct pb *p)
{
    free(p->b);
    p->b = NULL;
    p->n = p->cap = 0;
}

static void room(struct pb *p, size_t need)
{
    if (need <= p->cap - p->n)
        return;
    size_t cap = p->cap ? p->cap : 256;
    while (cap - p->n < need)
        cap *= 2;
    p->b = xrealloc(p->b, cap);
    p->cap = cap;
}

static void varint(struct pb *p, uint64_t v)
{
    room(p, 10);
    while (v >= 0x80) {
        p->b[p->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p->b[p->n++] = (uint8_t)v;
}

void pb_uint(struct pb *p, unsigned field, uint64_t v)
{
    varint(p, (uint64_t)field << 3);
    varint(p, v);
}

void pb_int(struct pb *p, unsigned field, int64_t v)
{
    pb_uint(p, field, (uint64_t)v); /* int64: a negative value takes all 10 bytes */
}

void pb_bytes(struct pb *p, unsigned field, const void *data, size_t n)
{
    varint(p, (uint64_t)field << 3 | 2);
    varint(p, n);
    room(p, n);
    if (n)
        memcpy(p->b + p->n, data, n);
    p->n += n;
}

void pb_str(struct pb *p, unsigned field, const char *s)
{
    pb_bytes(p, field, s ? s : "", s ? strlen(s) : 0);
}
