/* run.c: what libtlsmeter.so prints when it is run as a program (as glibc's libc.so.6 does):
 * its version and how to use it, instead of a crash. */
#include "arch/arch.h"

#include <unistd.h>

/* A .interp section makes the linker write a PT_INTERP header into the shared object: the
 * kernel then starts the dynamic loader for it, which loads its libraries (libc), relocates
 * it and jumps to the entry point the link names (-Wl,-e,tlsm_run_main). Loading the library
 * with LD_PRELOAD or dlopen ignores both. */
__attribute__((section(".interp"), used)) static const char interp[] = TLSM_ARCH_LOADER;

static const char usage[] =
    "tlsmeter " TLSM_VERSION ": the LD_PRELOAD library of tlsmeter\n"
    "It measures where a program's CPU goes when OpenSSL decrypts TLS; load it into the\n"
    "program instead of running it:\n"
    "  LD_PRELOAD=/path/to/libtlsmeter.so PROGRAM [ARGS...]\n"
    "  tlsmeter record -- PROGRAM [ARGS...]     (the wrapper; tlsmeter --help)\n"
    "Settings: TLSMETER_HELP=1 lists them. Manual: README.md and docs/ of tlsmeter's source.\n";

/* The entry point. No C runtime start ran for this object (no __libc_start_main; the loader
 * ran libc's initializers), and the stack is as the kernel left it: nothing returns here, so
 * only plain system call wrappers. x86_64 enters with the stack 8 bytes off the ABI's 16. */
#if defined(__x86_64__)
__attribute__((force_align_arg_pointer))
#endif
__attribute__((noreturn, used, visibility("hidden"))) void
tlsm_run_main(void);

void tlsm_run_main(void)
{
    const char *p = usage;
    size_t left = sizeof(usage) - 1;

    while (left) {
        ssize_t n = write(STDOUT_FILENO, p, left);

        if (n <= 0)
            _exit(1); /* stdout closed or full: nothing else to say it with */
        p += n;
        left -= (size_t)n;
    }
    _exit(0);
}
