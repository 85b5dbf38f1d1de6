/* call.c: a function call in a stopped thread. The frame is built below the stack pointer
 * (past a 256-byte gap: the x86_64 red zone is 128) with a return address of 0: the callee
 * returns there and faults, and the SIGSEGV stop at pc 0 is where we read its return value.
 * Only the chosen thread runs meanwhile; its signals stay blocked (pending signals are
 * delivered once, after its mask is restored). */
#include "call.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#define STACK_GAP     256
#define CALL_ALONE_MS 5000  /* then the other threads run: one may hold a lock the call needs */
#define CALL_MAX_MS   30000 /* then give up on the call */

static uint64_t sigbit(int sig)
{
    return 1ULL << (sig - 1);
}

/* Blocking a synchronous fault signal would make the kernel reset its handler to SIG_DFL when
 * it strikes: those stay unblocked (SIGKILL and SIGSTOP cannot be blocked anyway). */
static uint64_t call_mask(void)
{
    return ~(sigbit(SIGSEGV) | sigbit(SIGBUS) | sigbit(SIGILL) | sigbit(SIGFPE) | sigbit(SIGTRAP) |
             sigbit(SIGSYS));
}

int rcall_begin(struct remote_call *c, struct threads *ts, struct thread *t, char *why,
                size_t whycap)
{
    uint64_t mask = call_mask();

    memset(c, 0, sizeof(*c));
    c->tid = t->tid;
    c->ts = ts;
    c->saved = t->regs;
    if (arch_get_fpstate(c->tid, &c->fp) != 0 ||
        ptrace(PTRACE_GETSIGMASK, c->tid, (void *)sizeof(c->saved_mask), &c->saved_mask) != 0) {
        snprintf(why, whycap, "cannot read the state of thread %d: %s", (int)c->tid,
                 strerror(errno));
        return -1;
    }
    if (ptrace(PTRACE_SETSIGMASK, c->tid, (void *)sizeof(mask), &mask) != 0) {
        snprintf(why, whycap, "cannot block signals in thread %d: %s", (int)c->tid,
                 strerror(errno));
        return -1;
    }
    c->stack_top = (arch_sp(&c->saved) - STACK_GAP) & ~15ULL;
    return 0;
}

uint64_t rcall_push(struct remote_call *c, const void *data, size_t len)
{
    uint64_t at = (c->stack_top - len) & ~15ULL;

    if (proc_mem_write(c->tid, at, data, len) != 0)
        return 0;
    c->stack_top = at;
    return at;
}

int rcall_read_string(pid_t tid, uint64_t addr, char *buf, size_t cap)
{
    size_t got = 0;

    while (got + 1 < cap) {
        size_t want = cap - 1 - got < 64 ? cap - 1 - got : 64;

        if (proc_mem_read(tid, addr + got, buf + got, want) != 0)
            break;
        if (memchr(buf + got, '\0', want))
            return 0;
        got += want;
    }
    buf[got] = '\0';
    return got ? 0 : -1;
}

static int fault_signal(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP ||
           sig == SIGSYS;
}

/* A signal-delivery-stop of the thread running the call: the return to 0, or a crash. */
static int call_fault(struct remote_call *c, int sig, uint64_t *ret, char *why, size_t whycap)
{
    struct arch_regs r;
    siginfo_t si;

    if (arch_get_regs(c->tid, &r) != 0) {
        snprintf(why, whycap, "cannot read the registers after the call: %s", strerror(errno));
        return -1;
    }
    if (sig == SIGSEGV && arch_pc(&r) == 0) {
        *ret = arch_return_value(&r);
        return 0;
    }
    memset(&si, 0, sizeof(si));
    ptrace(PTRACE_GETSIGINFO, c->tid, NULL, &si);
    snprintf(why, whycap, "the call crashed: %s at pc %#llx (address %p)", strsignal(sig),
             (unsigned long long)arch_pc(&r), si.si_addr);
    return -1;
}

/* Waits for the call to come back, letting the other threads run after CALL_ALONE_MS. */
static int wait_return(struct remote_call *c, uint64_t *ret, char *why, size_t whycap)
{
    long budget = c->others_released ? CALL_MAX_MS : CALL_ALONE_MS;
    int status;

    for (;;) {
        pid_t r = tracee_wait(c->tid, &status, budget);
        int event = status >> 16, sig = WSTOPSIG(status);

        if (r == 0 && !c->others_released) {
            fprintf(stderr,
                    "tlsmeter: the call in thread %d has not returned after %d s; "
                    "letting the other threads run\n",
                    (int)c->tid, CALL_ALONE_MS / 1000);
            threads_release(c->ts, c->tid);
            c->others_released = 1;
            budget = CALL_MAX_MS;
            continue;
        }
        if (r <= 0) {
            c->lost = 1;
            snprintf(why, whycap, "the call in thread %d has not returned after %d s", (int)c->tid,
                     (CALL_ALONE_MS + CALL_MAX_MS) / 1000);
            return -1;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            snprintf(why, whycap, "thread %d ended during the call", (int)c->tid);
            return -1;
        }
        if (event == 0 && fault_signal(sig))
            return call_fault(c, sig, ret, why, whycap);
        if (event == PTRACE_EVENT_CLONE) {
            unsigned long child = 0;

            if (ptrace(PTRACE_GETEVENTMSG, c->tid, NULL, &child) == 0)
                threads_note_clone(c->ts, (pid_t)child);
        }
        /* A stop signal (it cannot be blocked) is delivered; a group stop does not hold a
         * traced thread; a clone goes on. */
        ptrace(PTRACE_CONT, c->tid, NULL, (void *)(long)(event == 0 ? sig : 0));
    }
}

int rcall_run(struct remote_call *c, uint64_t fn, const uint64_t *args, int nargs, uint64_t *ret,
              char *why, size_t whycap)
{
    static const unsigned char zeros[16];
    struct arch_regs r = c->saved;
    uint64_t sp = c->stack_top & ~15ULL;

    if (proc_mem_write(c->tid, sp - sizeof(zeros), zeros, sizeof(zeros)) != 0) {
        snprintf(why, whycap, "cannot write to the stack of thread %d: %s", (int)c->tid,
                 strerror(errno));
        return -1;
    }
    arch_setup_call(&r, fn, sp, args, nargs);
    if (arch_set_regs(c->tid, &r) != 0 || ptrace(PTRACE_CONT, c->tid, NULL, NULL) != 0) {
        snprintf(why, whycap, "cannot start the call in thread %d: %s", (int)c->tid,
                 strerror(errno));
        return -1;
    }
    return wait_return(c, ret, why, whycap);
}

int rcall_end(struct remote_call *c)
{
    int rc = 0;

    if (c->lost)
        return -1;
    rc |= arch_set_regs(c->tid, &c->saved);
    rc |= arch_set_fpstate(c->tid, &c->fp);
    rc |= ptrace(PTRACE_SETSIGMASK, c->tid, (void *)sizeof(c->saved_mask), &c->saved_mask) != 0;
    return rc ? -1 : 0;
}
