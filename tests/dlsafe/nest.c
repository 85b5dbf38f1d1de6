/* nest.c: a plugin that loads another plugin in its constructor and unloads it in its
 * destructor, as plugin hosts do. A copy named NAME.so opens NAME-in.so (beside it) with
 * RTLD_NOW | RTLD_DEEPBIND by path in its constructor and dlcloses it in its destructor:
 * when the dlclose of NAME.so runs that destructor, ld.so only drops the reference and
 * unloads NAME-in.so at the end of the outer dlclose (a deferred unload). The destructor
 * records that in the environment (DLSAFE_DEFERRED=1 when NAME-in.so was still loaded
 * right after its dlclose). When NAME-fin.so exists, the destructor also loads it the same
 * way, calls its leaf_calls once and unloads it: a load inside a destructor. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int nest_calls(int n);
void *nest_inner(void);

static void *inner;
static int (*inner_calls)(int);

/* DIR/NAME<suffix>.so for this copy's own path DIR/NAME.so; 0 on success. */
static int sibling(char *out, size_t cap, const char *suffix)
{
    Dl_info di;
    if (!dladdr((void *)&sibling, &di) || !di.dli_fname)
        return -1;
    size_t n = strlen(di.dli_fname);
    if (n < 3 || strcmp(di.dli_fname + n - 3, ".so") != 0)
        return -1;
    int len = snprintf(out, cap, "%.*s%s.so", (int)(n - 3), di.dli_fname, suffix);
    return len > 0 && (size_t)len < cap ? 0 : -1;
}

__attribute__((constructor)) static void nest_open(void)
{
    char path[PATH_MAX];
    if (sibling(path, sizeof(path), "-in") != 0)
        return;
    inner = dlopen(path, RTLD_NOW | RTLD_DEEPBIND);
    if (!inner) {
        fprintf(stderr, "nest: %s\n", dlerror());
        return;
    }
    inner_calls = (int (*)(int))dlsym(inner, "leaf_calls");
}

__attribute__((destructor)) static void nest_close(void)
{
    char path[PATH_MAX];
    if (inner && sibling(path, sizeof(path), "-in") == 0) {
        dlclose(inner);
        void *still = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        /* Not set again once it says 1: a set that replaces the value in place is what
         * other threads' getenv can live with (the driver sets it before its threads). */
        const char *was = getenv("DLSAFE_DEFERRED");
        if (still && !(was && !strcmp(was, "1")))
            setenv("DLSAFE_DEFERRED", "1", 1);
        if (still)
            dlclose(still);
        inner = NULL;
        inner_calls = NULL;
    }
    if (sibling(path, sizeof(path), "-fin") == 0 && access(path, F_OK) == 0) {
        void *h = dlopen(path, RTLD_NOW | RTLD_DEEPBIND);
        int (*f)(int) = h ? (int (*)(int))dlsym(h, "leaf_calls") : NULL;
        if (f)
            f(1);
        if (h)
            dlclose(h);
    }
}

/* N hooked calls from the inner plugin; -1 when it did not load. */
int nest_calls(int n)
{
    return inner_calls ? inner_calls(n) : -1;
}

/* The inner plugin's handle (NULL when it did not load). */
void *nest_inner(void)
{
    return inner;
}
