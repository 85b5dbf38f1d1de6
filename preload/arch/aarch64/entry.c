/* entry.c (aarch64): relocate a function's first instruction for entry patching (
 * forward/entry.c). One instruction is overwritten (b imm26 to a stub within 128 MiB). A
 * leading BTI landing pad stays where it is (an indirect call must still land on it) and the
 * instruction after it is the one moved. PC-relative instructions (adr/adrp, b/bl, b.cond,
 * cbz/cbnz, tbz/tbnz, ldr literal) are refused: a prologue starting with one is a blind spot. */
#include "arch/arch.h"

#include <stdio.h>
#include <string.h>

static bool pc_relative(uint32_t w)
{
    return (w & 0x1f000000) == 0x10000000     /* adr, adrp */
           || (w & 0x7c000000) == 0x14000000  /* b, bl */
           || (w & 0xff000010) == 0x54000000  /* b.cond */
           || (w & 0x7e000000) == 0x34000000  /* cbz, cbnz */
           || (w & 0x7e000000) == 0x36000000  /* tbz, tbnz */
           || (w & 0x3b000000) == 0x18000000; /* ldr (literal), ldrsw, prfm */
}

size_t tlsm_arch_relocate(const uint8_t *fn, uint8_t *tramp, size_t cap, bool one, size_t *skip,
                          size_t *copied, char *why, size_t whycap)
{
    uint32_t w;
    (void)one; /* always one instruction here */
    memcpy(&w, fn, 4);
    *skip = 0;
    if ((w & 0xffffff3f) == 0xd503241f) { /* bti {c, j, jc} */
        *skip = 4;
        memcpy(&w, fn + 4, 4);
    }
    if (cap < 8)
        return snprintf(why, whycap, "no room"), 0;
    if (pc_relative(w) || w == 0xd65f03c0 /* ret */) {
        snprintf(why, whycap, "first instruction %08x is PC-relative or a return", w);
        return 0;
    }
    memcpy(tramp, &w, 4);
    tlsm_arch_near_branch((uintptr_t)tramp + 4, (uintptr_t)fn + *skip + 4, tramp + 4);
    *copied = 4;
    return 8;
}

/* An aligned 32-bit store is single-copy atomic for instruction fetch too (the branch and
 * the instruction it replaces are each one word). */
bool tlsm_arch_store_code(uint8_t *at, const uint8_t *bytes, size_t len)
{
    uint32_t w;
    if (len != 4 || ((uintptr_t)at & 3))
        return false;
    memcpy(&w, bytes, 4);
    __atomic_store_n((uint32_t *)at, w, __ATOMIC_RELEASE);
    return true;
}

void tlsm_arch_near_branch(uintptr_t from, uintptr_t to, uint8_t *buf)
{
    uint32_t b = 0x14000000u | ((uint32_t)(((intptr_t)to - (intptr_t)from) >> 2) & 0x03ffffffu);
    memcpy(buf, &b, 4);
}

void tlsm_arch_far_jump(uintptr_t to, uint8_t *buf)
{
    static const uint32_t code[2] = {0x58000050u /* ldr x16, #8 */, 0xd61f0200u /* br x16 */};
    memcpy(buf, code, 8);
    memcpy(buf + 8, &to, 8);
}
