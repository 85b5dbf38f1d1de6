/* forkexecl: fork, then the child replaces itself with execl, execlp or execle (pg_ctl
 * starting postgres, a daemon starting a helper), optionally after an HTTPS download of its
 * own. */
#include <stdlib.h>
#include <sys/wait.h>

#include "tlsget.h"

/* Usage: forkexecl [--tls PORT CAFILE PATH] l|lp|le PROG ARG1 ARG2
 *
 * The child (with --tls: after downloading PATH and printing
 * "tlschild pid=P ppid=Q got=N sha256=HEX") calls
 *   l:  execl(PROG, PROG, ARG1, ARG2, NULL)
 *   lp: execlp(PROG, PROG, ARG1, ARG2, NULL)          (PROG searched in PATH)
 *   le: execle(PROG, PROG, ARG1, ARG2, NULL, envp)     (envp: TLSM_LE=one, TLSM_LE2=two)
 * and, if that returns, prints "exec failed: errno=E" and exits 127. The parent waits and
 * prints "waited pid=P exit=N", and exits with the child's status. */
int main(int argc, char **argv)
{
    char *envp[] = {"TLSM_LE=one", "TLSM_LE2=two", NULL};
    const char *port = NULL, *cafile = NULL, *path = NULL;
    int status = 0, a = 1;
    pid_t pid;

    if (argc > 1 && !strcmp(argv[1], "--tls")) {
        if (argc < 5)
            goto usage;
        port = argv[2], cafile = argv[3], path = argv[4], a = 5;
    }
    if (argc != a + 4)
        goto usage;
    const char *mode = argv[a], *prog = argv[a + 1], *a1 = argv[a + 2], *a2 = argv[a + 3];
    fflush(stdout);
    pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        if (port) {
            struct tlsget r = {.want = 16384};
            SSL_CTX *ctx = tlsget_ctx(cafile);
            if (!ctx)
                _exit(126);
            tlsget(ctx, "127.0.0.1", atoi(port), path, &r);
            printf("tlschild pid=%d ppid=%d got=%zu sha256=%s\n", (int)getpid(), (int)getppid(),
                   r.got, r.sha256);
            fflush(stdout);
            if (r.err[0]) {
                fprintf(stderr, "forkexecl: %s\n", r.err);
                _exit(126);
            }
        }
        if (!strcmp(mode, "l"))
            execl(prog, prog, a1, a2, (char *)NULL);
        else if (!strcmp(mode, "lp"))
            execlp(prog, prog, a1, a2, (char *)NULL);
        else if (!strcmp(mode, "le"))
            execle(prog, prog, a1, a2, (char *)NULL, envp);
        else
            errno = EINVAL;
        printf("exec failed: errno=%d\n", errno);
        fflush(stdout);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) != pid)
        return 1;
    printf("waited pid=%d exit=%d\n", (int)pid, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
usage:
    fprintf(stderr, "usage: forkexecl [--tls PORT CAFILE PATH] l|lp|le PROG ARG1 ARG2\n");
    return 2;
}
