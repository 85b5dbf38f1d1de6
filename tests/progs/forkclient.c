/* forkclient: HTTPS in the parent, fork() without exec, HTTPS in the child and the parent. */
#include <stdlib.h>
#include <sys/wait.h>

#include "tlsget.h"

/* Usage: forkclient PORT CAFILE PATH
 *
 * The parent downloads PATH, forks (the child inherits the SSL_CTX and whatever the preload
 * buffered), the child downloads PATH and exits through exit() so destructors run; the parent
 * waits and downloads PATH once more. One line per download:
 *   ROLE pid=P ppid=Q got=N body=N sha256=HEX
 * ROLE is parent, child, parent2. Exit 0 when all three succeeded. */

static int download(SSL_CTX *ctx, int port, const char *path, const char *role)
{
    struct tlsget r = {.want = 16384};

    tlsget(ctx, "127.0.0.1", port, path, &r);
    printf("%s pid=%d ppid=%d got=%zu body=%zu sha256=%s\n", role, (int)getpid(), (int)getppid(),
           r.got, r.body, r.sha256);
    fflush(stdout);
    if (r.err[0])
        fprintf(stderr, "forkclient: %s: %s\n", role, r.err);
    return r.err[0] ? 1 : 0;
}

int main(int argc, char **argv)
{
    SSL_CTX *ctx;
    int port, failed, status = 0;
    pid_t pid;

    if (argc != 4) {
        fprintf(stderr, "usage: forkclient PORT CAFILE PATH\n");
        return 2;
    }
    port = atoi(argv[1]);
    ctx = tlsget_ctx(argv[2]);
    if (!ctx)
        return 2;
    failed = download(ctx, port, argv[3], "parent");
    pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0)
        exit(download(ctx, port, argv[3], "child"));
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
        failed = 1;
    failed |= download(ctx, port, argv[3], "parent2");
    SSL_CTX_free(ctx);
    return failed;
}
