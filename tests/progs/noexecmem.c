/* noexecmem: run a program under an execmem-style policy (tests only): mprotect that asks
 * for PROT_EXEC without PROT_WRITE, such as PROT_READ|PROT_EXEC, fails with EPERM, as
 * SELinux's deny_execmem refuses to make anonymous memory executable (a seccomp filter
 * cannot tell anonymous memory from a library's text, so every such mprotect is refused;
 * the dynamic loader maps code with mmap and never needs it). With -a, every mprotect with
 * PROT_EXEC is refused, PROT_READ|PROT_WRITE|PROT_EXEC included.
 * Usage: noexecmem [-a] PROGRAM [ARGS...]. Exit 127 when the filter cannot be installed. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

int main(int argc, char **argv)
{
    int all = argc > 1 && strcmp(argv[1], "-a") == 0;
    if (argc < 2 + all) {
        fprintf(stderr, "usage: noexecmem [-a] PROGRAM [ARGS...]\n");
        return 2;
    }
    /* The prot argument's low 32 bits (little-endian: the first word of args[2]). A JSET
     * with mask 0 never jumps: with -a, PROT_WRITE does not let the call through. */
    unsigned int writable_ok = all ? 0 : PROT_WRITE;
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mprotect, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 2),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, writable_ok, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
        perror("noexecmem: seccomp");
        return 127;
    }
    execvp(argv[1 + all], argv + 1 + all);
    perror("noexecmem: exec");
    return 127;
}
