/* elfdyn.c: the dynamic linker's view of one object, from its in-memory .dynamic:
 * relocations name the symbols it imports, .gnu.version / .gnu.version_r say which version
 * each import wants, DT_FLAGS says whether it binds to itself first. This is what lets
 * tlsmeter forward a call to the same OpenSSL copy the linker would have bound (RTLD_NEXT
 * alone merges versioned copies), and tell why an object's calls never reach a hook
 * (blind.c). The one reader of .dynamic in tlsmeter. */
#include "base/elfdyn.h"
#include "arch/arch.h"

#include <elf.h>
#include <stdatomic.h>
#include <string.h>

/* The tags of packed relative relocations (-z pack-relative-relocs), for headers before glibc
 * 2.36 (whose loader refuses such objects anyway). */
#ifndef DT_RELR
#define DT_RELRSZ 35
#define DT_RELR   36
#endif

struct dyninfo {
    const ElfW(Sym) * symtab;
    const char *strtab;
    size_t strsz; /* DT_STRSZ; 0 when absent (names then read byte by byte) */
    const ElfW(Half) * versym;
    const ElfW(Verneed) * verneed;
    size_t verneednum;
    const ElfW(Verdef) * verdef;
    size_t verdefnum;
    const uint32_t *gnu_hash, *sysv_hash; /* DT_GNU_HASH, DT_HASH */
    const void *rel[2];
    size_t relsz[2];
    size_t relative;         /* DT_RELACOUNT/DT_RELCOUNT: leading R_*_RELATIVE entries of rel[1] */
    int rela[2];             /* 1: ElfW(Rela), 0: ElfW(Rel) */
    const ElfW(Addr) * relr; /* DT_RELR, DT_RELRSZ: packed relative relocations */
    size_t relrsz;
    struct tlsm_elf_flags flags;
};

/* glibc relocates d_ptr entries in place on x86_64/aarch64, not everywhere (nor in the vDSO):
 * an address below the load bias is still an offset. */
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
        case DT_STRSZ:
            d->strsz = e->d_un.d_val;
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
        case DT_GNU_HASH:
            d->gnu_hash = dptr(lm, e->d_un.d_ptr);
            break;
        case DT_HASH:
            d->sysv_hash = dptr(lm, e->d_un.d_ptr);
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
        case DT_RELR:
            d->relr = dptr(lm, e->d_un.d_ptr);
            break;
        case DT_RELRSZ:
            d->relrsz = e->d_un.d_val;
            break;
        case DT_RELACOUNT:
        case DT_RELCOUNT:
            d->relative = e->d_un.d_val;
            break;
        case DT_SYMBOLIC:
            d->flags.symbolic = true;
            break;
        case DT_FLAGS:
            d->flags.flags = e->d_un.d_val;
            d->flags.symbolic |= (e->d_un.d_val & DF_SYMBOLIC) != 0;
            break;
        case DT_FLAGS_1:
            d->flags.flags_1 = e->d_un.d_val;
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

/* A filter of the wanted names by their first eight bytes: most relocations name none of
 * them, and this rejects those with one bit test instead of a compare per wanted name (the
 * walk runs over every relocation of every loaded object: curl's 30 libraries, libssl's
 * hundreds of EVP_ and SSL_ imports, which a shorter prefix would let through). */
#define NAME_FILTER_BITS 4096
#define NAME_TAB_MAX     64
struct name_filter {
    uint64_t bits[NAME_FILTER_BITS / 64];
    /* Past the filter: the names by their first eight bytes, open addressing (index + 1, 0
     * free), so a name the filter lets through is compared with the names of the same eight
     * bytes only (libssl imports a hundred EVP_PKEY_* and EVP_Digest* names). */
    uint64_t word[NAME_TAB_MAX];
    uint8_t tab[256];
    bool tabbed; /* at most NAME_TAB_MAX names: else every name is compared */
    /* The four bytes every name starts with ("SSL_" for the libssl entry points), so most
     * imports (malloc, memcpy) are told apart with one compare; 0 when they differ. */
    uint32_t prefix;
    uint32_t ghash[NAME_TAB_MAX]; /* their GNU hashes (tabbed only) */
};

/* The name's first eight bytes as a number, zeros from its NUL on: one load when eight bytes
 * are readable (avail: the string table's rest), else byte by byte up to the NUL. */
