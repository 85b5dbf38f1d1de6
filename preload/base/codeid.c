/* codeid.c: identify a code pointer from the code itself (see codeid.h). The function's
 * bounds come from the object's .eh_frame_hdr search table and the FDE it points to; every
 * byte read is checked against the object's PT_LOAD segments, so a wrong pointer costs a
 * "not found", never a fault. The instruction families are matched by the architecture's
 * scanner (arch/$ARCH/cpu.c). */
#include "base/codeid.h"

#include <link.h>
#include <stdio.h>
#include <string.h>

#define MAX_SEGS  16
#define MAX_VISIT 16 /* functions scanned per identification (the pointer and its callees) */
/* OpenSSL 3.5's ossl_aes_gcm_decrypt_avx512 is one function of 330 KiB (unrolled EVEX code):
 * bounded from its FDE like any other. */
#define MAX_FNSIZE (512u << 10)

struct view {
    uintptr_t base;
    struct {
        uintptr_t lo, hi;
        bool x;
    } seg[MAX_SEGS];
    int nseg;
    uintptr_t hdr; /* .eh_frame_hdr, 0 if none */
    const char *name;
};

struct fn {
    uintptr_t start;
    uint32_t size;
};

static bool readable(const struct view *v, uintptr_t a, size_t n, bool exec)
{
    for (int i = 0; i < v->nseg; i++)
        if (a >= v->seg[i].lo && n <= v->seg[i].hi - a && a + n >= a && (!exec || v->seg[i].x))
            return true;
    return false;
}

struct find {
    uintptr_t addr;
    struct view *v;
    bool hit;
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct find *f = arg;
    (void)size;
    bool hit = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + p->p_vaddr;
        if (p->p_type == PT_LOAD && (p->p_flags & PF_X) && f->addr >= lo &&
            f->addr - lo < p->p_memsz)
            hit = true;
    }
    if (!hit)
        return 0;
    struct view *v = f->v;
    memset(v, 0, sizeof(*v));
    v->base = info->dlpi_addr;
    v->name = info->dlpi_name ? info->dlpi_name : "";
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type == PT_GNU_EH_FRAME)
            v->hdr = info->dlpi_addr + p->p_vaddr;
        if (p->p_type != PT_LOAD || v->nseg == MAX_SEGS)
            continue;
        v->seg[v->nseg].lo = info->dlpi_addr + p->p_vaddr;
        v->seg[v->nseg].hi = info->dlpi_addr + p->p_vaddr + p->p_memsz;
        v->seg[v->nseg++].x = p->p_flags & PF_X;
    }
    f->hit = true;
    return 1;
}

static bool rd(const struct view *v, uintptr_t a, void *out, size_t n)
{
    if (!readable(v, a, n, false))
        return false;
    memcpy(out, (const void *)a, n);
    return true;
}

/* A DW_EH_PE-encoded value at *p (advanced past it). apply=false: the format only (pc_range). */
static bool read_enc(const struct view *v, uintptr_t *p, uint8_t enc, uintptr_t datarel, bool apply,
                     uintptr_t *out)
{
    uintptr_t at = *p;
    int64_t val;
    int32_t s4;
    uint32_t u4;
    int16_t s2;
    uint16_t u2;
    size_t n;
    switch (enc & 0x0f) {
    case 0x00:
    case 0x04:
    case 0x0c: /* absptr, udata8, sdata8 */
        n = 8;
        if (!rd(v, at, &val, 8))
            return false;
        break;
    case 0x03:
        n = 4;
        if (!rd(v, at, &u4, 4))
            return false;
        val = u4;
        break;
    case 0x0b:
        n = 4;
        if (!rd(v, at, &s4, 4))
            return false;
        val = s4;
        break;
    case 0x02:
        n = 2;
        if (!rd(v, at, &u2, 2))
            return false;
        val = u2;
        break;
    case 0x0a:
        n = 2;
        if (!rd(v, at, &s2, 2))
            return false;
        val = s2;
        break;
    default:
        return false; /* leb128 pointers: not emitted by the toolchains we meet */
    }
    *p = at + n;
    if (!apply) {
        *out = (uintptr_t)val;
        return true;
    }
    if (enc & 0x80) /* indirect */
        return false;
    switch (enc & 0x70) {
    case 0x00:
        *out = (uintptr_t)val;
        return true;
    case 0x10:
        *out = at + (uintptr_t)val;
        return true;
    case 0x30:
        *out = datarel + (uintptr_t)val;
        return true;
    default:
        return false;
    }
}

