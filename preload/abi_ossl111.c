/* abi_ossl111.c: the loader of OpenSSL 1.1.1 copies: the entry points of abi.h by 1.1.1's
 * names (EVP_CIPHER_nid, EVP_CIPHER_CTX_cipher, EVP_CIPHER_CTX_encrypting, ERR_put_error).
 * The prototypes are 1.1.1w's (include/openssl/{ssl,evp,err,crypto}.h), written out here:
 * the build sees OpenSSL 3's headers, where these names are macros or absent. 1.1.1 has no
 * OPENSSL_CPU_INFO and does not export its capability words (OPENSSL_ia32cap_P,
 * OPENSSL_armcap_P are hidden), so cpuinfo computes them as 1.1.1's OPENSSL_cpuid_setup
 * does: the CPU's own bits, then the OPENSSL_ia32cap / OPENSSL_armcap mask of the
 * environment (crypto/cryptlib.c, crypto/armcap.c). */
#include "abi.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

enum { RAW_PUT_ERROR };

/* void ERR_put_error(int lib, int func, int reason, const char *file, int line); 1.1.1 has
 * function codes where 3.x has names: 0 is "no function" (ERR_PUT_error's own default). */
typedef void (*put_error_fn)(int lib, int func, int reason, const char *file, int line);

static void put_error111(const struct tlsm_abi *a, int lib, int reason, const char *file, int line,
                         const char *func)
{
    put_error_fn put = (put_error_fn)a->raw[RAW_PUT_ERROR];
    (void)func;
    /* 1.1.1 packs reasons into 12 bits (ERR_PACK): a wider 3.x reason would alias. */
    if (put)
        put(lib & 0xff, 0, reason & 0xfff, file, line);
}

#if defined(__x86_64__)
/* OPENSSL_ia32_cpuid's words: [0] CPUID.1 EDX | ECX << 32 (XOP from 0x80000001 ECX bit 11 in
 * bit 43), [1] CPUID.7 EBX | ECX << 32; AVX and AVX-512 bits cleared when the OS does not
 * save their registers (XCR0), as x86_64cpuid.pl does. */
static void cpu_words(uint64_t w[2])
{
    unsigned a, b, c, d, max = __get_cpuid_max(0, NULL);
    w[0] = w[1] = 0;
    if (max < 1 || !__get_cpuid(1, &a, &b, &c, &d))
        return;
    w[0] = d | (uint64_t)c << 32;
    unsigned xa, xb, xc, xd;
    if (__get_cpuid(0x80000001, &xa, &xb, &xc, &xd) && (xc & (1u << 11)))
        w[0] |= 1ull << 43;
    if (max >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        w[1] = b | (uint64_t)c << 32;
    }
    uint64_t xcr0 = 0;
    if (w[0] & (1ull << 59)) { /* OSXSAVE */
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = lo | (uint64_t)hi << 32;
    }
    if ((xcr0 & 6) != 6) { /* no YMM state: AVX, FMA, XOP, AVX2 */
        w[0] &= ~(1ull << 60 | 1ull << 44 | 1ull << 43);
        w[1] &= ~(1ull << 5);
    }
    if ((xcr0 & 0xe0) != 0xe0) /* no ZMM state: AVX-512F, IFMA, VL */
        w[1] &= ~(1ull << 16 | 1ull << 21 | 1ull << 31);
}

/* "~X" clears X from the CPU's word, "X" replaces it; the second word likewise after ':',
 * and is 0 when the variable has no ':' part (cryptlib.c OPENSSL_cpuid_setup). */
static void apply_mask(const char *env, uint64_t w[2])
{
    int inv = env[0] == '~';
    if (env[0] != ':') {
        uint64_t v = strtoull(env + inv, NULL, 0);
        w[0] = inv ? w[0] & ~v : v;
    }
    const char *x = strchr(env, ':');
    if (!x) {
        w[1] = 0;
        return;
    }
    inv = x[1] == '~';
    uint64_t v = strtoull(x + 1 + inv, NULL, 0);
    w[1] = inv ? w[1] & ~v : v;
}

