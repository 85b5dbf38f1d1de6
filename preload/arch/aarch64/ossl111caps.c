/* ossl111caps.c (aarch64): the capability word an OpenSSL 1.1.1 copy runs with, computed as
 * its OPENSSL_cpuid_setup does (crypto/armcap.c): 1.1.1 has no OPENSSL_CPU_INFO text and does
 * not export OPENSSL_armcap_P. Written in 3.x's CPU_INFO form so base/caps.c decodes both. */
#include "arch/arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

/* armcap.c: the variable replaces everything; else NEON (ASIMD) and, with it, the crypto
 * extensions from AT_HWCAP. Bits as arm_arch.h: NEON 0, AES 2, SHA1 3, SHA256 4, PMULL 5,
 * SHA512 6. */
void tlsm_arch_ossl111_cpuinfo(char *buf, size_t cap)
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
