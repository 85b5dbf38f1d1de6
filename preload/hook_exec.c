/* hook_exec.c: exec*() replaces the process image and _exit() ends it, both without
 * running destructors: write the trace out first (buffered lines and an end line). libc's
 * own variants call execve/_exit internally, not through the PLT, so each entry point is
 * hooked. */
#include "hook.h"
#include "trace.h"

#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *libc_fn(enum tlsm_fn id)
{
    static void *cache[TLSM_FN_COUNT];
    void *p = __atomic_load_n(&cache[id], __ATOMIC_ACQUIRE);
    if (!p) {
        p = dlsym(RTLD_NEXT, tlsm_hooks[id].name);
        __atomic_store_n(&cache[id], p, __ATOMIC_RELEASE);
    }
    return p;
}

static void before_exec(enum tlsm_fn id, const char *what)
{
    tlsm_th.calls[id]++;
    if (atomic_load_explicit(&tlsm_active, memory_order_relaxed)) {
        int saved = errno;
        tlsm_trace_final(what);
        errno = saved;
    }
}

#define EXEC_HOOK(name, params, args, what)                                                        \
    TLSM_EXPORT int name params                                                                    \
    {                                                                                              \
        __typeof__(&name) real = (__typeof__(&name))libc_fn(TLSM_FN_##name);                       \
        if (!real)                                                                                 \
            return errno = ENOSYS, -1;                                                             \
        before_exec(TLSM_FN_##name, what);                                                         \
        return real args;                                                                          \
    }

EXEC_HOOK(execve, (const char *path, char *const argv[], char *const envp[]), (path, argv, envp),
          path)
EXEC_HOOK(execv, (const char *path, char *const argv[]), (path, argv), path)
EXEC_HOOK(execvp, (const char *file, char *const argv[]), (file, argv), file)
EXEC_HOOK(execvpe, (const char *file, char *const argv[], char *const envp[]), (file, argv, envp),
          file)
EXEC_HOOK(fexecve, (int fd, char *const argv[], char *const envp[]), (fd, argv, envp), "(fexecve)")

/* _exit: what Python's os._exit and multiprocessing workers use after fork. */
TLSM_EXPORT void _exit(int status)
{
    __typeof__(&_exit) real = (__typeof__(&_exit))libc_fn(TLSM_FN__exit);
    before_exec(TLSM_FN__exit, NULL);
    if (real)
        real(status);
    syscall(SYS_exit_group, status); /* no libc _exit to be found: end it ourselves */
    __builtin_unreachable();
}

TLSM_EXPORT void _Exit(int status)
{
    __typeof__(&_Exit) real = (__typeof__(&_Exit))libc_fn(TLSM_FN__Exit);
    before_exec(TLSM_FN__Exit, NULL);
    if (real)
        real(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}
