/* aarch64.c: registers through PTRACE_GETREGSET (NT_PRSTATUS: struct user_pt_regs) and
 * NT_ARM_SYSTEM_CALL (the number of a system call to restart), vector state through
 * NT_PRFPREG, the AAPCS64 calling convention.
 *
 * Unlike x86_64, by the time an arm64 thread reports a stop taken on its way out of a system
 * call the kernel has already prepared the restart: pc points AT the `svc #0`, x0 holds the
 * first argument again and the system call number is dropped (x8 still holds it). So the
 * state is recognised by comparing with /proc/PID/task/TID/syscall read before the stop. */
#include "arch.h"

#include <elf.h>
#include <errno.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#define INSN_SVC0 0xd4000001u

int arch_get_regs(pid_t tid, struct arch_regs *r)
{
    struct iovec iov = {&r->r, sizeof(r->r)};
    struct iovec sys = {&r->syscall_nr, sizeof(r->syscall_nr)};

    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) != 0)
        return -1;
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &sys) != 0)
        r->syscall_nr = -1;
    return 0;
}

int arch_set_regs(pid_t tid, const struct arch_regs *r)
{
    struct iovec iov = {(void *)&r->r, sizeof(r->r)};
    struct iovec sys = {(void *)&r->syscall_nr, sizeof(r->syscall_nr)};

    if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &iov) != 0)
        return -1;
    return ptrace(PTRACE_SETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &sys) == 0 ? 0 : -1;
}

int arch_get_fpstate(pid_t tid, struct arch_fpstate *f)
{
    struct iovec iov = {f->buf, sizeof(f->buf)};

    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRFPREG, &iov) != 0)
        return -1;
    f->len = iov.iov_len;
    return 0;
}

int arch_set_fpstate(pid_t tid, const struct arch_fpstate *f)
{
    struct iovec iov = {(void *)f->buf, f->len};

    return ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRFPREG, &iov) == 0 ? 0 : -1;
}

uint64_t arch_pc(const struct arch_regs *r)
{
    return r->r.pc;
}

uint64_t arch_sp(const struct arch_regs *r)
{
    return r->r.sp;
}

uint64_t arch_return_value(const struct arch_regs *r)
{
    return r->r.regs[0];
}

/* The thread is where /proc said it waited (same sp, same number in x8) and either at the
 * `svc` again (restart prepared) or right after it (returned, maybe with -EINTR). */
void arch_syscall_at_stop(const struct arch_regs *r, const struct proc_syscall *before,
                          struct arch_sys_stop *out)
{
    out->state = ARCH_SYS_NONE;
    out->nr = -1;
    if (before->state != PROC_SC_IN || r->r.sp != before->sp || (long)r->r.regs[8] != before->nr)
        return;
    out->nr = before->nr;
    if (r->r.pc == before->pc - 4)
        out->state = ARCH_SYS_IN;
    else if (r->r.pc == before->pc)
        out->state = (long)r->r.regs[0] == -EINTR ? ARCH_SYS_EINTR : ARCH_SYS_IN;
}

/* What the kernel's own restart does: x0 = the first argument again, pc back over `svc #0`. */
int arch_rewind_syscall(pid_t tid, struct arch_regs *r, const struct proc_syscall *before)
{
    uint32_t insn;

    if (before->state != PROC_SC_IN || proc_mem_read(tid, r->r.pc - 4, &insn, 4) != 0 ||
        insn != INSN_SVC0)
        return -1;
    r->r.regs[0] = before->args[0];
    r->r.pc -= 4;
    return 0;
}

long arch_eintr_unseen(pid_t tid, const struct arch_regs *r)
{
    uint32_t insn;

    if ((long)r->r.regs[0] != -EINTR || proc_mem_read(tid, r->r.pc - 4, &insn, 4) != 0 ||
        insn != INSN_SVC0)
        return -1;
    return (long)r->r.regs[8];
}

void arch_setup_call(struct arch_regs *r, uint64_t fn, uint64_t sp, const uint64_t *args, int nargs)
{
    for (int i = 0; i < nargs && i < 8; i++)
        r->r.regs[i] = args[i];
    r->r.sp = sp;
    r->r.pc = fn;
    r->r.regs[30] = 0;  /* the link register: return to 0 */
    r->syscall_nr = -1; /* no system call restart on resume */
}
