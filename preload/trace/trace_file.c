/* trace_file.c: where the trace goes (the TLSMETER_OUT template), creating it without ever
 * writing through someone else's file, and write(2) of whole lines for the FIFOs, devices
 * and filesystems the mapped writer (tracemap.c) cannot use. */
#include "trace/trace_file.h"
#include "trace/config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The expanded template names a directory (an existing one, or any path ending in '/'): the
 * trace goes inside it as tlsmeter.PID.trace (tlsm_trace_create), for a forked child too. */
static bool names_dir(const char *p, size_t n)
{
    struct stat st;
    return (n && p[n - 1] == '/') || (stat(p, &st) == 0 && S_ISDIR(st.st_mode));
}

/* Expand %p, %t, %%; a forked child without %p in a file template gets ".PID" appended (a
 * directory gets its own tlsmeter.PID.trace inside it, as the parent's). */
bool tlsm_trace_path(char *out, size_t cap, bool child, uint64_t unix_t0)
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
    if (child && !had_pid && !names_dir(out, n))
        snprintf(out + n, cap - n, ".%d", (int)getpid());
    return !*t; /* false: the template did not fit (never cut silently) */
}

/* O_EXCL|O_NOFOLLOW: never write through a planted symlink or into someone's file;
 * on a name clash try NAME.1 .. NAME.9. */
/* A FIFO or device the user named. Checked again on the open descriptor (the path may
 * have been swapped): it must still be one, owned by us or by root, so another user's
 * planted FIFO never receives the trace. */
static int open_special(const char *p, bool follow, bool *is_pipe)
{
    struct stat st;
    int f = open(p, O_WRONLY | (follow ? 0 : O_NOFOLLOW) | O_CLOEXEC | O_APPEND | O_NONBLOCK);
    if (f < 0)
        return -1;
    if (fstat(f, &st) || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) ||
        (st.st_uid != geteuid() && st.st_uid != 0)) {
        close(f);
        errno = EPERM;
        return -1;
    }
    *is_pipe = S_ISFIFO(st.st_mode);
    return f;
}

/* The exact name exists: a FIFO or device (also through a symlink, like /dev/stdout when it
 * is a pipe or terminal) is what the user asked to write to. -1 with errno EEXIST: try
 * NAME.1 (a planted FIFO of someone else's, a dangling symlink); EPERM: give up (a symlink
 * to a file: never written through, and no NAME.1 beside what the user named). */
static int existing(const char *p, bool *is_pipe)
{
    struct stat l, st;
    if (lstat(p, &l))
        return errno = EEXIST, -1;
    if (S_ISCHR(l.st_mode) || S_ISFIFO(l.st_mode)) {
        int f = open_special(p, false, is_pipe);
        return f >= 0 ? f : (errno = EEXIST, -1);
    }
    if (!S_ISLNK(l.st_mode) || stat(p, &st))
        return errno = EEXIST, -1;
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))
        return open_special(p, true, is_pipe);
    return errno = EPERM, -1;
}

int tlsm_trace_create(char *p, size_t cap, bool *is_pipe)
{
    *is_pipe = false;
    struct stat st;
    /* A directory means a file per process inside it. */
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t n = strlen(p);
        if ((size_t)snprintf(p + n, cap - n, "%stlsmeter.%d%s", n && p[n - 1] == '/' ? "" : "/",
                             (int)getpid(), tlsm_format_suffix()) >= cap - n)
            return errno = ENAMETOOLONG, -1;
    }
    size_t base = strlen(p);
    if (base + 3 >= cap)
        return errno = ENAMETOOLONG, -1;
    int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND | O_NONBLOCK;
    for (int i = 0; i < 10; i++) {
        if (i)
            snprintf(p + base, cap - base, ".%d", i);
        int f = open(p, flags, 0600);
        if (f >= 0 || errno != EEXIST)
            return f;
        if (!i && ((f = existing(p, is_pipe)) >= 0 || errno != EEXIST))
            return f;
    }
    p[base] = 0;
    return errno = EEXIST, -1;
}
bool tlsm_trace_fd_room(char *why, size_t cap)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
        return true;
    DIR *dir = opendir("/proc/self/fd");
    if (!dir && (errno == EMFILE || errno == ENFILE)) {
        snprintf(why, cap, "no descriptor is free (RLIMIT_NOFILE %llu)",
                 (unsigned long long)rl.rlim_cur);
        return false;
    }
    if (!dir)
        return true; /* no /proc: nothing to count with */
    uint64_t open_fds = 0;
    for (struct dirent *e; (e = readdir(dir));)
        open_fds += e->d_name[0] != '.';
    closedir(dir);
    open_fds = open_fds ? open_fds - 1 : 0; /* the directory's own descriptor */
    if (open_fds + 1 + TLSM_FD_RESERVE <= rl.rlim_cur)
        return true;
    snprintf(why, cap,
             "only %llu of %llu descriptors (RLIMIT_NOFILE) are free: the trace would take "
             "one the program may need",
             (unsigned long long)(rl.rlim_cur > open_fds ? rl.rlim_cur - open_fds : 0),
             (unsigned long long)rl.rlim_cur);
    return false;
}

/* Writing into a FIFO whose reader went away raises SIGPIPE, which kills most programs:
 * block it on this thread for the write, and swallow the one we caused. */
static bool write_pipe(int fd, const char *p, size_t n);

bool tlsm_trace_write(int fd, bool is_pipe, const char *p, size_t n)
{
    if (is_pipe)
        return write_pipe(fd, p, n);
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

static bool write_pipe(int fd, const char *p, size_t n)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE);
    bool ok = tlsm_trace_write(fd, false, p, n);
    int e = errno;
    if (!ok && e == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return ok;
}
