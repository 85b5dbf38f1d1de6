/* trace_life.c: the trace through the process's life events: the end line at exit and
 * before exec*() or _exit() (no destructor runs then), and fork (the child's own file,
 * created while it still has its parent's credentials). Uses trace.c's state through
 * trace_int.h; trace.c never calls in here. */
#include "trace/trace.h"
#include "trace/log.h"
#include "trace/thread.h"
#include "trace/trace_int.h"
#include "trace/tracemap.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Set once at start-up (main.c), before any thread but the first exists. */
static tlsm_end_line_fn end_line;
static tlsm_replay_fn replay[4];
static int nreplay;

void tlsm_trace_set_end_line(tlsm_end_line_fn fn)
{
    end_line = fn;
}

void tlsm_trace_add_replay(tlsm_replay_fn fn)
{
    if (nreplay < (int)(sizeof(replay) / sizeof(replay[0])))
        replay[nreplay++] = fn;
}

void tlsm_tr_replay(unsigned gen)
{
    for (int i = 0; i < nreplay; i++)
        replay[i](gen);
}

/* The end line goes last: after the squeeze in mapped mode, else one more write(2). */
static void write_end(char *line, size_t cap, bool all_stopped)
{
    char framed[TLSM_LINE_MAX * 2 + 64];
    size_t n = end_line ? end_line(line, cap) : 0;
    if (n && tlsm_tr_fmt2) /* a chunk of its own */
        n = tlsm_tr_frame_direct(framed, sizeof(framed), line, n), line = framed;
    if (!n)
        return;
    if (!tlsm_tr_mapped)
        tlsm_tr_write_all(line, n);
    else if (!tlsm_tr_fd_still_ours())
        return; /* the mappings kept the lines; a descriptor the program reused is not ours */
    else if (!all_stopped ||
             !(tlsm_tr_fmt2 ? tlsm_tmap_finish2 : tlsm_tmap_finish)(tlsm_tr_fd, line, n))
        tlsm_tmap_append(tlsm_tr_fd, line, n); /* zeroed space stays: readers skip it */
}

/* A forked child's file that stayed unused goes away; one the child cannot remove any
 * more (it dropped privileges) becomes a trace saying there was no TLS. */
static bool drop_reserved(void)
{
    struct stat st;
    if (atomic_load(&tlsm_tr_state) != ST_RESERVED || getpid() != tlsm_tr_trace_pid)
        return false; /* a vfork child shares our memory, not our file */
    if (lstat(tlsm_tr_path, &st) == 0 && st.st_dev == tlsm_tr_fd_dev &&
        st.st_ino == tlsm_tr_fd_ino && !unlink(tlsm_tr_path)) {
        atomic_store(&tlsm_tr_state, ST_FINISHED);
        return true;
    }
    tlsm_tr_open_trace();
    return false;
}

/* Exit: every buffer out, then the end line. The fd stays open: a thread still running
 * must never write into a descriptor number the program may reuse. */
void tlsm_trace_finish(void)
{
    pthread_mutex_lock(&tlsm_tr_open_lock);
    drop_reserved();
    if (atomic_load(&tlsm_tr_state) == ST_OPEN && getpid() == tlsm_tr_trace_pid) {
        /* Mapped: no chunk may be taken once the squeeze starts. write(2): the buffers are
         * written out first (flush_buf writes only while open). */
        if (tlsm_tr_mapped)
            atomic_store(&tlsm_tr_state, ST_FINISHED);
        tlsm_tr_flush_all(true);
        atomic_store(&tlsm_tr_state, ST_FINISHED);
        char line[TLSM_LINE_MAX * 2];
        write_end(line, sizeof(line), true);
    }
    atomic_store(&tlsm_tr_state, ST_FINISHED);
    pthread_mutex_unlock(&tlsm_tr_open_lock);
}

static bool try_lock_buf(struct tlsm_tbuf *b)
{
    for (int i = 0; i < 1000; i++) {
        if (!atomic_exchange_explicit(&b->lock, 1, memory_order_acquire))
            return true;
        sched_yield();
    }
    return false;
}

/* Try-locks every buffer; the chunks of those taken are closed (a failed exec goes on with
 * new ones). True when all were taken: no copy into the file is in flight. */
static bool stop_writers(void)
{
    bool all = true;
    if (pthread_mutex_trylock(&tlsm_tr_bufs_lock))
        return false;
    for (struct tlsm_tbuf *b = tlsm_tr_bufs; b; b = b->next)
        if (try_lock_buf(b)) {
            tlsm_tr_flush_buf(b);
            tlsm_tr_close_chunk(b);
            tlsm_tr_unlock_buf(b);
        } else {
            all = false;
        }
    pthread_mutex_unlock(&tlsm_tr_bufs_lock);
    return all;
}

/* exec*() or _exit(): no destructor will run, so write everything now, ending with an end
 * line (naming the exec, if any). Only try-locks: these calls are async-signal-safe and a
 * signal handler may have interrupted this very thread inside the trace writer; and only
 * in the process that opened the file (a vfork child shares our memory, not our trace).
 * Another thread may copy lines while the squeeze runs: its buffer lock keeps the chunk
 * apart, and only a squeeze with every buffer stopped moves data. */
