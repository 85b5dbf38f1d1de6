/* tests/unit/findobj.c: the _dl_find_object fallback of preload/glibc_compat.c (a walk over
 * dl_iterate_phdr) against glibc's own _dl_find_object where the running glibc has it
 * (2.35+), else against dladdr1's link_map. Built against an old glibc (the dist sysroot),
 * run on both: addresses in the program, libc, the loader, a dlopened library, between
 * segments, the vDSO, on the stack and the heap (no object). Prints "ok N addresses" or FAIL lines.
 */
#include "base/glibc_compat.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

static int failed, checked, same;
static int data_here = 1;

typedef int (*find_fn)(void *, struct dl_find_object *);

static void one(const char *what, void *addr, find_fn real)
{
    struct dl_find_object w, r;
    int rw = tlsm_compat_find_object_walk(addr, &w), rr;
    checked++;
    if (real) {
        rr = real(addr, &r);
        /* Same object; the walk's range is the whole object's (first page to last segment
         * end). glibc's own is that too, except for a main program with gaps between its
         * segments, where it may give the segment's (seen: aarch64 under qemu, 2.36). */
        if (rw != rr ||
            (rw == 0 && (w.dlfo_link_map != r.dlfo_link_map ||
                         w.dlfo_map_start > r.dlfo_map_start || w.dlfo_map_end < r.dlfo_map_end))) {
            printf(
                "FAIL findobj %s %p: walk %d [%p,%p) map %p, _dl_find_object %d [%p,%p) map %p\n",
                what, addr, rw, w.dlfo_map_start, w.dlfo_map_end, (void *)w.dlfo_link_map, rr,
                r.dlfo_map_start, r.dlfo_map_end, (void *)r.dlfo_link_map);
            failed++;
        }
        same += rw == 0 && w.dlfo_map_start == r.dlfo_map_start && w.dlfo_map_end == r.dlfo_map_end;
        return;
    }
    Dl_info info;
    struct link_map *lm = NULL;
    rr = dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) ? 0 : -1;
    if (rw != rr ||
        (rw == 0 && (w.dlfo_link_map != lm || (uintptr_t)addr < (uintptr_t)w.dlfo_map_start ||
                     (uintptr_t)addr >= (uintptr_t)w.dlfo_map_end))) {
        printf("FAIL findobj %s %p: walk %d [%p,%p) map %p, dladdr1 %d map %p\n", what, addr, rw,
               w.dlfo_map_start, w.dlfo_map_end, (void *)w.dlfo_link_map, rr, (void *)lm);
        failed++;
    }
    same += rw == 0;
}

int main(int argc, char **argv)
{
    find_fn real = (find_fn)dlvsym(RTLD_DEFAULT, "_dl_find_object", "GLIBC_2.35");
    int local = 0;
    void *heap = malloc(64);
    one("main", (void *)main, real);
    one("data", &data_here, real);
    one("libc printf", (void *)printf, real);
    one("libc malloc", (void *)malloc, real);
    one("libdl dlopen", (void *)dlopen, real);
    one("stack", &local, real);
    one("heap", heap, real);
    one("null", NULL, real);
    if (getauxval(AT_SYSINFO_EHDR))
        one("vdso", (void *)getauxval(AT_SYSINFO_EHDR), real);
    /* A library loaded now (argv[1]: a path), at every page of its range and just past. */
    void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (argc > 1 && !h) {
        printf("FAIL findobj: dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    struct dl_find_object w;
    if (h && tlsm_compat_find_object_walk(dlsym(h, argv[2]), &w) == 0) {
        for (uintptr_t a = (uintptr_t)w.dlfo_map_start; a < (uintptr_t)w.dlfo_map_end; a += 4096)
            one("dlopened page", (void *)a, real);
        one("dlopened last byte", (char *)w.dlfo_map_end - 1, real);
        one("dlopened end", w.dlfo_map_end, real);
        dlclose(h);
    } else if (h) {
        printf("FAIL findobj: %s in %s not found by the walk\n", argv[2], argv[1]);
        failed++;
    }
    free(heap);
    if (!failed)
        printf("ok %d addresses, %d same range (against %s)\n", checked, same,
               real ? "_dl_find_object" : "dladdr1");
    return failed != 0;
}
