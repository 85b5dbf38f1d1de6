/* entry.c: entry patching (entry.h). Per patched function, in a page tlsmeter maps near it
 * (within the reach of a near branch): a far jump to the hook, then the trampoline (the moved
 * instructions, relocated, and a jump back). The function's first bytes become a near branch
 * to the far jump. The page is written while still writable, then made read-and-execute (a
 * refusal refuses the patch); the function's page is made writable only for the store and
 * given its protection back (a refusal undoes the store). When other threads exist, exactly
 * one instruction is replaced, by one atomic store, and every core is synchronised. */
#include "forward/entry.h"
#include "arch/arch.h"
#include "base/glibc_compat.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_ENTRIES 32
#define SLOT        64 /* bytes per patched function in its page: far jump + trampoline */

/* One patched function: its address, its trampoline in a page of its own, and the load of
 * the object it is in (a copy loaded later may be unloaded: its entry is then forgotten and
 * reused). fn and tramp are read without a lock; they change under patch_lock, tramp
 * cleared first. */
struct entry {
    _Atomic uintptr_t fn, tramp;
    uint8_t *page;
    const struct link_map *lm;
    uintptr_t start, end;
};
static struct entry entries[MAX_ENTRIES];
static _Atomic int nentries;

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

/* A fresh page near fn for its far jump and trampoline: a page is written only before its
 * one trampoline is published (making a live trampoline's page writable again would take
 * its execute right away from a thread running it). */
static uint8_t *slot_near(uintptr_t fn)
{
    return map_near(fn);
}

/* Other threads than this one? From /proc (no /proc: assume so). At start, threads may
 * exist already: a DT_NEEDED library's constructor runs before ours and may start one. */
static bool other_threads(void)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return true;
    buf[n] = 0;
    const char *t = strstr(buf, "\nThreads:");
    return !t || strtol(t + 9, NULL, 10) != 1;
}

/* Every other thread of the process serialises its instruction stream before it runs on
 * (membarrier's SYNC_CORE): none keeps executing bytes it fetched before the store. */
static bool sync_cores(void)
{
    static int registered; /* 1 yes, -1 refused */
    if (!registered)
        registered =
            syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0
                ? 1
                : -1;
    return registered > 0 &&
           syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0;
}

/* The protection of the page holding code address at, as the loader set it (its PT_LOAD). */
struct prot_find {
    uintptr_t at;
    int prot;
};

static int prot_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct prot_find *f = arg;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && f->at >= lo && f->at < lo + ph->p_memsz) {
            f->prot = ((ph->p_flags & PF_R) ? PROT_READ : 0) |
                      ((ph->p_flags & PF_W) ? PROT_WRITE : 0) |
                      ((ph->p_flags & PF_X) ? PROT_EXEC : 0);
            return 1;
        }
    }
    return 0;
}

/* Write the patch at `at`: its page made writable (and kept executable: other code on it
 * may be running) for the store, then given back the protection it had. With other threads
 * the store is one atomic word and every core is synchronised after it. When the page cannot
 * be given its protection back, the original bytes are put back and the patch refused. */
static bool write_code(uintptr_t at, const uint8_t *bytes, size_t len, bool threads, char *why,
                       size_t whycap)
{
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE), lo = at & ~(ps - 1);
    size_t span = ((at + len + ps - 1) & ~(ps - 1)) - lo;
    struct prot_find pf = {at, -1};
    uint8_t old[32];
    dl_iterate_phdr(prot_cb, &pf);
    if (pf.prot < 0 || !(pf.prot & PROT_EXEC) || len > sizeof(old))
        return snprintf(why, whycap, "its code is in no executable segment"), false;
    if (threads && !sync_cores())
        return snprintf(why, whycap,
                        "other threads are running and membarrier cannot synchronise them (%s)",
                        strerror(errno)),
               false;
    if (mprotect((void *)lo, span, pf.prot | PROT_WRITE | PROT_EXEC) != 0)
        return snprintf(why, whycap, "its code cannot be made writable (%s)", strerror(errno)),
               false;
    memcpy(old, (void *)at, len);
    bool stored = true;
    if (threads)
        stored = tlsm_arch_store_code((uint8_t *)at, bytes, len);
    else
        memcpy((void *)at, bytes, len);
    if (stored)
        __builtin___clear_cache((char *)at, (char *)(at + len));
    if (stored && threads)
        sync_cores();
    if (mprotect((void *)lo, span, pf.prot) == 0) {
        if (!stored)
            snprintf(why, whycap, "its first instruction straddles an aligned 16-byte word");
        return stored;
    }
    int err = errno;
    if (stored) {
        if (threads)
            tlsm_arch_store_code((uint8_t *)at, old, len);
        else
            memcpy((void *)at, old, len);
        __builtin___clear_cache((char *)at, (char *)(at + len));
        if (threads)
            sync_cores();
    }
    bool back = mprotect((void *)lo, span, pf.prot) == 0;
    snprintf(why, whycap, "its code page cannot be made %s again (%s)%s",
             (pf.prot & PROT_WRITE) ? "writable" : "read-only", strerror(err),
             back ? "" : ": left writable");
    return false;
}

/* The page slot_near just mapped goes back: nothing was published in it. */
static void unmap_last(uint8_t *p)
{
    munmap(p, (size_t)sysconf(_SC_PAGESIZE));
}

