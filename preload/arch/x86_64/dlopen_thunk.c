/* dlopen_thunk.c (x86_64): the exported dlopen, in assembly so that libc's dlopen still sees the
 * program's caller: glibc takes its caller from its return address (search path, $ORIGIN,
 * namespace), which a C wrapper would replace with ours. It asks tlsm_dlopen_route
 * (hooks/hook_dl.c) where to go, with the arguments untouched. Either it jumps there with the
 * caller's return address in place, or (a gadget given) it jumps there with the gadget as the
 * return address: a `ret` inside the caller's own object, above a slot holding label 2 below,
 * so that the real dlopen returns through the caller's code into tlsm_dlopen_after, which
 * then returns the handle to the caller. */
__asm__(".text\n"
        ".globl dlopen\n"
        ".type dlopen, @function\n"
        "dlopen:\n"
        "  .cfi_startproc\n"
        "  endbr64\n"
        "  movq (%rsp), %rdx\n" /* third argument: the caller's return address */
        "  leaq 8(%rsp), %rcx\n" /* fourth: the caller's stack pointer, naming this call */
        "  pushq %rdi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rsi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  subq $8, %rsp\n" /* 16-byte aligned at the call */
        "  .cfi_adjust_cfa_offset 8\n"
        "  call tlsm_dlopen_route@PLT\n" /* rax: where; rdx: the gadget, or 0 */
        "  addq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rsi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rdi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  testq %rdx, %rdx\n"
        "  jnz 1f\n"
        "  jmp *%rax\n"
        "1:\n"
        "  .cfi_remember_state\n"
        "  leaq 2f(%rip), %rcx\n"
        "  pushq %rcx\n" /* where the gadget's ret goes */
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rdx\n" /* the real dlopen's return address: inside the caller's object */
        "  .cfi_adjust_cfa_offset 8\n"
        "  jmp *%rax\n"
        "2:\n"
        "  .cfi_restore_state\n" /* as at entry: the caller's return address on top */
        "  pushq %rax\n" /* the handle; 16-byte aligned at the call */
        "  .cfi_adjust_cfa_offset 8\n"
        "  movq %rax, %rdi\n"
        "  leaq 16(%rsp), %rsi\n" /* the same stack pointer as the route got */
        "  call tlsm_dlopen_after@PLT\n"
        "  popq %rax\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size dlopen, .-dlopen\n");
