/* trace.c: one trace file per process, opened at the first TLS activity (a program that
 * never uses OpenSSL leaves no file; a forked child's file is created at the fork, while it
 * still has its parent's credentials, and removed at exit when it stayed unused). Lines are
 * built on the stack and copied into a per-thread buffer: a chunk of the file mapped
 * MAP_SHARED (tracemap.c) for a regular file, so a killed process keeps its lines; else
 * (FIFO, device, a filesystem without fallocate) a private buffer written in whole lines
 * with write(2), O_NONBLOCK so a FIFO that stalls costs dropped lines, never a blocked
 * program. Exit, exec, _exit and fork are in trace_life.c. */
#include "trace/trace.h"
#include "base/caps.h"
#include "base/clock.h"
#include "trace/config.h"
#include "trace/cputime.h"
#include "base/json.h"
#include "trace/log.h"
#include "trace/thread.h"
#include "trace/trace_file.h"
#include "trace/trace_header.h"
#include "trace/trace_int.h"
#include "trace/tracemap.h"
#include "trace/trace2.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define TBUF_SIZE (32 * 1024)

uint64_t tlsm_trace_t0;
const char *tlsm_exec_path;
_Atomic int tlsm_tr_state = ST_UNOPENED;
pthread_mutex_t tlsm_tr_open_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t tlsm_tr_bufs_lock = PTHREAD_MUTEX_INITIALIZER;
struct tlsm_tbuf *tlsm_tr_bufs;
_Atomic uint64_t tlsm_tr_retired_written, tlsm_tr_retired_dropped;
_Atomic uint64_t tlsm_tr_dropped_bytes;
struct tlsm_tr_shared *tlsm_tr_sh;
int tlsm_tr_fd = -1;
char tlsm_tr_path[PATH_MAX];
char tlsm_tr_quiet_reason[PATH_MAX + 128];
static uint64_t unix_t0, mono_t0, proc_mono0;
pid_t tlsm_tr_fork_of;
static bool clock_ready;
bool tlsm_tr_fd_is_pipe;   /* writes may raise SIGPIPE */
dev_t tlsm_tr_fd_dev;      /* identity of the trace file: a program that closes every */
ino_t tlsm_tr_fd_ino;      /* descriptor may reuse ours for a file of its own */
pid_t tlsm_tr_trace_pid;   /* the process that opened the file (vfork children are not it) */
static unsigned trace_gen; /* bumped at every open: lib lines are written once per file */
_Atomic bool tlsm_tr_allowed;
bool tlsm_tr_mapped;                   /* lines go into mapped chunks of the file */
bool tlsm_tr_fmt2;                     /* the file is trace format 2 (trace2.c) */
static bool as_gave_up;                /* tlsm_tr_map_errno is RLIMIT_AS's doing */
int tlsm_tr_map_errno;                 /* a chunk could not be had: lines are dropped */
static char io_note[160];              /* why the file is written with write(2), or "" */
_Atomic uint64_t tlsm_tr_warnings;     /* warn lines in this file */
_Atomic uint64_t tlsm_tr_direct_lines; /* lines written past the thread buffers */
__thread bool tlsm_tr_in_writer;       /* this thread holds its buffer in the slow path */

void tlsm_trace_allow(void)
{
    atomic_store(&tlsm_tr_allowed, true);
}

void tlsm_trace_init(void)
{
    proc_mono0 = tlsm_mono_ns();
}

bool tlsm_trace_is_quiet(void)
{
    return tlsm_tr_quiet_reason[0] != 0;
}

void tlsm_trace_quiet(const char *why)
{
    int expect = ST_OPEN;
    if (!atomic_compare_exchange_strong(&tlsm_tr_state, &expect, ST_OFF) && expect != ST_UNOPENED &&
        expect != ST_RESERVED)
        return;
    atomic_store(&tlsm_tr_state, ST_OFF);
    snprintf(tlsm_tr_quiet_reason, sizeof(tlsm_tr_quiet_reason), "%s", why);
    tlsm_warn("%s; tracing off, the program continues untraced", why);
}

static bool path_fits;

void tlsm_tr_expand_path(char *out, size_t cap, bool child)
{
    path_fits = tlsm_trace_path(out, cap, child, unix_t0);
}

static char fd_why[160];

int tlsm_tr_create_file(char *p, size_t cap)
{
    fd_why[0] = 0;
    if (!path_fits)
        return errno = ENAMETOOLONG, -1; /* the template, cut: never a file of another name */
    if (!tlsm_trace_fd_room(fd_why, sizeof(fd_why)))
        return errno = EMFILE, -1;
    return tlsm_trace_create(p, cap, &tlsm_tr_fd_is_pipe);
}

