/* cpu.c (x86_64): whether the TSC is a clock, and the instruction families of AES/GHASH code
 * matched as fixed byte patterns (legacy SSE, VEX and EVEX encodings of AESENC/AESDEC*,
 * PCLMULQDQ, PSHUFB). No disassembler: the patterns are specific enough for OpenSSL's
 * assembler routines, and the names built on them are checked against real symbols in
 * tests/cases/trust-impl.sh. */
#include "arch/arch.h"

#include <cpuid.h>
#include <string.h>
#include <time.h>

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One TSC reading paired with CLOCK_MONOTONIC: the TSC read between two clock reads, paired
 * with their midpoint; its error is at most half their distance (*width, ns). The narrowest of
 * a few tries, so a preemption between the reads does not count. */
static void pair(uint64_t *c, uint64_t *m, uint64_t *width)
{
    *width = UINT64_MAX;
    for (int i = 0; i < 8 && *width > 200; i++) {
        uint64_t a = mono_ns(), t = tlsm_arch_cycles(), b = mono_ns();
        if (b - a < *width)
            *c = t, *m = a + (b - a) / 2, *width = b - a;
    }
}

/* The TSC is a usable clock only when it is invariant (CPUID 0x80000007 EDX bit 8):
 * constant rate across P-states and not stopped in deep C-states. Its rate is measured
 * against CLOCK_MONOTONIC over 500 us between two bracketed pairs: within 1e-5 of the
 * kernel's TSC rate in six runs here, as the 2 ms spin this replaces, which cost 2 ms of CPU
 * in every traced process. */
bool tlsm_arch_counter_hz(uint64_t *hz)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
        return false;
    __get_cpuid(0x80000007, &a, &b, &c, &d);
    if (!((d >> 8) & 1))
        return false;
    uint64_t c0, m0, w0, c1, m1, w1;
    pair(&c0, &m0, &w0);
    for (uint64_t m = m0; m - m0 < 500000u;)
        m = mono_ns();
    pair(&c1, &m1, &w1);
    if (c1 <= c0 || m1 <= m0)
        return false;
    *hz = (uint64_t)((unsigned __int128)(c1 - c0) * 1000000000u / (m1 - m0));
    return true;
}

/* /proc/cpuinfo's flags are the truth here. */
int tlsm_arch_crypto_hwcaps(const char **names, int max)
{
    (void)names, (void)max;
    return -1;
}

static uint32_t isa_at(const uint8_t *b, size_t i, size_t n)
{
    if (b[i] == 0x66 && i + 4 < n) { /* legacy SSE: 66 [REX] 0F 38|3A op */
        size_t j = i + 1 + (b[i + 1] >= 0x40 && b[i + 1] <= 0x4f);
        if (b[j] == 0x0f && b[j + 1] == 0x38 && b[j + 2] >= 0xdc && b[j + 2] <= 0xdf)
            return TLSM_ISA_AES;
        if (b[j] == 0x0f && b[j + 1] == 0x38 && b[j + 2] == 0x00)
            return TLSM_ISA_PSHUFB;
        if (b[j] == 0x0f && b[j + 1] == 0x3a && b[j + 2] == 0x44)
            return TLSM_ISA_CLMUL;
    }
    uint8_t map = 0, op = 0;
    bool evex = false;
    if (b[i] == 0xc4 && i + 3 < n && (b[i + 2] & 3) == 1) /* VEX3, pp=66 */
        map = b[i + 1] & 0x1f, op = b[i + 3];
    else if (b[i] == 0x62 && i + 4 < n && !(b[i + 1] & 0x0c) && (b[i + 2] & 7) == 5) /* EVEX */
        map = b[i + 1] & 3, op = b[i + 4], evex = true;
    if (map == 2 && op >= 0xdc && op <= 0xdf)
        return TLSM_ISA_AES_VEX | (evex ? TLSM_ISA_AES_EVEX : 0);
    if (map == 2 && op == 0x00)
        return TLSM_ISA_PSHUFB;
    if (map == 3 && op == 0x44)
        return TLSM_ISA_CLMUL_VEX | (evex ? TLSM_ISA_CLMUL_EVEX : 0);
    return 0;
}

/* Every byte offset is tried (no instruction boundaries known); E8/E9 rel32 are calls and
 * jumps. */
uint32_t tlsm_arch_scan(uintptr_t start, uint32_t size, void (*branch)(void *, uintptr_t),
                        void *arg)
{
    const uint8_t *b = (const uint8_t *)start;
    uint32_t isa = 0;
    for (size_t i = 0; i < size; i++) {
        isa |= isa_at(b, i, size);
        if ((b[i] == 0xe8 || b[i] == 0xe9) && i + 5 <= size) {
            int32_t rel;
            memcpy(&rel, b + i + 1, 4);
            branch(arg, start + i + 5 + (intptr_t)rel);
        }
    }
    return isa;
}

/* x86_64 assembler in OpenSSL carries CFI: functions are bounded by their FDEs. */
uint32_t tlsm_arch_to_ret(uintptr_t pc, uint32_t max)
{
    (void)pc, (void)max;
    return 0;
}
