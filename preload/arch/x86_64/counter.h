/* counter.h (x86_64): the time-stamp counter, read inline on the hot path, and the names and
 * masks that are x86_64's. Included through arch/arch.h only. */
#ifndef TLSM_ARCH_COUNTER_H
#define TLSM_ARCH_COUNTER_H

#include <stdint.h>

#define TLSM_ARCH_NAME    "x86_64"
#define TLSM_ARCH_TRIPLET "x86_64-linux-gnu"
#define TLSM_ARCH_IS_ARM  0
#define TLSM_ARCH_CLOCK   "tsc"
/* AES-NI (bit 57), PCLMULQDQ (33), SSSE3 (41) off; the ":~0x0" keeps the second word
 * (AVX2, VAES, ...) as is, so ChaCha20 is not slowed by the AES what-if. */
#define TLSM_ARCH_SOFT_MASK "OPENSSL_ia32cap=~0x200020200000000:~0x0"

static inline uint64_t tlsm_arch_cycles(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

#endif
