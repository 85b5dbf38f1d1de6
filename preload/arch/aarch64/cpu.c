/* cpu.c (aarch64): the generic timer as a clock, the crypto features from the kernel's
 * hwcaps, and the instruction families of AES/GHASH code matched as fixed-width encodings
 * (AESE/AESD, PMULL/PMULL2 64- and 8-bit, TBL). No disassembler: every word is one
 * instruction; the names built on them are checked against real symbols in
 * tests/cases/trust-impl.sh. */
#include "arch/arch.h"

#include <sys/auxv.h>

bool tlsm_arch_counter_hz(uint64_t *hz)
{
    uint64_t frq;
    __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(frq));
    if (frq < 1000000u)
        return false;
    *hz = frq;
    return true;
}

/* The kernel's hwcaps are the truth (under qemu-user, the emulated CPU's), while
 * /proc/cpuinfo under qemu-user is the host's. */
int tlsm_arch_crypto_hwcaps(const char **names, int max)
{
    static const struct {
        unsigned long bit;
        const char *name;
    } caps[] = {{1ul << 3, "aes"},  {1ul << 4, "pmull"}, {1ul << 5, "sha1"},
                {1ul << 6, "sha2"}, {1ul << 17, "sha3"}, {1ul << 21, "sha512"}};
    unsigned long hw = getauxval(AT_HWCAP);
    int n = 0;
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]) && n < max; i++)
        if (hw & caps[i].bit)
            names[n++] = caps[i].name;
    return n;
}

uint32_t tlsm_arch_scan(uintptr_t start, uint32_t size, void (*branch)(void *, uintptr_t),
                        void *arg)
{
    const uint32_t *w = (const uint32_t *)start;
    uint32_t isa = 0;
    for (size_t i = 0; i < size / 4; i++) {
        uint32_t x = w[i];
        if ((x & 0xffffcc00u) == 0x4e284800u)
            isa |= TLSM_ISA_A64_AES;
        else if ((x & 0xbf20fc00u) == 0x0e20e000u)
            isa |= ((x >> 22) & 3) == 3   ? TLSM_ISA_A64_PMULL
                   : ((x >> 22) & 3) == 0 ? TLSM_ISA_A64_PMULL8
                                          : 0;
        else if ((x & 0xbfe08c00u) == 0x0e000000u)
            isa |= TLSM_ISA_A64_TBL;
        else if ((x & 0x7c000000u) == 0x14000000u) { /* b / bl imm26 */
            int32_t imm = (int32_t)(x << 6) >> 6;
            branch(arg, start + i * 4 + (intptr_t)imm * 4);
        }
    }
    return isa;
}

/* perlasm's arm flavours emit no CFI: a function runs from its entry to the first RET, at
 * most 4 KiB. The entry path holds the routine's main loop in OpenSSL's AES/GHASH code
 * (aes_v8_*, gcm_ghash_v8/neon, vpaes_* reach their cores by BL). */
uint32_t tlsm_arch_to_ret(uintptr_t pc, uint32_t max)
{
    if (pc & 3)
        return 0;
    for (uint32_t n = 0; n + 4 <= max && n < 4096; n += 4)
        if (*(const uint32_t *)(pc + n) == 0xd65f03c0u) /* ret */
            return n + 4;
    return 0;
}