/* Why a trace could not be created, for the warning. */
void tlsm_tr_create_failed(char *why, size_t cap)
{
    if (fd_why[0])
        snprintf(why, cap, "no trace %.3800s: %s", tlsm_tr_path, fd_why);
    else
        snprintf(why, cap, "cannot create trace %s: %s", tlsm_tr_path, strerror(errno));
}

bool tlsm_tr_write_all(const char *p, size_t n)
{
    return tlsm_trace_write(tlsm_tr_fd, tlsm_tr_fd_is_pipe, p, n);
}

bool tlsm_tr_fd_still_ours(void)
{
    struct stat st;
    return fstat(tlsm_tr_fd, &st) == 0 && st.st_dev == tlsm_tr_fd_dev &&
           st.st_ino == tlsm_tr_fd_ino;
}

static struct tlsm_tbuf *self_buf(void)
{
    struct tlsm_thread *th = &tlsm_th;
    if (th->buf)
        return th->buf;
    struct tlsm_tbuf *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    tlsm_thread_start(th);
    pthread_mutex_lock(&tlsm_tr_bufs_lock);
    b->next = tlsm_tr_bufs;
    tlsm_tr_bufs = b;
    pthread_mutex_unlock(&tlsm_tr_bufs_lock);
    th->buf = b;
    return b;
}

/* Mapped mode for a regular file whose filesystem can reserve blocks, unless RLIMIT_AS
 * leaves too little room for chunks; write(2) otherwise (a 32 KiB buffer per thread). */
static void choose_io(const struct stat *st)
{
    tlsm_tr_mapped = false;
    tlsm_tr_map_errno = 0;
    io_note[0] = 0;
    if (!S_ISREG(st->st_mode))
        snprintf(io_note, sizeof(io_note), "not a regular file");
    else if (tlsm_tmap_tight())
        snprintf(io_note, sizeof(io_note),
                 "address space limit (RLIMIT_AS) near: %llu KiB left, too little for chunks",
                 (unsigned long long)(tlsm_tmap_as_left() / 1024));
    else if (!tlsm_tmap_start(tlsm_tr_fd))
        snprintf(io_note, sizeof(io_note), "fallocate: %s", strerror(errno));
    else
        tlsm_tr_mapped = true;
}

/* The header opens the opening thread's first chunk (offset 0), so a single-threaded
 * trace has no zeroed space to squeeze out at exit. */
static bool put_header(const char *line, size_t n)
{
    if (tlsm_tr_fmt2 && !tlsm_tr_mapped)
        return tlsm_tr_put2_header(NULL, line, n);
    if (!tlsm_tr_mapped)
        return tlsm_tr_write_all(line, n);
    struct tlsm_tbuf *b = self_buf();
    uint64_t off;
    size_t size = 0;
    char *p = b ? tlsm_tmap_chunk(tlsm_tr_fd, &off, &size) : NULL;
    if (!p)
        return false;
    tlsm_tr_lock_buf(b);
    tlsm_tmap_unmap(b->data, b->cap);
    b->data = p, b->off = off, b->cap = size;
    bool ok = true;
    if (tlsm_tr_fmt2)
        ok = tlsm_tr_put2_header(b, line, n);
    else
        memcpy(p, line, n), b->used = n;
    tlsm_tr_unlock_buf(b);
    return ok;
}

/* A reserved file (created at fork) is used if it is still ours, else a new one is made. */
static int reuse_or_create(void)
{
    if (tlsm_tr_fd >= 0 && tlsm_tr_fd_still_ours())
        return tlsm_tr_fd;
    tlsm_tr_fd = -1;
    return tlsm_tr_create_file(tlsm_tr_path, sizeof(tlsm_tr_path));
}

