/* syscalls.c: the system call policy of the injector.
 *
 * Loading a library takes the loader's lock and malloc's; a thread that may hold a libc or
 * OpenSSL lock must not run it, or the process deadlocks. A thread blocked in one of the calls
 * below waits for I/O, time or a child, where no such lock is held. futex is not among them: a
 * thread waiting for one lock may hold another.
 *
 * A stop makes some calls return -EINTR instead of restarting (man 7 signal, "Interruption of
 * system calls and library functions by stop signals"): epoll_wait, epoll_pwait(2),
 * rt_sigtimedwait, semtimedop, io_getevents. A program never stopped by us would not have
 * seen that EINTR, so such a call is rewound to run again. Its timeout then restarts from its
 * full value, as the kernel's own restart does for these calls. */
#include "syscalls.h"

#include <dirent.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

static const long safe_calls[] = {
    SYS_read,         SYS_readv,           SYS_recvfrom,   SYS_recvmsg, SYS_pread64, SYS_ppoll,
    SYS_pselect6,     SYS_epoll_pwait,
#ifdef SYS_epoll_pwait2
    SYS_epoll_pwait2,
#endif
#ifdef SYS_poll
    SYS_poll,         SYS_select,          SYS_epoll_wait, SYS_pause,
#endif
    SYS_nanosleep,    SYS_clock_nanosleep, SYS_accept,     SYS_accept4, SYS_connect, SYS_wait4,
    SYS_waitid,       SYS_rt_sigtimedwait, SYS_sendto,     SYS_write,   SYS_sendmsg, SYS_writev,
};

static const long eintr_calls[] = {
    SYS_epoll_pwait,   SYS_rt_sigtimedwait, SYS_semtimedop, SYS_io_getevents,
#ifdef SYS_epoll_wait
    SYS_epoll_wait,
#endif
#ifdef SYS_epoll_pwait2
    SYS_epoll_pwait2,
#endif
#ifdef SYS_io_pgetevents
    SYS_io_pgetevents,
#endif
};

/* Signals whose default action is to ignore them. */
#define DEFAULT_IGNORED                                                                            \
    ((1ULL << (SIGCHLD - 1)) | (1ULL << (SIGCONT - 1)) | (1ULL << (SIGURG - 1)) |                  \
     (1ULL << (SIGWINCH - 1)))

static int listed(const long *calls, size_t n, long nr)
{
    for (size_t i = 0; i < n; i++)
        if (calls[i] == nr)
            return 1;
    return 0;
}

/* Whether a signal will reach the thread's program on resume (then the EINTR is real). */
static int signal_will_act(pid_t pid, const struct thread *t)
{
    struct proc_status st;
    uint64_t pending, ignored;

    if (proc_read_status(pid, t->tid, &st) != 0)
        return 1;
    pending = (st.sig_pending | st.shared_pending) & ~st.sig_blocked;
    if (t->signal)
        pending |= 1ULL << (t->signal - 1);
    ignored = st.sig_ignored | (DEFAULT_IGNORED & ~st.sig_caught);
    return (pending & ~ignored) != 0;
}

/* The process's one epoll descriptor, else -1 (none, several, or /proc unreadable). */
static long only_epoll_fd(pid_t pid)
{
    char dir[64], path[64 + 256], target[64];
    long fd = -1;
    int n = 0;
    DIR *d;
    struct dirent *e;

    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    if (!(d = opendir(dir)))
        return -1;
    while ((e = readdir(d)) && n < 2) {
        ssize_t len;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        len = readlink(path, target, sizeof(target) - 1);
        if (len > 0 && (target[len] = '\0', !strcmp(target, "anon_inode:[eventpoll]")))
            n++, fd = strtol(e->d_name, NULL, 10);
    }
    closedir(d);
    return n == 1 ? fd : -1;
}

/* aarch64: a thread that entered epoll_pwait between the /proc read and the interrupt returned
 * -EINTR with its first argument overwritten. Only the epoll descriptor can be recovered, and
 * only when the process has just one; then `args` is what /proc would have said. */
