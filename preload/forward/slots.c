/* slots.c: writing one pointer inside a loaded object (a GOT slot, a provider table entry)
 * where the loader may have made the page read-only (RELRO), and rewriting an object's
 * imports of given names (forward/got.c, forward/tables.c, hooks/hook_sock.c). */
#include "forward/got.h"
#include "base/elfdyn.h"
#include "forward/resolve.h"
#include "base/glibc_compat.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

/* The protection the loader left on the page of addr: read-only inside PT_GNU_RELRO (whole
 * pages, as _dl_protect_relro rounds), else its PT_LOAD segment's flags. */
static int page_prot(const ElfW(Phdr) * phdr, int phnum, uintptr_t base, uintptr_t addr)
{
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE), page = addr & ~(ps - 1);
    int prot = -1;
    for (int i = 0; i < phnum; i++) {
        const ElfW(Phdr) *ph = &phdr[i];
        uintptr_t lo = base + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_GNU_RELRO && page >= (lo & ~(ps - 1)) && page < (hi & ~(ps - 1)))
            return PROT_READ;
        if (ph->p_type == PT_LOAD && addr >= lo && addr < hi)
            prot = ((ph->p_flags & PF_R) ? PROT_READ : 0) |
                   ((ph->p_flags & PF_W) ? PROT_WRITE : 0) | ((ph->p_flags & PF_X) ? PROT_EXEC : 0);
    }
    return prot;
}

/* One aligned pointer store (a concurrent caller sees the old or the new target), inside an
 * mprotect of its page when RELRO made it read-only, which is restored after. */
bool tlsm_got_write_ptr(const ElfW(Phdr) * phdr, int phnum, uintptr_t base, uintptr_t addr,
                        uintptr_t val)
{
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE), page = addr & ~(ps - 1);
    int prot = page_prot(phdr, phnum, base, addr);
    if (prot < 0 || (addr & (sizeof(void *) - 1)))
        return false;
    if (!(prot & PROT_WRITE) && mprotect((void *)page, ps, prot | PROT_WRITE) != 0)
        return false;
    __atomic_store_n((uintptr_t *)addr, val, __ATOMIC_RELEASE);
    if (!(prot & PROT_WRITE))
        mprotect((void *)page, ps, prot);
    return true;
}

/* An object's imports of names[] (libc's read, recv...) pointed at
 * repl[]. orig[k] is what they called (a lazy PLT stub is resolved in the object's own scope
 * first, so the loader never rebinds the slot behind us); a slot holding anything else is
 * left alone. */
struct rewrite {
    const struct link_map *lm;
    const ElfW(Phdr) * phdr;
    int phnum;
    uintptr_t start, end;
    void *scope;
    const char *const *names;
    void *const *repl;
    void **orig;
    int done;
};

static void rewrite_slot(int k, uintptr_t slot, uintptr_t value, void *arg)
{
    struct rewrite *r = arg;
    uintptr_t cur = __atomic_load_n((uintptr_t *)slot, __ATOMIC_ACQUIRE);
    if (value || tlsm_is_self((const void *)cur))
        return;
    if (cur >= r->start && cur < r->end) /* lazy: not bound yet */
        cur = r->scope ? (uintptr_t)dlsym(r->scope, r->names[k]) : 0;
    if (!cur || tlsm_is_self((const void *)cur))
        return;
    if (!r->orig[k])
        r->orig[k] = (void *)cur;
    if ((void *)cur == r->orig[k] &&
        tlsm_got_write_ptr(r->phdr, r->phnum, r->lm->l_addr, slot, (uintptr_t)r->repl[k]))
        r->done++;
}

int tlsm_got_rewrite(const struct link_map *lm, const ElfW(Phdr) * phdr, int phnum,
                     const char *const names[], int n, void *const repl[], void *orig[])
{
    struct dl_find_object f;
    if (_dl_find_object((void *)lm->l_ld, &f) != 0)
        return 0;
    struct rewrite r = {
        lm,   phdr, phnum, (uintptr_t)f.dlfo_map_start, (uintptr_t)f.dlfo_map_end, NULL, names,
        repl, orig, 0};
    r.scope =
        tlsm_real_dlopen(lm->l_name && lm->l_name[0] ? lm->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
    tlsm_elf_slots(lm, names, n, rewrite_slot, &r);
    if (r.scope)
        tlsm_real_dlclose(r.scope);
    return r.done;
}
