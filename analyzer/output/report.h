/* report.h: the output formats; each writes one model (or two, for compare) to a stream. */
#ifndef TLSM_REPORT_H
#define TLSM_REPORT_H

#include "model/model.h"
#include "model/profile.h"
#include "verdicts/summary.h"

#include <stdio.h>

/* verbose: every section, histogram and table, also those that say nothing for this trace. */
void report_text(FILE *out, const struct summary *s, bool verbose);
/* Returns 0, or -1 when the output could not be written. */
int report_json(FILE *out, const struct summary *s);
json_t *report_json_object(const struct summary *s);
void report_compare_text(FILE *out, const struct summary *a, const struct summary *b);
int report_compare_json(FILE *out, const struct summary *a, const struct summary *b);
/* Folded stacks weighted by crypto ns, or by bytes. */
void report_folded(FILE *out, const struct profile *p, bool bytes);
/* A self-contained SVG flame graph; returns 0, or -1 when it could not be written. */
int report_flamegraph(FILE *out, const struct profile *p, bool bytes, const char *title);
/* The callers section of the text report and its JSON object. */
void report_callers(FILE *out, const struct profile *p);
json_t *report_callers_json(const struct profile *p);

/* Chrome Trace Event output streams while reading: begin, one call per event, end. */
struct chrome;
struct chrome *chrome__open(FILE *out);
/* A record slice carries its on-CPU weight as "oncpu_ns" (oncpu__rec): summed over the
 * record slices of a direction it is the report's crypto time. */
void chrome__event(void *ctx, const struct model *m, const struct trace *t, const struct event *e,
                   uint64_t oncpu_ns);
int chrome__close(struct chrome *c);
/* Perfetto's protobuf trace (--perfetto FILE), streamed the same way (perfetto.c). */
struct perfetto;
struct perfetto *perfetto__open(FILE *out);
void perfetto__event(void *ctx, const struct model *m, const struct trace *t, const struct event *e,
                     uint64_t oncpu_ns);
int perfetto__close(struct perfetto *p);

/* Helpers shared by the text outputs. */
/* The report's first lines: program, CPU shares, each copy's class, the headline verdict. */
void report_answer(FILE *out, const struct summary *s);
/* The headline verdict (the decrypting side's first; an upload's sending side's), or NULL. */
const struct verdict *report_headline(const struct summary *s);
/* Per connection, per thread and per trace tables (only where there are several). */
void report_conns(FILE *out, const struct summary *s);
/* The handshake table (report_hs.c), and its rows of --compare. */
void report_handshake(FILE *out, const struct summary *s, bool verbose);
void report_compare_hs(FILE *out, const struct summary *a, const struct summary *b);
json_t *report_compare_hs_json(const struct summary *a, const struct summary *b);
void text_hist(FILE *out, const struct hist *h, const char *indent);
/* The copies and how each was reached (report_reach.c): text when there is something past
 * the linker's binding to say, and the --json "copies" array. */
void report_reach(FILE *out, const struct summary *s);
json_t *report_reach_json(const struct summary *s, int *more); /* more: copies not listed */

#endif
