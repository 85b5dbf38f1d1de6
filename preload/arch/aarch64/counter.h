/* counter.h (aarch64): the virtual counter CNTVCT_EL0, read inline on the hot path (after an
 * ISB, so it is not read early), and the names and masks that are aarch64's. Included through
 * arch/arch.h only. */
#ifndef TLSM_ARCH_COUNTER_H
#define TLSM_ARCH_COUNTER_H

#include <stdint.h>

#define TLSM_ARCH_NAME    "aarch64"
#define TLSM_ARCH_TRIPLET "aarch64-linux-gnu"
#define TLSM_ARCH_IS_ARM  1
#define TLSM_ARCH_CLOCK   "cntvct"
/* OPENSSL_armcap=0: no NEON, no AES, no PMULL: the table AES + 4-bit GHASH path. */
#define TLSM_ARCH_SOFT_MASK "OPENSSL_armcap=0"

static inline uint64_t tlsm_arch_cycles(void)
{
    uint64_t v;
    __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v) : : "memory");
    return v;
}

#endif