static inline __attribute__((always_inline)) uint64_t name_word(const char *s, size_t avail)
{
    uint64_t w = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (avail >= 8) {
        memcpy(&w, s, 8);
        /* The lowest zero byte is found exactly (a borrow only marks bytes above it). */
        uint64_t z = (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
        if (z)
            w &= (1ull << (__builtin_ctzll(z) & ~7u)) - 1;
        return w;
    }
#endif
    for (size_t i = 0; i < 8 && s[i]; i++)
        w |= (uint64_t)(unsigned char)s[i] << (8 * i);
    return w;
}

static unsigned name_key(uint64_t word)
{
    return (unsigned)((word * 0x9e3779b97f4a7c15ull) >> 52) % NAME_FILTER_BITS;
}

static uint32_t gnu_hash_of(const char *name)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = h * 33 + *p;
    return h;
}

static void filter_build(struct name_filter *f, const char *const names[], int n)
{
    memset(f, 0, sizeof(*f));
    f->tabbed = n <= NAME_TAB_MAX;
    for (int i = 0; i < n; i++) {
        uint32_t p = 0;
        if (strnlen(names[i], 4) == 4)
            memcpy(&p, names[i], 4);
        f->prefix = i == 0 || p == f->prefix ? p : 0;
    }
    for (int i = 0; i < n; i++) {
        uint64_t w = name_word(names[i], strlen(names[i]) + 1);
        unsigned k = name_key(w);
        f->bits[k / 64] |= 1ull << (k % 64);
        if (!f->tabbed)
            continue;
        f->word[i] = w;
        f->ghash[i] = gnu_hash_of(names[i]);
        unsigned t = k % 256;
        while (f->tab[t])
            t = (t + 1) % 256;
        f->tab[t] = (uint8_t)(i + 1);
    }
}

/* Index into names[0..n) of a symbol's name, -1 if it is none of them. */
static inline __attribute__((always_inline)) int name_index(const struct dyninfo *d, size_t symidx,
                                                            const char *const names[], int n,
                                                            const struct name_filter *f)
{
    size_t at = d->symtab[symidx].st_name, avail = d->strsz > at ? d->strsz - at : 0;
    const char *s = d->strtab + at;
    uint32_t p;
    if (f->prefix && avail >= 4 && (memcpy(&p, s, 4), p != f->prefix))
        return -1;
    uint64_t w = name_word(s, avail);
    unsigned k = name_key(w);
    if (!(f->bits[k / 64] & (1ull << (k % 64))))
        return -1;
    if (f->tabbed) {
        for (unsigned t = k % 256; f->tab[t]; t = (t + 1) % 256) {
            int i = f->tab[t] - 1;
            if (f->word[i] == w && !strcmp(s, names[i]))
                return i;
        }
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (s[0] == names[i][0] && !strcmp(s, names[i]))
            return i;
    return -1;
}

typedef void (*reloc_visit)(const struct dyninfo *d, size_t symidx, int name, uintptr_t slot,
                            void *arg);

/* The symbols (indices into .dynsym) named one of names[0..n), found before the relocations
 * are read: most objects have none, and then no relocation needs reading; the others have a
 * few, and a relocation is then one bit test instead of a name's filter and compares. */
#define MAX_MATCH 128
struct matches {
    uint32_t sym[MAX_MATCH];
    int name[MAX_MATCH];
    int n;
    uint64_t bits[8192 / 64]; /* by symbol index modulo 8192 */
};

static bool add_match(struct matches *m, size_t sym, int name)
{
    if (m->n == MAX_MATCH)
        return false;
    m->sym[m->n] = (uint32_t)sym;
    m->name[m->n++] = name;
    m->bits[sym / 64 % 128] |= 1ull << (sym % 64);
    return true;
}

/* With DT_GNU_HASH: the symbols before its first hashed one (the undefined, the imports) by
 * the name filter, each wanted name's hash chain for the rest (every version of a name is in
 * its chain). false when the object has no GNU hash table, hashes nothing (an executable that
 * exports no symbol, as aarch64 PIEs: ld writes symoffset 1 and the imports lie past it) or
 * has too many matches; the relocations are then read by their symbols' names. */
static bool find_symbols(const struct dyninfo *d, const char *const names[], int n,
                         const struct name_filter *f, struct matches *m)
{
    const uint32_t *g = d->gnu_hash;
    if (!g || !g[0])
        return false;
    uint32_t nbuckets = g[0], symoffset = g[1], bloom_size = g[2], b = 0;
    const ElfW(Addr) *bloom = (const void *)(g + 4);
    const uint32_t *buckets = (const void *)(bloom + bloom_size), *chain = buckets + nbuckets;
    while (b < nbuckets && !buckets[b])
        b++;
    if (b == nbuckets)
        return false;
    m->n = 0;
    memset(m->bits, 0, sizeof(m->bits));
    for (size_t i = 1; i < symoffset; i++) {
        int k = name_index(d, i, names, n, f);
        if (k >= 0 && !add_match(m, i, k))
            return false;
    }
    for (int k = 0; k < n; k++) {
        uint32_t h = f->tabbed ? f->ghash[k] : gnu_hash_of(names[k]);
        for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i; i++) {
            uint32_t h2 = chain[i - symoffset];
            if ((h | 1) == (h2 | 1) && !strcmp(d->strtab + d->symtab[i].st_name, names[k]) &&
                !add_match(m, i, k))
                return false;
            if (h2 & 1)
                break;
        }
    }
    return true;
}

