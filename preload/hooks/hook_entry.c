/* hook_entry.c: which copies get their SSL_* entry points patched:
 * those no PLT leads to (the program's own copy: node carries OpenSSL 3 in its executable and
 * calls SSL_read directly; a -Bsymbolic library calling its own), when the copy defines the
 * name in its own dynamic symbols (stripped or hidden copies have none to find: their SSL_*
 * stay a blind spot, their records come through the provider tables). Each entry jumps to the
 * hook of the same name (hooks/hook_ssl.c), which forwards to the trampoline
 * (forward/entry.c, via resolve.c), so reads, connections and their records work as for an
 * interposed libssl. From the constructor; threads a library constructor started may exist
 * already (forward/entry.c then replaces one instruction atomically, or refuses). */
#include "forward/entry.h"
#include "forward/got.h"
#include "forward/marks.h"
#include "forward/obj.h"
#include "forward/tables.h"
#include "hooks/hook.h"
#include "hooks/reach.h"
#include "trace/config.h"
#include "trace/log.h"
#include "base/glibc_compat.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The definition of name in the copy itself, NULL when its dynamic symbols have none. */
static void *own_def(const struct tlsm_table_copy *c, void *h, const char *name)
{
    struct dl_find_object f;
    void *p = h ? dlsym(h, name) : NULL;
    return p && _dl_find_object(p, &f) == 0 && f.dlfo_link_map == c->lm ? p : NULL;
}

static bool holds_record_layer(const struct tlsm_table_copy *c)
{
    struct dl_phdr_info info = {.dlpi_addr = c->lm->l_addr,
                                .dlpi_name = c->lm->l_name,
                                .dlpi_phdr = c->phdr,
                                .dlpi_phnum = (ElfW(Half))c->phnum};
    return tlsm_marks_of(&info).ssl;
}

void tlsm_entry_reach_copy(const struct tlsm_table_copy *c)
{
    const char *path = c->lm->l_name && c->lm->l_name[0] ? c->lm->l_name : NULL;
    void *h = tlsm_real_dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    char why[160], refused[512] = "";
    int done = 0, n = 0;
    bool reads = false; /* SSL_read or SSL_read_ex patched */
    struct tlsm_obj *o = NULL;
    for (int id = 0; id < TLSM_FN_COUNT; id++) {
        if (tlsm_hooks[id].family != 'S')
            continue;
        void *fn = own_def(c, h, tlsm_hooks[id].name), *hook = tlsm_got_self_hook(id);
        if (!fn || !hook)
            continue;
        if (!o)
            o = tlsm_obj_of(fn);
        if (tlsm_entry_patch(fn, hook, why, sizeof(why))) {
            done++;
            reads |= id == TLSM_FN_SSL_read || id == TLSM_FN_SSL_read_ex;
        } else if (n < (int)sizeof(refused) - 80) {
            n += snprintf(refused + n, sizeof(refused) - (size_t)n, "%s%s (%s)", n ? ", " : "",
                          tlsm_hooks[id].name, why);
        }
    }
    if (h)
        tlsm_real_dlclose(h);
    if (done && o)
        atomic_fetch_or(&o->reach, TLSM_REACH_ENTRY);
    /* Its SSL_read cannot be reached: its socket reads through its PLT. Only for a copy that
     * holds libssl's record layer: a libcrypto alone (reached through its tables because it
     * binds to itself first, as Debian's OpenSSL 3.6 does) reads sockets for a libssl whose
     * SSL_read the hooks do see, and counting those reads too would count the bytes twice. */
    if (!reads && holds_record_layer(c))
        tlsm_sock_reach(c);
    if (refused[0])
        tlsm_warn("%s: entry points left alone, their calls are not traced: %s",
                  path ? path : "the program", refused);
}

void tlsm_entry_reach_init(void)
{
    struct tlsm_table_copy copies[8];
    if (!tlsm_cfg.patch)
        return;
    tlsm_th.guard++;
    int n = tlsm_tables_copies(copies, 8);
    for (int i = 0; i < n; i++)
        if (!tlsm_table_refused(copies[i].lm)) /* a shape we do not know: nothing of it */
            tlsm_entry_reach_copy(&copies[i]);
    tlsm_th.guard--;
}
