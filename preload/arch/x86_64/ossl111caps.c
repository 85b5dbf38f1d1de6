/* ossl111caps.c (x86_64): the capability words an OpenSSL 1.1.1 copy runs with, computed as
 * its OPENSSL_cpuid_setup does (crypto/cryptlib.c, crypto/x86_64cpuid.pl): 1.1.1 has no
 * OPENSSL_CPU_INFO text and does not export OPENSSL_ia32cap_P. Written in 3.x's CPU_INFO form
 * so base/caps.c decodes both alike. */
#include "arch/arch.h"

#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void tlsm_arch_ossl111_cpuinfo(char *buf, size_t cap)
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
