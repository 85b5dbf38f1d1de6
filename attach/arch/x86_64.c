/* x86_64.c: registers through PTRACE_GETREGS, vector state through NT_X86_XSTATE, the
 * System V calling convention. At a stop in a system call orig_rax holds its number and rax
 * its result, or -ERESTART* when the kernel will restart it on resume (rip is still after the
 * `syscall` instruction then: the kernel rewinds it on resume). */
#include "arch.h"

#include <elf.h>
#include <errno.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#define ERESTARTSYS           512
#define ERESTARTNOINTR        513
#define ERESTARTNOHAND        514
#define ERESTART_RESTARTBLOCK 516
#define EFLAGS_DF             0x400

int arch_get_regs(pid_t tid, struct arch_regs *r)
{
    return ptrace(PTRACE_GETREGS, tid, NULL, &r->r) == 0 ? 0 : -1;
}

int arch_set_regs(pid_t tid, const struct arch_regs *r)
{
    return ptrace(PTRACE_SETREGS, tid, NULL, &r->r) == 0 ? 0 : -1;
}

/* The full XSAVE area; PTRACE_GETFPREGS (SSE only) where the kernel has no NT_X86_XSTATE. */
int arch_get_fpstate(pid_t tid, struct arch_fpstate *f)
{
    struct iovec iov = {f->buf, sizeof(f->buf)};

    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) == 0) {
        f->len = iov.iov_len;
        return 0;
    }
    if (ptrace(PTRACE_GETFPREGS, tid, NULL, f->buf) != 0)
        return -1;
    f->len = 0;
    return 0;
}

int arch_set_fpstate(pid_t tid, const struct arch_fpstate *f)
{
    struct iovec iov = {(void *)f->buf, f->len};

    if (f->len)
        return ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &iov) == 0 ? 0 : -1;
    return ptrace(PTRACE_SETFPREGS, tid, NULL, (void *)f->buf) == 0 ? 0 : -1;
}

uint64_t arch_pc(const struct arch_regs *r)
{
    return r->r.rip;
}

uint64_t arch_sp(const struct arch_regs *r)
{
    return r->r.rsp;
}

uint64_t arch_return_value(const struct arch_regs *r)
{
    return r->r.rax;
}

void arch_syscall_at_stop(const struct arch_regs *r, const struct proc_syscall *before,
                          struct arch_sys_stop *out)
{
    long ret = (long)r->r.rax;

    (void)before;
    out->nr = (long)r->r.orig_rax;
    if (out->nr < 0)
        out->state = ARCH_SYS_NONE;
    else if (ret == -EINTR)
        out->state = ARCH_SYS_EINTR;
    else
        out->state = ARCH_SYS_IN;
}

/* What the kernel's own restart does: rax = the number again, rip back over `syscall`. */
int arch_rewind_syscall(pid_t tid, struct arch_regs *r, const struct proc_syscall *before)
{
    unsigned char insn[2];

    (void)before;
    if ((long)r->r.orig_rax < 0 || proc_mem_read(tid, r->r.rip - 2, insn, 2) != 0 ||
        insn[0] != 0x0f || insn[1] != 0x05)
        return -1;
    r->r.rax = r->r.orig_rax;
    r->r.rip -= 2;
    return 0;
}

long arch_eintr_unseen(pid_t tid, const struct arch_regs *r)
{
    (void)tid, (void)r;
    return -1;
}

void arch_setup_call(struct arch_regs *r, uint64_t fn, uint64_t sp, const uint64_t *args, int nargs)
{
    unsigned long long *argregs[6] = {&r->r.rdi, &r->r.rsi, &r->r.rdx,
                                      &r->r.rcx, &r->r.r8,  &r->r.r9};

    for (int i = 0; i < nargs && i < 6; i++)
        *argregs[i] = args[i];
    /* A call pushes its return address: at the entry rsp % 16 == 8, [rsp] = 0. */
    r->r.rsp = sp - 8;
    r->r.rip = fn;
    r->r.rax = 0;                           /* no vector registers used by a variadic callee */
    r->r.orig_rax = (unsigned long long)-1; /* no system call restart on resume */
    r->r.eflags &= ~(unsigned long long)EFLAGS_DF;
}
