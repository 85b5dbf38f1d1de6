/* dlopen_thunk.c (aarch64): the exported dlopen, in assembly so that it can hand the call to libc's
 * dlopen with the caller's own return address: glibc's dlopen takes its caller from that
 * address (search path, $ORIGIN, namespace), which a C wrapper would replace with ours.
 * It asks tlsm_dlopen_route (hooks/hook_dl.c) where to jump, with the arguments untouched. */
__asm__(".text\n"
        ".globl dlopen\n"
        ".type dlopen, %function\n"
        "dlopen:\n"
        "  .cfi_startproc\n"
        "  hint #34\n" /* bti c */
        "  stp x29, x30, [sp, #-32]!\n"
        "  .cfi_def_cfa_offset 32\n"
        "  .cfi_offset 29, -32\n"
        "  .cfi_offset 30, -24\n"
        "  mov x29, sp\n"
        "  stp x0, x1, [sp, #16]\n"
        "  mov x2, x30\n" /* third argument: the caller's return address */
        "  bl tlsm_dlopen_route\n"
        "  mov x16, x0\n"
        "  ldp x0, x1, [sp, #16]\n"
        "  ldp x29, x30, [sp], #32\n"
        "  .cfi_restore 29\n"
        "  .cfi_restore 30\n"
        "  .cfi_def_cfa_offset 0\n"
        "  br x16\n"
        "  .cfi_endproc\n"
        ".size dlopen, .-dlopen\n");
