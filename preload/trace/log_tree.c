/* log_tree.c: each distinct warning reaches stderr once per process tree, not once per
 * process: a script that runs five traced curls which all fail the same way prints one
 * line. The tree is the first preloaded process (its root) and the children it forks or
 * execs: the exec hooks hand the root's token to a child that will be preloaded too, in
 * TLSMETER_TREE, which the child's constructor removes from its environment before the
 * program runs (only /proc/PID/environ still shows it, and a program that exec's a static
 * or setuid binary with our LD_PRELOAD passes it on). A warning already printed in the tree
 * is a marker file, created O_EXCL, in a 0700 directory of the tree's own in /dev/shm; the
 * root removes the directory at exit. Every warning still goes into each process's trace;
 * when anything here fails, the warning is printed (never lost). */
#include "trace/log.h"

#include <dirent.h>
#include <sys/syscall.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TREE_VAR "TLSMETER_TREE="

extern char **environ;

static char token[48]; /* "ROOTPID.NS": unique per tree */
static char dir[128];  /* the tree's marker directory */
static bool may_write; /* not in secure-execution mode */
static pid_t root_pid; /* the tree's root: it removes the markers at exit */

static bool token_ok(const char *t)
{
    size_t n = strspn(t, "0123456789.");
    return n && n < sizeof(token) && !t[n] && strchr(t, '.');
}

/* TLSMETER_TREE's value, taken out of environ in place (as unsetenv does): not through
 * getenv/unsetenv, which a program such as bash defines itself (on its own variable table,
 * not yet built while constructors run). */
static const char *take_tree_var(void)
{
    const char *v = NULL;
    char **w = environ;
    for (char **e = environ; e && *e; e++) {
        if (!strncmp(*e, TREE_VAR, sizeof(TREE_VAR) - 1))
            v = *e + sizeof(TREE_VAR) - 1;
        else
            *w++ = *e;
    }
    if (w)
        *w = NULL;
    return v;
}

void tlsm_log_tree_init(bool writable)
{
    const char *t = take_tree_var(); /* the program sees the environment it was given */
    may_write = writable;
    if (t && token_ok(t)) {
        snprintf(token, sizeof(token), "%s", t);
        root_pid = (pid_t)strtol(t, NULL, 10);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        root_pid = getpid();
        snprintf(token, sizeof(token), "%d.%lld", (int)root_pid,
                 (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    }
    const char *base = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof(dir), "%s/tlsmeter-warned.%u.%s", base, (unsigned)geteuid(), token);
}

/* FNV-1a of the message with every run of digits as one '#': "cannot create trace
 * /x/t.123.jsonl" is the same failure in every process of the tree. */
static uint64_t msg_hash(const char *m)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *m; m++) {
        unsigned char c = (unsigned char)*m;
        if (c >= '0' && c <= '9') {
            while (m[1] >= '0' && m[1] <= '9')
                m++;
            c = '#';
        }
        h = (h ^ c) * 1099511628211ULL;
    }
    return h;
}

/* The tree's directory, ours and private: someone else's (planted) means print. */
static bool dir_ready(void)
{
    struct stat st;
    if (mkdir(dir, 0700) && errno != EEXIST)
        return false;
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
           !(st.st_mode & 077);
}

bool tlsm_log_tree_first(const char *msg)
{
    char f[192];
    if (!may_write || !token[0] || !dir_ready())
        return true;
    snprintf(f, sizeof(f), "%s/%016llx", dir, (unsigned long long)msg_hash(msg));
    int fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        close(fd);
        return true;
    }
    return errno != EEXIST;
}

/* The root's exit (exit or _exit; after a kill the directory stays, in tmpfs): the markers
 * go. getdents64 into a stack buffer: _exit may be called where malloc may not. */
void tlsm_log_tree_exit(void)
{
    char buf[4096];
    if (!may_write || getpid() != root_pid || !dir[0])
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return;
    for (int round = 0; round < 64 && fstat(fd, &st) == 0 && st.st_uid == geteuid(); round++) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct dirent64 *e = (struct dirent64 *)(buf + off);
            if (e->d_name[0] != '.')
                unlinkat(fd, e->d_name, 0);
            off += e->d_reclen;
        }
    }
    close(fd);
    rmdir(dir);
    dir[0] = 0;
}

__attribute__((destructor)) static void tree_exit(void)
{
    tlsm_log_tree_exit();
}

/* The environment for an exec: envp with TLSMETER_TREE set, when the new image is preloaded
 * with tlsmeter (its LD_PRELOAD names it); else envp unchanged. Stack memory only, no
 * allocation: exec may be called in a vfork child or from a signal handler. */
char *const *tlsm_log_exec_env(char *const envp[], struct tlsm_exec_env *b)
{
    size_t n = 0, k = 0;
    bool preloaded = false;
    if (!envp || !token[0])
        return envp;
    for (; envp[n]; n++) {
        if (n + 2 >= TLSM_EXEC_ENV_MAX)
            return envp; /* too many to copy on the stack: the child starts a tree */
        if (!strncmp(envp[n], "LD_PRELOAD=", 11) && strstr(envp[n], "tlsmeter"))
            preloaded = true;
    }
    if (!preloaded)
        return envp;
    snprintf(b->tree, sizeof(b->tree), TREE_VAR "%s", token);
    for (size_t i = 0; i < n; i++)
        if (strncmp(envp[i], TREE_VAR, sizeof(TREE_VAR) - 1))
            b->v[k++] = envp[i];
    b->v[k++] = b->tree;
    b->v[k] = NULL;
    return b->v;
}
