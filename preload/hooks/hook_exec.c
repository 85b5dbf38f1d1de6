/* hook_exec.c: exec*() replaces the process image and _exit() ends it, both without
 * running destructors: write the trace out first (buffered lines and an end line), or remove
 * a forked child's file that stayed unused. libc's own variants call execve/_exit
 * internally, not through the PLT, so each entry point is hooked, the list forms (execl,
 * execlp, execle) too. The exec hooks also hand the process tree's token to a preloaded
 * child (log_tree.c). */
#include "hooks/hook.h"
#include "trace/log.h"
#include "trace/trace.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/resource.h>
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
static int exec_env(enum tlsm_fn id, const char *path, char *const argv[], char *const envp[])
{
    __typeof__(&execve) real = (__typeof__(&execve))libc_fn(TLSM_FN_execve);
    struct tlsm_exec_env env;
    if (!real)
        return errno = ENOSYS, -1;
    before_exec(id, path);
    return real(path, argv, tlsm_log_exec_env(envp, &env));
}

TLSM_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    return exec_env(TLSM_FN_execve, path, argv, envp);
}

EXEC_HOOK(execvpe, (const char *file, char *const argv[], char *const envp[]),
          (file, argv, tlsm_log_exec_env(envp, &env)), file)
EXEC_HOOK(fexecve, (int fd, char *const argv[], char *const envp[]),
          (fd, argv, tlsm_log_exec_env(envp, &env)), "(fexecve)")

/* execv and execvp are execve and execvpe with environ (as in libc): when the child gets
 * the tree's token, those are called with the copied environment instead. */
static int exec_path(enum tlsm_fn id, const char *path, char *const argv[])
{
    __typeof__(&execv) real = (__typeof__(&execv))libc_fn(TLSM_FN_execv);
    __typeof__(&execve) full = (__typeof__(&execve))libc_fn(TLSM_FN_execve);
    struct tlsm_exec_env env;
    if (!real)
        return errno = ENOSYS, -1;
    before_exec(id, path);
    char *const *e = tlsm_log_exec_env(environ, &env);
    return e == environ || !full ? real(path, argv) : full(path, argv, e);
}

/* The PATH search (and libc's /bin/sh fallback for a script without #!) stays libc's. */
static int exec_search(enum tlsm_fn id, const char *file, char *const argv[])
{
    __typeof__(&execvp) real = (__typeof__(&execvp))libc_fn(TLSM_FN_execvp);
    __typeof__(&execvpe) full = (__typeof__(&execvpe))libc_fn(TLSM_FN_execvpe);
    struct tlsm_exec_env env;
    if (!real)
        return errno = ENOSYS, -1;
    before_exec(id, file);
    char *const *e = tlsm_log_exec_env(environ, &env);
    return e == environ || !full ? real(file, argv) : full(file, argv, e);
}

TLSM_EXPORT int execv(const char *path, char *const argv[])
{
    return exec_path(TLSM_FN_execv, path, argv);
}

TLSM_EXPORT int execvp(const char *file, char *const argv[])
{
    return exec_search(TLSM_FN_execvp, file, argv);
}

/* The list forms: execl is execv, execlp execvp, execle execve with the envp that follows
 * the list's NULL, as libc builds them. The argv goes on the stack as libc puts it (no
 * allocation: an exec may run in a vfork child or a signal handler), and its size is
 * bounded by the kernel's own ceiling: an exec whose argument and environment pointers take
 * max(128 KiB, min(6 MiB, RLIMIT_STACK / 4)) fails with E2BIG, so a longer list is refused
 * with E2BIG before the count runs past it. */
static size_t list_ceiling(void)
{
    struct rlimit rl;
    uint64_t limit = 6u << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur / 4 < limit)
        limit = rl.rlim_cur / 4;
    if (limit < 128u << 10)
        limit = 128u << 10;
    return (size_t)((limit + sizeof(char *) - 1) / sizeof(char *));
}

/* The arguments after the first, up to the NULL that ends the list; SIZE_MAX when the
 * list (the first argument included) reaches the ceiling. */
static size_t list_count(va_list ap)
{
    size_t n = 0, ceiling = list_ceiling();
    while (va_arg(ap, const char *))
        if (++n + 1 >= ceiling)
            return SIZE_MAX;
    return n;
}

/* argv[0 .. n + 1]: the first argument, the n after it and the NULL (read from the list as
 * libc does, so that execle's envp is the argument after it). */
static void list_fill(char **argv, const char *arg, size_t n, va_list ap)
{
    argv[0] = (char *)arg;
    for (size_t i = 1; i <= n + 1; i++)
        argv[i] = va_arg(ap, char *);
    argv[n + 1] = NULL;
}

static int list_too_long(enum tlsm_fn id)
{
    tlsm_th.calls[id]++;
    return errno = E2BIG, -1;
}

TLSM_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    size_t n = list_count(ap);
    va_end(ap);
    if (n == SIZE_MAX)
        return list_too_long(TLSM_FN_execl);
    char *argv[n + 2];
    va_start(ap, arg);
    list_fill(argv, arg, n, ap);
    va_end(ap);
    return exec_path(TLSM_FN_execl, path, argv);
}

TLSM_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    size_t n = list_count(ap);
    va_end(ap);
    if (n == SIZE_MAX)
        return list_too_long(TLSM_FN_execlp);
    char *argv[n + 2];
    va_start(ap, arg);
    list_fill(argv, arg, n, ap);
    va_end(ap);
    return exec_search(TLSM_FN_execlp, file, argv);
}

TLSM_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    size_t n = list_count(ap);
    va_end(ap);
    if (n == SIZE_MAX)
        return list_too_long(TLSM_FN_execle);
    char *argv[n + 2];
    va_start(ap, arg);
    list_fill(argv, arg, n, ap);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return exec_env(TLSM_FN_execle, path, argv, envp);
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
