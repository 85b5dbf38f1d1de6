/* fleet.h: the state that keeps a host's --openmetrics counters monotonic while processes
 * come and go (fleet_state.c), shared with the run that reads the traces (fleet.c).
 *
 * A counter is what the traces still on disk add up to, plus what traces no longer there
 * added when they were last read (retired). Each trace is remembered by its file (device,
 * inode) and its process (pid, start time) with the series it gave last, so a trace read
 * again never counts twice, a trace that shrinks or is replaced never takes back what it
 * gave, and deleting traces never lowers a counter. */
#ifndef TLSM_FLEET_H
#define TLSM_FLEET_H

#include "output/metrics.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define FLEET_STATE_MAGIC "tlsmeter-metrics-state 1"

struct fleet_trace {
    char *path;
    uint64_t dev, ino, size;
    int64_t mtime_ns;
    int64_t pid, start_ns; /* the header's: which process the file is of */
    bool ended;            /* its end line was read: unchanged, it need not be read again */
    bool seen;             /* found at this update */
    struct mset ms;        /* what it adds, label values as the trace gives them */
};

struct fleet_state {
    double created; /* Unix time the counters started from zero */
    /* Label values kept, in the order they came; past the limit a new one is "(other)". */
    char **programs, **copies;
    int nprograms, ncopies;
    struct mset retired; /* label values already limited */
    struct fleet_trace *traces;
    size_t ntraces, cap;
};

void fleet_state__free(struct fleet_state *st);
/* A missing file is a fresh state (created now). Returns 0, or -1 after saying on stderr what
 * was wrong and where (file:line). */
int fleet_state__load(struct fleet_state *st, const char *path, double now);
int fleet_state__save(const struct fleet_state *st, const char *path);
struct fleet_trace *fleet_state__trace(struct fleet_state *st, uint64_t dev, uint64_t ino);
/* The entry of the process (pid, start time), or NULL. */
struct fleet_trace *fleet_state__process(struct fleet_state *st, int64_t pid, int64_t start_ns);
int fleet_state__rename(struct fleet_trace *t, const char *path);
struct fleet_trace *fleet_state__new_trace(struct fleet_state *st, const char *path);
/* The trace's series with limited label values added to the retired ones; the entry is
 * dropped. */
int fleet_state__retire(struct fleet_state *st, size_t i, int max_programs, int max_copies);
/* ms's series with program and copy values limited (kept values, new ones while there is room,
 * else "(other)") added to dst. */
int fleet_state__add_limited(struct fleet_state *st, struct mset *dst, const struct mset *ms,
                             int max_programs, int max_copies);

/* Writes to PATH through a temporary file in the same directory, renamed over PATH when
 * complete: a reader sees the old file or the new one, never a part; a planted symlink at PATH
 * is replaced, not followed. open gives the stream (NULL after saying why); commit returns 0
 * or -1 (said). */
FILE *atomic_open(const char *path, int mode, char *tmp, size_t cap);
int atomic_commit(FILE *f, const char *tmp, const char *path);

#endif
