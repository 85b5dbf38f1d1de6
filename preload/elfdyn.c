/* elfdyn.c: the dynamic linker's view of one object, from its in-memory .dynamic:
 * relocations name the symbols it imports, .gnu.version / .gnu.version_r say which version
 * each import wants. This is what lets tlsmeter forward a call to the same OpenSSL copy
 * the linker would have bound (RTLD_NEXT alone merges versioned copies). */
#include "elfdyn.h"

#include <elf.h>
#include <string.h>

struct dyninfo {
    const ElfW(Sym) * symtab;
    const char *strtab;
    const ElfW(Half) * versym;
    const ElfW(Verneed) * verneed;
    size_t verneednum;
    const ElfW(Verdef) * verdef;
    size_t verdefnum;
    const void *rel[2];
    size_t relsz[2];
    int rela[2]; /* 1: ElfW(Rela), 0: ElfW(Rel) */
};

/* glibc relocates d_ptr entries in place on x86_64/aarch64 but not everywhere (and not
 * in the vDSO): an address below the load bias is still an offset. */
static const void *dptr(const struct link_map *lm, ElfW(Addr) p)
{
    return (const void *)(p < lm->l_addr ? lm->l_addr + p : p);
}

static void read_dynamic(const struct link_map *lm, struct dyninfo *d)
{
    int pltrel = DT_RELA;
    memset(d, 0, sizeof(*d));
    for (const ElfW(Dyn) *e = lm->l_ld; e && e->d_tag != DT_NULL; e++) {
        switch (e->d_tag) {
        case DT_SYMTAB:
            d->symtab = dptr(lm, e->d_un.d_ptr);
            break;
        case DT_STRTAB:
            d->strtab = dptr(lm, e->d_un.d_ptr);
            break;
        case DT_VERSYM:
            d->versym = dptr(lm, e->d_un.d_ptr);
            break;
        case DT_VERNEED:
            d->verneed = dptr(lm, e->d_un.d_ptr);
            break;
        case DT_VERNEEDNUM:
            d->verneednum = e->d_un.d_val;
            break;
        case DT_VERDEF:
            d->verdef = dptr(lm, e->d_un.d_ptr);
            break;
        case DT_VERDEFNUM:
            d->verdefnum = e->d_un.d_val;
            break;
        case DT_JMPREL:
            d->rel[0] = dptr(lm, e->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            d->relsz[0] = e->d_un.d_val;
            break;
        case DT_PLTREL:
            pltrel = (int)e->d_un.d_val;
            break;
        case DT_RELA:
            d->rel[1] = dptr(lm, e->d_un.d_ptr), d->rela[1] = 1;
            break;
        case DT_RELASZ:
            d->relsz[1] = e->d_un.d_val;
            break;
        case DT_REL:
            d->rel[1] = dptr(lm, e->d_un.d_ptr), d->rela[1] = 0;
            break;
        case DT_RELSZ:
            d->relsz[1] = e->d_un.d_val;
            break;
        default:
            break;
        }
    }
    d->rela[0] = pltrel == DT_RELA;
}

/* Version index -> name, from the needed (imports) or defined (own) version tables. */
static const char *version_name(const struct dyninfo *d, unsigned idx)
{
    const ElfW(Verneed) *vn = d->verneed;
    for (size_t i = 0; vn && i < d->verneednum; i++) {
        const ElfW(Vernaux) *va = (const void *)((const char *)vn + vn->vn_aux);
        for (unsigned j = 0; j < vn->vn_cnt; j++) {
            if ((va->vna_other & 0x7fff) == idx)
                return d->strtab + va->vna_name;
            va = (const void *)((const char *)va + va->vna_next);
        }
        if (!vn->vn_next)
            break;
        vn = (const void *)((const char *)vn + vn->vn_next);
    }
    const ElfW(Verdef) *vd = d->verdef;
    for (size_t i = 0; vd && i < d->verdefnum; i++) {
        if ((vd->vd_ndx & 0x7fff) == idx) {
            const ElfW(Verdaux) *aux = (const void *)((const char *)vd + vd->vd_aux);
            return d->strtab + aux->vda_name;
        }
        if (!vd->vd_next)
            break;
        vd = (const void *)((const char *)vd + vd->vd_next);
    }
    return NULL;
}

static void note_symbol(const struct dyninfo *d, size_t symidx, const char *const names[], int n,
                        const char *vers[], uint64_t *mask)
{
    const char *s = d->strtab + d->symtab[symidx].st_name;
    for (int i = 0; i < n; i++) {
        if (s[0] != names[i][0] || strcmp(s, names[i]))
            continue;
        *mask |= 1ull << i;
        unsigned vi = d->versym ? (d->versym[symidx] & 0x7fff) : 0;
        if (vi > 1 && !vers[i]) /* 0 local, 1 global: unversioned */
            vers[i] = version_name(d, vi);
        return;
    }
}

static void scan_relocs(const struct dyninfo *d, int which, const char *const names[], int n,
                        const char *vers[], uint64_t *mask)
{
    size_t ent = d->rela[which] ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
    size_t count = d->rel[which] ? d->relsz[which] / ent : 0;
    for (size_t i = 0; i < count; i++) {
        const char *r = (const char *)d->rel[which] + i * ent;
        ElfW(Xword) info = d->rela[which] ? ((const ElfW(Rela) *)r)->r_info
                                          : (ElfW(Xword))((const ElfW(Rel) *)r)->r_info;
#if __ELF_NATIVE_CLASS == 64
        size_t sym = ELF64_R_SYM(info);
#else
        size_t sym = ELF32_R_SYM(info);
#endif
        if (sym)
            note_symbol(d, sym, names, n, vers, mask);
    }
}

uint64_t tlsm_elf_refs(const struct link_map *lm, const char *const names[], int n,
                       const char *vers[])
{
    struct dyninfo d;
    uint64_t mask = 0;
    for (int i = 0; i < n; i++)
        vers[i] = NULL;
    read_dynamic(lm, &d);
    if (!d.symtab || !d.strtab)
        return 0;
    scan_relocs(&d, 0, names, n, vers, &mask);
    scan_relocs(&d, 1, names, n, vers, &mask);
    return mask;
}
