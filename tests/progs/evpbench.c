/* evpbench: ns per TLS-1.3-style AEAD record decrypt (AES-GCM, ChaCha20-Poly1305) through the EVP calls libssl makes. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

/* Usage: evpbench [-c CIPHER] [-t SECONDS] [-r REPEATS] [-n RECORDS] [-p PAIRS] SIZE...
 *
 * -c names the AEAD (EVP_get_cipherbyname: aes-128-gcm, the default, aes-256-gcm,
 * chacha20-poly1305).
 * For each SIZE (plaintext bytes per record) encrypts NREC records once, then decrypts them
 * round-robin the way libssl 3.0 decrypts a TLS 1.3 record:
 *   EVP_CipherInit_ex(ctx, NULL, NULL, NULL, nonce, 0)   per-record nonce (iv ^ seq)
 *   EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, tag)
 *   EVP_CipherUpdate(ctx, NULL, &n, aad, 5)              AAD: the record header
 *   EVP_CipherUpdate(ctx, out, &n, in, len)              payload
 *   EVP_CipherFinal_ex(ctx, out + n, &n)                 tag check
 * Each timed run lasts SECONDS (default 0.2); the median of REPEATS runs (default 5) is printed:
 *   size=N ns_per_record=X records=R
 * -n RECORDS decrypts exactly that many records per size, untimed, and prints
 *   size=N records=R
 * (the bench counts hooked calls with it).
 * -p PAIRS measures what an LD_PRELOAD adds to the five calls above, inside one process so
 * that machine noise cancels: batches of records decrypted through the normal calls (which
 * the preload interposes) alternate with batches through pointers to libcrypto's own
 * definitions (dlsym on libcrypto's handle, which no preload interposes); each on its own
 * ctx. Prints the median over PAIRS of the per-record difference:
 *   size=N hooked_minus_direct_ns=X pairs=P
 * Calls libcrypto makes internally (EVP_DecryptUpdate, CRYPTO_gcm128_*) are hooked on both
 * sides and cancel out. Exit 0, or 1 if a tag fails to verify. */

#define NREC 16

static const EVP_CIPHER *aead; /* -c */

struct rec {
    unsigned char aad[5], tag[16], *ct;
    size_t len;
    unsigned char nonce[12];
};

/* The five per-record calls, called through pointers on both sides of a paired run. */
struct api {
    __typeof__(&EVP_CipherInit_ex) init;
    __typeof__(&EVP_CIPHER_CTX_ctrl) ctrl;
    __typeof__(&EVP_CipherUpdate) update;
    __typeof__(&EVP_CipherFinal_ex) final;
};

/* Taking the address in the executable resolves through the dynamic linker: the preload's
 * hook when one is loaded. */
static struct api hooked = {EVP_CipherInit_ex, EVP_CIPHER_CTX_ctrl, EVP_CipherUpdate,
                            EVP_CipherFinal_ex};
static struct api direct;

static const unsigned char key[16] = "tlsmeter-bench-k";
static const unsigned char iv[12] = "bench-iv-012";

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* TLS 1.3 key setup as libssl does it: cipher, IV length, then key. */
static EVP_CIPHER_CTX *keyed_ctx(int enc)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

    EVP_CipherInit_ex(ctx, aead, NULL, NULL, NULL, enc);
    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL);
    EVP_CipherInit_ex(ctx, NULL, NULL, key, NULL, -1);
    return ctx;
}

static void make_records(struct rec *r, size_t size)
{
    EVP_CIPHER_CTX *ctx = keyed_ctx(1);
    unsigned char *pt = malloc(size + 1);
    size_t wire = size + 1 + 16;
    int n, i, b;

    for (i = 0; i < NREC; i++) {
        memset(pt, 'a' + i, size);
        pt[size] = 23; /* inner content type */
        r[i].ct = malloc(size + 1);
        r[i].len = size + 1;
        memcpy(r[i].nonce, iv, 12);
        for (b = 0; b < 8; b++)
            r[i].nonce[11 - b] ^= (unsigned char)((unsigned long)i >> (8 * b));
        r[i].aad[0] = 23, r[i].aad[1] = 3, r[i].aad[2] = 3;
        r[i].aad[3] = (unsigned char)(wire >> 8), r[i].aad[4] = (unsigned char)wire;
        EVP_CipherInit_ex(ctx, NULL, NULL, NULL, r[i].nonce, 1);
        EVP_CipherUpdate(ctx, NULL, &n, r[i].aad, 5);
        EVP_CipherUpdate(ctx, r[i].ct, &n, pt, (int)r[i].len);
        EVP_CipherFinal_ex(ctx, r[i].ct + n, &n);
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, r[i].tag);
    }
    EVP_CIPHER_CTX_free(ctx);
    free(pt);
}

static int decrypt_one(const struct api *a, EVP_CIPHER_CTX *ctx, struct rec *r, unsigned char *out)
{
    int n, m;

    a->init(ctx, NULL, NULL, NULL, r->nonce, 0);
    a->ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, r->tag);
    a->update(ctx, NULL, &n, r->aad, 5);
    a->update(ctx, out, &n, r->ct, (int)r->len);
    return a->final(ctx, out + n, &m);
}