static bool uleb(const struct view *v, uintptr_t *p, uint64_t *out)
{
    uint64_t r = 0;
    for (int sh = 0; sh < 64; sh += 7) {
        uint8_t b;
        if (!rd(v, (*p)++, &b, 1))
            return false;
        r |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80))
            return *out = r, true;
    }
    return false;
}

/* The pointer encoding of FDEs under the CIE at cie ('R' augmentation; absptr if none). */
static bool cie_fde_enc(const struct view *v, uintptr_t cie, uint8_t *enc)
{
    uint32_t len, id;
    uint8_t ver, b;
    char aug[8];
    uint64_t skip;
    uintptr_t p = cie;
    if (!rd(v, p, &len, 4) || len == 0xffffffffu || !rd(v, p + 4, &id, 4) || id != 0 ||
        !rd(v, p + 8, &ver, 1))
        return false;
    p += 9;
    size_t n = 0;
    do {
        if (n == sizeof(aug) || !rd(v, p++, &aug[n], 1))
            return false;
    } while (aug[n++]);
    *enc = 0;
    if (aug[0] != 'z')
        return aug[0] == 0;
    if (!uleb(v, &p, &skip) || !uleb(v, &p, &skip)) /* code and data alignment */
        return false;
    if (ver == 1 ? !rd(v, p++, &b, 1) : !uleb(v, &p, &skip)) /* return register */
        return false;
    if (!uleb(v, &p, &skip))
        return false;
    for (const char *a = aug + 1; *a; a++) {
        uintptr_t dummy;
        if (*a == 'R')
            return rd(v, p, enc, 1);
        if (*a == 'L' && !rd(v, p++, &b, 1))
            return false;
        if (*a == 'P' && (!rd(v, p++, &b, 1) || !read_enc(v, &p, b, 0, false, &dummy)))
            return false;
        if (*a != 'L' && *a != 'P' && *a != 'S' && *a != 'B' && *a != 'G')
            return false;
    }
    return true;
}

static bool fde_range(const struct view *v, uintptr_t fde, struct fn *out)
{
    uint32_t len, cie_off;
    uint8_t enc;
    uintptr_t p = fde + 8, start, range;
    if (!rd(v, fde, &len, 4) || len == 0xffffffffu || len < 8 || !rd(v, fde + 4, &cie_off, 4) ||
        !cie_off || !cie_fde_enc(v, fde + 4 - cie_off, &enc))
        return false;
    if (!read_enc(v, &p, enc, 0, true, &start) || !read_enc(v, &p, enc & 0x0f, 0, false, &range))
        return false;
    if (!range || range > MAX_FNSIZE || !readable(v, start, range, true))
        return false;
    out->start = start;
    out->size = (uint32_t)range;
    return true;
}

