/* mtclient: N threads x M sequential HTTPS downloads over libssl, one line per connection. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "tlsget.h"

/* Usage: mtclient -p PORT -c CAFILE [-h HOST] [-t THREADS] [-n CONNS] [-o FILE] [-q] [-k]
 *        [-r BYTES] PATH...
 *
 * Connection k of thread i downloads PATH[(i * CONNS + k) % npaths]. Odd threads use
 * SSL_read_ex, even ones SSL_read; threads with bit 1 set read 5000 bytes at a time (smaller
 * than a record), the others 16384; -r BYTES: every thread reads BYTES at a time.
 * Prints per connection, in completion order:
 *   conn tid=T thread=I seq=K path=P got=N body=N sha256=HEX ok=1
 * (tid is the kernel thread id, as in the trace). -o writes the body (one connection only;
 * -o /dev/stdout works), -q leaves the per-connection lines out.
 * Exit 0 when every connection succeeded, 1 otherwise, 2 on bad usage. */

struct opts {
    const char *host, *cafile, *outfile;
    int port, threads, conns, npaths, quiet, peek; /* -k: SSL_peek before each read */
    size_t want;                                   /* -r: bytes per read, every thread */
    char **paths;
    SSL_CTX *ctx;
};

static struct opts opt = {.host = "127.0.0.1", .threads = 8, .conns = 20};
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
static int failures;

static void report(int thread, int seq, const char *path, const struct tlsget *r)
{
    pthread_mutex_lock(&print_lock);
    if (!opt.quiet)
        printf("conn tid=%ld thread=%d seq=%d path=%s got=%zu body=%zu sha256=%s ok=%d\n",
               (long)syscall(SYS_gettid), thread, seq, path, r->got, r->body, r->sha256,
               !r->err[0]);
    if (r->err[0]) {
        fprintf(stderr, "mtclient: thread %d conn %d %s: %s\n", thread, seq, path, r->err);
        failures++;
    }
    fflush(stdout);
    pthread_mutex_unlock(&print_lock);
}

static void *worker(void *arg)
{
    int i = (int)(long)arg, k;

    for (k = 0; k < opt.conns; k++) {
        const char *path = opt.paths[(i * opt.conns + k) % opt.npaths];
        struct tlsget r = {.use_ex = i & 1, .want = opt.want ? opt.want : (i & 2) ? 5000 : 16384};
        FILE *out = NULL;

        if (opt.outfile && !(out = fopen(opt.outfile, "wb")))
            snprintf(r.err, sizeof(r.err), "open %s", opt.outfile);
        r.out = out;
        r.peek = opt.peek;
        if (!r.err[0])
            tlsget(opt.ctx, opt.host, opt.port, path, &r);
        if (out)
            fclose(out);
        report(i, k, path, &r);
    }
    return NULL;
}

static int parse(int argc, char **argv)
{
    int c;

    while ((c = getopt(argc, argv, "p:c:h:t:n:o:qkr:")) != -1) {
        switch (c) {
        case 'p':
            opt.port = atoi(optarg);
            break;
        case 'c':
            opt.cafile = optarg;
            break;
        case 'h':
            opt.host = optarg;
            break;
        case 't':
            opt.threads = atoi(optarg);
            break;
        case 'n':
            opt.conns = atoi(optarg);
            break;
        case 'o':
            opt.outfile = optarg;
            break;
        case 'q':
            opt.quiet = 1;
            break;
        case 'k':
            opt.peek = 1;
            break;
        case 'r':
            opt.want = (size_t)atol(optarg);
            break;
        default:
            return -1;
        }
    }
    opt.paths = argv + optind;
    opt.npaths = argc - optind;
    if (opt.port <= 0 || !opt.cafile || opt.npaths < 1 || opt.threads < 1 || opt.conns < 1 ||
        opt.threads > 256 || (opt.outfile && opt.threads * opt.conns != 1))
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    pthread_t tids[256];
    int i;

    if (parse(argc, argv)) {
        fprintf(stderr, "usage: mtclient -p PORT -c CAFILE [-h HOST] [-t THREADS] "
                        "[-n CONNS] [-o FILE] [-q] [-k] [-r BYTES] PATH...\n");
        return 2;
    }
    opt.ctx = tlsget_ctx(opt.cafile);
    if (!opt.ctx) {
        fprintf(stderr, "mtclient: cannot load %s\n", opt.cafile);
        return 2;
    }
    for (i = 0; i < opt.threads; i++)
        pthread_create(&tids[i], NULL, worker, (void *)(long)i);
    for (i = 0; i < opt.threads; i++)
        pthread_join(tids[i], NULL);
    SSL_CTX_free(opt.ctx);
    return failures ? 1 : 0;
}
