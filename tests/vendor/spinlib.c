/* spinlib.c: libspin.so, a library whose constructor starts threads before the program's
 * main, as any library may. Linked as a DT_NEEDED dependency of spinmain, its constructor
 * runs before the constructor of a library in LD_PRELOAD (the loader runs a preloaded
 * library's constructor after those of the program's own dependencies), so its threads are
 * already running while the preload patches entry points. Its SPIN_THREADS threads call a
 * hooked SSL_* function of the -Bsymbolic OpenSSL copy libvendor.so (tests/vendor/build,
 * layout "symbolic") in a tight loop, several so that one is likely to be running at the
 * moment of a patch on a busy machine. They call the copy's own definition, looked up in the
 * copy's handle (dlsym on a handle searches that object first, never the preload), so each
 * call runs the copy's first instructions, the ones an entry patch rewrites.
 * SPIN_CALL in the environment chooses the function:
 *   free     (default) SSL_free(NULL): returns at once; its first instruction is short
 *            (3 bytes), so a patch must replace several
 *   connect  SSL_connect on an SSL of the copy's own with no BIO, one per thread: the first
 *            call fails for want of a BIO and leaves the handshake in its error state, every
 *            later one returns -1 at once; its first instruction (cmpq $0,0x30(%rdi), 5
 *            bytes) is long enough to be replaced alone
 * spin_count tells how many calls were made; spin_stop ends the threads and joins them. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPIN_API __attribute__((visibility("default")))
#ifndef SPIN_THREADS
#define SPIN_THREADS 4
#endif

typedef void (*free_fn)(void *);
typedef int (*connect_fn)(void *);
typedef const void *(*method_fn)(void);
typedef void *(*ctx_new_fn)(const void *);
typedef void *(*ssl_new_fn)(void *);
typedef void (*clear_fn)(void);

static free_fn ssl_free;
static connect_fn ssl_connect;
static clear_fn err_clear;
static void *ssls[SPIN_THREADS];
static atomic_long spins;
static atomic_int stop;
static pthread_t threads[SPIN_THREADS];

static void *spin(void *arg)
{
    void *ssl = arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        if (ssl) {
            ssl_connect(ssl);
            err_clear();
        } else {
            ssl_free(NULL);
        }
        atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
    }
    return NULL;
}

static void *need(void *h, const char *name)
{
    void *p = h ? dlsym(h, name) : NULL;
    if (!p) {
        fprintf(stderr, "spinlib: libvendor.so's %s not found: %s\n", name, dlerror());
        exit(3);
    }
    return p;
}

/* The threads are started and have made their first calls before the next constructor
 * runs, so they are inside the loop while the preload's constructor patches. */
__attribute__((constructor)) static void spin_start(void)
{
    const char *call = getenv("SPIN_CALL");
    void *h = dlopen("libvendor.so", RTLD_NOW | RTLD_NOLOAD);
    ssl_free = (free_fn)need(h, "SSL_free");
    if (call && strcmp(call, "connect") == 0) {
        ssl_connect = (connect_fn)need(h, "SSL_connect");
        err_clear = (clear_fn)need(h, "ERR_clear_error");
        void *ctx =
            ((ctx_new_fn)need(h, "SSL_CTX_new"))(((method_fn)need(h, "TLS_client_method"))());
        for (int i = 0; i < SPIN_THREADS; i++)
            if (!ctx || !(ssls[i] = ((ssl_new_fn)need(h, "SSL_new"))(ctx))) {
                fprintf(stderr, "spinlib: SSL_new failed\n");
                exit(3);
            }
    } else if (call && strcmp(call, "free") != 0) {
        fprintf(stderr, "spinlib: SPIN_CALL=%s: want free or connect\n", call);
        exit(3);
    }
    for (int i = 0; i < SPIN_THREADS; i++)
        if (pthread_create(&threads[i], NULL, spin, ssls[i]) != 0) {
            fprintf(stderr, "spinlib: pthread_create failed\n");
            exit(3);
        }
    while (atomic_load(&spins) < SPIN_THREADS)
        sched_yield();
}

SPIN_API long spin_count(void)
{
    return atomic_load(&spins);
}

SPIN_API long spin_stop(void)
{
    atomic_store(&stop, 1);
    for (int i = 0; i < SPIN_THREADS; i++)
        pthread_join(threads[i], NULL);
    return atomic_load(&spins);
}
