/* trace.c: one trace file per process, opened at the first TLS activity (a program that
 * never uses OpenSSL leaves no file). Lines are built on the stack, copied into a
 * per-thread buffer and written in whole lines with write(2); the file is O_NONBLOCK
 * so a FIFO that stalls costs dropped lines, never a blocked program. */
#include "trace.h"
#include "backend.h"
#include "caps.h"
#include "clock.h"
#include "config.h"
#include "cputime.h"
#include "json.h"
#include "log.h"
#include "obj.h"
#include "thread.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TBUF_SIZE (32 * 1024)

enum state { ST_UNOPENED, ST_OPEN, ST_OFF, ST_FINISHED };

struct tlsm_tbuf {
    _Atomic int lock;
    size_t used;
    uint64_t pending, written, dropped; /* lines */
    struct tlsm_tbuf *next;
    char data[TBUF_SIZE];
};

uint64_t tlsm_trace_t0;
const char *tlsm_exec_path;
static _Atomic int state = ST_UNOPENED;
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t bufs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tlsm_tbuf *bufs;
static _Atomic uint64_t retired_written, retired_dropped;
static int fd = -1;
static char path[PATH_MAX];
static char quiet_reason[PATH_MAX + 128];
static uint64_t unix_t0, mono_t0, proc_mono0;
static pid_t fork_of;
static bool clock_ready;
static bool fd_is_pipe;    /* writes may raise SIGPIPE */
static dev_t fd_dev;       /* identity of the trace file: a program that closes every */
static ino_t fd_ino;       /* descriptor may reuse ours for a file of its own */
static pid_t trace_pid;    /* the process that opened the file (vfork children are not it) */
static unsigned trace_gen; /* bumped at every open: lib lines are written once per file */
static _Atomic bool allowed;

void tlsm_trace_allow(void)
{
    atomic_store(&allowed, true);
}

void tlsm_trace_init(void)
{
    proc_mono0 = tlsm_mono_ns();
}

bool tlsm_trace_is_quiet(void)
{
    return quiet_reason[0] != 0;
}

void tlsm_trace_quiet(const char *why)
{
    int expect = ST_OPEN;
    if (!atomic_compare_exchange_strong(&state, &expect, ST_OFF) && expect != ST_UNOPENED)
        return;
    atomic_store(&state, ST_OFF);
    snprintf(quiet_reason, sizeof(quiet_reason), "%s", why);
    tlsm_warn("%s; tracing off, the program continues untraced", why);
}

/* Expand %p, %t, %%; a forked child without %p in the template gets ".PID" appended. */
static void expand_path(char *out, size_t cap, bool child)
{
    const char *t = tlsm_cfg.out;
    size_t n = 0;
    bool had_pid = false;
    for (; *t && n + 24 < cap; t++) {
        if (t[0] != '%' || !t[1]) {
            out[n++] = *t;
            continue;
        }
        t++;
        if (*t == 'p')
            n += (size_t)snprintf(out + n, cap - n, "%d", (int)getpid()), had_pid = true;
        else if (*t == 't')
            n += (size_t)snprintf(out + n, cap - n, "%llu",
                                  (unsigned long long)(unix_t0 / 1000000000u));
        else
            out[n++] = *t;
    }
    out[n] = 0;
    if (child && !had_pid)
        snprintf(out + n, cap - n, ".%d", (int)getpid());
}

/* O_EXCL|O_NOFOLLOW: never write through a planted symlink or into someone's file;
 * on a name clash try NAME.1 .. NAME.9. */
/* A FIFO or device the user named. Checked again on the open descriptor (the path may
 * have been swapped): it must still be one, owned by us or by root, so another user's
 * planted FIFO never receives the trace. */
static int open_special(const char *p)
{
    struct stat st;
    int f = open(p, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_APPEND | O_NONBLOCK);
    if (f < 0)
        return -1;
    if (fstat(f, &st) || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) ||
        (st.st_uid != geteuid() && st.st_uid != 0)) {
        close(f);
        errno = EPERM;
        return -1;
    }
    fd_is_pipe = S_ISFIFO(st.st_mode);
    return f;
}