/* The function containing pc, from the binary search table of .eh_frame_hdr. */
static bool fn_of(const struct view *v, uintptr_t pc, struct fn *out)
{
    uint8_t h[4];
    uintptr_t p = v->hdr + 4, ehf, count;
    if (!v->hdr || !rd(v, v->hdr, h, 4) || h[0] != 1 || h[3] != 0x3b) /* datarel|sdata4 */
        return false;
    if (!read_enc(v, &p, h[1], v->hdr, true, &ehf) || !read_enc(v, &p, h[2], v->hdr, true, &count))
        return false;
    if (!count || !readable(v, p, count * 8, false))
        return false;
    const int32_t *tab = (const int32_t *)p;
    size_t lo = 0, hi = count;
    while (hi - lo > 1) { /* last entry with initial_loc <= pc */
        size_t mid = lo + (hi - lo) / 2;
        if (v->hdr + (intptr_t)tab[2 * mid] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    if (v->hdr + (intptr_t)tab[2 * lo] > pc ||
        !fde_range(v, v->hdr + (intptr_t)tab[2 * lo + 1], out))
        return false;
    return pc >= out->start && pc - out->start < out->size;
}

/* Without an FDE (perlasm's arm flavours emit no CFI), the architecture may bound a function
 * by its first return instead (arch/aarch64/cpu.c). */
static bool ret_bounded(const struct view *v, uintptr_t pc, struct fn *out)
{
    /* The readable code from pc on, at most 4 KiB, from the segment bounds: one pass, where
     * a readable() call per word was 3 M instructions of a curl download on x86_64 (whose
     * scanner bounds nothing this way and returns at once). */
    uint32_t max = 0;
    for (int i = 0; i < v->nseg && !max; i++)
        if (v->seg[i].x && pc >= v->seg[i].lo && pc < v->seg[i].hi)
            max = (uint32_t)((v->seg[i].hi - pc < 4096 ? v->seg[i].hi - pc : 4096) & ~(uintptr_t)3);
    uint32_t n = tlsm_arch_to_ret(pc, max);
    if (!n)
        return false;
    out->start = pc;
    out->size = n;
    return true;
}

/* The body of the function entered at (or containing, with an FDE) pc. fde: from its FDE. */
static bool body_of(const struct view *v, uintptr_t pc, struct fn *out, bool *fde)
{
    *fde = fn_of(v, pc, out);
    return *fde || ret_bounded(v, pc, out);
}

struct scan {
    const struct view *v;
    uintptr_t visited[MAX_VISIT];
    int nvisited;
    uint32_t isa;
    int depth; /* of the body being scanned */
};

static void visit(struct scan *s, uintptr_t start, int depth);

/* A direct call or tail jump: followed when it lands on a function start of this object. */
static void follow(struct scan *s, uintptr_t target, int depth)
{
    struct fn f;
    bool fde;
    if (depth >= 2 || s->nvisited == MAX_VISIT || !readable(s->v, target, 1, true))
        return;
    for (int i = 0; i < s->nvisited; i++)
        if (s->visited[i] == target)
            return;
    if (body_of(s->v, target, &f, &fde) && f.start == target)
        visit(s, target, depth + 1);
}

static void branch(void *arg, uintptr_t target);

static void scan_body(struct scan *s, uintptr_t start, uint32_t size, int depth)
{
    s->depth = depth;
    s->isa |= tlsm_arch_scan(start, size, branch, s);
}

static void branch(void *arg, uintptr_t target)
{
    struct scan *s = arg;
    int depth = s->depth;
    follow(s, target, depth);
    s->depth = depth;
}

static void visit(struct scan *s, uintptr_t start, int depth)
{
    struct fn f;
    bool fde;
    if (s->nvisited == MAX_VISIT || !body_of(s->v, start, &f, &fde))
        return;
    s->visited[s->nvisited++] = f.start;
    scan_body(s, f.start, f.size, depth);
}

bool tlsm_code_identify(const void *fn, struct tlsm_code *out)
{
    struct view v;
    struct find f = {(uintptr_t)fn, &v, false};
    memset(out, 0, sizeof(*out));
    if (!fn)
        return false;
    dl_iterate_phdr(find_cb, &f);
    if (!f.hit)
        return false;
    out->found = true;
    out->base = v.base;
    out->off = (uintptr_t)fn - v.base;
    snprintf(out->path, sizeof(out->path), "%s", v.name);
    struct fn body;
    bool fde;
    if (!body_of(&v, (uintptr_t)fn, &body, &fde))
        return true;
    out->bounded = true;
    out->to_ret = !fde;
    out->size = body.size;
    struct scan s = {.v = &v};
    s.visited[s.nvisited++] = body.start;
    scan_body(&s, body.start, body.size, 0);
    out->isa = s.isa;
    out->callees = (uint8_t)(s.nvisited - 1);
    return true;
}

bool tlsm_code_same_object(const void *anchor, const void *p, size_t n, bool exec)
{
    struct view v;
    struct find f = {(uintptr_t)anchor, &v, false};
    if (!anchor || !p)
        return false;
    dl_iterate_phdr(find_cb, &f);
    return f.hit && readable(&v, (uintptr_t)p, n, exec);
}

void tlsm_isa_write(struct tlsm_json *j, uint32_t isa)
{
    static const char *const names[] = {"aes",    "aes-vex",  "clmul",     "clmul-vex",
                                        "pshufb", "aese",     "pmull",     "pmull8",
                                        "tbl",    "aes-evex", "clmul-evex"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (isa & (1u << i))
            tlsm_json_item_safe(j, names[i]);
}
