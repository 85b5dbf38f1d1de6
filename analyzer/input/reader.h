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

/* Read one trace file into m as a new trace; problems go to warn as "FILE:LINE: ...". */
enum read_status reader__file(struct model *m, const char *path, FILE *warn);
/* The same for a trace held in memory (the fuzz target's entry point). */
enum read_status reader__buffer(struct model *m, const char *name, const char *buf, size_t len,
                                FILE *warn);

#endif
