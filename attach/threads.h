/* threads.h: stopping every thread of a process under ptrace, and letting them go again exactly
 * as they were (a signal caught on the way delivered once, a stopped process left stopped). */
#ifndef TLSM_ATTACH_THREADS_H
#define TLSM_ATTACH_THREADS_H

#include <signal.h>
#include <stddef.h>
#include <time.h>

#include "arch.h"
#include "proc.h"

struct thread {
    pid_t tid;
    int stopped;    /* in a ptrace stop */
    int gone;       /* exited meanwhile: dropped */
    int released;   /* detached again */
    int group_stop; /* stopped by a stop signal: the process was stopped before us */
    int signal;     /* in a signal-delivery-stop for this signal, delivered on release */
    siginfo_t siginfo;
    struct proc_syscall before; /* /proc/.../syscall just before the interrupt */
    struct arch_regs regs;      /* at the stop, once read (regs_valid) */
    int regs_valid, regs_dirty; /* dirty: written back on release */
};

struct threads {
    pid_t pid;
    struct thread *t;
    size_t n, cap;
    struct timespec first_interrupt, last_release;
};

/* Seizes and interrupts every thread of pid and waits until each is in a ptrace stop. On
 * failure returns -1 with the errno of the failed step and a sentence in why; the threads that
 * did stop are released. */
int threads_stop(struct threads *ts, pid_t pid, char *why, size_t whycap);
/* Writes back changed registers and detaches from every stopped thread but keep (0: none),
 * each resuming where it was, with its caught signal if any. */
void threads_release(struct threads *ts, pid_t keep);
/* Reads the registers of every stopped thread (regs_valid). */
void threads_read_regs(struct threads *ts);
/* A thread created by a stopped one while it ran a call: auto-attached, released with the rest. */
void threads_note_clone(struct threads *ts, pid_t child);
struct thread *threads_find(struct threads *ts, pid_t tid);
void threads_free(struct threads *ts);
/* Milliseconds from the first PTRACE_INTERRUPT to the last thread released. */
double threads_stopped_ms(const struct threads *ts);

/* waitpid(which, __WALL) for at most timeout_ms: the pid that reported, 0 on timeout, -1 on
 * error. Short sleeps: a stop usually comes within microseconds. */
pid_t tracee_wait(pid_t which, int *status, long timeout_ms);
double ms_between(const struct timespec *a, const struct timespec *b);

#endif
