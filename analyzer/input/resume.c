/* resume.c: where reader__resume left a live format-2 trace: per chunk (by its file offset)
 * the entry bytes already fed to the model. A trace has a few chunks per thread (256 KiB
 * each), so a list searched from its end (where the growing chunks are) is enough. */
#include "input/reader.h"

#include "base/util.h"

#include <stdlib.h>
#include <string.h>

void reader_resume__free(struct reader_resume *rs)
{
    free(rs->chunks);
    memset(rs, 0, sizeof(*rs));
}

uint32_t reader_resume__done(const struct reader_resume *rs, uint64_t off)
{
    for (size_t i = rs->nchunks; i-- > 0;) /* new chunks are at the end: look there first */
        if (rs->chunks[i].off == off)
            return rs->chunks[i].done;
    return 0;
}

void reader_resume__set(struct reader_resume *rs, uint64_t off, uint32_t done)
{
    for (size_t i = rs->nchunks; i-- > 0;)
        if (rs->chunks[i].off == off) {
            rs->chunks[i].done = done;
            return;
        }
    if (rs->nchunks == rs->cap) {
        rs->cap = rs->cap ? rs->cap * 2 : 16;
        rs->chunks = xrealloc(rs->chunks, rs->cap * sizeof(*rs->chunks));
    }
    rs->chunks[rs->nchunks++] = (struct resume_chunk){off, done};
}
