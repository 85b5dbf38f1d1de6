/* glibc_compat.c: run-time choice between a newer glibc's functions and tlsmeter's own
 * fallbacks, for builds against glibc < 2.35 (see glibc_compat.h). Empty otherwise. */
#include "base/glibc_compat.h"

#ifdef TLSM_GLIBC_COMPAT
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

typedef int (*find_fn)(void *, struct dl_find_object *);
typedef const char *(*errname_fn)(int);

/* Set once by the constructor (no other thread exists yet); until then the fallbacks
 * answer. The running glibc's own versions are asked for by version, so a same-named
 * symbol of another library is never taken. */
static find_fn real_find;
static errname_fn real_errname;
static const unsigned int *real_rseq_size;
static const ptrdiff_t *real_rseq_offset;

__attribute__((constructor)) static void compat_init(void)
{
    __atomic_store_n(&real_find, (find_fn)dlvsym(RTLD_DEFAULT, "_dl_find_object", "GLIBC_2.35"),
                     __ATOMIC_RELEASE);
    __atomic_store_n(&real_errname,
                     (errname_fn)dlvsym(RTLD_DEFAULT, "strerrorname_np", "GLIBC_2.32"),
                     __ATOMIC_RELEASE);
    const ptrdiff_t *off = dlvsym(RTLD_DEFAULT, "__rseq_offset", "GLIBC_2.35");
    const unsigned int *size = dlvsym(RTLD_DEFAULT, "__rseq_size", "GLIBC_2.35");
    if (off && size) {
        __atomic_store_n(&real_rseq_offset, off, __ATOMIC_RELAXED);
        __atomic_store_n(&real_rseq_size, size, __ATOMIC_RELEASE);
    }
}

unsigned int tlsm_compat_rseq_size(void)
{
    const unsigned int *s = __atomic_load_n(&real_rseq_size, __ATOMIC_ACQUIRE);
    return s ? *s : 0;
}

ptrdiff_t tlsm_compat_rseq_offset(void)
{
    const ptrdiff_t *o = __atomic_load_n(&real_rseq_offset, __ATOMIC_ACQUIRE);
    return o ? *o : 0;
}

struct find_arg {
    uintptr_t addr;
    struct dl_find_object *out;
    int found;
};

/* The link_map of the object dl_iterate_phdr describes: glibc hands out l_addr and l_name
 * as they are, so both are matched against the namespace list. Safe here: the callback
 * runs under the loader's write lock, which every list change takes. Objects of other
 * namespaces (dlmopen) are not on this list: not found, as for an unknown address. */
static struct link_map *map_of(const struct dl_phdr_info *info)
{
    for (struct link_map *l = _r_debug.r_map; l; l = l->l_next)
        if (l->l_addr == info->dlpi_addr && l->l_name == info->dlpi_name)
            return l;
    return NULL;
}

/* The object's range as glibc keeps it (l_map_start/l_map_end): from the first PT_LOAD's
 * page to the end of the last one's memory. */
static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct find_arg *a = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0, page = (uintptr_t)sysconf(_SC_PAGESIZE);
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t s = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
        uintptr_t e = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        lo = s < lo ? s : lo;
        hi = e > hi ? e : hi;
    }
    if (a->addr < lo || a->addr >= hi)
        return 0;
    struct link_map *l = map_of(info);
    if (!l)
        return 1; /* the address is this object's, but it is in another namespace */
    memset(a->out, 0, sizeof(*a->out));
    a->out->dlfo_map_start = (void *)lo;
    a->out->dlfo_map_end = (void *)hi;
    a->out->dlfo_link_map = l;
    a->found = 1;
    return 1;
}

/* _dl_find_object's contract: 0 and *out filled when addr lies in a loaded object, else
 * -1. The fallback (the walk; tests/unit/findobj.c holds it against the real one) takes the
 * loader's write lock (dl_iterate_phdr) for a moment; glibc never calls out of the loader while
 * holding it, and tlsmeter's own dl_iterate_phdr callbacks that call this nest it (the lock is
 * recursive). */
int tlsm_compat_find_object_walk(void *addr, struct dl_find_object *out)
{
    struct find_arg a = {(uintptr_t)addr, out, 0};
    dl_iterate_phdr(find_cb, &a);
    return a.found ? 0 : -1;
}

int tlsm_compat_find_object(void *addr, struct dl_find_object *out)
{
    find_fn f = __atomic_load_n(&real_find, __ATOMIC_ACQUIRE);
    return f ? f(addr, out) : tlsm_compat_find_object_walk(addr, out);
}

#define E(name) [name] = #name
static const char *const errno_names[] = {
    E(EPERM),  E(ENOENT),  E(ESRCH),     E(EINTR),        E(EIO),    E(ENXIO), E(E2BIG),
    E(EBADF),  E(EAGAIN),  E(ENOMEM),    E(EACCES),       E(EFAULT), E(EBUSY), E(EEXIST),
    E(ENODEV), E(EINVAL),  E(ENFILE),    E(EMFILE),       E(ENOSPC), E(EROFS), E(ENOSYS),
    E(ELOOP),  E(ENOTSUP), E(EOVERFLOW), E(ENAMETOOLONG), E(EDQUOT), E(EFBIG),
};
#undef E

const char *tlsm_compat_strerrorname(int err)
{
    errname_fn f = __atomic_load_n(&real_errname, __ATOMIC_ACQUIRE);
    if (f)
        return f(err);
    if (err <= 0 || (size_t)err >= sizeof(errno_names) / sizeof(errno_names[0]))
        return NULL;
    return errno_names[err];
}
#endif
