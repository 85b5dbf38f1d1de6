/* symbolize.c: one libdwfl session per object file, reported at base 0 so that a frame's offset
 * from the load base (l_addr) is the address to look up, for a PIE, a shared object and a
 * non-PIE executable (l_addr 0) alike. Frames are return addresses: offset - 1 lands inside the
 * call instruction, hence inside the calling function even when the call is its last one.
 * libdwfl rather than a hand-written ELF reader: it brings separate debug files (by build id and
 * debuglink), MiniDebugInfo (.gnu_debugdata) and compressed sections for free. */
#include "base/symbolize.h"

#include "base/util.h"

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One symbol of a module's table, by address. */
struct sym_ent {
    uint64_t addr, size;
    uint64_t limit;   /* size 0: end of its section (a label holds nothing past it) */
    const char *name; /* libdwfl's string, valid while the session lives */
    int rank;         /* binding preference at one address: global 2, weak 1, local 0 */
    uint32_t idx;     /* table order: the tie-break libdwfl has */
};

struct sym_obj {
    char *path, *build_id;
    Dwfl *dwfl;
    Dwfl_Module *mod; /* NULL: unusable */
    struct sym_ent *syms;
    size_t nsyms;
    bool not_regular; /* the path named a FIFO, a device, a directory: never read */
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
        free(sy->objs[i].path), free(sy->objs[i].build_id), free(sy->objs[i].syms);
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

/* A descriptor for file only when it is a regular file: a trace may name a FIFO (open would
 * wait for a writer for ever), /dev/tty or /dev/stdin. O_NONBLOCK makes the open itself
 * return at once; the type is checked on what was opened, not on the name. */
static int open_regular(const char *file, bool *not_regular)
{
    struct stat st;
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        *not_regular = true;
        return -1;
    }
    return fd;
}

static Dwfl_Module *report(struct symbolizer *sy, struct sym_obj *o, const char *file)
{
    Dwfl_Module *mod;
    int fd = open_regular(file, &o->not_regular);

    if (fd < 0)
        return NULL;
    if (!o->dwfl)
        o->dwfl = dwfl_begin(&sy->cb);
    if (!o->dwfl) {
        close(fd);
        return NULL;
    }
    dwfl_report_begin(o->dwfl);
    mod = dwfl_report_elf(o->dwfl, o->path, file, fd, 0, true); /* consumes fd on success */
    dwfl_report_end(o->dwfl, NULL, NULL);
    if (!mod)
        close(fd);
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
    if (!(mod = report(sy, o, file)))
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
        fprintf(sy->warn, "%s: %s: its frames are shown as module+0xoffset%s\n", file,
                o->not_regular ? "not a regular file (only those are opened)" : "cannot read it",
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

static int cmp_sym(const void *a, const void *b)
{
    const struct sym_ent *x = a, *y = b;

    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->rank != y->rank)
        return y->rank - x->rank; /* at one address the preferred binding first */
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* End of the section a symbol is in (module addresses), for labels of size 0. */
static uint64_t section_end(Elf *elf, GElf_Word shndx, Dwarf_Addr bias)
{
    GElf_Shdr sh;
    Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;

    if (!scn || !gelf_getshdr(scn, &sh))
        return 0;
    return sh.sh_addr + sh.sh_size + bias;
}

/* The module's symbols that can hold code or data, sorted by address, once: libdwfl's own
 * look-up walks the whole table for every address (20k 64-frame stacks in a stripped
 * libcrypto took 99 s); a binary search makes each frame O(log n). */
static void load_syms(struct sym_obj *o)
{
    int n = dwfl_module_getsymtab(o->mod), i;
    size_t cap = 0;

    for (i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        Elf *elf = NULL;
        Dwarf_Addr bias = 0;
        const char *name = dwfl_module_getsym_info(o->mod, i, &sym, &addr, &shndx, &elf, &bias);
        int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);

        if (!name || !*name || shndx == SHN_UNDEF || shndx == SHN_ABS || shndx == (GElf_Word)-1 ||
            type == STT_SECTION || type == STT_FILE || type == STT_TLS)
            continue;
        grow_array((void **)&o->syms, &cap, o->nsyms, sizeof(*o->syms));
        o->syms[o->nsyms++] =
            (struct sym_ent){.addr = addr,
                             .size = sym.st_size,
                             .limit = sym.st_size ? 0 : section_end(elf, shndx, bias),
                             .name = name,
                             .rank = bind == STB_GLOBAL ? 2
                                     : bind == STB_WEAK ? 1
                                                        : 0,
                             .idx = (uint32_t)i};
    }
    if (o->nsyms)
        qsort(o->syms, o->nsyms, sizeof(*o->syms), cmp_sym);
}

/* How far back from the last symbol at or below an address a covering one is looked for
 * (nested or overlapping symbols); bounds the cost of a frame in a hostile table. */
#define SYM_BACK 64

/* First symbol of the group at the address of syms[j] (sorted: the preferred one). */
static size_t group_start(const struct sym_obj *o, size_t j, size_t floor)
{
    while (j > floor && o->syms[j - 1].addr == o->syms[j].addr)
        j--;
    return j;
}

/* The symbol holding addr as libdwfl picks it: the sized symbol covering it that starts
 * closest below (at one address: global before weak before local, then table order); else
 * a size-0 label below it in the same section when no sized symbol ends in between. */
static const char *lookup(const struct sym_obj *o, uint64_t addr)
{
    size_t lo = 0, hi = o->nsyms, j, k, floor;
    uint64_t ended = 0;

    while (lo < hi) { /* lo: first symbol above addr */
        size_t mid = lo + (hi - lo) / 2;

        if (o->syms[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    floor = lo > SYM_BACK ? lo - SYM_BACK : 0;
    for (j = lo; j > floor; j--) {
        const struct sym_ent *e = &o->syms[j - 1];

        if (e->size && addr - e->addr < e->size) {
            for (k = group_start(o, j - 1, floor); k < j; k++)
                if (o->syms[k].size && addr - o->syms[k].addr < o->syms[k].size)
                    return o->syms[k].name;
        }
        if (e->size && e->addr + e->size > ended)
            ended = e->addr + e->size;
    }
    for (j = lo; j > floor; j--) {
        const struct sym_ent *e = &o->syms[j - 1];

        if (!e->size && e->addr >= ended && addr < e->limit) {
            for (k = group_start(o, j - 1, floor); k < j; k++)
                if (!o->syms[k].size && addr < o->syms[k].limit)
                    return o->syms[k].name;
        }
    }
    return NULL;
}

const char *symbolizer__func(struct symbolizer *sy, int h, uint64_t off)
{
    struct sym_obj *o;

    if (h < 0 || (size_t)h >= sy->nobjs || !sy->objs[h].mod)
        return NULL;
    o = &sy->objs[h];
    if (!o->syms && !o->nsyms)
        load_syms(o);
    return lookup(o, off ? off - 1 : 0);
}
