/* latector.c: a plugin whose constructor dlopens the vendor SDK named by LATEDL_VENDOR (a copy
 * loaded inside another library's constructor, while the loader lock is held) and whose
 * destructor closes it. tests/progs/latedl.c reaches the SDK through latector_vendor(). */
#include <dlfcn.h>
#include <stdlib.h>

static void *vendor;

__attribute__((constructor)) static void open_vendor(void)
{
    const char *p = getenv("LATEDL_VENDOR");
    vendor = p ? dlopen(p, RTLD_NOW | RTLD_LOCAL) : NULL;
}

__attribute__((destructor)) static void close_vendor(void)
{
    if (vendor)
        dlclose(vendor);
}

void *latector_vendor(void);
void *latector_vendor(void)
{
    return vendor;
}
