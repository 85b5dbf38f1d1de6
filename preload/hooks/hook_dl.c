/* hook_dl.c: the dlopen route (below) and dlclose. dlclose may unload an object whose address range
 * our forwarding cache remembers; a new object could later load there. After each dlclose, forget
 * the answers whose caller or target went away (tlsm_resolve_invalidate). And the object going away
 * may be one whose SSL_* calls bind past the hooks (PHP unloads its RTLD_DEEPBIND extensions before
 * exit): look for those first (blind_calls.c). */
#include "forward/bindpast.h"
#include "forward/blind.h"
#include "forward/got.h"
#include "forward/listing.h"
#include "hooks/late.h"
#include "hooks/reach.h"
#include "forward/entry.h"
#include "hooks/hook.h"
#include "base/elfdyn.h"
#include "trace/config.h"
#include "base/glibc_compat.h"

#include <dlfcn.h>
#include <string.h>

/* Where the exported dlopen (arch/ARCH/dlopen_thunk.c) goes: fn, and when gadget is set, with
 * its return address pointing there (a return instruction in the caller's own object, so
 * glibc still sees the program's caller) and tlsm_dlopen_after run when it returns. */
struct tlsm_dlopen_route {
    void *fn;
    const void *gadget;
};
struct tlsm_dlopen_route tlsm_dlopen_route(const char *file, int mode, const void *ra,
                                           uintptr_t sp);
void tlsm_dlopen_after(void *handle, uintptr_t sp);

/* The program's RTLD_DEEPBIND dlopen of a path, where no return through the caller's own code
 * could be arranged: the caller's identity changes nothing for a path from a caller without
 * DT_RPATH. No tlsmeter lock is held across the real dlopen: its constructors may dlopen
 * again, from this thread or others. */
static void *deepbind_dlopen(const char *file, int mode)
{
    struct tlsm_listing before = {0};
    bool ok = tlsm_listing_take(&before);
    void *h = tlsm_real_dlopen(file, mode);
    int saved = errno;
    tlsm_resolve_bump();
    if (h && ok)
        tlsm_reach_after(h, mode, &before);
    tlsm_listing_free(&before);
    errno = saved;
    return h;
}

/* glibc's dlopen uses its caller's address for a bare name's search path, for $ORIGIN, for
 * the DT_RPATH of the new objects' loader chain and the namespace, so the real dlopen must
 * see the program's caller: through a borrowed return (late.c), after which what it loaded
 * is reached before the program gets the handle. Without one: a RTLD_DEEPBIND dlopen of a
 * path from a caller without DT_RPATH (where the caller changes nothing) goes through
 * deepbind_dlopen; everything else, and tlsmeter's own calls, straight to libc. */
struct tlsm_dlopen_route tlsm_dlopen_route(const char *file, int mode, const void *ra, uintptr_t sp)
{
    struct dl_find_object f;
    struct tlsm_dlopen_route r = {tlsm_real_dlopen_fn(), NULL};
    tlsm_resolve_before_dlopen();
    tlsm_resolve_bump();
    if (tlsm_is_self(ra) || !atomic_load_explicit(&tlsm_active, memory_order_relaxed) ||
        !tlsm_cfg.patch)
        return r;
    r.gadget = tlsm_late_begin(mode, ra, sp);
    if (r.gadget)
        return r;
    if (!(mode & RTLD_DEEPBIND) || !file || !strchr(file, '/') || strchr(file, '$') ||
        (_dl_find_object((void *)ra, &f) == 0 && tlsm_elf_rpath(f.dlfo_link_map)))
        return r;
    r.fn = (void *)deepbind_dlopen;
    return r;
}

void tlsm_dlopen_after(void *handle, uintptr_t sp)
{
    tlsm_late_end(handle, sp);
}

TLSM_EXPORT int dlclose(void *handle)
{
    tlsm_th.calls[TLSM_FN_dlclose]++;
    tlsm_blind_calls_before_dlclose();
    tlsm_resolve_bump();
    int ret = tlsm_real_dlclose(handle);
    int saved = errno;
    if (ret == 0) {
        tlsm_got_after_dlclose();
        tlsm_resolve_invalidate(); /* marks gone objects stale, which the table slots ask */
        tlsm_table_forget_gone();
        tlsm_entry_forget_gone();
        tlsm_bindpast_after_dlclose();
    }
    errno = saved;
    return ret;
}