void tlsm_trace_final(const char *exec_what)
{
    if (pthread_mutex_trylock(&tlsm_tr_open_lock))
        return;
    if (drop_reserved() || atomic_load(&tlsm_tr_state) != ST_OPEN ||
        getpid() != tlsm_tr_trace_pid) {
        pthread_mutex_unlock(&tlsm_tr_open_lock);
        return;
    }
    /* No new chunk while the file is squeezed and cut: a thread mapping one beyond the cut
     * would fault. Lines of other threads meanwhile are dropped (and counted). */
    if (tlsm_tr_mapped)
        atomic_store(&tlsm_tr_state, ST_FINISHED);
    bool all = stop_writers();
    char line[TLSM_LINE_MAX * 2];
    tlsm_exec_path = exec_what;
    if (atomic_load(&tlsm_tr_state) != ST_OFF) /* a write(2) flush may have failed */
        write_end(line, sizeof(line), all);
    tlsm_exec_path = NULL;
    int finished = ST_FINISHED; /* the exec may fail: tracing goes on (unless it went quiet) */
    atomic_compare_exchange_strong(&tlsm_tr_state, &finished, ST_OPEN);
    pthread_mutex_unlock(&tlsm_tr_open_lock);
}

void tlsm_trace_atfork_prepare(void)
{
    pthread_mutex_lock(&tlsm_tr_open_lock);
    tlsm_tr_flush_all(false);
    pthread_mutex_lock(&tlsm_tr_bufs_lock);
}

void tlsm_trace_atfork_parent(void)
{
    pthread_mutex_unlock(&tlsm_tr_bufs_lock);
    pthread_mutex_unlock(&tlsm_tr_open_lock);
}

/* The parent's buffers in the child: the chunks map the parent's file (never written from
 * here), the other threads' buffers were flushed by the parent in prepare. */
static void forget_parent_bufs(void)
{
    struct tlsm_tbuf *self = tlsm_th.buf;
    for (struct tlsm_tbuf *b = tlsm_tr_bufs, *next; b; b = next) {
        next = b->next;
        if (tlsm_tr_mapped)
            tlsm_tmap_unmap(b->data, b->cap);
        if (b == self)
            continue;
        if (!tlsm_tr_mapped)
            free(b->data);
        free(b);
    }
    tlsm_tr_bufs = self;
    if (self) {
        if (tlsm_tr_mapped)
            self->data = NULL, self->cap = 0;
        self->next = NULL;
        self->used = self->pending = self->written = self->dropped = 0;
        atomic_store(&self->lock, 0);
    }
    atomic_store(&tlsm_tr_retired_written, 0);
    atomic_store(&tlsm_tr_retired_dropped, 0);
    atomic_store(&tlsm_tr_dropped_bytes, 0);
    atomic_store(&tlsm_tr_warnings, 0);
    atomic_store(&tlsm_tr_direct_lines, 0);
    atomic_store(&tlsm_tr_nearly_warn, 0);
}

/* Create the child's file now, with the credentials of the parent (a worker that drops
 * privileges later could not). If that fails, the parent's trace gets the warning. */
static void child_file(int parent_fd, bool parent_mapped, struct tlsm_tr_shared *parent_sh)
{
    char why[PATH_MAX + 96], line[PATH_MAX + 256];
    bool parent_pipe = tlsm_tr_fd_is_pipe;
    tlsm_tr_expand_path(tlsm_tr_path, sizeof(tlsm_tr_path), true);
    tlsm_tr_fd_is_pipe = false;
    tlsm_tr_fd = tlsm_tr_create_file(tlsm_tr_path, sizeof(tlsm_tr_path));
    struct stat st;
    if (tlsm_tr_fd >= 0 && fstat(tlsm_tr_fd, &st) == 0) {
        tlsm_tr_fd_dev = st.st_dev, tlsm_tr_fd_ino = st.st_ino;
        tlsm_tr_trace_pid = getpid();
        atomic_store(&tlsm_tr_state, ST_RESERVED);
        return;
    }
    tlsm_tr_create_failed(why, sizeof(why));
    if (tlsm_tr_fd >= 0)
        close(tlsm_tr_fd), tlsm_tr_fd = -1;
    if (parent_sh) { /* counted in the parent's end.events */
        size_t n = tlsm_tr_warn_line(line, sizeof(line), why, true);
        if (n && tlsm_tr_put_direct(parent_fd, parent_mapped, parent_pipe, line, n))
            atomic_fetch_add(&parent_sh->child_lines, 1);
    }
    atomic_store(&tlsm_tr_state, ST_OPEN); /* so that quiet() takes it */
    tlsm_trace_quiet(why);
}

/* The child is a new process with one thread: its own file, its own counts. */
void tlsm_trace_atfork_child(void)
{
    int s = atomic_load(&tlsm_tr_state), parent_fd = tlsm_tr_fd;
    bool parent_mapped = tlsm_tr_mapped;
    struct tlsm_tr_shared *parent_sh = tlsm_tr_sh;
    tlsm_tr_sh = NULL; /* the child's own file gets its own */
    forget_parent_bufs();
    tlsm_tr_fd = -1;
    tlsm_tr_mapped = false;
    tlsm_tr_fork_of = getppid();
    tlsm_tr_quiet_reason[0] = 0;
    pthread_mutex_init(&tlsm_tr_bufs_lock, NULL);
    pthread_mutex_init(&tlsm_tr_open_lock, NULL);
    if (tlsm_tr_allowed && (s == ST_OPEN || s == ST_UNOPENED || s == ST_RESERVED))
        child_file(parent_fd, parent_mapped, s == ST_OPEN ? parent_sh : NULL);
    if (parent_sh)
        munmap(parent_sh, sizeof(*parent_sh));
    if (parent_fd >= 0)
        close(parent_fd);
    tlsm_tmap_detach();
}
