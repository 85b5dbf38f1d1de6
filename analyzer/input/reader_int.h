/* reader_int.h: the line reader's state (reader.c), shared with the format-2 reader
 * (read2.c), which feeds it JSON entries as lines and hot records as events. */
#ifndef TLSM_READER_INT_H
#define TLSM_READER_INT_H

#include "model/event.h"
#include "model/model.h"
#include "input/reader.h"

#include <stdbool.h>
#include <stdio.h>

struct rd {
    struct model *m;
    struct trace *t;
    FILE *warn;
    uint64_t lineno, warned;
    bool header_seen;
    enum read_status status;
    struct event ev;
    unsigned char head[8]; /* the file's first bytes, named when it is no trace at all */
    size_t nhead;
    struct reader_resume *rs; /* reader__resume: what was fed before, NULL otherwise */
};

/* One line (no '\n'; complete false for a cut last line): the header first, then events. */
void rd_line(struct rd *r, const char *p, size_t n, bool complete);
void rd_skipped(struct rd *r, const char *why);
bool rd_fatal(const struct rd *r);
void rd_finish(struct rd *r);
void rd_print_header(const char *p, size_t n);

#endif