static int match_of(const struct matches *m, size_t sym)
{
    if (!(m->bits[sym / 64 % 128] & (1ull << (sym % 64))))
        return -1;
    for (int i = 0; i < m->n; i++)
        if (m->sym[i] == sym)
            return m->name[i];
    return -1;
}

/* The filters of the name lists tlsmeter walks with (static arrays: the hooks, the record
 * functions, the libssl entry points), built once each: a walk then costs its object's
 * symbols and relocations only. A list is recognised by its pointers, compared one by one. */
#define FILTER_CACHE 6
static struct cached_filter {
    struct name_filter f;
    const char *const *names;
    int n;
    const char *copy[NAME_TAB_MAX];
    _Atomic int state; /* 0 free, 1 being built, 2 ready */
} filters[FILTER_CACHE];

static const struct name_filter *filter_for(const char *const names[], int n,
                                            struct name_filter *local)
{
    size_t bytes = (size_t)n * sizeof(names[0]);
    if (n > NAME_TAB_MAX) {
        filter_build(local, names, n);
        return local;
    }
    for (int i = 0; i < FILTER_CACHE; i++) {
        struct cached_filter *c = &filters[i];
        if (atomic_load_explicit(&c->state, memory_order_acquire) == 2 && c->names == names &&
            c->n == n && !memcmp(c->copy, names, bytes))
            return &c->f;
    }
    for (int i = 0; i < FILTER_CACHE; i++) {
        struct cached_filter *c = &filters[i];
        int expect = 0;
        if (!atomic_compare_exchange_strong(&c->state, &expect, 1))
            continue;
        filter_build(&c->f, names, n);
        c->names = names, c->n = n;
        memcpy(c->copy, names, bytes);
        atomic_store_explicit(&c->state, 2, memory_order_release);
        return &c->f;
    }
    filter_build(local, names, n);
    return local;
}

/* Every relocation (PLT first, then the others) whose symbol is one of names[0..n). */
static void walk_relocs(const struct link_map *lm, const struct dyninfo *d,
                        const char *const names[], int n, reloc_visit visit, void *arg)
{
    struct name_filter local;
    struct matches m;
    if (!d->symtab || !d->strtab)
        return;
    const struct name_filter *f = filter_for(names, n, &local);
    bool found = find_symbols(d, names, n, f, &m);
    if (found && !m.n)
        return;
    for (int which = 0; which < 2; which++) {
        size_t ent = d->rela[which] ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
        size_t count = d->rel[which] ? d->relsz[which] / ent : 0;
        /* The linker sorts the symbol-less relative relocations first and counts them
         * (-z combreloc, the default): libcrypto has tens of thousands, none names a symbol. */
        size_t first = which == 1 && d->relative <= count ? d->relative : 0;
        for (size_t i = first; i < count; i++) {
            /* r_offset and r_info lead both layouts. */
            const ElfW(Rel) *r = (const void *)((const char *)d->rel[which] + i * ent);
#if __ELF_NATIVE_CLASS == 64
            size_t sym = ELF64_R_SYM(r->r_info);
#else
            size_t sym = ELF32_R_SYM(r->r_info);
#endif
            int k = !sym ? -1 : found ? match_of(&m, sym) : name_index(d, sym, names, n, f);
            if (k >= 0)
                visit(d, sym, k, lm->l_addr + r->r_offset, arg);
        }
    }
}

