/* hook_dl.c: the dlopen route (below) and dlclose. dlclose may unload an object whose address range
 * our forwarding cache remembers; a new object could later load there. After each dlclose, forget
 * the answers whose caller or target went away (tlsm_resolve_invalidate). And the object going away
 * may be one whose SSL_* calls bind past the hooks (PHP unloads its RTLD_DEEPBIND extensions before
 * exit): look for those first (blind_calls.c). */
#include "forward/blind.h"
#include "forward/got.h"
#include "hooks/hook.h"
#include "base/elfdyn.h"
#include "trace/config.h"
#include "base/glibc_compat.h"

#include <dlfcn.h>
#include <string.h>

void *tlsm_dlopen_route(const char *file, int mode, const void *ra);

/* The exported dlopen (arch/ARCH/dlopen_thunk.c) jumps where this says, its caller's return address
 * intact. glibc's dlopen uses that address for a bare name's search path, for $ORIGIN and
 * for the DT_RPATH of the new object's loader chain: those dlopens, every dlopen that is not
 * RTLD_DEEPBIND, and our own go straight to libc. The rest (an absolute or relative path,
 * from a caller without DT_RPATH) load the same through tlsm_got_dlopen, which then rewrites
 * the GOT slots that bind past the hooks (issue 15). */
void *tlsm_dlopen_route(const char *file, int mode, const void *ra)
{
    struct dl_find_object f;
    tlsm_resolve_before_dlopen();
    if (!(mode & RTLD_DEEPBIND) || !file || !strchr(file, '/') || strchr(file, '$') ||
        tlsm_is_self(ra) || !atomic_load_explicit(&tlsm_active, memory_order_relaxed) ||
        !tlsm_cfg.patch ||
        (_dl_find_object((void *)ra, &f) == 0 && tlsm_elf_rpath(f.dlfo_link_map)))
        return tlsm_real_dlopen_fn();
    return (void *)tlsm_got_dlopen;
}

TLSM_EXPORT int dlclose(void *handle)
{
    tlsm_th.calls[TLSM_FN_dlclose]++;
    tlsm_blind_calls_before_dlclose();
    int ret = tlsm_real_dlclose(handle);
    int saved = errno;
    if (ret == 0) {
        tlsm_got_after_dlclose();
        tlsm_resolve_invalidate();
    }
    errno = saved;
    return ret;
}
