/* dlopen_thunk.c (aarch64): the exported dlopen, in assembly so that libc's dlopen still sees the
 * program's caller: glibc takes its caller from its return address (search path, $ORIGIN,
 * namespace), which a C wrapper would replace with ours. It asks tlsm_dlopen_route
 * (hooks/hook_dl.c) where to go, with the arguments untouched. Either it branches there with
 * the caller's return address in x30, or (a gadget given) with x30 pointing at
 * `ldp x29, x30, [sp], #16; ret` inside the caller's own object, above a frame whose x30 is
 * label 2 below: the real dlopen returns through the caller's code into tlsm_dlopen_after,
 * which then returns the handle to the caller. */
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
        "  mov x2, x30\n"      /* third argument: the caller's return address */
        "  add x3, sp, #32\n" /* fourth: the caller's stack pointer, naming this call */
        "  bl tlsm_dlopen_route\n" /* x0: where; x1: the gadget, or 0 */
        "  mov x16, x0\n"
        "  mov x17, x1\n"
        "  ldp x0, x1, [sp, #16]\n"
        "  ldp x29, x30, [sp], #32\n"
        "  .cfi_restore 29\n"
        "  .cfi_restore 30\n"
        "  .cfi_def_cfa_offset 0\n"
        "  cbnz x17, 1f\n"
        "  br x16\n"
        "1:\n"
        "  stp x29, x30, [sp, #-16]!\n" /* the caller's frame pointer and return address */
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset 29, -16\n"
        "  .cfi_offset 30, -8\n"
        "  adr x9, 2f\n"
        "  stp x29, x9, [sp, #-16]!\n" /* popped by the gadget: x29 kept, x30 = label 2 */
        "  mov x30, x17\n"
        "  br x16\n"
        "2:\n"
        "  str x0, [sp, #-16]!\n" /* the handle */
        "  add x1, sp, #32\n"     /* the same stack pointer as the route got */
        "  bl tlsm_dlopen_after\n"
        "  ldr x0, [sp], #16\n"
        "  ldp x29, x30, [sp], #16\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size dlopen, .-dlopen\n");
