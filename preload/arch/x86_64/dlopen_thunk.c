/* dlopen_thunk.c (x86_64): the exported dlopen, in assembly so that it can hand the call to libc's
 * dlopen with the caller's own return address: glibc's dlopen takes its caller from that
 * address (search path, $ORIGIN, namespace), which a C wrapper would replace with ours.
 * It asks tlsm_dlopen_route (hooks/hook_dl.c) where to jump, with the arguments untouched. */
__asm__(".text\n"
        ".globl dlopen\n"
        ".type dlopen, @function\n"
        "dlopen:\n"
        "  .cfi_startproc\n"
        "  endbr64\n"
        "  movq (%rsp), %rdx\n" /* third argument: the caller's return address */
        "  pushq %rdi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rsi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  subq $8, %rsp\n" /* 16-byte aligned at the call */
        "  .cfi_adjust_cfa_offset 8\n"
        "  call tlsm_dlopen_route@PLT\n"
        "  addq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rsi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rdi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  jmp *%rax\n"
        "  .cfi_endproc\n"
        ".size dlopen, .-dlopen\n");