static int create_file(char *p, size_t cap)
{
    size_t base = strlen(p);
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND | O_NONBLOCK;
    for (int i = 0; i < 10; i++) {
        if (i)
            snprintf(p + base, cap - base, ".%d", i);
        int f = open(p, flags, 0600);
        if (f >= 0 || errno != EEXIST)
            return f;
        /* An existing device or FIFO (/dev/full, a named pipe) is what the user asked to
         * write to: open it as is. Regular files and symlinks are never written through. */
        struct stat st;
        if (!i && lstat(p, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
            return open_special(p);
    }
    p[base] = 0;
    return -1;
}

static void header_fields(struct tlsm_json *j)
{
    char cpu[256], exe[PATH_MAX], crypto[512], cfg[2048], comm[32] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = 0;
    FILE *f = fopen("/proc/self/comm", "re");
    if (f) {
        if (!fgets(comm, sizeof(comm), f))
            comm[0] = 0;
        comm[strcspn(comm, "\n")] = 0;
        fclose(f);
    }
    tlsm_cpu_model(cpu, sizeof(cpu));
    tlsm_cpu_crypto_json(crypto, sizeof(crypto));
    cfg[0] = '{';
    size_t c = tlsm_config_json(cfg + 1, sizeof(cfg) - 3);
    snprintf(cfg + 1 + c, sizeof(cfg) - 1 - c, "}");
    tlsm_json_int(j, "format", 1);
    tlsm_json_str(j, "tool", "tlsmeter");
    tlsm_json_str(j, "version", TLSM_VERSION);
    tlsm_json_int(j, "pid", getpid());
    tlsm_json_int(j, "ppid", getppid());
    if (fork_of)
        tlsm_json_int(j, "fork_of", fork_of);
    tlsm_json_str(j, "exe", exe);
    tlsm_json_str(j, "comm", comm);
    tlsm_json_int(j, "start_unix_ns", (int64_t)unix_t0);
    tlsm_json_int(j, "mono_ns", (int64_t)mono_t0);
    tlsm_json_int(j, "since_start_ns", (int64_t)(mono_t0 - proc_mono0));
    tlsm_json_str(j, "clock", tlsm_clock_name());
    tlsm_json_int(j, "clock_hz", (int64_t)tlsm_clock_hz);
    tlsm_json_int(j, "clock_cost_ns", (int64_t)tlsm_clock_cost_ns());
    tlsm_json_str(j, "cputime", tlsm_cputime_name());
    if (*tlsm_cputime_why())
        tlsm_json_str(j, "cputime_why", tlsm_cputime_why());
#if defined(__x86_64__)
    tlsm_json_str(j, "arch", "x86_64");
#elif defined(__aarch64__)
    tlsm_json_str(j, "arch", "aarch64");
#else
    tlsm_json_str(j, "arch", "unknown");
#endif
    tlsm_json_str(j, "cpu", cpu);
    if (tlsm_cpu_emulated())
        tlsm_json_bool(j, "emulated", true);
    tlsm_json_raw(j, "cpu_crypto", crypto);
    tlsm_json_int(j, "ncpu", sysconf(_SC_NPROCESSORS_ONLN));
    tlsm_json_str(j, "crypto_mode", tlsm_mode_name(tlsm_cfg.crypto));
    tlsm_json_raw(j, "config", cfg);
}

/* Writing into a FIFO whose reader went away raises SIGPIPE, which kills most programs:
 * block it on this thread for the write, and swallow the one we caused. */
static bool write_pipe(const char *p, size_t n);

static bool write_all(const char *p, size_t n)
{
    if (fd_is_pipe)
        return write_pipe(p, n);
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static bool write_pipe(const char *p, size_t n)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE);
    fd_is_pipe = false;
    bool ok = write_all(p, n);
    int e = errno;
    fd_is_pipe = true;
    if (!ok && e == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return ok;
}

static void open_trace(void)
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
    expand_path(path, sizeof(path), fork_of != 0);
    fd_is_pipe = false;
    fd = create_file(path, sizeof(path));
    if (fd < 0) {
        char why[PATH_MAX + 96];
        snprintf(why, sizeof(why), "cannot create trace %s: %s", path, strerror(errno));
        atomic_store(&state, ST_OPEN); /* so that quiet() takes it */
        tlsm_trace_quiet(why);
        return;
    }
    char line[TLSM_LINE_MAX];
    struct tlsm_json j;
    struct stat st;
    if (fstat(fd, &st) == 0)
        fd_dev = st.st_dev, fd_ino = st.st_ino;
    trace_pid = getpid();
    trace_gen++;
    tlsm_json_begin(&j, line, sizeof(line), "header");
    header_fields(&j);
    size_t n = tlsm_json_end(&j, line);
    atomic_store(&state, ST_OPEN);
    if (!n || !write_all(line, n)) {
        tlsm_trace_quiet("cannot write the trace header");
        return;
    }
    /* Instances met before this file existed (before the constructor allowed tracing, or
     * in the parent of a forked child) still get their lib line in this file. */
    tlsm_obj_replay_libs(trace_gen);
    tlsm_backend_replay_libs(trace_gen);
}

unsigned tlsm_trace_generation(void)
{
    return trace_gen;
}

bool tlsm_trace_ready(void)
{
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (s != ST_UNOPENED)
        return s == ST_OPEN;
    /* Only after the constructor allowed it: never in secure-execution mode, never when
     * disabled, even if a hook resolves early and wants to describe a library. */
    if (!allowed)
        return false;
    pthread_mutex_lock(&open_lock);
    if (atomic_load(&state) == ST_UNOPENED)
        open_trace();
    pthread_mutex_unlock(&open_lock);
    return atomic_load(&state) == ST_OPEN;
}

static void lock_buf(struct tlsm_tbuf *b)
{
    /* Contended only while exit or fork flushes this buffer; bounded by that one write. */
    while (atomic_exchange_explicit(&b->lock, 1, memory_order_acquire))
        sched_yield();
}

static void unlock_buf(struct tlsm_tbuf *b)
{
    atomic_store_explicit(&b->lock, 0, memory_order_release);
}

static bool fd_still_ours(void)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == fd_dev && st.st_ino == fd_ino;
}

