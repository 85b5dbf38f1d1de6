/* trace.h: the trace file and per-thread line buffers. Never blocks the program: a line
 * that cannot be written is dropped and counted. */
#ifndef TLSM_TRACE_H
#define TLSM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tlsm_tbuf;

/* Largest line the preload writes (lib events with long cflags are the biggest). */
#define TLSM_LINE_MAX 4096

/* Open the trace file and write the header, once per process (and again in a forked
 * child). Returns false when tracing is off (disabled, secure mode, open failed). */
bool tlsm_trace_ready(void);
/* The trace is open now (without opening it, as tlsm_trace_ready would). */
bool tlsm_trace_is_open(void);
/* Append one complete line for the calling thread. */
void tlsm_trace_line(const char *line, size_t len);
/* Format 2, the hot events' fast path (core/record.c, core/conn.c): the calling thread's chunk,
 * locked, for one fixed record written straight into it (trace/trace2_fixed.h). False when
 * there is none at hand (format 1, the file not open, no chunk yet, the chunk nearly full):
 * the event then goes through tlsm_trace_line, which handles all of these. Between take and
 * done nothing may write a line (the thread's buffer is locked). */
struct tlsm_b2_stream;
struct tlsm_trace_room {
    struct tlsm_b2_stream *s;
    char *p;         /* where the entries go */
    const char *end; /* the chunk's end */
};
bool tlsm_trace_room_take(struct tlsm_trace_room *r);
/* n bytes were written at r->p, 0 for none (the record was given up: tlsm_trace_line it). */
void tlsm_trace_room_done(size_t n);
/* Flush the calling thread's buffer (thread exit, before fork/exec). */
void tlsm_trace_flush_self(void);
/* Exit: flush every thread's buffer and write the end event. */
void tlsm_trace_finish(void);
/* A detach (every other thread stopped): is a thread inside the writer? Then nothing may be
 * closed yet. Else tlsm_trace_detach ends the file, closes it and unmaps its chunks, and the
 * next event (of a later attach) opens a new one. trace_detach.c. */
bool tlsm_trace_writers_busy(void);
void tlsm_trace_detach(void);
/* The trace is an attach's (its header says so); tlsm_trace_disallow: no file may be opened
 * any more (a detach: a thread that was inside a hook must not start a new one). */
extern bool tlsm_trace_attached;
void tlsm_trace_disallow(void);
/* The path of the file open now (tlsm_trace_ready made it), "" before. */
const char *tlsm_trace_file(void);
/* In a child forked while attached: the parent's file let go, nothing written. */
void tlsm_trace_child_detach(void);
/* Go quiet after an internal failure: one warning, pass-through from now on. */
void tlsm_trace_quiet(const char *why);
bool tlsm_trace_is_quiet(void);
/* Times are ns since this origin (ticks). */
extern uint64_t tlsm_trace_t0;
void tlsm_trace_init(void);
/* The constructor found tracing allowed (not disabled, not secure-execution). */
void tlsm_trace_allow(void);
void tlsm_trace_atfork_prepare(void);
void tlsm_trace_atfork_parent(void);
void tlsm_trace_atfork_child(void);
/* Counts for the end event. */
void tlsm_trace_counts(uint64_t *events, uint64_t *dropped);
void tlsm_trace_drop(void);

#endif

/* Thread exit: flush and free this thread's buffer. */
void tlsm_trace_thread_exit(void);
const char *tlsm_trace_quiet_reason(void);
/* exec*() (exec_what names it) or _exit() (NULL): flush everything and write an end line
 * now; try-locks only (async-signal-safe callers). */
void tlsm_trace_final(const char *exec_what);
/* Incremented at every trace file open. */
unsigned tlsm_trace_generation(void);
/* Set while the end line of an exec is built. */
extern const char *tlsm_exec_path;
/* log.c: a warning as a `warn` event (kept until the file exists). */
void tlsm_trace_warn(const char *msg);
/* For the end line: warn events written, the I/O mode (`mmap`, `write`), why the file
 * stopped growing (NULL: it did not). */
uint64_t tlsm_trace_warnings(void);
/* Bytes of the lines counted in `dropped` (that much trace is missing). */
uint64_t tlsm_trace_dropped_bytes(void);
const char *tlsm_trace_io(void);
const char *tlsm_trace_io_error(void);
/* The layers above the writer hand it what only they know, at start-up (main.c), so the
 * writer never calls up into them: the end event's line (written last), and the functions
 * that write a `lib` line for each instance met before this file opened (a forked child's
 * new file, or instances loaded before tracing was allowed). */
typedef size_t (*tlsm_end_line_fn)(char *buf, size_t cap);
typedef void (*tlsm_replay_fn)(unsigned gen);
void tlsm_trace_set_end_line(tlsm_end_line_fn fn);
void tlsm_trace_add_replay(tlsm_replay_fn fn);
