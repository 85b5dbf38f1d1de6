/* elfsym.c: dynamic symbol lookup in an ELF file mapped read-only. The dynamic symbol table is
 * found through the section headers (.dynsym, .gnu.version, .gnu.version_d) or, in a file
 * without them, through PT_DYNAMIC (DT_SYMTAB; the count from DT_HASH or DT_GNU_HASH). */
#include "elfsym.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct elf_file {
    const unsigned char *data;
    size_t size;
    const Elf64_Ehdr *eh;
};

/* The dynamic symbol table and its version tables, as pointers into the file. */
struct dyn_tables {
    const Elf64_Sym *syms;
    size_t nsyms;
    const char *strtab;
    size_t strsz;
    const Elf64_Half *versym; /* may be NULL */
    const unsigned char *verdef;
    size_t verdefnum;
};

static const void *file_at(const struct elf_file *f, uint64_t off, uint64_t len)
{
    if (off > f->size || len > f->size - off)
        return NULL;
    return f->data + off;
}

static const Elf64_Phdr *phdr(const struct elf_file *f, int i)
{
    return file_at(f, f->eh->e_phoff + (uint64_t)i * sizeof(Elf64_Phdr), sizeof(Elf64_Phdr));
}

/* File offset of a virtual address, through the PT_LOAD that holds it. */
static const void *vaddr_at(const struct elf_file *f, uint64_t vaddr, uint64_t len)
{
    for (int i = 0; i < f->eh->e_phnum; i++) {
        const Elf64_Phdr *p = phdr(f, i);

        if (p && p->p_type == PT_LOAD && vaddr >= p->p_vaddr && vaddr - p->p_vaddr < p->p_filesz)
            return file_at(f, p->p_offset + (vaddr - p->p_vaddr), len);
    }
    return NULL;
}

static int tables_from_sections(const struct elf_file *f, struct dyn_tables *t)
{
    const Elf64_Shdr *sh = file_at(f, f->eh->e_shoff, (uint64_t)f->eh->e_shnum * sizeof(*sh));

    if (!sh || f->eh->e_shentsize != sizeof(*sh))
        return -1;
    for (int i = 0; i < f->eh->e_shnum; i++) {
        if (sh[i].sh_type == SHT_DYNSYM && sh[i].sh_link < f->eh->e_shnum) {
            const Elf64_Shdr *str = &sh[sh[i].sh_link];

            t->syms = file_at(f, sh[i].sh_offset, sh[i].sh_size);
            t->nsyms = sh[i].sh_size / sizeof(Elf64_Sym);
            t->strtab = file_at(f, str->sh_offset, str->sh_size);
            t->strsz = str->sh_size;
        } else if (sh[i].sh_type == SHT_GNU_versym) {
            t->versym = file_at(f, sh[i].sh_offset, sh[i].sh_size);
        } else if (sh[i].sh_type == SHT_GNU_verdef) {
            t->verdef = file_at(f, sh[i].sh_offset, sh[i].sh_size);
            t->verdefnum = sh[i].sh_info;
        }
    }
    return t->syms && t->strtab ? 0 : -1;
}

/* The number of symbols a DT_GNU_HASH table covers: past the highest bucket's chain end. */
static size_t gnu_hash_count(const struct elf_file *f, uint64_t vaddr)
{
    const uint32_t *h = vaddr_at(f, vaddr, 16);
    const uint32_t *buckets;
    uint64_t chain_va;
    uint32_t nbuckets, symoffset, bloomsize, last = 0;

    if (!h)
        return 0;
    nbuckets = h[0];
    symoffset = h[1];
    bloomsize = h[2];
    buckets = vaddr_at(f, vaddr + 16 + (uint64_t)bloomsize * 8, (uint64_t)nbuckets * 4);
    if (!buckets)
        return 0;
    for (uint32_t i = 0; i < nbuckets; i++)
        if (buckets[i] > last)
            last = buckets[i];
    if (last < symoffset)
        return symoffset;
    /* Chain entries follow the buckets; the last of a chain has bit 0 set. */
    chain_va = vaddr + 16 + (uint64_t)bloomsize * 8 + (uint64_t)nbuckets * 4;
    for (;;) {
        const uint32_t *c = vaddr_at(f, chain_va + (uint64_t)(last - symoffset) * 4, 4);

        if (!c)
            return 0;
        if (*c & 1)
            return (size_t)last + 1;
        last++;
    }
}

static int tables_from_dynamic(const struct elf_file *f, struct dyn_tables *t)
{
    uint64_t symtab = 0, strtab = 0, hash = 0, gnuhash = 0, versym = 0, verdef = 0;
    const Elf64_Dyn *dyn = NULL;
    size_t ndyn = 0;

    for (int i = 0; i < f->eh->e_phnum; i++) {
        const Elf64_Phdr *p = phdr(f, i);

        if (p && p->p_type == PT_DYNAMIC) {
            dyn = file_at(f, p->p_offset, p->p_filesz);
            ndyn = p->p_filesz / sizeof(*dyn);
        }
    }
    for (size_t i = 0; dyn && i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
        uint64_t v = dyn[i].d_un.d_val;

        switch (dyn[i].d_tag) {
        case DT_SYMTAB:
            symtab = v;
            break;
        case DT_STRTAB:
            strtab = v;
            break;
        case DT_STRSZ:
            t->strsz = v;
            break;
        case DT_HASH:
            hash = v;
            break;
        case DT_GNU_HASH:
            gnuhash = v;
            break;
        case DT_VERSYM:
            versym = v;
            break;
        case DT_VERDEF:
            verdef = v;
            break;
        case DT_VERDEFNUM:
            t->verdefnum = v;
            break;
        }
    }
    if (!symtab || !strtab)
        return -1;
    if (hash) {
        const uint32_t *h = vaddr_at(f, hash, 8);

        t->nsyms = h ? h[1] : 0;
    } else if (gnuhash) {
        t->nsyms = gnu_hash_count(f, gnuhash);
    }
    t->syms = vaddr_at(f, symtab, t->nsyms * sizeof(Elf64_Sym));
    t->strtab = vaddr_at(f, strtab, t->strsz);
    t->versym = versym ? vaddr_at(f, versym, t->nsyms * 2) : NULL;
    t->verdef = verdef ? vaddr_at(f, verdef, sizeof(Elf64_Verdef)) : NULL;
    return t->syms && t->strtab && t->nsyms ? 0 : -1;
}

