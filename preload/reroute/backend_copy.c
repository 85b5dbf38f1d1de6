/* backend_copy.c: the private copy of a libcrypto in a memfd, patched (own soname,
 * DF_SYMBOLIC). The source is a path from the environment, so it is checked before any
 * byte is read: a FIFO or a terminal would block the program's start-up in open() or
 * read(), /dev/zero would fill memory without end, and tlsmeter itself loaded a second time
 * runs its constructor again (a second tracer in the same process). */
#include "reroute/backend_copy.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *err, size_t cap, const char *fmt, const char *a, const char *b)
{
    snprintf(err, cap, fmt, a, b);
    return -1;
}

/* File offset of a virtual address, through the PT_LOAD segments. */
static long vaddr_to_off(const ElfW(Ehdr) * eh, uint64_t va)
{
    const ElfW(Phdr) *ph = (const void *)((const char *)eh + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && va >= ph[i].p_vaddr && va < ph[i].p_vaddr + ph[i].p_filesz)
            return (long)(va - ph[i].p_vaddr + ph[i].p_offset);
    return -1;
}

/* The .dynamic array of a mapped ELF file, and how many entries fit in it. */
static ElfW(Dyn) * find_dynamic(unsigned char *m, size_t size, size_t *cap)
{
    const ElfW(Ehdr) *eh = (const void *)m;
    if (size < sizeof(*eh) || memcmp(m, ELFMAG, SELFMAG) ||
        eh->e_phoff + (size_t)eh->e_phnum * sizeof(ElfW(Phdr)) > size)
        return NULL;
    const ElfW(Phdr) *ph = (const void *)(m + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC && ph[i].p_offset + ph[i].p_filesz <= size) {
            *cap = ph[i].p_filesz / sizeof(ElfW(Dyn));
            return (ElfW(Dyn) *)(m + ph[i].p_offset);
        }
    return NULL;
}

static uint64_t dyn_value(const ElfW(Dyn) * dyn, size_t cap, int64_t tag, bool *have)
{
    for (size_t i = 0; i < cap && dyn[i].d_tag != DT_NULL; i++)
        if (dyn[i].d_tag == tag) {
            *have = true;
            return dyn[i].d_un.d_val;
        }
    *have = false;
    return 0;
}

/* The copy must not answer to "libcrypto.so.3": the loader matches DT_NEEDED names against
 * loaded objects' sonames, so a libssl loaded later would bind to our backend instead of
 * the system libcrypto. Overwrite the soname in place with a shorter name of ours. */
static void rename_soname(unsigned char *m, size_t size, const ElfW(Dyn) * dyn, size_t cap)
{
    bool have_tab, have_name;
    uint64_t strtab = dyn_value(dyn, cap, DT_STRTAB, &have_tab);
    uint64_t soname = dyn_value(dyn, cap, DT_SONAME, &have_name);
    long off = have_tab && have_name ? vaddr_to_off((const void *)m, strtab) : -1;
    if (off < 0 || soname >= size || off + (long)soname >= (long)size)
        return;
    char *name = (char *)m + off + soname;
    static const char ours[] = "tlsm-bk.so";
    if (strnlen(name, size - (size_t)off - soname) >= sizeof(ours) - 1)
        memcpy(name, ours, sizeof(ours)); /* with its NUL: the rest is ignored */
}

/* True when the copy defines SSL_read: a libssl, or tlsmeter itself under another name (it
 * exports SSL_read); a libcrypto never does. Read from the section headers' .dynsym (the
 * linker may store "SSL_read" as the tail of "wolfSSL_read", so the string alone proves
 * nothing); without section headers, any dynamic string ending in SSL_read counts. */
static bool defines_ssl_read(unsigned char *m, size_t size, const ElfW(Dyn) * dyn, size_t cap)
{
    const ElfW(Ehdr) *eh = (const void *)m;
    if (eh->e_shoff && eh->e_shentsize == sizeof(ElfW(Shdr)) &&
        eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) <= size) {
        const ElfW(Shdr) *sh = (const void *)(m + eh->e_shoff);
        for (int i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum ||
                sh[i].sh_offset + sh[i].sh_size > size ||
                sh[sh[i].sh_link].sh_offset + sh[sh[i].sh_link].sh_size > size)
                continue;
            const ElfW(Sym) *sym = (const void *)(m + sh[i].sh_offset);
            const char *str = (const char *)m + sh[sh[i].sh_link].sh_offset;
            size_t nsym = sh[i].sh_size / sizeof(ElfW(Sym)), strsz = sh[sh[i].sh_link].sh_size;
            for (size_t k = 0; k < nsym; k++)
                if (sym[k].st_shndx != SHN_UNDEF && sym[k].st_name + sizeof("SSL_read") <= strsz &&
                    !memcmp(str + sym[k].st_name, "SSL_read", sizeof("SSL_read")))
                    return true;
            return false;
        }
    }
    static const char key[] = "SSL_read"; /* with its NUL: a string ending in it */
    bool have_tab, have_sz;
    uint64_t strtab = dyn_value(dyn, cap, DT_STRTAB, &have_tab);
    uint64_t strsz = dyn_value(dyn, cap, DT_STRSZ, &have_sz);
    long off = have_tab && have_sz ? vaddr_to_off((const void *)m, strtab) : -1;
    if (off < 0 || strsz > size - (size_t)off)
        return false;
    return memmem(m + off, strsz, key, sizeof(key)) != NULL;
}

