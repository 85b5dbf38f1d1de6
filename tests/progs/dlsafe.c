/* dlsafe: small programs that load and unload plugins (tests/dlsafe/, copied into DIR by the
 * cases under the names below) in the ways that once hung or crashed traced programs: an
 * RTLD_DEEPBIND dlopen inside a library constructor racing another thread's, a nested unload
 * ld.so defers, calls from machine code in an anonymous page, hundreds of plugin reloads, and
 * all of it mixed with HTTPS downloads (tests/cases/safe-dl-*.sh). Untraced, each finishes
 * in well under a second (stress: after SECS) and prints the same lines every run.
 *
 * Usage:
 *   dlsafe deadlock DIR LOOPS      thread A: LOOPS x dlopen(DIR/p1.so, RTLD_DEEPBIND), one
 *                                  call of SSL_free(NULL) and EVP_CIPHER_CTX_free(NULL) from
 *                                  it, dlclose; thread B: the same with a plain dlopen of
 *                                  DIR/n2.so, whose constructor dlopens DIR/n2-in.so
 *                                  RTLD_DEEPBIND (the calls come from n2-in.so)
 *   dlsafe deferred DIR ROUNDS N   per round: plain dlopen(DIR/outer.so) (its constructor
 *                                  loads DIR/outer-in.so RTLD_DEEPBIND, its destructor unloads
 *                                  it: deferred), N calls of SSL_free(NULL) and
 *                                  EVP_CIPHER_CTX_free(NULL) from outer-in.so, dlclose; then
 *                                  DIR/unrelate.so and DIR/unrelat2.so loaded and unloaded
 *   dlsafe jit DIR CALLS RELOADS   SSL_free(NULL) called from machine code in an anonymous
 *                                  page, at least CALLS times and until another thread has
 *                                  loaded and unloaded DIR/unrelate.so RELOADS times
 *   dlsafe reload DIR LOADS CALLS RELOADS
 *                                  LOADS x plain dlopen(DIR/r.so), one call of each from it,
 *                                  dlclose; then r.so loaded once more and called from at
 *                                  least CALLS times and until another thread has loaded and
 *                                  unloaded DIR/unrelate.so RELOADS times
 *   dlsafe stress DIR SECS PORT CAFILE PATH
 *                                  for SECS seconds: two threads download https://127.0.0.1:
 *                                  PORT/PATH through DIR/tls1.so and DIR/tls2.so (each loaded
 *                                  RTLD_DEEPBIND, two downloads, dlclose), four threads load
 *                                  and unload leaf and nest plugins (DEEPBIND and plain,
 *                                  nested in constructors and destructors)
 * jit, reload and stress write their exact counts (calls; bytes received, downloads, loads)
 * to the file $DLSAFE_STATS: they vary from run to run, so stdout leaves them out.
 * Exit 0 when every step worked, 1 otherwise (the reason on stderr), 2 on bad usage. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

static const char *dir;
static _Atomic int failures;

static void failed(const char *what, const char *why)
{
    fprintf(stderr, "dlsafe: %s: %s\n", what, why ? why : "failed");
    atomic_fetch_add(&failures, 1);
}

/* dlopen DIR/NAME; on failure one line on stderr and NULL. */
static void *load(const char *name, int mode)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    void *h = dlopen(path, mode);
    if (!h)
        failed(name, dlerror());
    return h;
}

static int (*sym(void *h, const char *name))(int)
{
    int (*f)(int) = (int (*)(int))dlsym(h, name);
    if (!f)
        failed(name, dlerror());
    return f;
}

static void unload(void *h, const char *name)
{
    if (h && dlclose(h) != 0)
        failed(name, dlerror());
}

/* The exact counts of a run whose loops end on time or on another thread (they vary from
 * run to run, so they stay off stdout), for the trace's checks: to the file $DLSAFE_STATS. */
