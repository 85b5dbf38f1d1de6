/* entry.c (unit): the entry-patching trampolines (preload/forward/entry.c,
 * preload/arch/ARCH/entry.c) on hand-written prologues: each function is patched to a hook
 * that counts the call and calls the original through its trampoline; results must not change.
 * Prologues the relocator must refuse are left untouched. Prints PASS/FAIL lines. */
#include "forward/entry.h"

#include <stdio.h>
#include <string.h>

typedef int (*fn_t)(int);
int f_plain(int), f_branch(int), f_rip(int), f_lead(int), f_call(int), f_refuse(int);

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl f_plain, f_branch, f_rip, f_lead, f_call, f_refuse\n"
        ".p2align 4\nf_plain:\n push %rbp\n mov %rsp, %rbp\n lea 7(%rdi), %eax\n pop %rbp\n ret\n"
        /* test + je rel8 inside the first 5 bytes (node's SSL_free starts so) */
        ".p2align 4\nf_branch:\n test %edi, %edi\n je 1f\n lea 1(%rdi), %eax\n ret\n"
        "1:\n mov $-1, %eax\n ret\n"
        ".p2align 4\nf_rip:\n lea f_val(%rip), %rax\n mov (%rax), %eax\n add %edi, %eax\n ret\n"
        ".p2align 4\nf_lead:\n endbr64\n push %rbx\n mov %edi, %ebx\n lea 3(%rbx), %eax\n"
        " pop %rbx\n ret\n"
        ".p2align 4\nf_call:\n call f_helper\n add %edi, %eax\n ret\n"
        ".p2align 4\nf_helper:\n mov $40, %eax\n ret\n"
        ".p2align 4\nf_refuse:\n jmp 1f\n1:\n lea 5(%rdi), %eax\n ret\n"
        ".data\nf_val: .long 100\n.text\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl f_plain, f_branch, f_rip, f_lead, f_call, f_refuse\n"
        ".p2align 4\nf_plain:\n stp x29, x30, [sp, #-16]!\n mov x29, sp\n add w0, w0, #7\n"
        " ldp x29, x30, [sp], #16\n ret\n"
        ".p2align 4\nf_branch:\n mov w1, w0\n cbz w1, 1f\n add w0, w1, #1\n ret\n"
        "1:\n mov w0, #-1\n ret\n"
        ".p2align 4\nf_rip:\n sub sp, sp, #16\n add sp, sp, #16\n add w0, w0, #100\n ret\n"
        ".p2align 4\nf_lead:\n hint #34\n add w0, w0, #3\n ret\n" /* bti c */
        ".p2align 4\nf_call:\n mov x9, x30\n bl f_helper\n mov x30, x9\n add w0, w0, #40\n ret\n"
        ".p2align 4\nf_helper:\n ret\n"
        ".p2align 4\nf_refuse:\n adr x1, 1f\n1:\n add w0, w0, #5\n ret\n");
#endif

static int calls;
static fn_t orig_of[8];
static int which;

#define HOOK(i)                                                                                    \
    static int hook_##i(int x)                                                                     \
    {                                                                                              \
        calls++;                                                                                   \
        return orig_of[i](x);                                                                      \
    }
HOOK(0)
HOOK(1)
HOOK(2)
HOOK(3)
HOOK(4)
HOOK(5)
static fn_t hooks[] = {hook_0, hook_1, hook_2, hook_3, hook_4, hook_5};

static int failed;

static void check(const char *name, fn_t f, int refuse, const int *in, const int *want, int n)
{
    char why[160] = "";
    volatile fn_t call = f; /* no inlining, no constant folding */
    int i = which++;
    bool ok = tlsm_entry_patch((void *)f, (void *)hooks[i], why, sizeof(why));
    if (refuse) {
        int good = !ok && call(in[0]) == want[0];
        printf("%s unit entry %s: refused (%s), function intact\n", good ? "PASS" : "FAIL", name,
               why);
        failed |= !good;
        return;
    }
    if (!ok) {
        printf("FAIL unit entry %s: not patched: %s\n", name, why);
        failed = 1;
        return;
    }
    orig_of[i] = (fn_t)tlsm_entry_original((void *)f);
    for (int k = 0; k < n; k++) {
        int before = calls, got = call(in[k]);
        if (got != want[k] || calls != before + 1) {
            printf("FAIL unit entry %s: f(%d) = %d (want %d), hook calls %d\n", name, in[k], got,
                   want[k], calls - before);
            failed = 1;
            return;
        }
    }
    printf("PASS unit entry %s: patched, %d calls through the hook and the trampoline\n", name, n);
}

int main(void)
{
    const int in[] = {0, 5, -3}, plain[] = {7, 12, 4}, branch[] = {-1, 6, -2},
              rip[] = {100, 105, 97}, lead[] = {3, 8, 0}, call[] = {40, 45, 37}, refuse[] = {5};
    check("push/mov prologue", f_plain, 0, in, plain, 3);
    check("branch near the entry", f_branch, 0, in, branch, 3);
    check("PC-relative operand (aarch64: stack adjust)", f_rip, 0, in, rip, 3);
    check("leading endbr64/BTI", f_lead, 0, in, lead, 3);
    check("call in the moved bytes", f_call, 0, in, call, 3);
    check("unrelocatable first instruction", f_refuse, 1, in, refuse, 1);
    return failed;
}