/* DF_SYMBOLIC: the copy's references to its own functions bind to itself first, as
 * RTLD_DEEPBIND would do, but without DEEPBIND's side effects (it would also put libc's
 * malloc before a preloaded allocator, and ASan refuses DEEPBIND objects). Sets the bit in
 * DT_FLAGS, or adds DT_FLAGS in a spare DT_NULL slot; false when neither is possible. */
static bool make_symbolic(ElfW(Dyn) * dyn, size_t cap)
{
    size_t i = 0;
    for (; i < cap && dyn[i].d_tag != DT_NULL; i++)
        if (dyn[i].d_tag == DT_FLAGS || dyn[i].d_tag == DT_SYMBOLIC) {
            if (dyn[i].d_tag == DT_FLAGS)
                dyn[i].d_un.d_val |= DF_SYMBOLIC;
            return true;
        }
    if (i + 1 >= cap) /* the terminating DT_NULL must stay */
        return false;
    dyn[i].d_tag = DT_FLAGS;
    dyn[i].d_un.d_val = DF_SYMBOLIC;
    dyn[i + 1].d_tag = DT_NULL;
    return true;
}

/* The relocation types of the copy's machine: a reference by symbol (PLT slot, GOT slot,
 * 64-bit address) and the relative one; false for a machine this does not know. */
static bool reloc_types(const ElfW(Ehdr) * eh, unsigned by_sym[3], unsigned *relative)
{
    if (eh->e_machine == EM_X86_64) {
        by_sym[0] = R_X86_64_JUMP_SLOT, by_sym[1] = R_X86_64_GLOB_DAT, by_sym[2] = R_X86_64_64;
        *relative = R_X86_64_RELATIVE;
        return true;
    }
    if (eh->e_machine == EM_AARCH64) {
        by_sym[0] = R_AARCH64_JUMP_SLOT, by_sym[1] = R_AARCH64_GLOB_DAT;
        by_sym[2] = R_AARCH64_ABS64;
        *relative = R_AARCH64_RELATIVE;
        return true;
    }
    return false;
}

/* One relocation by symbol to a symbol the copy defines itself (a plain function or object,
 * not an IFUNC, TLS, absolute or unique one) made relative: base + its address (+ the
 * addend of a 64-bit address), the value DF_SYMBOLIC's look-up finds. PLT and GOT slots
 * with an addend are left as they are (x86_64 ignores it, aarch64 adds it). */
static void self_relative(ElfW(Rela) * r, const ElfW(Sym) * sym, size_t nsym,
                          const unsigned by_sym[3], unsigned relative)
{
    unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
    size_t idx = ELF64_R_SYM(r->r_info);
    if ((type != by_sym[0] && type != by_sym[1] && type != by_sym[2]) || !idx || idx >= nsym)
        return;
    const ElfW(Sym) *s = &sym[idx];
    unsigned kind = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
    if (s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE ||
        (kind != STT_FUNC && kind != STT_OBJECT && kind != STT_NOTYPE) ||
        (bind != STB_GLOBAL && bind != STB_WEAK) || (type != by_sym[2] && r->r_addend))
        return;
    r->r_addend = (ElfW(Sxword))s->st_value + (type == by_sym[2] ? r->r_addend : 0);
    r->r_info = ELF64_R_INFO(0, relative);
}

/* With DF_SYMBOLIC (make_symbolic) the copy's references to its own symbols bind to its own
 * definitions: resolved here once, in its relocation tables (DT_RELA and the PLT's), they
 * cost the loader no symbol look-up at each load (~4,000 of the ~4,200 by-symbol relocations
 * of a libcrypto 3.0: ~2 M instructions per process). The copy is loaded RTLD_NOW, so its
 * PLT relocations are processed as the others are, relative ones included. */
