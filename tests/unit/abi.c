/* tests/unit/abi.c: the one ABI decision (preload/forward/abi.c) and the two loaders, driven
 * with made-up objects: a lookup answers from a table of fake functions, so which ABI a copy
 * is and which of its functions each entry point calls are checked without any OpenSSL
 * loaded; then 1.1.1's capability words under a mask (preload/arch/ARCH/ossl111caps.c),
 * decoded by base/caps.c. Prints PASS/FAIL lines; exit 1 on any FAIL. */
#include "arch/arch.h"
#include "base/caps.h"
#include "forward/abi.h"
#include "forward/blind.h"
#include "forward/obj.h"
#include "trace/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed;

static void check(int ok, const char *what, const char *detail)
{
    printf("%s abi %s%s%s\n", ok ? "PASS" : "FAIL", what, detail[0] ? ": " : "", detail);
    failed += !ok;
}

/* Stubs of what abi.c calls outside itself. */
static int warnings;
void tlsm_warn(const char *fmt, ...)
{
    warnings++;
}
bool tlsm_other_fork(const struct tlsm_obj *o, void *h)
{
    return !strncmp(o->version, "BoringSSL", 9) || !strncmp(o->version, "LibreSSL", 8);
}

/* The fake copy: its version text, whether it has 3.x's OPENSSL_version_major, and names. */
static const char *fake_text;
static const char *const *fake_names;
static const char *version_fn(int which)
{
    return which == 0 ? fake_text : "";
}
static int major3(void)
{
    return 3;
}
static int nid3(const void *c)
{
    return 3;
}
static int nid111(const void *c)
{
    return 111;
}
static int put_lib, put_func, put_reason, put_line;
static void put_error111(int lib, int func, int reason, const char *file, int line)
{
    put_lib = lib, put_func = func, put_reason = reason, put_line = line;
}

static void *fake_lookup(void *h, const char *name)
{
    for (const char *const *n = fake_names; n && *n; n++)
        if (!strcmp(*n, name)) {
            if (!strcmp(name, "OpenSSL_version") || !strcmp(name, "SSLeay_version"))
                return (void *)version_fn;
            if (!strcmp(name, "OPENSSL_version_major"))
                return (void *)major3;
            if (!strcmp(name, "EVP_CIPHER_get_nid"))
                return (void *)nid3;
            if (!strcmp(name, "EVP_CIPHER_nid"))
                return (void *)nid111;
            if (!strcmp(name, "ERR_put_error"))
                return (void *)put_error111;
            return (void *)version_fn; /* present; never called by the checks */
        }
    return NULL;
}

static struct tlsm_obj obj;

static enum tlsm_abi_kind decide(const char *path, const char *text, const char *const *names)
{
    memset(&obj, 0, sizeof(obj));
    snprintf(obj.path, sizeof(obj.path), "%s", path);
    fake_text = text;
    fake_names = names;
    tlsm_abi_decide(&obj, NULL, fake_lookup);
    return obj.abi.kind;
}

static void texts(void)
{
    static const struct {
        const char *text;
        enum tlsm_abi_kind want;
    } t[] = {{"OpenSSL 3.0.19 27 Jan 2026", TLSM_ABI_OSSL3},
             {"OpenSSL 3.5.1 1 Jul 2025", TLSM_ABI_OSSL3},
             {"OpenSSL 1.1.1w  11 Sep 2023", TLSM_ABI_OSSL111},
             {"OpenSSL 1.1.0l  10 Sep 2019", TLSM_ABI_OLD},
             {"OpenSSL 1.0.2u  20 Dec 2019", TLSM_ABI_OLD},
             {"OpenSSL 0.9.8zh 3 Dec 2015", TLSM_ABI_OLD},
             {"LibreSSL 3.8.2", TLSM_ABI_UNKNOWN},
             {"", TLSM_ABI_UNKNOWN},
             {NULL, TLSM_ABI_UNKNOWN}};
    char d[200] = "";
    int ok = 1;
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (tlsm_abi_of_text(t[i].text) != t[i].want) {
            snprintf(d, sizeof(d), "%s is %s", t[i].text ? t[i].text : "NULL",
                     tlsm_abi_name(tlsm_abi_of_text(t[i].text)));
            ok = 0;
        }
    check(ok, "version texts: 3.x, 1.1.1, older, forks and nothing", d);
}

static void ossl3(void)
{
    static const char *const names[] = {"OpenSSL_version", "OPENSSL_version_major",
                                        "EVP_CIPHER_get_nid", "EVP_CIPHER_nid", NULL};
    enum tlsm_abi_kind k = decide("/usr/lib/libcrypto.so.3", "OpenSSL 3.2.1 30 Jan 2024", names);
    const struct tlsm_abi *a = &obj.abi;
    check(k == TLSM_ABI_OSSL3 && a->major == 3 && a->minor == 2 && a->cipher_nid &&
              a->cipher_nid(NULL) == 3 && !a->tls_cipher_ret && a->put_error &&
              tlsm_abi_traced(a) && !tlsm_abi_left_alone(a),
          "3.x: OPENSSL_version_major decides, 3.x names load", tlsm_abi_name(k));
}

