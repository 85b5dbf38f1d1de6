/* scan.h: a fast scanner for the flat JSON objects that make up almost every trace line. */
#ifndef TLSM_SCAN_H
#define TLSM_SCAN_H

#include "model/event.h"

#include <stddef.h>

/* Parse line p[0..n) into e. Returns 0 when the line is a flat object of a hot kind (rec,
 * read, write, conn) made only of constructs the scanner fully checks; -1 otherwise ("ask
 * jansson"), which then either parses the line or gives the precise error. Strings in e
 * point into p. A line of a shape seen before (shape.h) is read through it; another one the
 * scanner reads teaches its shape. */
int scan__line(const char *p, size_t n, struct event *e);

/* The JSON tail of a format-2 record (",\"key\":value..." members) into e, which holds the
 * record's fixed fields already: 0, or -1 for anything the line scanner would decline. */
int scan__tail(const char *p, size_t n, struct event *e);

#endif
