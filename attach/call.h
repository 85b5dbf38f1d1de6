/* call.h: one function call run in a chosen stopped thread of the target, its return value
 * read back, and the thread put back as it was (registers, vector state, signal mask). */
#ifndef TLSM_ATTACH_CALL_H
#define TLSM_ATTACH_CALL_H

#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "threads.h"

struct remote_call {
    pid_t tid;
    struct threads *ts;     /* the other threads, released when a call hangs */
    struct arch_regs saved; /* the registers at the stop, put back by rcall_end */
    struct arch_fpstate fp;
    uint64_t saved_mask;
    uint64_t stack_top;  /* data pushed so far starts here; the call's stack goes below */
    int others_released; /* a call took over CALL_ALONE_MS: the other threads run now */
    int lost;            /* a call never returned: the thread was left running it */
};

/* Saves the thread's state and blocks its signals but the synchronous faults for the calls. */
int rcall_begin(struct remote_call *c, struct threads *ts, struct thread *t, char *why,
                size_t whycap);
/* Copies data below the thread's stack pointer (past the red zone); its address, 0 on error. */
uint64_t rcall_push(struct remote_call *c, const void *data, size_t len);
/* Runs fn(args) in the thread until it returns; *ret is its return value. -1 with a sentence
 * in why when the call crashed, the thread died, or the call did not return in time. */
int rcall_run(struct remote_call *c, uint64_t fn, const uint64_t *args, int nargs, uint64_t *ret,
              char *why, size_t whycap);
/* Puts registers, vector state and signal mask back; the thread stays stopped. */
int rcall_end(struct remote_call *c);
/* A NUL-terminated string of the target, at most cap-1 bytes. */
int rcall_read_string(pid_t tid, uint64_t addr, char *buf, size_t cap);

#endif
