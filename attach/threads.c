/* threads.c: PTRACE_SEIZE every task in /proc/PID/task (listing again until no new one
 * appears; PTRACE_O_TRACECLONE catches those created later), PTRACE_INTERRUPT each, and wait
 * until all are in a ptrace stop. A thread that reports a signal-delivery-stop first is kept
 * in that stop: the signal is delivered when it is released, once. */
#include "threads.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#define LIST_ROUNDS  50
#define STOP_TIMEOUT 2000 /* ms for every thread to reach its stop */

double ms_between(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

static long ms_since(const struct timespec *t0)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)ms_between(t0, &now);
}

pid_t tracee_wait(pid_t which, int *status, long timeout_ms)
{
    struct timespec t0;
    long pause_ns = 0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pid_t r = waitpid(which, status, __WALL | WNOHANG);

        if (r != 0 && !(r < 0 && errno == EINTR))
            return r;
        if (ms_since(&t0) >= timeout_ms)
            return 0;
        if (pause_ns == 0) {
            pause_ns = 5000;
        } else {
            struct timespec d = {0, pause_ns};

            nanosleep(&d, NULL);
            pause_ns = pause_ns < 1000000 ? pause_ns * 2 : 1000000;
        }
    }
}

struct thread *threads_find(struct threads *ts, pid_t tid)
{
    for (size_t i = 0; i < ts->n; i++)
        if (ts->t[i].tid == tid)
            return &ts->t[i];
    return NULL;
}

static struct thread *add_thread(struct threads *ts, pid_t tid)
{
    struct thread *t;

    if (ts->n == ts->cap) {
        size_t ncap = ts->cap ? ts->cap * 2 : 16;
        struct thread *nt = realloc(ts->t, ncap * sizeof(*nt));

        if (!nt)
            return NULL;
        ts->t = nt;
        ts->cap = ncap;
    }
    t = &ts->t[ts->n++];
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    return t;
}

/* Seize and interrupt one listed thread. 1: it is ours now, 0: it is gone, -1: refused. */
static int seize_one(struct threads *ts, struct thread *t)
{
    struct proc_status st;

    proc_read_syscall(ts->pid, t->tid, &t->before);
    if (ptrace(PTRACE_SEIZE, t->tid, NULL, (void *)(long)PTRACE_O_TRACECLONE) != 0) {
        if (errno == ESRCH) {
            t->gone = 1;
            return 0;
        }
        /* A thread created by one we had seized is ours already (auto-attached). */
        if (errno != EPERM || proc_read_status(ts->pid, t->tid, &st) != 0 ||
            st.tracer_pid != getpid())
            return -1;
    }
    if (ts->first_interrupt.tv_sec == 0 && ts->first_interrupt.tv_nsec == 0)
        clock_gettime(CLOCK_MONOTONIC, &ts->first_interrupt);
    if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) != 0 && errno == ESRCH)
        t->gone = 1;
    return 1;
}

/* One listing of /proc/PID/task: seize what is new. The number of new threads, or -1. */
static int seize_new(struct threads *ts, char *why, size_t whycap)
{
    pid_t *tids;
    size_t n;
    int added = 0;

    if (proc_list_tasks(ts->pid, &tids, &n) != 0) {
        snprintf(why, whycap, "cannot list /proc/%d/task: %s", (int)ts->pid, strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        struct thread *t;

        if (threads_find(ts, tids[i]))
            continue;
        t = add_thread(ts, tids[i]);
        if (!t || seize_one(ts, t) < 0) {
            int err = t ? errno : ENOMEM;

            snprintf(why, whycap, "PTRACE_SEIZE of thread %d failed: %s", (int)tids[i],
                     strerror(err));
            if (t)
                ts->n--;
            free(tids);
            errno = err;
            return -1;
        }
        added++;
    }
    free(tids);
    return added;
}

static int is_stop_signal(int sig)
{
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* What one wait status says about a thread. */
static void note_status(struct threads *ts, pid_t tid, int status)
{
    struct thread *t = threads_find(ts, tid);
    int event = status >> 16;

    if (!t && !(t = add_thread(ts, tid))) /* auto-attached, reported before its clone event */
        return;
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
        t->gone = 1;
        t->stopped = 0;
        return;
    }
    if (!WIFSTOPPED(status))
        return;
    if (event == PTRACE_EVENT_CLONE) {
        unsigned long child = 0;

        if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &child) == 0 && !threads_find(ts, (pid_t)child))
            add_thread(ts, (pid_t)child);
        /* Let the creator finish clone(); it stops for our interrupt right after. */
        ptrace(PTRACE_CONT, tid, NULL, NULL);
        return;
    }
    t->stopped = 1;
    if (event == PTRACE_EVENT_STOP) {
        t->group_stop = is_stop_signal(WSTOPSIG(status));
    } else if (event == 0) {
        t->signal = WSTOPSIG(status);
        if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &t->siginfo) != 0)
            memset(&t->siginfo, 0, sizeof(t->siginfo));
    }
}