__attribute__((format(printf, 1, 2))) static void stats(const char *fmt, ...)
{
    const char *path = getenv("DLSAFE_STATS");
    FILE *f = path && *path ? fopen(path, "w") : NULL;
    va_list ap;
    if (!f)
        return;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

/* ---- deadlock ---- */

static int loops;

/* FN(1) of the plugin H (one call of each hooked function from its leaf), then dlclose. */
static void call_once(void *h, const char *name, const char *fn)
{
    int (*f)(int) = h ? sym(h, fn) : NULL;
    if (f && f(1) != 1)
        failed(name, "its inner plugin did not load");
    unload(h, name);
}

static void *deepbind_loop(void *arg)
{
    for (int i = 0; i < loops; i++)
        call_once(load("p1.so", RTLD_NOW | RTLD_DEEPBIND), "p1.so", "leaf_calls");
    return arg;
}

static void *nested_loop(void *arg)
{
    for (int i = 0; i < loops; i++)
        call_once(load("n2.so", RTLD_NOW), "n2.so", "nest_calls");
    return arg;
}

static int deadlock(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, deepbind_loop, NULL);
    pthread_create(&b, NULL, nested_loop, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("deadlock a=%d b=%d\n", loops, loops);
    return 0;
}

/* ---- deferred ---- */

/* Is DIR/NAME loaded right now? */
static int loaded(const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

static int deferred(int rounds, int n)
{
    int calls = 0, nested = 0, gone = 0, reused = 0;
    for (int r = 0; r < rounds; r++) {
        setenv("DLSAFE_DEFERRED", "0", 1);
        void *h = load("outer.so", RTLD_NOW);
        int (*f)(int) = h ? sym(h, "nest_calls") : NULL;
        void *(*inner)(void) = h ? (void *(*)(void))dlsym(h, "nest_inner") : NULL;
        void *in = inner ? inner() : NULL;
        if (f && f(n) == n)
            calls += n;
        unload(h, "outer.so");
        nested += !strcmp(getenv("DLSAFE_DEFERRED"), "1");
        gone += !loaded("outer-in.so");
        /* Two unrelated plugins with paths as long as the inner one's: ld.so allocates their
         * link_maps (the handles) where the two freed ones were, so one of these handles is
         * usually the unloaded inner plugin's. */
        void *u[2] = {load("unrelate.so", RTLD_NOW), load("unrelat2.so", RTLD_NOW)};
        for (int k = 0; k < 2; k++) {
            int (*t)(int) = u[k] ? sym(u[k], "other_touch") : NULL;
            reused += u[k] && u[k] == in;
            if (t)
                t(r);
        }
        if (getenv("DLSAFE_VERBOSE"))
            fprintf(stderr, "outer %p inner %p unrelated %p %p\n", h, in, u[0], u[1]);
        unload(u[1], "unrelat2.so");
        unload(u[0], "unrelate.so");
    }
    if (getenv("DLSAFE_VERBOSE"))
        fprintf(stderr, "dlsafe: unrelate.so took the inner plugin's handle in %d of %d rounds\n",
                reused, rounds);
    printf("deferred rounds=%d calls=%d nested-unload-deferred=%d unloaded-after=%d\n", rounds,
           calls, nested, gone);
    return 0;
}

/* ---- jit ---- */

/* A function of one pointer argument in an anonymous page that calls FN with it (a call,
 * not a tail jump: the hook sees a return address inside the page), as JIT compilers and
 * FFI trampolines (LuaJIT, Java's FFM) emit. Written, then made read+execute. */
static void (*jit_thunk(void *fn))(void *)
{
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#if defined(__x86_64__)
    static const unsigned char code[] = {
        0x48, 0x83, 0xec, 0x08,                   /* sub $8, %rsp (16-byte aligned at the call) */
        0x48, 0xb8, 0,    0,    0, 0, 0, 0, 0, 0, /* movabs $fn, %rax */
        0xff, 0xd0,                               /* call *%rax */
        0x48, 0x83, 0xc4, 0x08,                   /* add $8, %rsp */
        0xc3,                                     /* ret */
    };
    memcpy(p, code, sizeof(code));
    memcpy(p + 6, &fn, sizeof(fn));
#elif defined(__aarch64__)
    static const unsigned int code[] = {
        0xa9bf7bfd, /* stp x29, x30, [sp, #-16]! */
        0x910003fd, /* mov x29, sp */
        0x58000090, /* ldr x16, .+16 (the literal below) */
        0xd63f0200, /* blr x16 */
        0xa8c17bfd, /* ldp x29, x30, [sp], #16 */
        0xd65f03c0, /* ret */
    };
    memcpy(p, code, sizeof(code));
    memcpy(p + sizeof(code), &fn, sizeof(fn));
    __builtin___clear_cache((char *)p, (char *)p + sizeof(code) + sizeof(fn));
#else
#error "dlsafe jit: x86_64 and aarch64 only"
#endif
    if (mprotect(p, page, PROT_READ | PROT_EXEC) != 0)
        return NULL;
    return (void (*)(void *))p;
}

static int reloads;
static atomic_bool reloads_done;

static void *reload_loop(void *arg)
{
    for (int i = 0; i < reloads; i++) {
        void *h = load("unrelate.so", RTLD_NOW);
        int (*t)(int) = h ? sym(h, "other_touch") : NULL;
        if (t)
            t(i);
        unload(h, "unrelate.so");
    }
    atomic_store(&reloads_done, true);
    return arg;
}

/* The program links libssl as a program with an FFI would load it: this reference keeps it
 * among the program's needed libraries, so SSL_free is in the global scope. */
void (*const dlsafe_ssl_free)(SSL *) = SSL_free;

static int jit(long calls)
{
    /* Found as an FFI finds it: by name, in the global scope (the preload's hook when
     * traced, libssl's own function otherwise). */
    void *fn = dlsym(RTLD_DEFAULT, "SSL_free");
    void (*thunk)(void *) = fn ? jit_thunk(fn) : NULL;
    pthread_t t;
    long done = 0;
    if (!thunk) {
        failed("jit", fn ? "cannot map the code page" : "no SSL_free");
        return 1;
    }
    if (reloads > 0)
        pthread_create(&t, NULL, reload_loop, NULL);
    while (done < calls || (reloads > 0 && !atomic_load(&reloads_done))) {
        thunk(NULL);
        done++;
    }
    if (reloads > 0)
        pthread_join(t, NULL);
    stats("calls=%ld\n", done);
    printf("jit calls>=%ld reloads=%d\n", calls, reloads);
    return 0;
}

/* ---- reload ---- */

static int reload(int loads, long calls)
{
    long n = 0;
    pthread_t t;
    for (int i = 0; i < loads; i++) {
        void *h = load("r.so", RTLD_NOW);
        int (*f)(int) = h ? sym(h, "leaf_calls") : NULL;
        if (f)
            n += f(1);
        unload(h, "r.so");
    }
    /* One more load, called from while another thread loads and unloads an unrelated plugin. */
    void *h = load("r.so", RTLD_NOW);
    int (*f)(int) = h ? sym(h, "leaf_calls") : NULL;
    if (!f)
        return 1;
    if (reloads > 0)
        pthread_create(&t, NULL, reload_loop, NULL);
    for (long k = 0; k < calls || (reloads > 0 && !atomic_load(&reloads_done)); k++)
        n += f(1);
    if (reloads > 0)
        pthread_join(t, NULL);
    unload(h, "r.so");
    stats("calls=%ld\n", n);
    printf("reload loads=%d calls>=%ld reloads=%d\n", loads, loads + calls, reloads);
    return 0;
}

/* ---- stress ---- */

struct stress {
    struct timespec end;
    int port;
    const char *cafile, *path;
    _Atomic unsigned long got, downloads, loads;
};
static struct stress st;

static int running(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec < st.end.tv_sec ||
           (now.tv_sec == st.end.tv_sec && now.tv_nsec < st.end.tv_nsec);
}

typedef int (*get_fn)(const char *, int, const char *, size_t *, char *, size_t);

/* Loads its own copy of the TLS plugin RTLD_DEEPBIND, downloads twice through it, unloads it. */
static void *tls_loop(void *arg)
{
    const char *name = arg;
    while (running()) {
        void *h = load(name, RTLD_NOW | RTLD_DEEPBIND);
        get_fn get = h ? (get_fn)dlsym(h, "tlsplug_get") : NULL;
        char err[200] = "";
        for (int k = 0; get && k < 2; k++) {
            size_t got = 0;
            if (get(st.cafile, st.port, st.path, &got, err, sizeof(err)) != 0) {
                failed(name, err);
                break;
            }
            atomic_fetch_add(&st.got, got);
            atomic_fetch_add(&st.downloads, 1);
        }
        unload(h, name);
        if (!get)
            break;
    }
    return NULL;
}

/* NAME loaded with MODE, FN(2) called when FN is named, unloaded; until the time is up. */
struct plugin_loop {
    const char *name, *fn;
    int mode;
};

static void *plugin_loop(void *arg)
{
    const struct plugin_loop *l = arg;
    while (running()) {
        void *h = load(l->name, l->mode);
        int (*f)(int) = h && l->fn ? sym(h, l->fn) : NULL;
        if (f && f(2) != 2)
            failed(l->name, "its inner plugin did not load");
        unload(h, l->name);
        atomic_fetch_add(&st.loads, 1);
        if (!h)
            break;
    }
    return NULL;
}

static int stress(int secs)
{
    static const struct plugin_loop loops_[] = {
        {"s-deep.so", "leaf_calls", RTLD_NOW | RTLD_DEEPBIND}, /* DEEPBIND, no nesting */
        {"s-plain.so", "leaf_calls", RTLD_NOW},                /* plain */
        /* plain; DEEPBIND inside its constructor, dlclose and a DEEPBIND load in its
         * destructor (s-n1-in.so, s-n1-fin.so) */
        {"s-n1.so", "nest_calls", RTLD_NOW},
        /* DEEPBIND with a DEEPBIND load inside its constructor (s-n2-in.so) */
        {"s-n2.so", "nest_calls", RTLD_NOW | RTLD_DEEPBIND},
    };
    enum { NLOOPS = sizeof(loops_) / sizeof(loops_[0]) };
    pthread_t t[NLOOPS + 2];

    setenv("DLSAFE_DEFERRED", "0", 1); /* before the threads: see nest.c */
    clock_gettime(CLOCK_MONOTONIC, &st.end);
    st.end.tv_sec += secs;
    pthread_create(&t[0], NULL, tls_loop, "tls1.so");
    pthread_create(&t[1], NULL, tls_loop, "tls2.so");
    for (int i = 0; i < NLOOPS; i++)
        pthread_create(&t[i + 2], NULL, plugin_loop, (void *)&loops_[i]);
    for (int i = 0; i < NLOOPS + 2; i++)
        pthread_join(t[i], NULL);
    stats("got=%lu downloads=%lu loads=%lu\n", atomic_load(&st.got), atomic_load(&st.downloads),
          atomic_load(&st.loads));
    if (!atomic_load(&st.downloads))
        failed("stress", "no download");
    printf("stress tls-threads=2 plugin-threads=%d\n", NLOOPS);
    return 0;
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 2 ? argv[1] : "";
    int rc;

    dir = argc > 2 ? argv[2] : "";
    if (!strcmp(cmd, "deadlock") && argc == 4) {
        loops = atoi(argv[3]);
        rc = deadlock();
    } else if (!strcmp(cmd, "deferred") && argc == 5) {
        rc = deferred(atoi(argv[3]), atoi(argv[4]));
    } else if (!strcmp(cmd, "jit") && argc == 5) {
        reloads = atoi(argv[4]);
        rc = jit(atol(argv[3]));
    } else if (!strcmp(cmd, "reload") && argc == 6) {
        reloads = atoi(argv[5]);
        rc = reload(atoi(argv[3]), atol(argv[4]));
    } else if (!strcmp(cmd, "stress") && argc == 7) {
        st.port = atoi(argv[4]);
        st.cafile = argv[5];
        st.path = argv[6];
        rc = stress(atoi(argv[3]));
    } else {
        fprintf(stderr, "usage: dlsafe deadlock|deferred|jit|reload|stress DIR ... (see the "
                        "source)\n");
        return 2;
    }
    return rc || atomic_load(&failures) ? 1 : 0;
}