static void bind_to_self(unsigned char *m, size_t size, const ElfW(Dyn) * dyn, size_t cap)
{
    const ElfW(Ehdr) *eh = (const void *)m;
    unsigned by_sym[3], relative;
    bool h[7];
    uint64_t symtab = dyn_value(dyn, cap, DT_SYMTAB, &h[0]);
    uint64_t ranges[2][2] = {
        {dyn_value(dyn, cap, DT_RELA, &h[1]), dyn_value(dyn, cap, DT_RELASZ, &h[2])},
        {dyn_value(dyn, cap, DT_JMPREL, &h[3]), dyn_value(dyn, cap, DT_PLTRELSZ, &h[4])}};
    uint64_t pltrel = dyn_value(dyn, cap, DT_PLTREL, &h[5]);
    uint64_t relaent = dyn_value(dyn, cap, DT_RELAENT, &h[6]);
    bool have_count; /* DT_RELA starts with nrel relative ones: nothing to do there */
    uint64_t nrel = dyn_value(dyn, cap, DT_RELACOUNT, &have_count);
    long so = h[0] ? vaddr_to_off(eh, symtab) : -1;
    if (!reloc_types(eh, by_sym, &relative) || so < 0 || (h[6] && relaent != sizeof(ElfW(Rela))))
        return;
    /* The symbol count is not in .dynamic: every index is checked against the file's end. */
    size_t nsym = (size - (size_t)so) / sizeof(ElfW(Sym));
    const ElfW(Sym) *sym = (const void *)(m + so);
    for (int k = 0; k < 2; k++) {
        if (!h[1 + 2 * k] || !h[2 + 2 * k] || (k == 1 && (!h[5] || pltrel != DT_RELA)))
            continue;
        long off = vaddr_to_off(eh, ranges[k][0]);
        if (off < 0 || ranges[k][1] > size - (size_t)off)
            continue;
        ElfW(Rela) *r = (ElfW(Rela) *)(m + off);
        for (size_t i = k == 0 ? nrel : 0; i < ranges[k][1] / sizeof(*r); i++)
            self_relative(&r[i], sym, nsym, by_sym, relative);
    }
}

/* Patch the copy of size bytes in its memfd: a name of its own, bound to itself first.
 * -1 (err set) when it is no libcrypto to load. */
static int patch_copy(int fd, size_t size, const char *src, bool *symbolic, char *err, size_t cap)
{
    size_t ndyn = 0;
    unsigned char *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return fail(err, cap, "cannot map the copy of %s: %s", src, strerror(errno));
    ElfW(Dyn) *dyn = find_dynamic(m, size, &ndyn);
    int rc = 0;
    if (dyn && defines_ssl_read(m, size, dyn, ndyn)) {
        rc = fail(err, cap, "%s exports SSL_read: a libssl or tlsmeter itself, not a libcrypto%s",
                  src, "");
    } else if (dyn) {
        rename_soname(m, size, dyn, ndyn);
        *symbolic = make_symbolic(dyn, ndyn);
        if (*symbolic)
            bind_to_self(m, size, dyn, ndyn);
    }
    munmap(m, size);
    return rc;
}

/* The same file as the running tlsmeter (by device and inode: a hard link or another path
 * to it is still us). */
static bool is_ourselves(const struct stat *st)
{
    Dl_info info;
    struct stat self;
    return dladdr((void *)is_ourselves, &info) && info.dli_fname && !stat(info.dli_fname, &self) &&
           self.st_dev == st->st_dev && self.st_ino == st->st_ino;
}

/* Opens src for reading only if it is a regular ELF file of a sane size: O_NONBLOCK so a
 * FIFO without writer or a terminal cannot block the open; fstat on the descriptor, so the
 * type checked is the type of what was opened. */
static int open_source(const char *src, size_t *size, char *err, size_t cap)
{
    unsigned char magic[SELFMAG];
    struct stat st;
    int in = open(src, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (in < 0)
        return fail(err, cap, "cannot open %s: %s", src, strerror(errno));
    const char *why = fstat(in, &st)         ? strerror(errno)
                      : !S_ISREG(st.st_mode) ? "not a regular file"
                      : is_ourselves(&st)    ? "that is tlsmeter itself, not a libcrypto"
                      : st.st_size < 64      ? "too small for a shared library"
                      : st.st_size > TLSM_BACKEND_MAX_SIZE ? "larger than 256 MiB, no libcrypto"
                      : pread(in, magic, SELFMAG, 0) != SELFMAG || memcmp(magic, ELFMAG, SELFMAG)
                          ? "not an ELF shared library"
                          : NULL;
    if (why) {
        close(in);
        return fail(err, cap, "%s: %s", src, why);
    }
    *size = (size_t)st.st_size;
    return in;
}

/* Copies exactly size bytes (the size fstat gave: a file growing meanwhile adds nothing). */
static int copy_bytes(int in, int out, size_t size)
{
    char buf[65536];
    size_t done = 0;
    while (done < size) {
        size_t want = size - done < sizeof(buf) ? size - done : sizeof(buf);
        ssize_t n = pread(in, buf, want, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n ? -1 : (errno = EIO, -1); /* shrank under us */
        if (write(out, buf, (size_t)n) != n)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

int tlsm_backend_copy(const char *src, bool *symbolic, char *err, size_t cap)
{
    size_t size;
    *symbolic = false;
    int in = open_source(src, &size, err, cap);
    if (in < 0)
        return -1;
    int out = memfd_create("tlsmeter-backend", MFD_CLOEXEC);
    if (out < 0) {
        close(in);
        return fail(err, cap, "memfd_create failed: %s%s", strerror(errno), "");
    }
    int rc = copy_bytes(in, out, size);
    close(in);
    if (rc) {
        close(out);
        return fail(err, cap, "copying %s into a memfd failed: %s", src, strerror(errno));
    }
    if (patch_copy(out, size, src, symbolic, err, cap)) {
        close(out);
        return -1;
    }
    return out;
}