/* Buffer lock held. */
static void flush_buf(struct tlsm_tbuf *b)
{
    if (!b->used)
        return;
    if (atomic_load(&state) == ST_OPEN && !fd_still_ours()) {
        b->dropped += b->pending;
        b->used = b->pending = 0;
        tlsm_trace_quiet("the program closed the trace's descriptor");
        return;
    }
    if (atomic_load(&state) == ST_OPEN && write_all(b->data, b->used)) {
        b->written += b->pending;
    } else {
        int e = errno;
        b->dropped += b->pending;
        /* EAGAIN: a full pipe or FIFO, drop and go on; anything else is fatal for tracing. */
        if (atomic_load(&state) == ST_OPEN && e != EAGAIN) {
            char why[PATH_MAX + 96];
            snprintf(why, sizeof(why), "writing trace %s failed: %s", path, strerror(e));
            tlsm_trace_quiet(why);
        }
    }
    b->used = 0;
    b->pending = 0;
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
    pthread_mutex_lock(&bufs_lock);
    b->next = bufs;
    bufs = b;
    pthread_mutex_unlock(&bufs_lock);
    th->buf = b;
    return b;
}

void tlsm_trace_line(const char *line, size_t len)
{
    struct tlsm_tbuf *b = self_buf();
    if (!b || atomic_load_explicit(&state, memory_order_relaxed) != ST_OPEN) {
        if (b)
            b->dropped++;
        return;
    }
    lock_buf(b);
    if (b->used + len > sizeof(b->data))
        flush_buf(b);
    memcpy(b->data + b->used, line, len);
    b->used += len;
    b->pending++;
    unlock_buf(b);
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
    lock_buf(b);
    flush_buf(b);
    unlock_buf(b);
}

void tlsm_trace_thread_exit(void)
{
    struct tlsm_tbuf *b = tlsm_th.buf;
    if (!b)
        return;
    tlsm_trace_flush_self();
    pthread_mutex_lock(&bufs_lock);
    for (struct tlsm_tbuf **p = &bufs; *p; p = &(*p)->next)
        if (*p == b) {
            *p = b->next;
            break;
        }
    pthread_mutex_unlock(&bufs_lock);
    atomic_fetch_add(&retired_written, b->written);
    atomic_fetch_add(&retired_dropped, b->dropped);
    tlsm_th.buf = NULL;
    free(b);
}