void tlsm_tr_open_trace(void)
{
    struct timespec ts;
    if (!clock_ready) {
        tlsm_clock_init();
        clock_ready = true;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    unix_t0 = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    mono_t0 = tlsm_mono_ns();
    tlsm_trace_t0 = tlsm_now();
    if (atomic_load(&tlsm_tr_state) == ST_RESERVED) {
        tlsm_tr_fd = reuse_or_create();
    } else {
        tlsm_tr_expand_path(tlsm_tr_path, sizeof(tlsm_tr_path), tlsm_tr_fork_of != 0);
        tlsm_tr_fd_is_pipe = false;
        tlsm_tr_fd = tlsm_tr_create_file(tlsm_tr_path, sizeof(tlsm_tr_path));
    }
    if (tlsm_tr_fd < 0) {
        char why[PATH_MAX + 96];
        tlsm_tr_create_failed(why, sizeof(why));
        atomic_store(&tlsm_tr_state, ST_OPEN); /* so that quiet() takes it */
        tlsm_trace_quiet(why);
        return;
    }
    char line[TLSM_LINE_MAX];
    struct tlsm_json j;
    struct stat st;
    if (fstat(tlsm_tr_fd, &st) == 0)
        tlsm_tr_fd_dev = st.st_dev, tlsm_tr_fd_ino = st.st_ino;
    if (!tlsm_tr_sh) {
        void *sh = mmap(NULL, sizeof(*tlsm_tr_sh), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        tlsm_tr_sh = sh == MAP_FAILED ? NULL : sh; /* without it children do not write here */
    }
    choose_io(&st);
    tlsm_tr_fmt2 = tlsm_cfg.format == TLSM_FORMAT_BINARY;
    tlsm_json_stage_hot = tlsm_tr_fmt2;
    tlsm_tr_trace_pid = getpid();
    trace_gen++;
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(HEADER));
    struct tlsm_tr_hdr h = {unix_t0,         mono_t0,        mono_t0 - proc_mono0,
                            tlsm_tr_fork_of, tlsm_tr_mapped, io_note};
    tlsm_tr_header_fields(&j, &h);
    size_t n = tlsm_json_end(&j, line);
    /* Open only once the header is in: no other thread's chunk may take offset 0. */
    if (!n || !put_header(line, n)) {
        char why[PATH_MAX + 96];
        snprintf(why, sizeof(why), "cannot write the trace header to %s: %s", tlsm_tr_path,
                 strerror(errno));
        struct stat now;
        /* A disk full from the start leaves no empty file behind, only the warning. */
        if (S_ISREG(st.st_mode) && lstat(tlsm_tr_path, &now) == 0 && now.st_dev == tlsm_tr_fd_dev &&
            now.st_ino == tlsm_tr_fd_ino)
            unlink(tlsm_tr_path);
        tlsm_trace_quiet(why);
        return;
    }
    atomic_store(&tlsm_tr_state, ST_OPEN);
    tlsm_tr_replay_early_warnings();
    /* Instances met before this file existed (before the constructor allowed tracing, or
     * in the parent of a forked child) still get their lib line in this file. */
    tlsm_tr_replay(trace_gen);
}

unsigned tlsm_trace_generation(void)
{
    return trace_gen;
}

bool tlsm_trace_is_open(void)
{
    return atomic_load_explicit(&tlsm_tr_state, memory_order_acquire) == ST_OPEN;
}

bool tlsm_trace_ready(void)
{
    int s = atomic_load_explicit(&tlsm_tr_state, memory_order_acquire);
    if (s != ST_UNOPENED && s != ST_RESERVED)
        return s == ST_OPEN;
    /* Only after the constructor allowed it: never in secure-execution mode, never when
     * disabled, even if a hook resolves early and wants to describe a library. */
    if (!tlsm_tr_allowed)
        return false;
    pthread_mutex_lock(&tlsm_tr_open_lock);
    s = atomic_load(&tlsm_tr_state);
    if (s == ST_UNOPENED || s == ST_RESERVED)
        tlsm_tr_open_trace();
    pthread_mutex_unlock(&tlsm_tr_open_lock);
    return atomic_load(&tlsm_tr_state) == ST_OPEN;
}

/* Buffer lock held. Mapped: the lines are in the file already, only counted here. */
void tlsm_tr_flush_buf(struct tlsm_tbuf *b)
{
    if (tlsm_tr_mapped) {
        b->written += b->pending;
        b->pending = 0;
        return;
    }
    if (!b->used || (tlsm_tr_fmt2 && b->used <= TLSM_B2_CHUNK_HDR))
        return;
    size_t out = tlsm_tr_fmt2 ? tlsm_tr_seal_chunk(b) : b->used;
    if (atomic_load(&tlsm_tr_state) == ST_OPEN && !tlsm_tr_fd_still_ours()) {
        b->dropped += b->pending;
        atomic_fetch_add(&tlsm_tr_dropped_bytes, b->used);
        b->used = b->pending = 0;
        tlsm_trace_quiet("the program closed the trace's descriptor");
        return;
    }
    if (atomic_load(&tlsm_tr_state) == ST_OPEN && tlsm_tr_write_all(b->data, out)) {
        b->written += b->pending;
    } else {
        int e = errno;
        b->dropped += b->pending;
        atomic_fetch_add(&tlsm_tr_dropped_bytes, b->used);
        /* EAGAIN: a full pipe or FIFO, drop and go on; anything else is fatal for tracing. */
        if (atomic_load(&tlsm_tr_state) == ST_OPEN && e != EAGAIN) {
            char why[PATH_MAX + 96];
            snprintf(why, sizeof(why), "writing trace %s failed: %s", tlsm_tr_path, strerror(e));
            tlsm_trace_quiet(why);
        }
    }
    b->used = 0;
    b->pending = 0;
}

/* A line that will not be in the file: counted in lines and bytes (end.dropped_bytes). */
void tlsm_tr_drop_line(struct tlsm_tbuf *b, size_t len)
{
    b->dropped++;
    atomic_fetch_add_explicit(&tlsm_tr_dropped_bytes, len, memory_order_relaxed);
}

static bool as_limited(void)
{
    struct rlimit rl;
    return !getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY;
}

/* The file cannot grow (disk full, RLIMIT_FSIZE, RLIMIT_AS near, ...): say so once, drop
 * and count from now on; the end line still fits in space already allocated and names the
 * reason. */
void tlsm_tr_map_failed(int e)
{
    if (tlsm_tr_map_errno)
        return;
    tlsm_tr_map_errno = e ? e : EIO;
    as_gave_up = tlsm_tr_map_errno == ENOMEM && as_limited();
    char why[PATH_MAX + 160];
    if (as_gave_up)
        snprintf(why, sizeof(why),
                 "trace %s stops: the address space limit (RLIMIT_AS) is near (%llu KiB "
                 "left), tlsmeter maps no more of it; later events are dropped and counted",
                 tlsm_tr_path, (unsigned long long)(tlsm_tmap_as_left() / 1024));
    else
        snprintf(why, sizeof(why), "trace %s cannot grow: %s; later events are dropped and counted",
                 tlsm_tr_path, strerror(tlsm_tr_map_errno));
    tlsm_warn("%s", why);
}

char *tlsm_tr_map_chunk(uint64_t *off, size_t *size)
{
    char *p = NULL;
    if (!tlsm_tr_map_errno && tlsm_tr_fd_still_ours())
        p = tlsm_tmap_chunk(tlsm_tr_fd, off, size);
    else if (!tlsm_tr_map_errno)
        errno = EBADF; /* the program closed or reused our descriptor */
    if (!p && !tlsm_tr_map_errno)
        tlsm_tr_map_failed(errno);
    return p;
}

/* The line does not fit the thread's chunk: map the next one. When the new chunk follows
 * the old one in the file, the line is split across both and no zeroed space is left. */
static void next_chunk(struct tlsm_tbuf *b, const char *line, size_t len)
{
    if (tlsm_tr_fmt2) {
        tlsm_tr_put2_slow(b, line, len);
        return;
    }
    uint64_t off;
    size_t size = 0;
    char *p = tlsm_tr_map_chunk(&off, &size);
    if (!p) {
        tlsm_tr_drop_line(b, len);
        return;
    }
    size_t head = 0;
    if (b->data && off == b->off + b->cap)
        memcpy(b->data + b->used, line, head = b->cap - b->used);
    else if (b->data)
        tlsm_tmap_gap(b->off + b->used);
    tlsm_tmap_unmap(b->data, b->cap);
    b->data = p, b->off = off, b->cap = size;
    memcpy(p, line + head, len - head);
    b->used = len - head;
    b->pending++;
}

static void line_slow_locked(struct tlsm_tbuf *b, const char *line, size_t len);

/* A warning from in here (the file cannot grow) goes straight to the file: this thread
 * holds its own buffer. */
void tlsm_tr_line_slow(struct tlsm_tbuf *b, const char *line, size_t len)
{
    tlsm_tr_in_writer = true;
    line_slow_locked(b, line, len);
    tlsm_tr_in_writer = false;
}

static void line_slow_locked(struct tlsm_tbuf *b, const char *line, size_t len)
{
    if (atomic_load(&tlsm_tr_state) != ST_OPEN) {
        tlsm_tr_drop_line(b, len);
        return;
    }
    if (tlsm_tr_mapped) {
        next_chunk(b, line, len);
        return;
    }
    if (!b->data && !(b->data = malloc(TBUF_SIZE))) {
        tlsm_tr_drop_line(b, len);
        return;
    }
    b->cap = TBUF_SIZE;
    tlsm_tr_flush_buf(b);
    if (tlsm_tr_fmt2) {
        tlsm_tr_put2_slow(b, line, len);
        return;
    }
    memcpy(b->data + b->used, line, len);
    b->used += len;
    b->pending++;
}

void tlsm_trace_line(const char *line, size_t len)
{
    struct tlsm_tbuf *b = self_buf();
    if (!b || atomic_load_explicit(&tlsm_tr_state, memory_order_relaxed) != ST_OPEN) {
        if (b)
            tlsm_tr_drop_line(b, len);
        return;
    }
    tlsm_tr_lock_buf(b);
    if (tlsm_tr_fmt2) {
        tlsm_tr_put2(b, line, len);
    } else if (__builtin_expect(b->used + len <= b->cap, 1)) {
        memcpy(b->data + b->used, line, len);
        b->used += len;
        b->pending++;
    } else {
        tlsm_tr_line_slow(b, line, len);
    }
    tlsm_tr_unlock_buf(b);
}

void tlsm_trace_drop(void)
{
    struct tlsm_tbuf *b = self_buf();
    if (b)
        b->dropped++;
}

/* Thread exit: write what is left and retire the buffer. */
void tlsm_trace_flush_self(void)
{
    struct tlsm_tbuf *b = tlsm_th.buf;
    if (!b)
        return;
    tlsm_tr_lock_buf(b);
    tlsm_tr_flush_buf(b);
    tlsm_tr_unlock_buf(b);
}

/* Buffer lock held: give the chunk up, its unused end stays zero until exit squeezes it. */
void tlsm_tr_close_chunk(struct tlsm_tbuf *b)
{
    if (!tlsm_tr_mapped || !b->data)
        return;
    tlsm_tmap_gap(b->off + b->used);
    tlsm_tmap_unmap(b->data, b->cap);
    b->data = NULL;
    b->used = b->cap = 0;
}

void tlsm_trace_thread_exit(void)
{
    struct tlsm_tbuf *b = tlsm_th.buf;
    if (!b)
        return;
    tlsm_tr_lock_buf(b);
    tlsm_tr_flush_buf(b);
    tlsm_tr_close_chunk(b);
    tlsm_tr_unlock_buf(b);
    pthread_mutex_lock(&tlsm_tr_bufs_lock);
    for (struct tlsm_tbuf **p = &tlsm_tr_bufs; *p; p = &(*p)->next)
        if (*p == b) {
            *p = b->next;
            break;
        }
    pthread_mutex_unlock(&tlsm_tr_bufs_lock);
    atomic_fetch_add(&tlsm_tr_retired_written, b->written);
    atomic_fetch_add(&tlsm_tr_retired_dropped, b->dropped);
    tlsm_th.buf = NULL;
    if (!tlsm_tr_mapped)
        free(b->data);
    free(b);
}

void tlsm_tr_flush_all(bool close)
{
    pthread_mutex_lock(&tlsm_tr_bufs_lock);
    for (struct tlsm_tbuf *b = tlsm_tr_bufs; b; b = b->next) {
        tlsm_tr_lock_buf(b);
        tlsm_tr_flush_buf(b);
        if (close)
            tlsm_tr_close_chunk(b);
        tlsm_tr_unlock_buf(b);
    }
    pthread_mutex_unlock(&tlsm_tr_bufs_lock);
}

void tlsm_trace_counts(uint64_t *events, uint64_t *dropped)
{
    *events = atomic_load(&tlsm_tr_retired_written);
    *dropped = atomic_load(&tlsm_tr_retired_dropped);
    pthread_mutex_lock(&tlsm_tr_bufs_lock);
    for (struct tlsm_tbuf *b = tlsm_tr_bufs; b; b = b->next) {
        *events += b->written + (tlsm_tr_mapped ? b->pending : 0);
        *dropped += b->dropped;
    }
    pthread_mutex_unlock(&tlsm_tr_bufs_lock);
    *events += atomic_load(&tlsm_tr_direct_lines);
    if (tlsm_tr_sh)
        *events += atomic_load(&tlsm_tr_sh->child_lines);
}

const char *tlsm_trace_quiet_reason(void)
{
    return tlsm_tr_quiet_reason;
}

uint64_t tlsm_trace_dropped_bytes(void)
{
    return atomic_load(&tlsm_tr_dropped_bytes);
}

const char *tlsm_trace_io_error(void)
{
    if (tlsm_tr_map_errno && as_gave_up)
        return "address space limit (RLIMIT_AS) near";
    return tlsm_tr_map_errno ? strerror(tlsm_tr_map_errno) : NULL;
}

const char *tlsm_trace_io(void)
{
    return tlsm_tr_mapped ? "mmap" : "write";
}