static struct thread *first_running(struct threads *ts)
{
    for (size_t i = 0; i < ts->n; i++)
        if (!ts->t[i].stopped && !ts->t[i].gone && !ts->t[i].released)
            return &ts->t[i];
    return NULL;
}

static int wait_all_stopped(struct threads *ts, char *why, size_t whycap)
{
    struct thread *t;
    int status;

    while ((t = first_running(ts))) {
        pid_t r = tracee_wait(-1, &status, STOP_TIMEOUT);

        if (r > 0) {
            note_status(ts, r, status);
            continue;
        }
        if (r < 0 && errno == ECHILD) { /* nothing left to wait for: all exited */
            for (size_t i = 0; i < ts->n; i++)
                if (!ts->t[i].stopped)
                    ts->t[i].gone = 1;
            continue;
        }
        snprintf(why, whycap, "thread %d did not stop within %d ms (in an uninterruptible sleep?)",
                 (int)t->tid, STOP_TIMEOUT);
        errno = ETIMEDOUT;
        return -1;
    }
    return 0;
}

int threads_stop(struct threads *ts, pid_t pid, char *why, size_t whycap)
{
    int added = 1, round;

    memset(ts, 0, sizeof(*ts));
    ts->pid = pid;
    for (round = 0; round < LIST_ROUNDS && added > 0; round++) {
        added = seize_new(ts, why, whycap);
        if (added < 0)
            break;
    }
    if (added > 0) {
        snprintf(why, whycap, "threads kept appearing after %d listings", LIST_ROUNDS);
        errno = EAGAIN;
        added = -1;
    }
    if (added == 0 && wait_all_stopped(ts, why, whycap) == 0) {
        if (!threads_find(ts, pid) || threads_find(ts, pid)->gone) {
            snprintf(why, whycap, "the process exited");
            errno = ESRCH;
        } else {
            return 0;
        }
    }
    {
        int err = errno;

        threads_release(ts, 0);
        errno = err;
    }
    return -1;
}

void threads_read_regs(struct threads *ts)
{
    for (size_t i = 0; i < ts->n; i++) {
        struct thread *t = &ts->t[i];

        if (t->stopped && !t->gone && !t->regs_valid)
            t->regs_valid = arch_get_regs(t->tid, &t->regs) == 0;
    }
}

/* A thread created meanwhile (its clone event seen) reports its first stop on its own. A
 * thread that never stops cannot be detached: the kernel detaches it when this program
 * exits, dropping its pending interrupt. */
static void wait_new_stops(struct threads *ts)
{
    int status;

    while (first_running(ts)) {
        pid_t r = tracee_wait(-1, &status, STOP_TIMEOUT);

        if (r <= 0)
            break;
        note_status(ts, r, status);
    }
}

void threads_release(struct threads *ts, pid_t keep)
{
    wait_new_stops(ts);
    for (size_t i = 0; i < ts->n; i++) {
        struct thread *t = &ts->t[i];

        if (t->gone || !t->stopped || t->released || t->tid == keep)
            continue;
        if (t->regs_dirty)
            arch_set_regs(t->tid, &t->regs);
        if (t->signal)
            ptrace(PTRACE_SETSIGINFO, t->tid, NULL, &t->siginfo);
        /* From a group-stop the kernel puts the thread back into the group stop. */
        ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(long)t->signal);
        t->released = 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts->last_release);
}

void threads_note_clone(struct threads *ts, pid_t child)
{
    if (!threads_find(ts, child))
        add_thread(ts, child);
}

void threads_free(struct threads *ts)
{
    free(ts->t);
    ts->t = NULL;
    ts->n = ts->cap = 0;
}

double threads_stopped_ms(const struct threads *ts)
{
    return ms_between(&ts->first_interrupt, &ts->last_release);
}
