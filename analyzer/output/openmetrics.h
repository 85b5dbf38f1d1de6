/* openmetrics.h: the Prometheus text exposition of a set of series (openmetrics.c), and the
 * fleet run that keeps a host's counters monotonic across processes (fleet.c). */
#ifndef TLSM_OPENMETRICS_H
#define TLSM_OPENMETRICS_H

#include "output/metrics.h"

#include <stdio.h>

/* The exporter's own gauges beside the counters. */
struct om_info {
    double now;   /* Unix time of this update */
    double start; /* when the counters started from zero; 0: not kept (no state) */
    int live, ended, unreadable;
    int programs, copies;         /* label values kept */
    int max_programs, max_copies; /* 0: no limit (a desk run over given traces) */
};

/* ms merged. Returns 0, or -1 when the stream failed. */
int openmetrics__write(FILE *f, const struct mset *ms, const struct om_info *info);

/* --openmetrics: options, and the run over TRACE... or directories of traces. */
struct fleet_opts {
    const char *textfile; /* DIR: write DIR/tlsmeter.prom atomically and keep counters */
    const char *state;    /* the counters' state file (default DIR/.tlsmeter-metrics.state) */
    double every;         /* seconds between updates; 0: once */
    double prune;         /* delete ended traces unchanged this long, once counted; 0: never */
    int max_programs, max_copies;
};
/* A fleet option of main's getopt loop (c: 'T' --textfile, 'S' --state, 'E' --every,
 * 'M' --max-programs, 'N' --max-copies, 'W' --prune); 0, or -2 after a usage error said. */
int fleet__opt(struct fleet_opts *o, int c, const char *arg);
/* Whether the options go together (metrics: --openmetrics given; other_outputs: --compare,
 * --flamegraph, --perfetto or --require-hw given); 0, or -2 after saying why. */
int fleet__usage(const struct fleet_opts *o, bool metrics, bool other_outputs);
/* The whole run; an exit code of tlsmeter-analyze (0, 1 I/O, 4 bad input). out: the exposition
 * when no textfile directory is given. */
int fleet__run(const struct fleet_opts *o, char **paths, int n, FILE *out, FILE *warn);

#endif