static int unseen_epoll(pid_t pid, const struct thread *t, struct proc_syscall *args)
{
    long nr = arch_eintr_unseen(t->tid, &t->regs), fd;

    if (nr != SYS_epoll_pwait
#ifdef SYS_epoll_pwait2
        && nr != SYS_epoll_pwait2
#endif
    )
        return 0;
    if ((fd = only_epoll_fd(pid)) < 0)
        return 0;
    memset(args, 0, sizeof(*args));
    args->state = PROC_SC_IN;
    args->nr = nr;
    args->args[0] = (uint64_t)fd;
    return 1;
}

void syscalls_rewind_eintr(struct threads *ts)
{
    for (size_t i = 0; i < ts->n; i++) {
        struct thread *t = &ts->t[i];
        struct arch_sys_stop s;
        struct proc_syscall guess;
        const struct proc_syscall *args = &t->before;

        /* A group stop is the program's own: its EINTR is one it sees without us too. */
        if (!t->stopped || t->gone || t->group_stop || !t->regs_valid)
            continue;
        arch_syscall_at_stop(&t->regs, &t->before, &s);
        if (s.state != ARCH_SYS_EINTR && unseen_epoll(ts->pid, t, &guess))
            s.state = ARCH_SYS_EINTR, s.nr = guess.nr, args = &guess;
        if (s.state != ARCH_SYS_EINTR ||
            !listed(eintr_calls, sizeof(eintr_calls) / sizeof(eintr_calls[0]), s.nr) ||
            signal_will_act(ts->pid, t))
            continue;
        if (arch_rewind_syscall(t->tid, &t->regs, args) == 0)
            t->regs_dirty = 1;
    }
}

/* The argument holding a temporary signal mask, -1 for calls without one. */
static int mask_arg(long nr)
{
    if (nr == SYS_ppoll)
        return 3;
    if (nr == SYS_pselect6)
        return 5;
#ifdef SYS_epoll_pwait2
    if (nr == SYS_epoll_pwait2)
        return 4;
#endif
    return nr == SYS_epoll_pwait ? 4 : -1;
}

/* While a call waits with a temporary signal mask, the kernel restores the program's mask
 * only after it; PTRACE_SETSIGMASK (used around our calls) cancels that restore, so such a
 * thread is not used. The arguments come from /proc (aarch64 has overwritten x0 by now). */
static int usable(const struct thread *t)
{
    struct arch_sys_stop s;
    int m;

    if (!t->stopped || t->gone || t->released || t->signal || !t->regs_valid)
        return 0;
    arch_syscall_at_stop(&t->regs, &t->before, &s);
    if (s.state != ARCH_SYS_IN ||
        !listed(safe_calls, sizeof(safe_calls) / sizeof(safe_calls[0]), s.nr))
        return 0;
    m = mask_arg(s.nr);
    return m < 0 ||
           (t->before.state == PROC_SC_IN && t->before.nr == s.nr && t->before.args[m] == 0);
}

struct thread *syscalls_pick_thread(struct threads *ts)
{
    struct thread *first = NULL;

    for (size_t i = 0; i < ts->n; i++) {
        struct thread *t = &ts->t[i];

        if (!usable(t))
            continue;
        if (t->tid == ts->pid)
            return t;
        if (!first)
            first = t;
    }
    return first;
}

void syscalls_describe(const struct threads *ts, const struct thread *chosen)
{
    static const char *const states[] = {"-", "in", "eintr"};

    for (size_t i = 0; i < ts->n; i++) {
        const struct thread *t = &ts->t[i];
        struct arch_sys_stop s = {ARCH_SYS_NONE, -1};

        if (t->regs_valid)
            arch_syscall_at_stop(&t->regs, &t->before, &s);
        fprintf(stderr, "tlsmeter-attach: thread %d: %s%s%s, system call %ld (%s)%s%s\n",
                (int)t->tid,
                t->gone      ? "gone"
                : t->stopped ? "stopped"
                             : "running",
                t->group_stop ? ", group stop" : "", t->signal ? ", signal" : "", s.nr,
                states[s.state], t->regs_dirty ? ", rewound" : "", t == chosen ? ", chosen" : "");
    }
}
