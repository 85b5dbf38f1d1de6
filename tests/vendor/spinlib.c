/* spinlib.c: libspin.so, a library whose constructor starts threads before the program's
 * main, as any library may. Linked as a DT_NEEDED dependency of spinmain, its constructor
 * runs before the constructor of a library in LD_PRELOAD (the loader runs a preloaded
 * library's constructor after those of the program's own dependencies), so its threads are
 * already running while the preload patches entry points. Its SPIN_THREADS threads call the
 * SSL_free of the -Bsymbolic OpenSSL copy libvendor.so (tests/vendor/build, layout
 * "symbolic") with NULL in a tight loop, several so that one is likely to be running at the
 * moment of a patch on a busy machine. They call the copy's own definition, looked up in the
 * copy's handle (dlsym on a handle searches that object first, never the preload), so each
 * call runs the copy's first instructions, the ones an entry patch rewrites. spin_count
 * tells how many calls were made; spin_stop ends the threads and joins them. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define SPIN_API __attribute__((visibility("default")))
#ifndef SPIN_THREADS
#define SPIN_THREADS 4
#endif

typedef void (*free_fn)(void *);

static free_fn ssl_free;
static atomic_long spins;
static atomic_int stop;
static pthread_t threads[SPIN_THREADS];

static void *spin(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        ssl_free(NULL);
        atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
    }
    return NULL;
}

/* The threads are started and have made their first calls before the next constructor
 * runs, so they are inside the loop while the preload's constructor patches. */
__attribute__((constructor)) static void spin_start(void)
{
    void *h = dlopen("libvendor.so", RTLD_NOW | RTLD_NOLOAD);
    ssl_free = h ? (free_fn)dlsym(h, "SSL_free") : NULL;
    if (!ssl_free) {
        fprintf(stderr, "spinlib: libvendor.so's SSL_free not found: %s\n", dlerror());
        exit(3);
    }
    for (int i = 0; i < SPIN_THREADS; i++)
        if (pthread_create(&threads[i], NULL, spin, NULL) != 0) {
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
