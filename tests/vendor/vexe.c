/* vexe.c: OpenSSL linked into a dynamic executable, no symbol of it exported (built with
 * vendor.c and Debian's libssl.a + libcrypto.a by the safe-* cases), so tlsmeter can reach
 * its socket reads only through the executable's PLT, where the program's file reads pass
 * too. Before the download it reads a file through read(2) in small chunks and closes it as
 * told, so the download's socket gets the file's descriptor number; -S afterwards reads a
 * socketpair and then the file again on that pair's reused descriptor.
 *   vexe -p PORT -c CAFILE -f PATH [-r FILE] [-b CHUNK] [-k close|raw|range|none] [-S]
 * Prints what it read and the body's SHA-256 (vendor_https_get). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

long vendor_https_get(int port, const char *path, const char *cafile, char *sha);

/* FILE through read(2) in chunk-byte calls: the bytes read, -1 on an error. */
static long read_all(int fd, size_t chunk)
{
    char buf[65536];
    long total = 0;
    ssize_t n;
    if (chunk > sizeof(buf))
        chunk = sizeof(buf);
    while ((n = read(fd, buf, chunk)) > 0)
        total += n;
    return n < 0 ? -1 : total;
}

static void close_as(int fd, const char *how)
{
    if (!strcmp(how, "raw"))
        syscall(SYS_close, fd); /* past libc: nothing in the process sees it */
    else if (!strcmp(how, "range"))
        syscall(SYS_close_range, (unsigned)fd, ~0u, 0u);
    else if (strcmp(how, "none"))
        close(fd);
}

int main(int argc, char **argv)
{
    int port = 0, pair = 0, c;
    const char *ca = NULL, *path = NULL, *file = NULL, *how = "close";
    size_t chunk = 512;
    while ((c = getopt(argc, argv, "p:c:f:r:b:k:S")) != -1) {
        switch (c) {
        case 'p': port = atoi(optarg); break;
        case 'c': ca = optarg; break;
        case 'f': path = optarg; break;
        case 'r': file = optarg; break;
        case 'b': chunk = (size_t)atol(optarg); break;
        case 'k': how = optarg; break;
        case 'S': pair = 1; break;
        default: return 2;
        }
    }
    if (!port || !ca || !path || !chunk) {
        fprintf(stderr, "usage: vexe -p PORT -c CAFILE -f PATH [-r FILE] [-b CHUNK] [-k HOW] [-S]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (file) {
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        long n = fd < 0 ? -1 : read_all(fd, chunk);
        printf("file fd=%d bytes=%ld\n", fd, n);
        if (fd >= 0)
            close_as(fd, how);
    }
    char sha[65] = "";
    long n = vendor_https_get(port, path, ca, sha);
    printf("vendor bytes=%ld sha256=%s\n", n, sha);
    int rc = n < 0;
    if (pair && file) {
        /* A socket read, the socket closed past libc, the file opened on its number. */
        int sv[2];
        char msg[100] = "socketpair";
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
            write(sv[1], msg, sizeof(msg)) != (ssize_t)sizeof(msg))
            return 1;
        long got = read(sv[0], msg, sizeof(msg));
        syscall(SYS_close, sv[0]);
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        long again = fd < 0 ? -1 : read_all(fd, chunk);
        printf("pair got=%ld then file fd=%d (pair fd %d) bytes=%ld\n", got, fd, sv[0], again);
        close(sv[1]);
        if (fd >= 0)
            close(fd);
    }
    return rc;
}
