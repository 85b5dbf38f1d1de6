/* entry.c (x86_64): relocate a function's first instructions for entry patching (
 * forward/entry.c). A small decoder, not a disassembler library: it knows the lengths of the
 * instructions compilers put at function entry (endbr64, push/pop, the fs-relative stack
 * protector load, mov/lea/test/cmp/ALU forms
 * with a ModRM operand, mov imm, sub/add $imm to a register, short and near conditional
 * branches, call rel32) and refuses everything else, so a prologue it does not know is a
 * blind spot, never a guess. What needs relocating: RIP-relative operands (disp32 adjusted),
 * jcc rel8/rel32 and call rel32 (re-encoded rel32 to the same target). The trampoline lies
 * within 2 GiB of the function (forward/entry.c allocates it so), so every rel32 reaches. */
#include "arch/arch.h"

#include <stdio.h>
#include <string.h>

/* Opcodes with a ModRM operand: 0 = no immediate, 1 = imm8, 4 = imm32 (after ModRM). */
static int modrm_imm(uint8_t op, uint8_t modrm)
{
    switch (op) {
    case 0x01:
    case 0x03:
    case 0x09:
    case 0x0b:
    case 0x11:
    case 0x13:
    case 0x19:
    case 0x1b:
    case 0x21:
    case 0x23:
    case 0x29:
    case 0x2b:
    case 0x31:
    case 0x33:
    case 0x39:
    case 0x3b:
    case 0x63:
    case 0x84:
    case 0x85:
    case 0x88:
    case 0x89:
    case 0x8a:
    case 0x8b:
    case 0x8d:
        return 0;
    case 0x80:
    case 0x83:
    case 0xc6:
    case 0x6b:
    case 0xc1:
        return 1;
    case 0x81:
    case 0xc7:
    case 0x69:
        return 4;
    case 0xf7: /* group 3: test has imm32, not/neg/mul/div none */
        return ((modrm >> 3) & 7) <= 1 ? 4 : 0;
    case 0xff: /* group 5: only push r/m (/6); calls and jumps through memory refused */
        return ((modrm >> 3) & 7) == 6 ? 0 : -1;
    default:
        return -1;
    }
}

struct insn {
    size_t len;
    int rip_disp; /* offset of a RIP-relative disp32, -1 none */
    int rel;      /* 1: jcc rel8, 4: jcc/call rel32 (2-byte opcode for jcc), 0 none */
    intptr_t target;
};

/* One instruction at p: its length and what needs relocating; false if not known. */
static bool decode(const uint8_t *p, struct insn *in, char *why, size_t cap)
{
    size_t i = 0;
    memset(in, 0, sizeof(*in));
    in->rip_disp = -1;
    if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
        return in->len = 4, true; /* endbr64 */
    bool rexw = false;
    /* An fs/gs segment override: the stack-protector load mov %fs:0x28,%rax (64 48 8b 04 25
     * 28 00 00 00) opens most functions built with -fstack-protector; its address is absolute
     * (SIB, no base, no index), so the instruction runs the same anywhere. */
    if (p[0] == 0x64 || p[0] == 0x65)
        i++;
    if ((p[i] & 0xf0) == 0x40) {
        rexw = (p[i] & 8) != 0;
        i++;
    }
    uint8_t op = p[i++];
    bool seg = p[0] == 0x64 || p[0] == 0x65; /* then only ModRM forms (below) are taken */
    if (!seg && ((op >= 0x50 && op <= 0x5f) || op == 0x90))
        return in->len = i, true;
    if (!seg && op >= 0xb8 && op <= 0xbf)
        return in->len = i + (rexw ? 8 : 4), true;
    if (op >= 0x70 && op <= 0x7f && i == 1) {
        in->len = 2, in->rel = 1;
        in->target = (intptr_t)p + 2 + (int8_t)p[1];
        return true;
    }
    if (op == 0xe8 && i == 1) {
        int32_t d;
        memcpy(&d, p + 1, 4);
        in->len = 5, in->rel = 4, in->target = (intptr_t)p + 5 + d;
        return true;
    }
    if (op == 0x0f && i == 1 && p[1] >= 0x80 && p[1] <= 0x8f) {
        int32_t d;
        memcpy(&d, p + 2, 4);
        in->len = 6, in->rel = 4, in->target = (intptr_t)p + 6 + d;
        return true;
    }
    int imm = modrm_imm(op, p[i]);
    if (imm < 0) {
        snprintf(why, cap, "instruction %02x %02x %02x not relocatable", p[0], p[1], p[2]);
        return false;
    }
    uint8_t m = p[i++], mod = m >> 6, rm = m & 7;
    if (mod != 3 && rm == 4) { /* SIB */
        uint8_t base = p[i++] & 7;
        if (mod == 0 && base == 5)
            i += 4;
    }
    if (mod == 0 && rm == 5) {
        in->rip_disp = (int)i;
        i += 4;
    } else if (mod == 1) {
        i += 1;
    } else if (mod == 2) {
        i += 4;
    }
    in->len = i + (size_t)imm;
    return true;
}