static void cpuinfo111(const struct tlsm_abi *a, char *buf, size_t cap)
{
    uint64_t w[2];
    const char *env = getenv("OPENSSL_ia32cap");
    cpu_words(w);
    if (env)
        apply_mask(env, w);
    w[0] |= 1u << 10; /* the copy's own marker bit, set after the mask */
    snprintf(buf, cap, "OPENSSL_ia32cap=0x%llx:0x%llx (1.1.1: from CPUID%s)",
             (unsigned long long)w[0], (unsigned long long)w[1], env ? " and env" : "");
}
#elif defined(__aarch64__)
/* armcap.c: the variable replaces everything; else NEON (ASIMD) and, with it, the crypto
 * extensions from AT_HWCAP. Bits as arm_arch.h: NEON 0, AES 2, SHA1 3, SHA256 4, PMULL 5,
 * SHA512 6. */
static void cpuinfo111(const struct tlsm_abi *a, char *buf, size_t cap)
{
    const char *env = getenv("OPENSSL_armcap");
    unsigned long cap_bits = 0, hw = getauxval(AT_HWCAP);
    if (env)
        cap_bits = strtoul(env, NULL, 0);
    else if (hw & (1ul << 1)) { /* HWCAP_ASIMD */
        cap_bits = 1;
        cap_bits |= hw & (1ul << 3) ? 1ul << 2 : 0;  /* AES */
        cap_bits |= hw & (1ul << 4) ? 1ul << 5 : 0;  /* PMULL */
        cap_bits |= hw & (1ul << 5) ? 1ul << 3 : 0;  /* SHA1 */
        cap_bits |= hw & (1ul << 6) ? 1ul << 4 : 0;  /* SHA2 */
        cap_bits |= hw & (1ul << 21) ? 1ul << 6 : 0; /* SHA512 */
    }
    snprintf(buf, cap, "OPENSSL_armcap=0x%lx (1.1.1: from AT_HWCAP%s)", cap_bits,
             env ? " and env" : "");
}
#else
static void cpuinfo111(const struct tlsm_abi *a, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", "");
}
#endif

/* e_aes.c aes_gcm_tls_cipher / aes_ccm_tls_cipher: decryption returns the plaintext length,
 * encryption the whole record (nonce, ciphertext, tag); e_chacha20_poly1305.c (no explicit
 * nonce) returns the whole record both ways (tests/unit/evp/ossl111-tls12-*). */
static int tls_cipher_ret111(int in_len, int eiv, bool enc)
{
    return enc || !eiv ? in_len : in_len - eiv - 16;
}

#define ENTRY(field, name) a->field = (__typeof__(a->field))lookup(h, name)

void tlsm_abi_load_ossl111(struct tlsm_abi *a, void *h, tlsm_abi_lookup_fn lookup)
{
    /* Same names and prototypes as in 3.x. */
    ENTRY(ssl_version, "SSL_get_version");
    ENTRY(ssl_current_cipher, "SSL_get_current_cipher");
    ENTRY(ssl_cipher_name, "SSL_CIPHER_get_name");
    ENTRY(ssl_is_server, "SSL_is_server");
    ENTRY(ssl_error, "SSL_get_error");
    ENTRY(ssl_init_finished, "SSL_is_init_finished");
    ENTRY(version_text, "OpenSSL_version");
    /* 1.1.1's own: int EVP_CIPHER_nid(const EVP_CIPHER *);
     * const EVP_CIPHER *EVP_CIPHER_CTX_cipher(const EVP_CIPHER_CTX *);
     * int EVP_CIPHER_CTX_encrypting(const EVP_CIPHER_CTX *). */
    ENTRY(cipher_nid, "EVP_CIPHER_nid");
    ENTRY(ctx_cipher, "EVP_CIPHER_CTX_cipher");
    ENTRY(ctx_encrypting, "EVP_CIPHER_CTX_encrypting");
    a->raw[RAW_PUT_ERROR] = (void (*)(void))lookup(h, "ERR_put_error");
    a->put_error = put_error111;
    a->cpuinfo = cpuinfo111;
    a->tls_cipher_ret = tls_cipher_ret111;
    a->ssl_ktls_recv = NULL; /* kTLS came with 3.0 */
}