struct refs {
    const char **vers;
    uint64_t mask;
};

static void note_ref(const struct dyninfo *d, size_t symidx, int name, uintptr_t slot, void *arg)
{
    struct refs *r = arg;
    (void)slot;
    if (name < 64) /* a summary bit per hook while they fit; the versions below are exact */
        r->mask |= 1ull << name;
    unsigned vi = d->versym ? (d->versym[symidx] & 0x7fff) : 0;
    if (vi > 1 && !r->vers[name]) /* 0 local, 1 global: unversioned */
        r->vers[name] = version_name(d, vi);
}

uint64_t tlsm_elf_refs(const struct link_map *lm, const char *const names[], int n,
                       const char *vers[])
{
    struct dyninfo d;
    struct refs r = {vers, 0};
    for (int i = 0; i < n; i++)
        vers[i] = NULL;
    read_dynamic(lm, &d);
    walk_relocs(lm, &d, names, n, note_ref, &r);
    return r.mask;
}

struct slots {
    tlsm_elf_slot_fn fn;
    void *arg;
};

static void visit_slot(const struct dyninfo *d, size_t symidx, int name, uintptr_t slot, void *arg)
{
    const struct slots *s = arg;
    s->fn(name, slot, d->symtab[symidx].st_value, s->arg);
}

void tlsm_elf_slots(const struct link_map *lm, const char *const names[], int n,
                    tlsm_elf_slot_fn fn, void *arg)
{
    struct dyninfo d;
    struct slots s = {fn, arg};
    read_dynamic(lm, &d);
    walk_relocs(lm, &d, names, n, visit_slot, &s);
}

/* DT_RELR, as the gABI's packed relative relocations define it: a word with its low bit
 * clear is the offset of a word to relocate, and the words after it follow; a word with its
 * low bit set is a bitmap for the next (bits per word - 1) words, bit k (from 1) set when the
 * (k - 1)th of them is relocated. Each relocated word held its addend and holds base + addend
 * now (the loader applied them before any constructor), which is the value. */
static int walk_relr(const struct link_map *lm, const struct dyninfo *d, tlsm_elf_rel_fn fn,
                     void *arg)
{
    enum { W = sizeof(ElfW(Addr)), BITS = 8 * sizeof(ElfW(Addr)) };
    size_t count = d->relr ? d->relrsz / W : 0;
    uintptr_t next = 0; /* the word after the last one an address entry or bitmap covered */
    for (size_t i = 0; i < count; i++) {
        ElfW(Addr) e = d->relr[i];
        if (!(e & 1)) {
            uintptr_t where = lm->l_addr + e;
            if (fn(where, *(const uintptr_t *)where, arg))
                return 1;
            next = where + W;
            continue;
        }
        if (!next) /* a bitmap before any address: not the format */
            return 0;
        for (unsigned k = 1; k < BITS; k++) {
            uintptr_t where = next + (uintptr_t)(k - 1) * W;
            if (((e >> k) & 1) && fn(where, *(const uintptr_t *)where, arg))
                return 1;
        }
        next += (uintptr_t)(BITS - 1) * W;
    }
    return 0;
}

void tlsm_elf_relatives(const struct link_map *lm, tlsm_elf_rel_fn fn, void *arg)
{
    struct dyninfo d;
    read_dynamic(lm, &d);
    /* Relative relocations are in DT_RELA/DT_REL (which = 1) and, for an object linked with
     * -z pack-relative-relocs, in DT_RELR: most of them there, the rest stay in DT_RELA. */
    size_t ent = d.rela[1] ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
    size_t count = d.rel[1] ? d.relsz[1] / ent : 0;
    for (size_t i = 0; i < count; i++) {
        const ElfW(Rela) *r = (const void *)((const char *)d.rel[1] + i * ent);
#if __ELF_NATIVE_CLASS == 64
        unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
#else
        unsigned type = (unsigned)ELF32_R_TYPE(r->r_info);
#endif
        if (type != TLSM_ARCH_R_RELATIVE)
            continue;
        uintptr_t where = lm->l_addr + r->r_offset;
        uintptr_t value = d.rela[1] ? lm->l_addr + (uintptr_t)r->r_addend : *(uintptr_t *)where;
        if (fn(where, value, arg))
            return;
    }
    walk_relr(lm, &d, fn, arg);
}