static bool fits32(intptr_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

size_t tlsm_arch_relocate(const uint8_t *fn, uint8_t *tramp, size_t cap, bool one, size_t *skip,
                          size_t *copied, char *why, size_t whycap)
{
    size_t in = 0, out = 0;
    *skip = 0;
    if (one && fn[0] == 0xf3 && fn[1] == 0x0f && fn[2] == 0x1e && fn[3] == 0xfa)
        in = *skip = 4; /* endbr64 stays: an indirect call must land on it */
    while (in - *skip < TLSM_ARCH_PATCH_LEN) {
        struct insn d;
        if (!decode(fn + in, &d, why, whycap))
            return 0;
        if (one && in > *skip)
            return snprintf(why, whycap,
                            "its first instruction is %zu bytes, shorter than the 5-byte jump, "
                            "and other threads are running",
                            in - *skip),
                   0;
        if (out + d.len + 6 + 5 > cap)
            return snprintf(why, whycap, "prologue too long"), 0;
        uint8_t *o = tramp + out;
        if (d.rel == 1 || (d.rel == 4 && fn[in] == 0x0f)) { /* jcc: 0f 8x rel32 */
            uint8_t cc = d.rel == 1 ? (uint8_t)(fn[in] & 0x0f) : (uint8_t)(fn[in + 1] & 0x0f);
            intptr_t rel = d.target - (intptr_t)(o + 6);
            if (!fits32(rel))
                return snprintf(why, whycap, "branch target out of reach"), 0;
            int32_t r = (int32_t)rel;
            o[0] = 0x0f, o[1] = (uint8_t)(0x80 | cc);
            memcpy(o + 2, &r, 4);
            out += 6;
        } else if (d.rel == 4) { /* call rel32 */
            intptr_t rel = d.target - (intptr_t)(o + 5);
            if (!fits32(rel))
                return snprintf(why, whycap, "call target out of reach"), 0;
            int32_t r = (int32_t)rel;
            o[0] = 0xe8;
            memcpy(o + 1, &r, 4);
            out += 5;
        } else {
            memcpy(o, fn + in, d.len);
            if (d.rip_disp >= 0) {
                int32_t disp;
                memcpy(&disp, fn + in + d.rip_disp, 4);
                intptr_t nd = (intptr_t)disp + ((intptr_t)(fn + in) - (intptr_t)o);
                if (!fits32(nd))
                    return snprintf(why, whycap, "RIP-relative operand out of reach"), 0;
                int32_t v = (int32_t)nd;
                memcpy(o + d.rip_disp, &v, 4);
            }
            out += d.len;
        }
        in += d.len;
    }
    /* Back to the first instruction not copied. */
    tlsm_arch_near_branch((uintptr_t)(tramp + out), (uintptr_t)(fn + in), tramp + out);
    *copied = in - *skip;
    return out + TLSM_ARCH_PATCH_LEN;
}

/* Aligned 8-byte stores are atomic, and instruction fetch reads whole cache lines: another
 * core sees the old or the new bytes, never a mix. 16-byte windows need lock cmpxchg16b. */
bool tlsm_arch_store_code(uint8_t *at, const uint8_t *bytes, size_t len)
{
    uintptr_t a = (uintptr_t)at;
    if ((a & 7) + len <= 8) {
        uint64_t *w = (uint64_t *)(a & ~(uintptr_t)7), v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
        memcpy((uint8_t *)&v + (a & 7), bytes, len);
        __atomic_store_n(w, v, __ATOMIC_RELEASE);
        return true;
    }
    if ((a & 15) + len > 16)
        return false;
    uint64_t *w = (uint64_t *)(a & ~(uintptr_t)15), old[2], nw[2];
    memcpy(old, w, 16);
    memcpy(nw, old, 16);
    memcpy((uint8_t *)nw + (a & 15), bytes, len);
    bool ok;
    __asm__ volatile("lock cmpxchg16b %1\n\tsete %0"
                     : "=q"(ok), "+m"(*(volatile uint64_t(*)[2])w), "+a"(old[0]), "+d"(old[1])
                     : "b"(nw[0]), "c"(nw[1])
                     : "memory", "cc");
    return ok;
}

void tlsm_arch_near_branch(uintptr_t from, uintptr_t to, uint8_t *buf)
{
    int32_t rel = (int32_t)((intptr_t)to - (intptr_t)(from + 5));
    buf[0] = 0xe9;
    memcpy(buf + 1, &rel, 4);
}

void tlsm_arch_far_jump(uintptr_t to, uint8_t *buf)
{
    static const uint8_t jmp[6] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip) */
    memcpy(buf, jmp, 6);
    memcpy(buf + 6, &to, 8);
}
