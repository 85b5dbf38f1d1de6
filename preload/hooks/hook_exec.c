/* hook_exec.c: exec*() replaces the process image and _exit() ends it, both without
 * running destructors: write the trace out first (buffered lines and an end line). libc's
 * own variants call execve/_exit internally, not through the PLT, so each entry point is
 * hooked. The exec hooks also hand the process tree's token to a preloaded child (log_tree.c). */
#include "hooks/hook.h"
#include "trace/log.h"
#include "trace/trace.h"

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
        struct tlsm_exec_env env;                                                                  \
        if (!real)                                                                                 \
            return errno = ENOSYS, -1;                                                             \
        before_exec(TLSM_FN_##name, what);                                                         \
        return real args;                                                                          \
    }

/* envp gets the process tree's token (log_tree.c) when the new image is preloaded too. */
EXEC_HOOK(execve, (const char *path, char *const argv[], char *const envp[]),
          (path, argv, tlsm_log_exec_env(envp, &env)), path)
EXEC_HOOK(execvpe, (const char *file, char *const argv[], char *const envp[]),
          (file, argv, tlsm_log_exec_env(envp, &env)), file)
EXEC_HOOK(fexecve, (int fd, char *const argv[], char *const envp[]),
          (fd, argv, tlsm_log_exec_env(envp, &env)), "(fexecve)")

/* execv and execvp are execve and execvpe with environ (as in libc): when the child gets
 * the tree's token, those are called with the copied environment instead. */
TLSM_EXPORT int execv(const char *path, char *const argv[])
{
    __typeof__(&execv) real = (__typeof__(&execv))libc_fn(TLSM_FN_execv);
    __typeof__(&execve) full = (__typeof__(&execve))libc_fn(TLSM_FN_execve);
    struct tlsm_exec_env env;
    if (!real)
        return errno = ENOSYS, -1;
    before_exec(TLSM_FN_execv, path);
    char *const *e = tlsm_log_exec_env(environ, &env);
    return e == environ || !full ? real(path, argv) : full(path, argv, e);
}

TLSM_EXPORT int execvp(const char *file, char *const argv[])
{
    __typeof__(&execvp) real = (__typeof__(&execvp))libc_fn(TLSM_FN_execvp);
    __typeof__(&execvpe) full = (__typeof__(&execvpe))libc_fn(TLSM_FN_execvpe);
    struct tlsm_exec_env env;
    if (!real)
        return errno = ENOSYS, -1;
    before_exec(TLSM_FN_execvp, file);
    char *const *e = tlsm_log_exec_env(environ, &env);
    return e == environ || !full ? real(file, argv) : full(file, argv, e);
}

/* _exit: what Python's os._exit and multiprocessing workers use after fork. */
TLSM_EXPORT void _exit(int status)
{
    __typeof__(&_exit) real = (__typeof__(&_exit))libc_fn(TLSM_FN__exit);
    before_exec(TLSM_FN__exit, NULL);
    tlsm_log_tree_exit();
    if (real)
        real(status);
    syscall(SYS_exit_group, status); /* no libc _exit to be found: end it ourselves */
    __builtin_unreachable();
}

TLSM_EXPORT void _Exit(int status)
{
    __typeof__(&_Exit) real = (__typeof__(&_Exit))libc_fn(TLSM_FN__Exit);
    before_exec(TLSM_FN__Exit, NULL);
    tlsm_log_tree_exit();
    if (real)
        real(status);
    syscall(SYS_exit_group, status);
    __builtin_unreachable();
}
