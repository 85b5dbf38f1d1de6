/* vclient.c: the stand-in for admsysiApp: downloads once through the vendor library's
 * embedded OpenSSL and, with -s, once more through the system libssl.so.3 in the same
 * process (libsysget.so, next to vclient), printing each body's SHA-256. Vendor functions
 * are reached by dlsym on the default scope (linked layouts) or on a dlopen(RTLD_LOCAL)
 * handle (-l: plugin layout). vclient must be started by a path with a '/'.
 *   vclient -p PORT -c CAFILE -f PATH [-l VENDOR.so] [-s] [-m] [-d]
 * -m: force the vendor copy to software AES before use; -d: use RTLD_DEEPBIND for -l. */
#include <dlfcn.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct opts {
    int port;
    const char *ca, *path, *plugin;
    int sys, soft, deep;
};

typedef long (*get_fn)(int, const char *, const char *, char *);
typedef void (*soft_fn)(void);
typedef const char *(*ver_fn)(int);
typedef long (*get_fn2)(int, const char *, const char *, char *, char *, size_t);

static void *need(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "vclient: %s: %s\n", name, dlerror());
        exit(2);
    }
    return p;
}

static int run_vendor(const struct opts *o)
{
    void *h = RTLD_DEFAULT;
    if (o->plugin) {
        h = dlopen(o->plugin, RTLD_NOW | RTLD_LOCAL | (o->deep ? RTLD_DEEPBIND : 0));
        if (!h) {
            fprintf(stderr, "vclient: %s\n", dlerror());
            return 2;
        }
    }
    get_fn get = (get_fn)need(h, "vendor_https_get");
    ver_fn ver = (ver_fn)need(h, "vendor_openssl");
    if (o->soft)
        ((soft_fn)need(h, "vendor_force_soft"))();
    char sha[65] = "";
    long n = get(o->port, o->path, o->ca, sha);
    printf("vendor bytes=%ld sha256=%s\n", n, sha);
    /* The capability string of the copy the vendor's own calls reach (after the download:
     * OpenSSL builds it once, from the vector in effect then). */
    printf("vendor %s\n", ver(OPENSSL_CPU_INFO));
    return n < 0;
}

/* The application's own TLS beside the vendor's: libsysget.so (linked to the system
 * libssl.so.3), dlopened RTLD_LOCAL like a plugin that brings libcurl along. */
static int run_system(const struct opts *o, const char *self)
{
    char path[4096];
    snprintf(path, sizeof(path), "%.*s/libsysget.so", (int)(strrchr(self, '/') - self), self);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "vclient: %s\n", dlerror());
        return 2;
    }
    char sha[65] = "", info[256] = "";
    long n = ((get_fn2)need(h, "sys_https_get"))(o->port, o->path, o->ca, sha, info, sizeof(info));
    printf("system bytes=%ld sha256=%s\n", n, sha);
    printf("system %s\n", info);
    return n < 0;
}

int main(int argc, char **argv)
{
    struct opts o = {0};
    int c;
    while ((c = getopt(argc, argv, "p:c:f:l:smd")) != -1) {
        switch (c) {
        case 'p': o.port = atoi(optarg); break;
        case 'c': o.ca = optarg; break;
        case 'f': o.path = optarg; break;
        case 'l': o.plugin = optarg; break;
        case 's': o.sys = 1; break;
        case 'm': o.soft = 1; break;
        case 'd': o.deep = 1; break;
        default: return 2;
        }
    }
    if (!o.port || !o.ca || !o.path) {
        fprintf(stderr, "usage: vclient -p PORT -c CAFILE -f PATH [-l VENDOR.so] [-s] [-m] [-d]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = run_vendor(&o);
    if (o.sys)
        rc |= run_system(&o, argv[0]);
    return rc;
}