static int resolve_direct(void)
{
    void *h = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_NOLOAD);

    if (!h)
        return -1;
    direct.init = (__typeof__(direct.init))dlsym(h, "EVP_CipherInit_ex");
    direct.ctrl = (__typeof__(direct.ctrl))dlsym(h, "EVP_CIPHER_CTX_ctrl");
    direct.update = (__typeof__(direct.update))dlsym(h, "EVP_CipherUpdate");
    direct.final = (__typeof__(direct.final))dlsym(h, "EVP_CipherFinal_ex");
    return direct.init && direct.ctrl && direct.update && direct.final ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* One timed run: records per batch of NREC until SECONDS pass; ns per record. */
static double timed_run(EVP_CIPHER_CTX *ctx, struct rec *r, unsigned char *out, double secs,
                        long *count, int *bad)
{
    double t0 = now_s(), t;
    long n = 0;
    int i;

    do {
        for (i = 0; i < NREC; i++)
            *bad |= decrypt_one(&hooked, ctx, &r[i], out) != 1;
        n += NREC;
        t = now_s();
    } while (t - t0 < secs);
    *count += n;
    return (t - t0) * 1e9 / n;
}

/* Time one batch of 4 x NREC records through API on CTX, in ns. */
static double batch_ns(const struct api *a, EVP_CIPHER_CTX *ctx, struct rec *r, unsigned char *out,
                       int *bad)
{
    double t0 = now_s();
    int i;

    for (i = 0; i < 4 * NREC; i++)
        *bad |= decrypt_one(a, ctx, &r[i % NREC], out) != 1;
    return (now_s() - t0) * 1e9;
}

/* Median over PAIRS of (hooked - direct) ns per record; the order alternates per pair. */
static double paired(struct rec *r, unsigned char *out, long pairs, int *bad)
{
    EVP_CIPHER_CTX *hc = keyed_ctx(0), *dc = EVP_CIPHER_CTX_new();
    double *d = malloc(pairs * sizeof(*d)), h, m;
    long k;

    /* The direct side's ctx is keyed through the direct pointers too. */
    direct.init(dc, aead, NULL, NULL, NULL, 0);
    direct.ctrl(dc, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL);
    direct.init(dc, NULL, NULL, key, NULL, -1);
    for (k = 0; k < pairs; k++) {
        if (k & 1) {
            h = batch_ns(&hooked, hc, r, out, bad);
            d[k] = h - batch_ns(&direct, dc, r, out, bad);
        } else {
            m = batch_ns(&direct, dc, r, out, bad);
            d[k] = batch_ns(&hooked, hc, r, out, bad) - m;
        }
        d[k] /= 4 * NREC;
    }
    qsort(d, pairs, sizeof(d[0]), cmp_double);
    m = d[pairs / 2];
    free(d);
    EVP_CIPHER_CTX_free(hc);
    EVP_CIPHER_CTX_free(dc);
    return m;
}

int main(int argc, char **argv)
{
    double secs = 0.2, ns[64];
    int reps = 5, c, k, bad = 0;
    long exact = -1, pairs = 0;

    aead = EVP_aes_128_gcm();
    while ((c = getopt(argc, argv, "c:t:r:n:p:")) != -1) {
        if (c == 'c')
            aead = EVP_get_cipherbyname(optarg);
        else if (c == 't')
            secs = atof(optarg);
        else if (c == 'r')
            reps = atoi(optarg);
        else if (c == 'n')
            exact = atol(optarg);
        else if (c == 'p')
            pairs = atol(optarg);
        else
            return 2;
    }
    if (optind >= argc || reps < 1 || reps > 64 || pairs < 0 || !aead) {
        fprintf(stderr, "usage: evpbench [-c CIPHER] [-t SECONDS] [-r REPEATS] [-n RECORDS] "
                        "[-p PAIRS] SIZE...\n");
        return 2;
    }
    if (pairs && resolve_direct()) {
        fprintf(stderr, "evpbench: cannot find libcrypto's own EVP functions\n");
        return 2;
    }
    for (; optind < argc; optind++) {
        size_t size = strtoul(argv[optind], NULL, 10);
        struct rec r[NREC];
        unsigned char *out = malloc(size + 64);
        EVP_CIPHER_CTX *ctx = keyed_ctx(0);
        long count = 0, i;

        make_records(r, size);
        if (pairs) {
            printf("size=%zu hooked_minus_direct_ns=%.1f pairs=%ld\n", size,
                   paired(r, out, pairs, &bad), pairs);
        } else if (exact >= 0) {
            for (i = 0; i < exact; i++)
                bad |= decrypt_one(&hooked, ctx, &r[i % NREC], out) != 1;
            printf("size=%zu records=%ld\n", size, exact);
        } else {
            timed_run(ctx, r, out, secs / 4, &count, &bad); /* warm up */
            for (k = 0; k < reps; k++)
                ns[k] = timed_run(ctx, r, out, secs, &count, &bad);
            qsort(ns, reps, sizeof(ns[0]), cmp_double);
            printf("size=%zu ns_per_record=%.1f min=%.1f records=%ld\n", size, ns[reps / 2], ns[0],
                   count);
        }
        for (k = 0; k < NREC; k++)
            free(r[k].ct);
        EVP_CIPHER_CTX_free(ctx);
        free(out);
    }
    if (bad)
        fprintf(stderr, "evpbench: a record failed to verify\n");
    return bad;
}
