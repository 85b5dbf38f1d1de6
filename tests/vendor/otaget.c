/* otaget.c: the stand-in for an OTA downloader: fetches a manifest with the system libcurl
 * (system OpenSSL 3), then the image through the vendor SDK libfoundation.so (its own
 * OpenSSL built without assembler modules, tests/vendor/noasm-build), both linked at start;
 * -l loads the SDK with dlopen after the manifest instead. Prints each body's size and digest
 * (the image's SHA-256 from the system libcrypto, so that the SDK's C code is its TLS only).
 *   otaget -p PORT -c CAFILE -m MANIFEST -f IMAGE [-l SDK.so]
 * libcurl's development headers are not needed (Debian's libcurl4 is enough): the few easy
 * calls it makes are declared here, with the option numbers of curl.h (CURLOPTTYPE_* + n),
 * which libcurl keeps stable across its ABI 4. */
#include <dlfcn.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* vendor_https_get_to of libfoundation.so (tests/vendor/vendor.c): the body comes to a
 * function of ours, which checks it with the system libcrypto's SHA-256 (SHA extensions
 * where the CPU has them), as an updater checks its image. Weak, so that the same source
 * links without the SDK for -l (otaget-plugin). */
typedef void (*sink_fn)(const void *, size_t, void *);
long vendor_https_get_to(int port, const char *path, const char *cafile, sink_fn sink, void *arg)
    __attribute__((weak));
typedef long (*get_fn)(int, const char *, const char *, sink_fn, void *);

static void on_image(const void *p, size_t n, void *md)
{
    EVP_DigestUpdate(md, p, n);
}

#ifdef OTAGET_SYSGET
/* Without libcurl for the target (the arm64 test sysroot has none): the manifest through
 * libsysget.so (tests/vendor/sysget.c), the system libssl.so.3 called as libcurl calls it. */
long sys_https_get(int port, const char *path, const char *ca, char *sha, char *info, size_t icap);

static int manifest(int port, const char *ca, const char *path)
{
    char sha[65] = "", info[256];
    long n = sys_https_get(port, path, ca, sha, info, sizeof(info));
    if (n < 0) {
        fprintf(stderr, "otaget: manifest: failed\n");
        return 1;
    }
    printf("manifest bytes=%ld sha256=%s\n", n, sha);
    return 0;
}
#else
typedef void CURL;
struct curl_slist;
CURL *curl_easy_init(void);
int curl_easy_setopt(CURL *c, int opt, ...);
int curl_easy_perform(CURL *c);
void curl_easy_cleanup(CURL *c);
const char *curl_easy_strerror(int code);
struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s);
void curl_slist_free_all(struct curl_slist *l);

enum {
    OPT_WRITEDATA = 10001,
    OPT_URL = 10002,
    OPT_WRITEFUNCTION = 20011,
    OPT_CAINFO = 10065,
    OPT_RESOLVE = 10203,
    OPT_FAILONERROR = 45,
};

struct sink {
    uint64_t fnv; /* FNV-1a over the body: enough to tell a changed manifest */
    long n;
};

static size_t on_data(char *p, size_t sz, size_t nm, void *arg)
{
    struct sink *s = arg;
    size_t n = sz * nm;
    for (size_t i = 0; i < n; i++)
        s->fnv = (s->fnv ^ (unsigned char)p[i]) * 0x100000001b3ull;
    s->n += (long)n;
    return n;
}

/* The manifest over libcurl: https://localhost:PORT/PATH pinned to 127.0.0.1. */
static int manifest(int port, const char *ca, const char *path)
{
    char url[512], pin[64];
    struct sink s = {0xcbf29ce484222325ull, 0};
    CURL *c = curl_easy_init();
    if (!c)
        return 1;
    snprintf(url, sizeof(url), "https://localhost:%d/%s", port, path);
    snprintf(pin, sizeof(pin), "localhost:%d:127.0.0.1", port);
    struct curl_slist *res = curl_slist_append(NULL, pin);
    curl_easy_setopt(c, OPT_URL, url);
    curl_easy_setopt(c, OPT_RESOLVE, res);
    curl_easy_setopt(c, OPT_CAINFO, ca);
    curl_easy_setopt(c, OPT_FAILONERROR, 1L);
    curl_easy_setopt(c, OPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, OPT_WRITEDATA, &s);
    int rc = curl_easy_perform(c);
    if (rc)
        fprintf(stderr, "otaget: manifest: %s\n", curl_easy_strerror(rc));
    else
        printf("manifest bytes=%ld fnv=%016llx\n", s.n, (unsigned long long)s.fnv);
    curl_easy_cleanup(c);
    curl_slist_free_all(res);
    return rc != 0;
}
#endif

int main(int argc, char **argv)
{
    int port = 0, c;
    const char *ca = NULL, *man = NULL, *img = NULL, *plugin = NULL;
    while ((c = getopt(argc, argv, "p:c:m:f:l:")) != -1) {
        switch (c) {
        case 'p':
            port = atoi(optarg);
            break;
        case 'c':
            ca = optarg;
            break;
        case 'm':
            man = optarg;
            break;
        case 'f':
            img = optarg;
            break;
        case 'l':
            plugin = optarg;
            break;
        default:
            return 2;
        }
    }
    if (!port || !ca || !man || !img) {
        fprintf(stderr, "usage: otaget -p PORT -c CAFILE -m MANIFEST -f IMAGE [-l SDK.so]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (manifest(port, ca, man))
        return 1;
    get_fn get = vendor_https_get_to;
    if (plugin || !get) {
        void *h = plugin ? dlopen(plugin, RTLD_NOW | RTLD_LOCAL) : NULL;
        if (!h || !(get = (get_fn)dlsym(h, "vendor_https_get_to"))) {
            fprintf(stderr, "otaget: %s\n", plugin ? dlerror() : "no SDK: -l SDK.so");
            return 2;
        }
    }
    unsigned char d[32];
    unsigned dl = 0;
    char sha[65] = "";
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || !EVP_DigestInit_ex(md, EVP_sha256(), NULL))
        return 1;
    long n = get(port, img, ca, on_image, md);
    if (n >= 0 && !EVP_DigestFinal_ex(md, d, &dl))
        n = -1;
    EVP_MD_CTX_free(md);
    for (unsigned i = 0; i < dl; i++)
        snprintf(sha + 2 * i, 3, "%02x", d[i]);
    printf("image bytes=%ld sha256=%s\n", n, sha);
    return n < 0;
}