/* The name of version index ndx, from the version definitions. */
static const char *version_name(const struct elf_file *f, const struct dyn_tables *t, int ndx)
{
    const unsigned char *p = t->verdef;

    for (size_t i = 0; p && i < t->verdefnum; i++) {
        const Elf64_Verdef *vd = file_at(f, (uint64_t)(p - f->data), sizeof(*vd));
        const Elf64_Verdaux *aux;

        if (!vd)
            return NULL;
        aux = file_at(f, (uint64_t)(p - f->data) + vd->vd_aux, sizeof(*aux));
        if (vd->vd_ndx == ndx && aux && aux->vda_name < t->strsz)
            return t->strtab + aux->vda_name;
        if (!vd->vd_next)
            break;
        p += vd->vd_next;
    }
    return NULL;
}

static const char *sym_name(const struct dyn_tables *t, const Elf64_Sym *s)
{
    return s->st_name < t->strsz ? t->strtab + s->st_name : "";
}

/* The defined symbol named name (len bytes) of version want (NULL: the default version). */
static const Elf64_Sym *find_symbol(const struct elf_file *f, const struct dyn_tables *t,
                                    const char *name, size_t len, const char *want)
{
    const Elf64_Sym *fallback = NULL;

    for (size_t i = 1; i < t->nsyms; i++) {
        const Elf64_Sym *s = &t->syms[i];
        const char *sn = sym_name(t, s);
        int ver = t->versym ? t->versym[i] : 1;

        if (s->st_shndx == SHN_UNDEF || strncmp(sn, name, len) != 0 || sn[len] != '\0')
            continue;
        if (want) {
            const char *vn = version_name(f, t, ver & 0x7fff);

            if (vn && !strcmp(vn, want))
                return s;
        } else if (!(ver & 0x8000)) {
            return s; /* the default version (not hidden) */
        } else {
            fallback = s;
        }
    }
    return want ? NULL : fallback;
}

static uint64_t offset0_vaddr(const struct elf_file *f)
{
    for (int i = 0; i < f->eh->e_phnum; i++) {
        const Elf64_Phdr *p = phdr(f, i);

        if (p && p->p_type == PT_LOAD && p->p_offset == 0)
            return p->p_vaddr;
    }
    for (int i = 0; i < f->eh->e_phnum; i++) {
        const Elf64_Phdr *p = phdr(f, i);

        if (p && p->p_type == PT_LOAD)
            return p->p_vaddr - p->p_offset;
    }
    return 0;
}

static int map_elf(const char *path, struct elf_file *f)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return -1;
    }
    f->size = (size_t)st.st_size;
    f->data = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->data == MAP_FAILED)
        return -1;
    f->eh = (const Elf64_Ehdr *)f->data;
    return 0;
}

static int lookup(const struct elf_file *f, const char *name, uint64_t *value, uint64_t *vaddr0,
                  char *why, size_t whycap)
{
    struct dyn_tables t = {0};
    const char *at = strchr(name, '@');
    size_t len = at ? (size_t)(at - name) : strlen(name);
    const Elf64_Sym *s;

    if (memcmp(f->eh->e_ident, ELFMAG, SELFMAG) != 0 || f->eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        !file_at(f, f->eh->e_phoff, (uint64_t)f->eh->e_phnum * sizeof(Elf64_Phdr))) {
        snprintf(why, whycap, "not a 64-bit ELF file");
        return -1;
    }
    if (tables_from_sections(f, &t) != 0) {
        memset(&t, 0, sizeof(t));
        if (tables_from_dynamic(f, &t) != 0) {
            snprintf(why, whycap, "no dynamic symbol table");
            return -1;
        }
    }
    s = find_symbol(f, &t, name, len, at ? at + 1 : NULL);
    if (!s) {
        snprintf(why, whycap, "no symbol %s", name);
        return -1;
    }
    if (ELF64_ST_TYPE(s->st_info) == STT_GNU_IFUNC) {
        snprintf(why, whycap, "%s is an IFUNC", name);
        return -1;
    }
    *value = s->st_value;
    *vaddr0 = offset0_vaddr(f);
    return 0;
}

int elf_dynsym(const char *path, const char *name, uint64_t *value, uint64_t *vaddr_at_offset0,
               char *why, size_t whycap)
{
    struct elf_file f;
    int rc;

    if (map_elf(path, &f) != 0) {
        snprintf(why, whycap, "cannot read %s", path);
        return -1;
    }
    rc = lookup(&f, name, value, vaddr_at_offset0, why, whycap);
    munmap((void *)f.data, f.size);
    return rc;
}

int elf_bits(const char *path)
{
    unsigned char id[EI_NIDENT];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = read(fd, id, sizeof(id));
    close(fd);
    if (n != (ssize_t)sizeof(id) || memcmp(id, ELFMAG, SELFMAG) != 0)
        return -1;
    return id[EI_CLASS] == ELFCLASS32 ? 32 : id[EI_CLASS] == ELFCLASS64 ? 64 : -1;
}
