/* hook_dl.c: dlclose may unload an object whose address range our forwarding cache
 * remembers; a new object could later load there. After each dlclose, forget the answers
 * whose caller or target went away (tlsm_resolve_invalidate). And
 * the object going away may be one whose SSL_* calls bind past the hooks (PHP unloads its
 * RTLD_DEEPBIND extensions before exit): look for those first (blind_calls.c). */
#include "forward/blind.h"
#include "hooks/hook.h"

#include <dlfcn.h>

TLSM_EXPORT int dlclose(void *handle)
{
    tlsm_th.calls[TLSM_FN_dlclose]++;
    tlsm_blind_calls_before_dlclose();
    int ret = tlsm_real_dlclose(handle);
    int saved = errno;
    if (ret == 0)
        tlsm_resolve_invalidate();
    errno = saved;
    return ret;
}
