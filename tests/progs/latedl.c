/* latedl.c: a program that loads a vendor SDK (its own OpenSSL) after start, the ways an
 * application does, downloads through it and unloads it, ROUNDS times in each of THREADS
 * threads at once, and prints each download's size and SHA-256 in a fixed order at the end.
 *   latedl HOW VENDOR.so PORT CAFILE PATH ROUNDS THREADS
 * HOW: now-local, lazy-global, deepbind (RTLD_DEEPBIND | RTLD_NOW), name (a bare name, found
 * through LD_LIBRARY_PATH), ctor (loaded by the constructor of the plugin LATEDL_CTOR names:
 * tests/dlsafe/latector.c, with LATEDL_VENDOR the SDK's path). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef long (*get_fn)(int, const char *, const char *, char *);

#define MAX_THREADS 4
#define MAX_ROUNDS  16

static const char *how, *vendor, *ca, *path;
static int port, rounds;
static long got[MAX_THREADS][MAX_ROUNDS];
static char sha[MAX_THREADS][MAX_ROUNDS][65];

static void *open_sdk(void **keep)
{
    *keep = NULL;
    if (!strcmp(how, "now-local"))
        return dlopen(vendor, RTLD_NOW | RTLD_LOCAL);
    if (!strcmp(how, "lazy-global"))
        return dlopen(vendor, RTLD_LAZY | RTLD_GLOBAL);
    if (!strcmp(how, "deepbind"))
        return dlopen(vendor, RTLD_NOW | RTLD_DEEPBIND);
    if (!strcmp(how, "name")) {
        const char *b = strrchr(vendor, '/');
        return dlopen(b ? b + 1 : vendor, RTLD_NOW | RTLD_LOCAL);
    }
    if (!strcmp(how, "ctor")) {
        const char *ctor = getenv("LATEDL_CTOR");
        *keep = ctor ? dlopen(ctor, RTLD_NOW | RTLD_LOCAL) : NULL;
        void *(*v)(void) = *keep ? (void *(*)(void))dlsym(*keep, "latector_vendor") : NULL;
        return v ? v() : NULL;
    }
    return NULL;
}

static void *run(void *arg)
{
    int t = (int)(long)arg;
    for (int r = 0; r < rounds; r++) {
        void *keep, *h = open_sdk(&keep);
        get_fn get = h ? (get_fn)dlsym(h, "vendor_https_get") : NULL;
        got[t][r] = get ? get(port, path, ca, sha[t][r]) : -2;
        if (keep)
            dlclose(keep);
        else if (h)
            dlclose(h);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: latedl HOW VENDOR.so PORT CAFILE PATH ROUNDS THREADS\n");
        return 2;
    }
    how = argv[1], vendor = argv[2], port = atoi(argv[3]), ca = argv[4], path = argv[5];
    rounds = atoi(argv[6]);
    int threads = atoi(argv[7]);
    if (rounds < 1 || rounds > MAX_ROUNDS || threads < 1 || threads > MAX_THREADS) {
        fprintf(stderr, "latedl: ROUNDS 1..%d, THREADS 1..%d\n", MAX_ROUNDS, MAX_THREADS);
        return 2;
    }
    pthread_t th[MAX_THREADS];
    for (int t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, run, (void *)(long)t) != 0)
            return 3;
    int bad = 0;
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < threads; t++)
        for (int r = 0; r < rounds; r++) {
            printf("thread %d round %d bytes=%ld sha256=%s\n", t, r, got[t][r], sha[t][r]);
            bad |= got[t][r] < 0;
        }
    return bad;
}