static void flush_all(void)
{
    pthread_mutex_lock(&bufs_lock);
    for (struct tlsm_tbuf *b = bufs; b; b = b->next) {
        lock_buf(b);
        flush_buf(b);
        unlock_buf(b);
    }
    pthread_mutex_unlock(&bufs_lock);
}

void tlsm_trace_counts(uint64_t *events, uint64_t *dropped)
{
    *events = atomic_load(&retired_written);
    *dropped = atomic_load(&retired_dropped);
    pthread_mutex_lock(&bufs_lock);
    for (struct tlsm_tbuf *b = bufs; b; b = b->next) {
        *events += b->written;
        *dropped += b->dropped;
    }
    pthread_mutex_unlock(&bufs_lock);
}

const char *tlsm_trace_quiet_reason(void)
{
    return quiet_reason;
}

/* Exit: every buffer out, then the end line. The fd stays open: a thread still running
 * must never write into a descriptor number the program may reuse. */
void tlsm_trace_finish(void)
{
    pthread_mutex_lock(&open_lock);
    if (atomic_load(&state) == ST_OPEN) {
        flush_all();
        char line[TLSM_LINE_MAX * 2];
        size_t n = tlsm_end_line(line, sizeof(line));
        atomic_store(&state, ST_FINISHED);
        if (n)
            write_all(line, n);
    }
    atomic_store(&state, ST_FINISHED);
    pthread_mutex_unlock(&open_lock);
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

/* exec*() or _exit(): no destructor will run, so write everything now, ending with an end
 * line (naming the exec, if any). Only try-locks: these calls are async-signal-safe and a
 * signal handler may have interrupted this very thread inside the trace writer; and only
 * in the process that opened the file (a vfork child shares our memory, not our trace). */
void tlsm_trace_final(const char *exec_what)
{
    if (atomic_load(&state) != ST_OPEN || getpid() != trace_pid)
        return;
    if (pthread_mutex_trylock(&open_lock))
        return;
    if (!pthread_mutex_trylock(&bufs_lock)) {
        for (struct tlsm_tbuf *b = bufs; b; b = b->next)
            if (try_lock_buf(b)) {
                flush_buf(b);
                unlock_buf(b);
            }
        pthread_mutex_unlock(&bufs_lock);
    }
    char line[TLSM_LINE_MAX * 2];
    tlsm_exec_path = exec_what;
    size_t n = atomic_load(&state) == ST_OPEN ? tlsm_end_line(line, sizeof(line)) : 0;
    tlsm_exec_path = NULL;
    if (n)
        write_all(line, n);
    pthread_mutex_unlock(&open_lock);
}

void tlsm_trace_atfork_prepare(void)
{
    pthread_mutex_lock(&open_lock);
    flush_all();
    pthread_mutex_lock(&bufs_lock);
}

void tlsm_trace_atfork_parent(void)
{
    pthread_mutex_unlock(&bufs_lock);
    pthread_mutex_unlock(&open_lock);
}

/* The child is a new process with one thread: its own file, its own counts. The other
 * threads' buffers were flushed by the parent in prepare; their copies here are dropped. */
void tlsm_trace_atfork_child(void)
{
    struct tlsm_tbuf *self = tlsm_th.buf;
    for (struct tlsm_tbuf *b = bufs, *next; b; b = next) {
        next = b->next;
        if (b != self)
            free(b);
    }
    bufs = self;
    if (self) {
        self->next = NULL;
        self->used = self->pending = self->written = self->dropped = 0;
        atomic_store(&self->lock, 0);
    }
    atomic_store(&retired_written, 0);
    atomic_store(&retired_dropped, 0);
    if (fd >= 0)
        close(fd);
    fd = -1;
    fork_of = getppid();
    quiet_reason[0] = 0;
    int s = atomic_load(&state);
    atomic_store(&state, s == ST_OPEN ? ST_UNOPENED : s);
    pthread_mutex_init(&bufs_lock, NULL);
    pthread_mutex_init(&open_lock, NULL);
}
