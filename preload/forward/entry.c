/* entry.c: entry patching (entry.h). Per patched function, in one page tlsmeter maps near it
 * (within the reach of a near branch): a far jump to the hook, then the trampoline (the moved
 * instructions, relocated, and a jump back). The function's first bytes become a near branch
 * to the far jump. The page is written while still writable, then made read-and-execute; the
 * function's page is made writable only for the store and restored. */
#include "forward/entry.h"
#include "arch/arch.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_ENTRIES 32
#define SLOT        64 /* bytes per patched function in its page: far jump + trampoline */

struct entry {
    uintptr_t fn, tramp;
};
static struct entry entries[MAX_ENTRIES];
static _Atomic int nentries;

/* Pages near some function: one page serves every function within reach of it. */
struct near_page {
    uint8_t *base;
    size_t used;
};
static struct near_page pages[8];
static int npages;

static bool near(uintptr_t a, uintptr_t b)
{
    uintptr_t d = a > b ? a - b : b - a;
    return d + 4096 < TLSM_ARCH_NEAR;
}

/* A free page within reach of fn: first hints below, then above it, 1 MiB apart. */
static uint8_t *map_near(uintptr_t fn)
{
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE), step = 1u << 20;
    for (uintptr_t d = step; d + step < TLSM_ARCH_NEAR; d += step) {
        for (int side = 0; side < 2; side++) {
            uintptr_t at = (side ? fn + d : fn - d) & ~(ps - 1);
            if ((side == 0 && fn < d) || at < 0x10000)
                continue;
            void *p = mmap((void *)at, ps, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            if (p == MAP_FAILED)
                continue;
            if (near((uintptr_t)p, fn))
                return p;
            munmap(p, ps);
        }
    }
    return NULL;
}

static uint8_t *slot_near(uintptr_t fn)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < npages; i++)
        if (pages[i].used + SLOT <= ps && near((uintptr_t)pages[i].base, fn)) {
            mprotect(pages[i].base, ps, PROT_READ | PROT_WRITE);
            return pages[i].base + pages[i].used;
        }
    if (npages == (int)(sizeof(pages) / sizeof(pages[0])))
        return NULL;
    uint8_t *p = map_near(fn);
    if (!p)
        return NULL;
    pages[npages++] = (struct near_page){p, 0};
    return p;
}

static struct near_page *page_of(const uint8_t *p)
{
    for (int i = 0; i < npages; i++)
        if (p >= pages[i].base && p < pages[i].base + (size_t)sysconf(_SC_PAGESIZE))
            return &pages[i];
    return NULL;
}

/* Write len bytes at code address at: its pages writable for the store, then restored. */
static bool write_code(uintptr_t at, const uint8_t *bytes, size_t len)
{
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE), lo = at & ~(ps - 1);
    size_t span = ((at + len + ps - 1) & ~(ps - 1)) - lo;
    if (mprotect((void *)lo, span, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
        return false;
    memcpy((void *)at, bytes, len);
    mprotect((void *)lo, span, PROT_READ | PROT_EXEC);
    __builtin___clear_cache((char *)at, (char *)(at + len));
    return true;
}

bool tlsm_entry_patch(void *fn, void *hook, char *why, size_t whycap)
{
    uintptr_t f = (uintptr_t)fn;
    size_t ps = (size_t)sysconf(_SC_PAGESIZE), skip = 0, copied = 0;
    if (tlsm_entry_original(fn) || atomic_load(&nentries) >= MAX_ENTRIES)
        return snprintf(why, whycap, "patched already or too many patches"), false;
    uint8_t *s = slot_near(f);
    if (!s)
        return snprintf(why, whycap, "no free page within reach of it"), false;
    struct near_page *pg = page_of(s);
    tlsm_arch_far_jump((uintptr_t)hook, s);
    uint8_t *tramp = s + TLSM_ARCH_FAR_LEN;
    size_t n = tlsm_arch_relocate(fn, tramp, SLOT - TLSM_ARCH_FAR_LEN, &skip, &copied, why, whycap);
    if (!n) {
        mprotect(pg->base, ps, PROT_READ | PROT_EXEC);
        return false;
    }
    pg->used += SLOT;
    mprotect(pg->base, ps, PROT_READ | PROT_EXEC);
    __builtin___clear_cache((char *)s, (char *)s + SLOT);
    /* The patch: a near branch to the far jump, the rest of the moved bytes made traps. */
    uint8_t patch[32];
    memset(patch, TLSM_ARCH_PATCH_LEN == 5 ? 0xcc : 0, sizeof(patch));
    tlsm_arch_near_branch(f + skip, (uintptr_t)s, patch);
    int k = atomic_load(&nentries);
    entries[k] = (struct entry){f, (uintptr_t)tramp};
    /* Published before the store: a call may arrive the moment the branch is in place. */
    atomic_store_explicit(&nentries, k + 1, memory_order_release);
    if (!write_code(f + skip, patch, copied)) {
        entries[k].tramp = 0;
        return snprintf(why, whycap, "its code cannot be made writable (%s)", strerror(errno)),
               false;
    }
    /* With a BTI kept in place, the trampoline goes past it too (fn+skip is what it moved):
     * an indirect call lands on the BTI, falls into the branch; callers of the original via
     * tlsm_entry_original start at the BTI, which is harmless. */
    return true;
}

void *tlsm_entry_original(const void *fn)
{
    int n = atomic_load_explicit(&nentries, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (entries[i].fn == (uintptr_t)fn && entries[i].tramp)
            return (void *)entries[i].tramp;
    return NULL;
}
