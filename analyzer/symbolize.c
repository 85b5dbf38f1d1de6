/* symbolize.c: one libdwfl session per object file, reported at base 0 so that a frame's offset
 * from the load base (l_addr) is the address to look up, for a PIE, a shared object and a
 * non-PIE executable (l_addr 0) alike. Frames are return addresses: offset - 1 lands inside the
 * call instruction, hence inside the calling function even when the call is its last one.
 * libdwfl rather than a hand-written ELF reader: it brings separate debug files (by build id and
 * debuglink), MiniDebugInfo (.gnu_debugdata) and compressed sections for free. */
#include "symbolize.h"

#include "util.h"

#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sym_obj {
    char *path, *build_id;
    Dwfl *dwfl;
    Dwfl_Module *mod; /* NULL: unusable */
};

struct symbolizer {
    char *sysroot, *debug_path;
    FILE *warn;
    struct sym_obj *objs;
    size_t nobjs, cap_objs;
    Dwfl_Callbacks cb;
};

struct symbolizer *symbolizer__new(const char *sysroot, FILE *warn)
{
    struct symbolizer *sy = xcalloc(1, sizeof(*sy));
    size_t n;

    sy->sysroot = xstrdup(sysroot ? sysroot : "");
    sy->warn = warn;
    /* Separate debug files: next to the object, in .debug/, then under the (sysroot's)
     * /usr/lib/debug, by build id or by path. */
    n = strlen(sy->sysroot) + 32;
    sy->debug_path = xmalloc(n);
    snprintf(sy->debug_path, n, ":.debug:%s/usr/lib/debug", sy->sysroot);
    sy->cb.find_elf = dwfl_build_id_find_elf;
    sy->cb.find_debuginfo = dwfl_standard_find_debuginfo;
    sy->cb.section_address = dwfl_offline_section_address;
    sy->cb.debuginfo_path = &sy->debug_path;
    return sy;
}

void symbolizer__free(struct symbolizer *sy)
{
    size_t i;

    if (!sy)
        return;
    for (i = 0; i < sy->nobjs; i++) {
        if (sy->objs[i].dwfl)
            dwfl_end(sy->objs[i].dwfl);
        free(sy->objs[i].path), free(sy->objs[i].build_id);
    }
    free(sy->objs), free(sy->sysroot), free(sy->debug_path), free(sy);
}

static void hex(const unsigned char *b, int n, char *out, size_t cap)
{
    int i;

    out[0] = '\0';
    for (i = 0; i < n && (size_t)(2 * i + 2) < cap; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* The build id of mod as hex, "" when it has none. */
static void module_build_id(Dwfl_Module *mod, char *out, size_t cap)
{
    const unsigned char *bits;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);

    hex(bits, n > 0 ? n : 0, out, cap);
}

static Dwfl_Module *report(struct symbolizer *sy, struct sym_obj *o, const char *file)
{
    Dwfl_Module *mod;

    if (!o->dwfl)
        o->dwfl = dwfl_begin(&sy->cb);
    if (!o->dwfl)
        return NULL;
    dwfl_report_begin(o->dwfl);
    mod = dwfl_report_elf(o->dwfl, o->path, file, -1, 0, true);
    dwfl_report_end(o->dwfl, NULL, NULL);
    return mod;
}

/* The debug file named by the build id under the (sysroot's) /usr/lib/debug: it carries the
 * full symbol table at the same addresses, so it stands in for a missing object. */
static void by_build_id(const struct symbolizer *sy, const char *bid, char *out, size_t cap)
{
    snprintf(out, cap, "%s/usr/lib/debug/.build-id/%.2s/%s.debug", sy->sysroot, bid,
             strlen(bid) > 2 ? bid + 2 : "");
}

/* Opens o from file; 1 when its build id is the recorded one (or nothing was recorded). */
static int try_file(struct symbolizer *sy, struct sym_obj *o, const char *file, char *got,
                    size_t cap)
{
    Dwfl_Module *mod;

    got[0] = '\0';
    if (access(file, R_OK) || !(mod = report(sy, o, file)))
        return -1;
    module_build_id(mod, got, cap);
    if (o->build_id[0] && strcasecmp(got, o->build_id))
        return 0;
    o->mod = mod;
    return 1;
}

static void open_obj(struct symbolizer *sy, struct sym_obj *o)
{
    char file[4096], got[130], alt[4096], got_alt[130];
    int rc;

    snprintf(file, sizeof(file), "%s%s", sy->sysroot, o->path);
    rc = try_file(sy, o, file, got, sizeof(got));
    if (rc == 1)
        return;
    if (o->build_id[0]) {
        by_build_id(sy, o->build_id, alt, sizeof(alt));
        if (try_file(sy, o, alt, got_alt, sizeof(got_alt)) == 1)
            return;
    }
    if (!sy->warn)
        return;
    if (rc == 0)
        fprintf(sy->warn,
                "%s: build id %s, the trace recorded %s (another build): its frames are shown "
                "as module+0xoffset\n",
                file, got[0] ? got : "(none)", o->build_id);
    else
        fprintf(sy->warn, "%s: cannot read it: its frames are shown as module+0xoffset%s\n", file,
                sy->sysroot[0] ? "" : " (recorded elsewhere? use --sysroot)");
}

int symbolizer__module(struct symbolizer *sy, const char *path, const char *build_id)
{
    struct sym_obj *o;
    size_t i;

    for (i = 0; i < sy->nobjs; i++)
        if (!strcmp(sy->objs[i].path, path) && !strcasecmp(sy->objs[i].build_id, build_id))
            return sy->objs[i].mod ? (int)i : -1;
    grow_array((void **)&sy->objs, &sy->cap_objs, sy->nobjs, sizeof(*sy->objs));
    o = &sy->objs[sy->nobjs++];
    o->path = xstrdup(path);
    o->build_id = xstrdup(build_id);
    if (path[0] == '/')
        open_obj(sy, o);
    else if (sy->warn)
        fprintf(sy->warn, "%s: not an absolute path: its frames are shown as module+0xoffset\n",
                path);
    return o->mod ? (int)(o - sy->objs) : -1;
}

const char *symbolizer__func(struct symbolizer *sy, int h, uint64_t off)
{
    GElf_Off within;
    GElf_Sym sym;

    if (h < 0 || (size_t)h >= sy->nobjs || !sy->objs[h].mod)
        return NULL;
    return dwfl_module_addrinfo(sy->objs[h].mod, off ? off - 1 : 0, &within, &sym, NULL, NULL,
                                NULL);
}