/* A defined symbol named name in the GNU hash table (the ELF gABI extension every linker
 * emits by default), found as ld.so finds it: bloom filter, bucket, chain. */
static bool gnu_defines(const struct dyninfo *d, const char *name)
{
    const uint32_t *g = d->gnu_hash;
    uint32_t nbuckets = g[0], symoffset = g[1], bloom_size = g[2], bloom_shift = g[3];
    uint32_t h = gnu_hash_of(name);
    const ElfW(Addr) *bloom = (const void *)(g + 4);
    enum { BITS = sizeof(ElfW(Addr)) * 8 };
    if (!nbuckets || !bloom_size)
        return false;
    ElfW(Addr) word = bloom[(h / BITS) % bloom_size];
    ElfW(Addr) mask =
        ((ElfW(Addr))1 << (h % BITS)) | ((ElfW(Addr))1 << ((h >> bloom_shift) % BITS));
    if ((word & mask) != mask)
        return false;
    const uint32_t *buckets = (const void *)(bloom + bloom_size), *chain = buckets + nbuckets;
    for (uint32_t i = buckets[h % nbuckets]; i >= symoffset; i++) {
        uint32_t h2 = chain[i - symoffset];
        if ((h | 1) == (h2 | 1) && d->symtab[i].st_shndx != SHN_UNDEF &&
            !strcmp(d->strtab + d->symtab[i].st_name, name))
            return true;
        if (h2 & 1)
            break;
    }
    return false;
}

bool tlsm_elf_may_define(const struct link_map *lm, const char *name)
{
    struct dyninfo d;
    read_dynamic(lm, &d);
    if (!d.symtab || !d.strtab)
        return false; /* no dynamic symbols: nothing to look up by name */
    return d.gnu_hash ? gnu_defines(&d, name) : true; /* DT_HASH only: the caller's dlsym decides */
}

struct tlsm_elf_flags tlsm_elf_flags(const struct link_map *lm)
{
    struct dyninfo d;
    read_dynamic(lm, &d);
    return d.flags;
}

/* DT_SONAME and DT_NEEDED are string-table offsets: found in a second pass, after DT_STRTAB. */
static const char *dyn_string(const struct link_map *lm, ElfW(Sxword) tag, const char *want)
{
    const char *strtab = NULL;
    for (const ElfW(Dyn) *e = lm->l_ld; e && e->d_tag != DT_NULL; e++)
        if (e->d_tag == DT_STRTAB)
            strtab = dptr(lm, e->d_un.d_ptr);
    for (const ElfW(Dyn) *e = lm->l_ld; strtab && e && e->d_tag != DT_NULL; e++)
        if (e->d_tag == tag && (!want || !strcmp(strtab + e->d_un.d_val, want)))
            return strtab + e->d_un.d_val;
    return NULL;
}

const char *tlsm_elf_rpath(const struct link_map *lm)
{
    return dyn_string(lm, DT_RPATH, NULL);
}

const char *tlsm_elf_soname(const struct link_map *lm)
{
    return dyn_string(lm, DT_SONAME, NULL);
}

int tlsm_elf_needed(const struct link_map *lm, const char **out, int cap)
{
    const char *strtab = NULL;
    int n = 0;
    for (const ElfW(Dyn) *e = lm->l_ld; e && e->d_tag != DT_NULL; e++)
        if (e->d_tag == DT_STRTAB)
            strtab = dptr(lm, e->d_un.d_ptr);
    for (const ElfW(Dyn) *e = lm->l_ld; strtab && e && e->d_tag != DT_NULL && n < cap; e++)
        if (e->d_tag == DT_NEEDED)
            out[n++] = strtab + e->d_un.d_val;
    return n;
}

bool tlsm_elf_needs(const struct link_map *lm, const char *soname)
{
    return dyn_string(lm, DT_NEEDED, soname) != NULL;
}
