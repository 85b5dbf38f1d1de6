/* trace_int.h: trace.c's state shared with trace_life.c (fork, exec, _exit and exit), and
 * nothing else: trace.c owns it and never calls into trace_life.c. Not for other modules. */
#ifndef TLSM_TRACE_INT_H
#define TLSM_TRACE_INT_H

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "trace/trace2.h"

/* ST_RESERVED: a forked child's file exists (created at the fork), its header not yet
 * written. */
enum tlsm_tr_st { ST_UNOPENED, ST_OPEN, ST_OFF, ST_FINISHED, ST_RESERVED };

struct tlsm_tbuf {
    _Atomic int lock;
    char *data;       /* the mapped chunk, or the private buffer (write(2) mode) */
    size_t used, cap; /* cap 0: no chunk yet (or closed at exit) */
    uint64_t off;     /* file offset of the mapped chunk */
    uint64_t pending, written, dropped; /* lines */
    struct tlsm_tbuf *next;
    size_t hdr;               /* format 2: where the chunk header is in data (16 after the */
    struct tlsm_b2_stream s2; /* file header in chunk 0, else 0) and the chunk's encoder */
};

extern _Atomic int tlsm_tr_state;
extern pthread_mutex_t tlsm_tr_open_lock; /* opening, finishing, forking */
extern pthread_mutex_t tlsm_tr_bufs_lock; /* the list of thread buffers */
extern struct tlsm_tbuf *tlsm_tr_bufs;
extern _Atomic uint64_t tlsm_tr_retired_written, tlsm_tr_retired_dropped;
extern _Atomic uint64_t tlsm_tr_dropped_bytes; /* bytes of the dropped lines */
extern int tlsm_tr_fd;
extern char tlsm_tr_path[PATH_MAX];
extern char tlsm_tr_quiet_reason[PATH_MAX + 128];
extern pid_t tlsm_tr_fork_of;
extern bool tlsm_tr_fd_is_pipe; /* writes may raise SIGPIPE */
extern dev_t tlsm_tr_fd_dev;    /* identity of the trace file: a program that closes every */
extern ino_t tlsm_tr_fd_ino;    /* descriptor may reuse ours for a file of its own */
extern pid_t tlsm_tr_trace_pid; /* the process that opened the file (not a vfork child) */
extern _Atomic bool tlsm_tr_allowed;
extern bool tlsm_tr_mapped;                   /* lines go into mapped chunks of the file */
extern bool tlsm_tr_fmt2;                     /* the file is trace format 2 (binary) */
extern _Atomic uint64_t tlsm_tr_warnings;     /* warn lines in this file */
extern _Atomic uint64_t tlsm_tr_direct_lines; /* lines written past the thread buffers */
extern _Atomic unsigned tlsm_tr_nearly_warn;  /* warnings kept until the file exists */

/* One page MAP_SHARED with the forked children: a child that cannot create its own trace
 * writes its warning into ours and counts it here, so our end.events counts every line. */
struct tlsm_tr_shared {
    _Atomic uint64_t child_lines;
};
extern struct tlsm_tr_shared *tlsm_tr_sh; /* NULL until the file is open (or mmap failed) */

static inline void tlsm_tr_lock_buf(struct tlsm_tbuf *b)
{
    /* Contended only while exit or fork flushes this buffer; bounded by that one write. */
    while (atomic_exchange_explicit(&b->lock, 1, memory_order_acquire))
        sched_yield();
}

static inline void tlsm_tr_unlock_buf(struct tlsm_tbuf *b)
{
    atomic_store_explicit(&b->lock, 0, memory_order_release);
}

/* The template expanded into out (tlsm_tr_path); then created (-1, errno, on failure) and
 * the warning's text when it was not. */
void tlsm_tr_expand_path(char *out, size_t cap, bool child);
int tlsm_tr_create_file(char *p, size_t cap);
void tlsm_tr_create_failed(char *why, size_t cap);
/* Write the header, replay early warnings and lib lines: the state becomes ST_OPEN, or the
 * trace goes quiet. */
void tlsm_tr_open_trace(void);
bool tlsm_tr_write_all(const char *p, size_t n);
bool tlsm_tr_fd_still_ours(void);
/* A warn line (with the writer's pid when it is a child writing into its parent's file). */
size_t tlsm_tr_warn_line(char *line, size_t cap, const char *msg, bool with_pid);
/* Format 2: a JSON line as a chunk of its own into out (format 1: the line as it is);
 * returns the bytes, 0 when it does not fit. */
size_t tlsm_tr_frame_direct(char *out, size_t cap, const char *line, size_t n);
/* One line past the thread buffers: the mapped file's cursor or one write(2). */
bool tlsm_tr_put_direct(int f, bool in_map, bool is_pipe, const char *line, size_t n);
/* Buffer lock held: count (mapped) or write out (write(2)) the buffered lines; give up the
 * mapped chunk (its unused end is a gap). */
void tlsm_tr_flush_buf(struct tlsm_tbuf *b);
void tlsm_tr_close_chunk(struct tlsm_tbuf *b);
/* Set while this thread holds its own buffer in the slow path (a warning goes direct). */
extern __thread bool tlsm_tr_in_writer;
/* trace_warn.c: the warnings from before the file existed, into it. */
void tlsm_tr_replay_early_warnings(void);
/* A line that will not be in the file: counted in lines and bytes (end.dropped_bytes). */
void tlsm_tr_drop_line(struct tlsm_tbuf *b, size_t len);
/* The file cannot grow: say so once, drop and count from now on. */
void tlsm_tr_map_failed(int e);
/* The next chunk of the file for this thread's writer (both formats), or NULL: the mapping
 * failed or the descriptor is no longer ours (said once, through tlsm_tr_map_failed). */
char *tlsm_tr_map_chunk(uint64_t *off, size_t *size);
extern int tlsm_tr_map_errno;
/* trace_put2.c, format 2 (buffer lock held): one event into the thread's chunk; the same
 * when it does not fit (a new chunk first); a write(2) buffer's chunk made ready to write
 * (its size, its padding): returns the bytes to write. */
void tlsm_tr_put2(struct tlsm_tbuf *b, const char *line, size_t len);
/* trace.c: the slow path (next chunk, or write(2) the buffer) of either format. */
void tlsm_tr_line_slow(struct tlsm_tbuf *b, const char *line, size_t len);
void tlsm_tr_put2_slow(struct tlsm_tbuf *b, const char *line, size_t len);
size_t tlsm_tr_seal_chunk(struct tlsm_tbuf *b);
bool tlsm_tr_put2_header(struct tlsm_tbuf *b, const char *line, size_t n);
/* Every thread's buffer, under the list lock. */
void tlsm_tr_flush_all(bool close);

/* trace_life.c: the lib lines of instances met before the file opened (tlsm_trace_add_replay). */
void tlsm_tr_replay(unsigned gen);

#endif
