/* trace_put2.c: format 2 events into the thread's chunk (trace2.c encodes them). Mapped:
 * the chunk is a MAP_SHARED part of the file and its header's entry count is stored after
 * each entry, so a killed process leaves every entry it finished and no torn one. write(2)
 * mode: the private buffer is one chunk, written whole when full. */
#include "trace/trace.h"
#include "trace/thread.h"
#include "trace/trace2.h"
#include "trace/trace_int.h"
#include "trace/trace_file.h"
#include "trace/tracemap.h"

#include <errno.h>
#include <stdatomic.h>
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

bool tlsm_trace_room_take(struct tlsm_trace_room *r)
{
    struct tlsm_tbuf *b = tlsm_th.buf;
    if (!tlsm_tr_fmt2 || !b ||
        atomic_load_explicit(&tlsm_tr_state, memory_order_relaxed) != ST_OPEN)
        return false;
    tlsm_tr_lock_buf(b);
    /* A chunk started, room for the largest fixed record and its time entry (73 bytes): the
     * encoder checks the end itself (new strings), so the chunk fills to its last bytes. */
    if (__builtin_expect(!b->cap || b->used < b->hdr + TLSM_B2_CHUNK_HDR || b->cap - b->used < 128,
                         0)) {
        tlsm_tr_unlock_buf(b);
        return false;
    }
    r->s = &b->s2;
    r->p = b->data + b->used;
    r->end = b->data + b->cap;
    return true;
}

void tlsm_trace_room_done(size_t n)
{
    struct tlsm_tbuf *b = tlsm_th.buf;
    if (n) {
        b->used += n;
        commit(b);
    }
    tlsm_tr_unlock_buf(b);
}

/* Mapped: the next chunk of the file for this thread (the old one's unused end stays zero,
 * its header says how much of it holds entries). False when the file cannot grow. */
static bool new_mapped_chunk(struct tlsm_tbuf *b)
{
    uint64_t off;
    size_t size = 0;
    char *p = tlsm_tr_map_chunk(&off, &size);
    if (!p)
        return false;
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
    b->used = b->hdr +
              tlsm_b2_chunk_start(&b->s2, b->data + b->hdr, b->cap - b->hdr, (uint32_t)tlsm_th.tid);
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

/* One line straight to the file, bypassing the thread buffers (no lock: warnings may come
 * from inside the writer): at the mapped file's cursor, or one O_APPEND write(2). */
bool tlsm_tr_put_direct(int f, bool in_map, bool is_pipe, const char *line, size_t n)
{
    char framed[TLSM_LINE_MAX * 2 + 64];
    if (tlsm_tr_fmt2) {
        n = tlsm_tr_frame_direct(framed, sizeof(framed), line, n);
        if (!n)
            return false;
        line = framed;
    }
    return in_map ? tlsm_tmap_append(f, line, n) : tlsm_trace_write(f, is_pipe, line, n);
}

size_t tlsm_tr_frame_direct(char *out, size_t cap, const char *line, size_t n)
{
    if (tlsm_tr_fmt2)
        return tlsm_b2_mini_chunk(out, cap, line, n, (uint32_t)tlsm_th.tid);
    if (n > cap)
        return 0;
    memcpy(out, line, n);
    return n;
}

/* The header line: in mapped mode the file header opens chunk 0 (b's new chunk, at offset 0)
 * and the chunk's own header follows it; in write(2) mode (b NULL) the two and a chunk of
 * the header line are one write. */
bool tlsm_tr_put2_header(struct tlsm_tbuf *b, const char *line, size_t n)
{
    char f2[TLSM_LINE_MAX + 64];
    if (!b) {
        tlsm_b2_file_header(f2);
        size_t m = tlsm_b2_mini_chunk(f2 + TLSM_B2_FILE_HDR, sizeof(f2) - TLSM_B2_FILE_HDR, line, n,
                                      (uint32_t)tlsm_th.tid);
        return m && tlsm_tr_write_all(f2, TLSM_B2_FILE_HDR + m);
    }
    tlsm_b2_file_header(b->data);
    b->hdr = TLSM_B2_FILE_HDR;
    b->used = b->hdr +
              tlsm_b2_chunk_start(&b->s2, b->data + b->hdr, b->cap - b->hdr, (uint32_t)tlsm_th.tid);
    size_t e = tlsm_b2_encode(&b->s2, line, n, b->data + b->used, b->cap - b->used);
    b->used += e;
    tlsm_b2_commit(b->data + b->hdr, b->used - b->hdr - TLSM_B2_CHUNK_HDR);
    return e != 0;
}