/* A free entry (forgotten, or never used), under patch_lock; NULL when all are in use. */
static struct entry *free_entry(void)
{
    int n = atomic_load(&nentries);
    for (int i = 0; i < n; i++)
        if (!atomic_load(&entries[i].fn) && !atomic_load(&entries[i].tramp) && !entries[i].page)
            return &entries[i];
    if (n == MAX_ENTRIES)
        return NULL;
    atomic_store_explicit(&nentries, n + 1, memory_order_release);
    return &entries[n];
}

/* Patches are made one at a time: at start, and later from the thread whose dlopen loaded a
 * copy while others run. No loader call happens under this lock (dl_iterate_phdr only, whose
 * callbacks take no tlsmeter lock). */
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static bool patch_locked(void *fn, void *hook, char *why, size_t whycap);

bool tlsm_entry_patch(void *fn, void *hook, char *why, size_t whycap)
{
    pthread_mutex_lock(&patch_lock);
    bool ok = patch_locked(fn, hook, why, whycap);
    pthread_mutex_unlock(&patch_lock);
    return ok;
}

static bool patch_locked(void *fn, void *hook, char *why, size_t whycap)
{
    uintptr_t f = (uintptr_t)fn;
    size_t ps = (size_t)sysconf(_SC_PAGESIZE), skip = 0, copied = 0;
    struct dl_find_object fo;
    if (tlsm_entry_original(fn))
        return snprintf(why, whycap, "patched already"), false;
    if (_dl_find_object(fn, &fo) != 0)
        return snprintf(why, whycap, "in no loaded object"), false;
    struct entry *e = free_entry();
    if (!e)
        return snprintf(why, whycap, "all %d entry patches are in use", MAX_ENTRIES), false;
    bool threads = other_threads();
    uint8_t *s = slot_near(f);
    if (!s)
        return snprintf(why, whycap, "no free page within reach of it"), false;
    tlsm_arch_far_jump((uintptr_t)hook, s);
    uint8_t *tramp = s + TLSM_ARCH_FAR_LEN;
    size_t n = tlsm_arch_relocate(fn, tramp, SLOT - TLSM_ARCH_FAR_LEN, threads, &skip, &copied, why,
                                  whycap);
    if (!n)
        return unmap_last(s), false;
    if (mprotect(s, ps, PROT_READ | PROT_EXEC) != 0) {
        snprintf(why, whycap, "its trampoline cannot be made executable (%s)", strerror(errno));
        return unmap_last(s), false;
    }
    __builtin___clear_cache((char *)s, (char *)s + SLOT);
    /* The patch: a near branch to the far jump. Without other threads, the rest of the moved
     * bytes become traps; with them, only the branch's bytes change (one instruction was
     * moved and no thread can be inside it). */
    uint8_t patch[32];
    memcpy(patch, (const uint8_t *)f + skip, sizeof(patch));
    if (!threads)
        memset(patch, TLSM_ARCH_PATCH_LEN == 5 ? 0xcc : 0, sizeof(patch));
    tlsm_arch_near_branch(f + skip, (uintptr_t)s, patch);
    e->page = s;
    e->lm = fo.dlfo_link_map;
    e->start = (uintptr_t)fo.dlfo_map_start;
    e->end = (uintptr_t)fo.dlfo_map_end;
    atomic_store_explicit(&e->fn, f, memory_order_release);
    /* Published before the store: a call may arrive the moment the branch is in place. */
    atomic_store_explicit(&e->tramp, (uintptr_t)tramp, memory_order_release);
    if (!write_code(f + skip, patch, threads ? TLSM_ARCH_PATCH_LEN : copied, threads, why,
                    whycap)) {
        /* Its page stays mapped: the jump may have been in place for a moment. */
        atomic_store(&e->tramp, 0);
        return false;
    }
    /* With a BTI or endbr64 kept in place, the trampoline goes past it too (fn+skip is what it
     * moved): an indirect call lands on it, falls into the branch; callers of the original via
     * tlsm_entry_original start at the landing pad, which is harmless. */
    return true;
}

void *tlsm_entry_original(const void *fn)
{
    int n = atomic_load_explicit(&nentries, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(&entries[i].fn, memory_order_acquire) == (uintptr_t)fn) {
            uintptr_t t = atomic_load_explicit(&entries[i].tramp, memory_order_acquire);
            if (t && atomic_load_explicit(&entries[i].fn, memory_order_acquire) == (uintptr_t)fn)
                return (void *)t;
        }
    return NULL;
}

/* Is [start, end) still the object lm? */
static bool same_load(const struct entry *e)
{
    struct dl_find_object f;
    return _dl_find_object((void *)e->start, &f) == 0 && f.dlfo_link_map == e->lm &&
           (uintptr_t)f.dlfo_map_start == e->start && (uintptr_t)f.dlfo_map_end == e->end;
}

void tlsm_entry_forget_gone(void)
{
    int n = atomic_load_explicit(&nentries, memory_order_acquire);
    bool gone[MAX_ENTRIES] = {false};
    for (int i = 0; i < n; i++) /* the loader is asked outside patch_lock */
        gone[i] = atomic_load(&entries[i].tramp) && !same_load(&entries[i]);
    pthread_mutex_lock(&patch_lock);
    for (int i = 0; i < n; i++) {
        struct entry *e = &entries[i];
        if (!gone[i] || !atomic_load(&e->tramp))
            continue;
        atomic_store(&e->tramp, 0);
        atomic_store(&e->fn, 0);
        munmap(e->page, (size_t)sysconf(_SC_PAGESIZE));
        e->page = NULL;
    }
    pthread_mutex_unlock(&patch_lock);
}
