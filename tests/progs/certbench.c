/* certbench: on-CPU ns per d2i_X509 and per chain verification of certificates, timed in a loop
 * (the independent instrument for handshake parts). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

/* Usage: certbench [-t SECONDS] [-r REPEATS] [-v CAFILE] CERT.pem|CERT.der...
 *
 * For each certificate (PEM or DER; a PEM file's first certificate), its DER bytes are
 * parsed with d2i_X509 in a loop, as libssl parses a peer certificate (X509_new_ex, then
 * d2i_X509 into it), for SECONDS (default 0.2) per run; the median of REPEATS runs (default
 * 5) of the thread's CPU time per call is printed:
 *   cert=PATH bytes=N key=rsa2048 d2i_ns=X
 * -v CAFILE also times X509_verify_cert of the certificate against a store holding CAFILE
 * (a store built once, as a long-lived SSL_CTX has it): verify_ns=Y.
 * The thread CPU clock (CLOCK_THREAD_CPUTIME_ID) is read once per run, not per call. */

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The DER of the first certificate in path (PEM, else DER as is). */
static unsigned char *load_der(const char *path, long *len, X509 **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
    if (!x) {
        rewind(f);
        x = d2i_X509_fp(f, NULL);
    }
    fclose(f);
    if (!x)
        return NULL;
    unsigned char *der = NULL;
    int n = i2d_X509(x, &der);
    *out = x;
    *len = n;
    return n > 0 ? der : NULL;
}

typedef int (*step_fn)(void *arg);

/* Median per-call CPU ns of step over repeats runs of secs each. */
static double time_loop(step_fn step, void *arg, double secs, int repeats)
{
    double v[64];
    if (repeats > 64)
        repeats = 64;
    for (int r = 0; r < repeats; r++) {
        long n = 0;
        double t0 = cpu_ns(), t;
        do {
            for (int i = 0; i < 16; i++, n++)
                if (!step(arg))
                    return -1;
            t = cpu_ns();
        } while (t - t0 < secs * 1e9);
        v[r] = (t - t0) / (double)n;
    }
    qsort(v, (size_t)repeats, sizeof(v[0]), cmp_dbl);
    return v[repeats / 2];
}

struct parse_arg {
    const unsigned char *der;
    long len;
};

static int parse_step(void *arg)
{
    struct parse_arg *a = arg;
    const unsigned char *p = a->der;
    X509 *x = X509_new_ex(NULL, NULL);
    if (!x || !d2i_X509(&x, &p, a->len)) {
        X509_free(x);
        return 0;
    }
    X509_free(x);
    return 1;
}

struct verify_arg {
    X509_STORE *store;
    X509 *leaf;
};

static int verify_step(void *arg)
{
    struct verify_arg *a = arg;
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    int ok = ctx && X509_STORE_CTX_init(ctx, a->store, a->leaf, NULL) && X509_verify_cert(ctx) == 1;
    X509_STORE_CTX_free(ctx);
    return ok;
}

static void key_name(X509 *x, char *buf, size_t cap)
{
    EVP_PKEY *pk = X509_get0_pubkey(x);
    int id = pk ? EVP_PKEY_get_base_id(pk) : 0;
    const char *n = id == EVP_PKEY_RSA ? "rsa" : id == EVP_PKEY_EC ? "ec" : "other";
    snprintf(buf, cap, "%s%d", n, pk ? EVP_PKEY_get_bits(pk) : 0);
}

int main(int argc, char **argv)
{
    double secs = 0.2;
    int repeats = 5, i = 1;
    const char *cafile = NULL;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "-t"))
            secs = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "-r"))
            repeats = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-v"))
            cafile = argv[i + 1];
        else
            break;
    }
    if (i >= argc || secs <= 0 || repeats < 1) {
        fprintf(stderr, "usage: certbench [-t SECONDS] [-r REPEATS] [-v CAFILE] CERT...\n");
        return 2;
    }
    X509_STORE *store = NULL;
    if (cafile) {
        store = X509_STORE_new();
        if (!store || X509_STORE_load_file(store, cafile) != 1) {
            fprintf(stderr, "certbench: %s: cannot load as a CA file\n", cafile);
            return 1;
        }
    }
    for (; i < argc; i++) {
        X509 *x = NULL;
        long len = 0;
        unsigned char *der = load_der(argv[i], &len, &x);
        if (!der) {
            fprintf(stderr, "certbench: %s: not a PEM or DER certificate\n", argv[i]);
            return 1;
        }
        char key[32];
        key_name(x, key, sizeof(key));
        struct parse_arg pa = {der, len};
        double d2i = time_loop(parse_step, &pa, secs, repeats);
        printf("cert=%s bytes=%ld key=%s d2i_ns=%.0f", argv[i], len, key, d2i);
        if (store) {
            struct verify_arg va = {store, x};
            printf(" verify_ns=%.0f", time_loop(verify_step, &va, secs, repeats));
        }
        printf("\n");
        OPENSSL_free(der);
        X509_free(x);
    }
    X509_STORE_free(store);
    return 0;
}
