/* shape.h: the shapes of recent hot lines (their bytes with the integers cut out), so a
 * line that repeats one is read with a compare per run of bytes and a parse per integer. */
#ifndef TLSM_SHAPE_H
#define TLSM_SHAPE_H

#include "model/event.h"

#include <stdbool.h>
#include <stdint.h>

/* Integers a shape holds; a line with more is read without one. */
#define SHAPE_INTS 24

/* The integers of a line the scanner read, in order: where each is (offsets in the line) and
 * the int field it set (-1: a key the hot kinds do not use). */
struct shape_log {
    unsigned n;
    bool full;
    struct {
        int slot;
        uint32_t start, end;
    } v[SHAPE_INTS];
};

/* Line p up to last (one past its closing '}', white space only after it, up to end) into
 * e when it has the shape of a line learnt before: 0, or -1 with e cleared. */
int shape__match(const char *p, const char *last, const char *end, struct event *e);
/* Keep the shape of line p..last, which the scanner read into e, logging its integers. */
void shape__learn(const char *p, const char *last, const struct event *e,
                  const struct shape_log *lg);

#endif
