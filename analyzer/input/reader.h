/* reader.h: streaming trace reader: one pass, one line at a time, bounded memory. */
#ifndef TLSM_READER_H
#define TLSM_READER_H

#include "model/model.h"

#include <stdio.h>

/* Longest line accepted; real lines are < 1 KiB, a longer one is reported and skipped. */
#define READER_MAX_LINE (1u << 20)
/* Malformed lines reported one by one per file; the rest are only counted. */
#define READER_MAX_WARNINGS 10

enum read_status {
    RD_OK,        /* a trace (possibly with skipped lines) */
    RD_EMPTY,     /* nothing usable: empty file, or cut short before its header */
    RD_IO,        /* cannot open or read */
    RD_NOT_TRACE, /* not a tlsmeter trace */
    RD_NEWER,     /* a format version this analyzer does not read */
};

/* Set (by --jsonl): events are printed there as format-1 JSON Lines, not modelled. */
extern FILE *reader__jsonl;

/* Where a format-2 trace read before was left (reader__resume): per chunk (by file offset),
 * the bytes of entries already fed to the model. A live trace's chunks only ever grow. */
struct reader_resume {
    bool started; /* read before: the model's only trace is this file's */
    bool restart; /* set by reader__resume: the file is not what was read (a chunk shrank,
                   * or it is not format 2): read it again into an empty model */
    uint64_t lineno, warned;
    struct resume_chunk {
        uint64_t off;
        uint32_t done;
    } * chunks;
    size_t nchunks, cap;
};
void reader_resume__free(struct reader_resume *rs);
/* The chunk at file offset off: its entry bytes already fed (0 when new). */
uint32_t reader_resume__done(const struct reader_resume *rs, uint64_t off);
void reader_resume__set(struct reader_resume *rs, uint64_t off, uint32_t done);

/* Read one trace file into m as a new trace; problems go to warn as "FILE:LINE: ...". */
enum read_status reader__file(struct model *m, const char *path, FILE *warn);
/* The same, going on where rs left it: only what a live format-2 trace added since is fed
 * to m (which holds the rest). rs zeroed for the first read. */
enum read_status reader__resume(struct model *m, const char *path, struct reader_resume *rs,
                                FILE *warn);
/* The same for a trace held in memory (the fuzz target's entry point). */
enum read_status reader__buffer(struct model *m, const char *name, const char *buf, size_t len,
                                FILE *warn);

#endif
