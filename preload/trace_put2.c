/* trace_put2.c: format 2 events into the thread's chunk (trace2.c encodes them). Mapped:
 * the chunk is a MAP_SHARED part of the file and its header's entry count is stored after
 * each entry, so a killed process leaves every entry it finished and no torn one. write(2)
 * mode: the private buffer is one chunk, written whole when full. */
#include "trace.h"
#include "thread.h"
#include "trace2.h"
#include "trace_int.h"
#include "tracemap.h"

#include <errno.h>
#include <string.h>

#define TBUF_SIZE (32 * 1024) /* as trace.c's write(2) buffer */

static void commit(struct tlsm_tbuf *b)
{
    tlsm_b2_commit(b->data + b->hdr, b->used - b->hdr - TLSM_B2_CHUNK_HDR);
    b->pending++;
}

void tlsm_tr_put2(struct tlsm_tbuf *b, const char *line, size_t len)
{
    if (__builtin_expect(b->cap && b->used >= b->hdr + TLSM_B2_CHUNK_HDR, 1)) {
        size_t room = b->cap - b->used, n;
        if (room >= TLSM_B2_ENTRY_MAX + len) { /* straight into the chunk: no copy */
            n = tlsm_b2_encode(&b->s2, line, len, b->data + b->used, room);
            if (n) {
                b->used += n;
                commit(b);
                return;
            }
        } else {
            char e[TLSM_B2_ENTRY_MAX + TLSM_LINE_MAX];
            n = tlsm_b2_encode(&b->s2, line, len, e, sizeof(e));
            if (n && n <= room) {
                memcpy(b->data + b->used, e, n);
                b->used += n;
                commit(b);
                return;
            }
        }
    }
    tlsm_tr_line_slow(b, line, len);
}

/* Mapped: the next chunk of the file for this thread (the old one's unused end stays zero,
 * its header says how much of it holds entries). False when the file cannot grow. */
static bool new_mapped_chunk(struct tlsm_tbuf *b)
{
    uint64_t off;
    size_t size = 0;
    char *p = NULL;
    if (!tlsm_tr_map_errno && tlsm_tr_fd_still_ours())
        p = tlsm_tmap_chunk(tlsm_tr_fd, &off, &size);
    else if (!tlsm_tr_map_errno)
        errno = EBADF;
    if (!p) {
        if (!tlsm_tr_map_errno)
            tlsm_tr_map_failed(errno);
        return false;
    }
    if (b->data)
        tlsm_tmap_gap(b->off + b->used);
    tlsm_tmap_unmap(b->data, b->cap);
    b->data = p, b->off = off, b->cap = size, b->hdr = 0;
    return true;
}

/* Buffer lock held, state open; in write(2) mode the buffer was just written out. */
void tlsm_tr_put2_slow(struct tlsm_tbuf *b, const char *line, size_t len)
{
    if (tlsm_tr_mapped ? !new_mapped_chunk(b) : !b->data) {
        tlsm_tr_drop_line(b, len);
        return;
    }
    if (!tlsm_tr_mapped)
        b->cap = TBUF_SIZE, b->hdr = 0;
    b->used = b->hdr + tlsm_b2_chunk_start(&b->s2, b->data + b->hdr, b->cap - b->hdr,
                                           (uint32_t)tlsm_th.tid);
    size_t n = tlsm_b2_encode(&b->s2, line, len, b->data + b->used, b->cap - b->used);
    if (!n) {
        tlsm_tr_drop_line(b, len); /* larger than a whole chunk: never from our events */
        return;
    }
    b->used += n;
    commit(b);
}

/* write(2) mode: the chunk ends where its entries do (padded to 8 bytes). */
size_t tlsm_tr_seal_chunk(struct tlsm_tbuf *b)
{
    size_t size = (b->used + 7) / 8 * 8;
    memset(b->data + b->used, 0, size - b->used);
    tlsm_b2_set_size(b->data, size);
    return size;
}