static void ossl111(void)
{
    static const char *const names[] = {"OpenSSL_version", "EVP_CIPHER_nid", "ERR_put_error",
                                        "SSL_get_version", NULL};
    enum tlsm_abi_kind k = decide("/x/libssl.so.1.1", "OpenSSL 1.1.1w  11 Sep 2023", names);
    const struct tlsm_abi *a = &obj.abi;
    check(k == TLSM_ABI_OSSL111 && a->major == 1 && a->minor == 1 && a->cipher_nid &&
              a->cipher_nid(NULL) == 111 && !a->ssl_ktls_recv && !a->ssl_ktls_send &&
              a->ssl_version,
          "1.1.1: the text decides, 1.1.1 names load (EVP_CIPHER_nid, no kTLS)", tlsm_abi_name(k));
    /* Recorded: GCM decrypt returns the plaintext, encrypt and ChaCha20 the whole record. */
    check(a->tls_cipher_ret && a->tls_cipher_ret(40, 8, false) == 16 &&
              a->tls_cipher_ret(40, 8, true) == 40 && a->tls_cipher_ret(32, 0, false) == 32,
          "1.1.1: EVP_Cipher's TLS 1.2 return values", "");
    a->put_error(a, 6, 0x1234567, "f.c", 42, "fn");
    check(put_lib == 6 && put_func == 0 && put_reason == 0x567 && put_line == 42,
          "1.1.1: errors through ERR_put_error, reason cut to 12 bits", "");
}

static void left_alone(void)
{
    static const char *const old_names[] = {"SSLeay_version", "EVP_CIPHER_get_nid", NULL};
    static const char *const none[] = {NULL};
    static const char *const nid3_only[] = {"EVP_CIPHER_get_nid", NULL};
    int w = warnings;
    enum tlsm_abi_kind k1 = decide("/v/libssl.so.1.0.2", "OpenSSL 1.0.2u  20 Dec 2019", old_names);
    bool empty = !obj.abi.cipher_nid && !obj.abi.ssl_version && !obj.abi.put_error;
    enum tlsm_abi_kind k2 = decide("/v/libssl.so.1.0.2", "OpenSSL 1.0.2u  20 Dec 2019", old_names);
    check(k1 == TLSM_ABI_OLD && k2 == TLSM_ABI_OLD && empty && warnings == w + 1,
          "1.0.2: old, no entry points, one warning for two copies", "");
    enum tlsm_abi_kind k3 = decide("/x/libssl.so.1.1", NULL, none);
    enum tlsm_abi_kind k4 = decide("/x/libvendor.so", NULL, nid3_only);
    enum tlsm_abi_kind k5 = decide("/x/libvendor.so", NULL, none);
    check(k3 == TLSM_ABI_OLD && k4 == TLSM_ABI_OSSL3 && k5 == TLSM_ABI_UNKNOWN,
          "no version text: soname libssl.so.1* old, EVP_CIPHER_get_nid 3.x, else unknown",
          tlsm_abi_name(k5));
    enum tlsm_abi_kind k6 = decide("/x/libssl.so.3", "BoringSSL", old_names);
    check(k6 == TLSM_ABI_FOREIGN && !obj.abi.cipher_nid && tlsm_abi_left_alone(&obj.abi),
          "a fork: foreign, no entry points", tlsm_abi_name(k6));
}

/* 1.1.1's capability words under the masks the tests use: the AES what-if leaves none of
 * AES-NI, PCLMULQDQ, SSSE3 (x86_64); OPENSSL_armcap=0 leaves nothing (aarch64). */
static void caps111(void)
{
    char info[160];
    struct tlsm_caps c;
#if defined(__x86_64__)
    setenv("OPENSSL_ia32cap", "~0x200020200000000:~0x0", 1);
    tlsm_arch_ossl111_cpuinfo(info, sizeof(info));
    c = tlsm_caps_decode(info);
    check(c.known && !tlsm_caps_has(c, TLSM_CAP_AESNI) && !tlsm_caps_has(c, TLSM_CAP_PCLMULQDQ) &&
              !tlsm_caps_has(c, TLSM_CAP_SSSE3),
          "1.1.1 caps under OPENSSL_ia32cap=~0x200020200000000:~0x0", info);
    setenv("OPENSSL_ia32cap", "0x0", 1); /* a word without ':' part clears the second */
    tlsm_arch_ossl111_cpuinfo(info, sizeof(info));
    c = tlsm_caps_decode(info);
    check(c.known && !tlsm_caps_has(c, TLSM_CAP_AVX2) && !tlsm_caps_has(c, TLSM_CAP_AESNI),
          "1.1.1 caps under OPENSSL_ia32cap=0x0", info);
    unsetenv("OPENSSL_ia32cap");
#else
    setenv("OPENSSL_armcap", "0", 1);
    tlsm_arch_ossl111_cpuinfo(info, sizeof(info));
    c = tlsm_caps_decode(info);
    check(c.known && !tlsm_caps_has(c, TLSM_CAP_AES) && !tlsm_caps_has(c, TLSM_CAP_PMULL) &&
              !tlsm_caps_has(c, TLSM_CAP_NEON),
          "1.1.1 caps under OPENSSL_armcap=0", info);
    unsetenv("OPENSSL_armcap");
#endif
}

int main(void)
{
    texts();
    ossl3();
    ossl111();
    left_alone();
    caps111();
    return failed ? 1 : 0;
}
