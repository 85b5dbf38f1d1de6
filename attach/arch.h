/* arch.h: the CPU-specific part of the injector: a stopped thread's registers, the system call
 * it stopped in, and the calling convention of a function call made in it. One file per CPU:
 * attach/arch/x86_64.c, attach/arch/aarch64.c. */
#ifndef TLSM_ATTACH_ARCH_H
#define TLSM_ATTACH_ARCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc.h"

#if defined(__x86_64__)
#include <sys/user.h>
struct arch_regs {
    struct user_regs_struct r;
};
/* The XSAVE area (NT_X86_XSTATE): a few KiB with AVX-512, more with AMX. */
#define ARCH_FPSTATE_MAX 16384
#elif defined(__aarch64__)
#include <asm/ptrace.h>
struct arch_regs {
    struct user_pt_regs r;
    int syscall_nr; /* NT_ARM_SYSTEM_CALL: -1 when no system call is to be restarted */
};
/* struct user_fpsimd_state (NT_PRFPREG) is 528 bytes. */
#define ARCH_FPSTATE_MAX 1024
#else
#error "tlsmeter-attach supports x86_64 and aarch64"
#endif

/* Floating-point and vector registers, saved around a call made in the thread: code that
 * issues a system call inline may keep values in them that the system call preserves. */
struct arch_fpstate {
    size_t len;
    unsigned char buf[ARCH_FPSTATE_MAX];
};

int arch_get_regs(pid_t tid, struct arch_regs *r);
int arch_set_regs(pid_t tid, const struct arch_regs *r);
int arch_get_fpstate(pid_t tid, struct arch_fpstate *f);
int arch_set_fpstate(pid_t tid, const struct arch_fpstate *f);

uint64_t arch_pc(const struct arch_regs *r);
uint64_t arch_sp(const struct arch_regs *r);
uint64_t arch_return_value(const struct arch_regs *r);

/* Where a thread in a ptrace stop is with respect to a system call. */
enum arch_sys_state {
    ARCH_SYS_NONE,  /* not stopped in or right after a system call we can name */
    ARCH_SYS_IN,    /* in it (the kernel restarts it on resume) or right after its return */
    ARCH_SYS_EINTR, /* it returned -EINTR because of the stop */
};
struct arch_sys_stop {
    enum arch_sys_state state;
    long nr;
};
/* before: /proc/PID/task/TID/syscall read just before the thread was interrupted (aarch64
 * needs it: its kernel has already rewound the pc and dropped the number at the stop). */
void arch_syscall_at_stop(const struct arch_regs *r, const struct proc_syscall *before,
                          struct arch_sys_stop *out);
/* Makes an ARCH_SYS_EINTR thread run its system call again on resume, after checking that the
 * instruction before the pc is the system call instruction. 0 when rewound. */
int arch_rewind_syscall(pid_t tid, struct arch_regs *r, const struct proc_syscall *before);
/* A stop right after a system call returned -EINTR that /proc had not shown before the
 * interrupt (the thread entered it in between): its number, else -1. Only aarch64 needs it;
 * x86_64 always knows the call (orig_rax) and answers -1. */
long arch_eintr_unseen(pid_t tid, const struct arch_regs *r);

/* Sets up a call of fn(args[0..nargs-1]) (at most 6 integer arguments) on the stack at sp,
 * 16-byte aligned, whose 16 bytes below hold zeros: the call returns to address 0, where it
 * faults. No system call is restarted when the thread resumes into the call. */
void arch_setup_call(struct arch_regs *r, uint64_t fn, uint64_t sp, const uint64_t *args,
                     int nargs);

#endif
