/* counter.h (x86_64): the time-stamp counter, read inline on the hot path, and the names and
 * masks that are x86_64's. Included through arch/arch.h only. */
#ifndef TLSM_ARCH_COUNTER_H
#define TLSM_ARCH_COUNTER_H

#include <stdint.h>

#define TLSM_ARCH_NAME    "x86_64"
#define TLSM_ARCH_TRIPLET "x86_64-linux-gnu"
#define TLSM_ARCH_IS_ARM  0
#define TLSM_ARCH_CLOCK   "tsc"
/* The soft backend's mask, the same as scripts/tlsmeter-mask.sh's (which says what each bit
 * is): AES-NI, PCLMULQDQ, SSSE3 and, in the second word, VAES and VPCLMULQDQ off (3.5 runs
 * its VAES/AVX-512 GCM kernel whatever the AES-NI bit says); AVX2 and AVX-512 kept, so
 * ChaCha20 is not slowed by the AES what-if. The empty third to fifth words keep 3.5 from
 * zeroing them. tests/cases/mask-software.sh checks the two agree. */
#define TLSM_ARCH_SOFT_MASK "OPENSSL_ia32cap=~0x200020200000000:~0x60000000000:~0x0:~0x0:~0x0"

static inline uint64_t tlsm_arch_cycles(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

#endif
