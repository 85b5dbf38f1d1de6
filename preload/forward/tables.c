/* tables.c: find the default provider's cipher dispatch tables in an OpenSSL 3 copy the
 * hooks cannot interpose, and rewrite their entries (tables.h). Layout read from OpenSSL
 * 3.0's source: providers/defltprov.c lists ciphers as OSSL_ALGORITHM_CAPABLE entries whose
 * first member is an OSSL_ALGORITHM {names, property_definition, implementation, description}
 * ("AES-128-GCM:id-aes128-GCM:2.16.840.1.101.3.4.1.6", "provider=default", the table);
 * providers/implementations/include/prov/ciphercommon_aead.h (IMPLEMENT_aead_cipher) and
 * ciphers/cipher_chacha20_poly1305.c give each AEAD table exactly the fourteen function ids
 * OSSL_FUNC_CIPHER_NEWCTX .. _SETTABLE_CTX_PARAMS, once each, then {0, NULL}. In a stripped
 * copy the only handle on them is data: the name string, the relative relocation that puts
 * its address into the OSSL_ALGORITHM, and the pointers next to it. Every read stays inside
 * the object's loaded segments; anything unexpected leaves the copy alone. */
#include "forward/tables.h"
#include "base/elfdyn.h"
#include "forward/got.h"
#include "forward/resolve.h"
#include "base/glibc_compat.h"
#include "forward/marks.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *names, *cipher;
    bool gcm;
} known[] = {
    {"AES-128-GCM:id-aes128-GCM:2.16.840.1.101.3.4.1.6", "AES-128-GCM", true},
    {"AES-256-GCM:id-aes256-GCM:2.16.840.1.101.3.4.1.46", "AES-256-GCM", true},
    {"ChaCha20-Poly1305", "ChaCha20-Poly1305", false},
};
#define NKNOWN ((int)(sizeof(known) / sizeof(known[0])))

/* The flags (PF_R | PF_W | PF_X) of the loaded segment that holds [addr, addr + len), 0 if
 * none does. Read-only data may share the code's segment (aarch64 links without
 * -z separate-code): strings are looked for in every segment that is not writable. */
enum { SEG_TEXT = 1, SEG_CODE = 2, SEG_DATA = 4 };
static int seg_kind(const struct tlsm_table_copy *c, uintptr_t addr, size_t len)
{
    for (int i = 0; i < c->phnum; i++) {
        const ElfW(Phdr) *ph = &c->phdr[i];
        uintptr_t lo = c->lm->l_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || addr < lo || addr + len > lo + ph->p_memsz ||
            addr + len < addr)
            continue;
        return ((ph->p_flags & PF_W) ? 0 : SEG_TEXT) | ((ph->p_flags & PF_X) ? SEG_CODE : 0) |
               ((ph->p_flags & PF_X) ? 0 : SEG_DATA);
    }
    return 0;
}

/* The NUL-terminated string s, starting after a NUL, in a read-only segment; 0 if absent.
 * The segment that holds the object's string constants first (marks.h): the others are the
 * code and the headers, several times its size. */
static uintptr_t find_string(const struct tlsm_table_copy *c, const char *s)
{
    size_t n = strlen(s) + 1;
    struct dl_phdr_info info = {
        .dlpi_addr = c->lm->l_addr, .dlpi_phdr = c->phdr, .dlpi_phnum = (ElfW(Half))c->phnum};
    for (int k = 0; k < 2 * c->phnum; k++) {
        const ElfW(Phdr) *ph = &c->phdr[k % c->phnum];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || !(ph->p_flags & PF_R) ||
            tlsm_marks_holds_strings(&info, ph) != (k < c->phnum))
            continue;
        const char *lo = (const char *)(c->lm->l_addr + ph->p_vaddr), *end = lo + ph->p_filesz;
        for (const char *q = lo; q < end && (q = memmem(q, (size_t)(end - q), s, n)); q++)
            if (q == lo || !q[-1])
                return (uintptr_t)q;
    }
    return 0;
}

/* The first string in a read-only segment that starts (after a NUL) with prefix (10 bytes)
 * and whose next byte ok() accepts, copied into buf ("" if none). */
static void find_text(const struct tlsm_table_copy *c, const char *prefix, bool (*ok)(char),
                      char *buf, size_t cap)
{
    buf[0] = 0;
    for (int i = 0; i < c->phnum && !buf[0]; i++) {
        const ElfW(Phdr) *ph = &c->phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) || !(ph->p_flags & PF_R))
            continue;
        const char *lo = (const char *)(c->lm->l_addr + ph->p_vaddr), *end = lo + ph->p_filesz;
        for (const char *q = lo; q < end && (q = memmem(q, (size_t)(end - q), prefix, 10)); q++)
            if ((q == lo || !q[-1]) && q + 12 < end && ok(q[10])) {
                snprintf(buf, cap, "%.*s", (int)strnlen(q, (size_t)(end - q)), q);
                break;
            }
    }
}

static bool digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static bool printable(char ch)
{
    return ch > ' ';
}

/* "OpenSSL 3.x.y dd Mon yyyy": the version text libcrypto carries. */
static void find_version(const struct tlsm_table_copy *c, char *buf, size_t cap)
{
    find_text(c, "OpenSSL 3.", digit, buf, cap);
}

/* "platform: TARGET", the Configure target OpenSSL keeps for OpenSSL_version(OPENSSL_PLATFORM):
 * what a hidden copy was built for (a vendor's own target such as "Linux" has no assembler
 * modules). The copy is never called, so the text is read from its string constants. */
static void find_platform(const struct tlsm_table_copy *c, char *buf, size_t cap)
{
    find_text(c, "platform: ", printable, buf, cap);
}

struct batch {
    struct dl_phdr_info obj[32];
    const struct link_map *lm[32];
    int skip, seen, n;
};

/* The objects that may hold a copy, in load order, the first skip ones left out: not
 * tlsmeter, its backends (memfd copies) or the vDSO. Up to 32 per walk: what is done with
 * them (dlopen, dlsym) is done outside dl_iterate_phdr's lock. */
static int batch_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct batch *b = arg;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    struct dl_find_object f;
    (void)size;
    if (b->seen++ < b->skip)
        return 0;
    if (b->n == (int)(sizeof(b->obj) / sizeof(b->obj[0])))
        return 1;
    b->skip++;
    if (!info->dlpi_phnum || !strncmp(name, "/proc/self/fd/", 14) || !strncmp(name, "linux-", 6))
        return 0;
    uintptr_t at = 0;
    for (int i = 0; i < info->dlpi_phnum && !at; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD)
            at = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
    if (!at || tlsm_is_self((void *)at) || _dl_find_object((void *)at, &f) != 0)
        return 0;
    b->obj[b->n] = *info;
    b->lm[b->n++] = f.dlfo_link_map;
    return 0;
}

/* Does the named object lm export EVP_CipherUpdate itself (then the hooks interpose its EVP
 * calls, unless it binds to itself first)? Its own symbol table is asked first: most objects
 * define no such name, and then no dlopen is needed. */
static bool exports_cipher(const struct link_map *lm)
{
    struct dl_find_object f;
    if (!tlsm_elf_may_define(lm, "EVP_CipherUpdate"))
        return false;
    void *h = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
    void *p = h ? dlsym(h, "EVP_CipherUpdate") : NULL;
    bool yes = p && _dl_find_object(p, &f) == 0 && f.dlfo_link_map == lm;
    if (h)
        tlsm_real_dlclose(h);
    return yes;
}

/* One object: a copy the hooks cannot interpose holds OpenSSL 3's provider names and version
 * text and does not export EVP_CipherUpdate, or binds to itself first, or is the program
 * (its own calls never cross a PLT: node carries OpenSSL in its executable). The cheap
 * questions first: the string search (marks.c) is the expensive one. */
/* A copy that exports its API says its version and build target itself (static strings:
 * OpenSSL_version needs no initialisation), instead of a search of its read-only data. */
static bool api_version(const struct link_map *lm, struct tlsm_table_copy *c)
{
    void *h = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
    const char *(*fn)(int) = h ? (const char *(*)(int))dlsym(h, "OpenSSL_version") : NULL;
    struct dl_find_object f;
    bool own = fn && _dl_find_object((void *)fn, &f) == 0 && f.dlfo_link_map == lm;
    if (own) { /* OPENSSL_VERSION 0, OPENSSL_PLATFORM 3 (crypto.h, stable since 1.1.0) */
        const char *v = fn(0), *p = fn(3);
        snprintf(c->version, sizeof(c->version), "%s", v && !strncmp(v, "OpenSSL 3.", 10) ? v : "");
        snprintf(c->platform, sizeof(c->platform), "%s", p ? p : "");
    }
    if (h)
        tlsm_real_dlclose(h);
    return own && c->version[0];
}

static bool judge(const struct dl_phdr_info *info, const struct link_map *lm,
                  struct tlsm_table_copy *c, bool hooked)
{
    bool named = lm->l_name && lm->l_name[0], symbolic = tlsm_elf_flags(lm).symbolic;
    bool exports = named && !symbolic && exports_cipher(lm);
    /* The name list as a whole string in the object's string constants (marks.h). A copy
     * that exports its API is not read for it: its version says OpenSSL 3 (below), and the
     * table search finds the names or leaves it to the hooks. */
    if (exports != hooked || (!hooked && !tlsm_marks_of(info).provider))
        return false;
    memset(c, 0, sizeof(*c));
    c->lm = lm;
    c->phdr = info->dlpi_phdr;
    c->phnum = info->dlpi_phnum;
    c->exports = exports;
    c->symbolic = symbolic;
    if (!hooked || !api_version(lm, c)) {
        find_version(c, c->version, sizeof(c->version));
        find_platform(c, c->platform, sizeof(c->platform));
    }
    return c->version[0] != 0;
}

bool tlsm_tables_judge(const struct dl_phdr_info *info, const struct link_map *lm,
                       struct tlsm_table_copy *c)
{
    return judge(info, lm, c, false);
}

bool tlsm_tables_judge_hooked(const struct dl_phdr_info *info, const struct link_map *lm,
                              struct tlsm_table_copy *c)
{
    return judge(info, lm, c, true);
}

/* The search reads every loaded object's string constants (marks.c, kept for the exit's
 * blind-spot scan): done once. Both callers (hook_table.c, hook_entry.c) run in the
 * constructor, before any other thread, on the same set of objects. */
static struct tlsm_table_copy cached[8];
static int ncached = -1;

static int find_copies(struct tlsm_table_copy *out, int max, bool hooked);

int tlsm_tables_copies(struct tlsm_table_copy *out, int max)
{
    if (ncached < 0)
        ncached = find_copies(cached, (int)(sizeof(cached) / sizeof(cached[0])), false);
    int n = ncached < max ? ncached : max;
    memcpy(out, cached, (size_t)n * sizeof(*out));
    return n;
}

int tlsm_tables_hooked_copies(struct tlsm_table_copy *out, int max)
{
    return find_copies(out, max, true);
}

static int find_copies(struct tlsm_table_copy *out, int max, bool hooked)
{
    struct batch b = {.skip = 0};
    int kept = 0;
    do {
        b.seen = b.n = 0;
        dl_iterate_phdr(batch_cb, &b);
        for (int i = 0; i < b.n && kept < max; i++)
            kept += judge(&b.obj[i], b.lm[i], &out[kept], hooked);
    } while (b.n == (int)(sizeof(b.obj) / sizeof(b.obj[0])) && kept < max);
    return kept;
}

struct refs {
    uintptr_t str;
    uintptr_t where[4];
    int n;
};

/* rs: NKNOWN names' refs, then the lowest and highest of their strings (rs[NKNOWN].where[0,1]):
 * most relocations point elsewhere, and one range compare says so. */
static int refs_cb(uintptr_t where, uintptr_t value, void *arg)
{
    struct refs *rs = arg;
    if (value < rs[NKNOWN].where[0] || value > rs[NKNOWN].where[1])
        return 0;
    for (int i = 0; i < NKNOWN; i++)
        if (value == rs[i].str && rs[i].n < 4)
            rs[i].where[rs[i].n++] = where;
    return 0;
}

/* A position-dependent executable (node is one) has no relative relocations: its pointers
 * were fixed at link time. Then the aligned words of its data segments that hold the
 * string's address are the references. */
static void absolute_refs(const struct tlsm_table_copy *c, struct refs *r)
{
    for (int i = 0; i < c->phnum && r->n < 4; i++) {
        const ElfW(Phdr) *ph = &c->phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_X))
            continue;
        uintptr_t lo = (c->lm->l_addr + ph->p_vaddr + 7) & ~(uintptr_t)7;
        uintptr_t hi = c->lm->l_addr + ph->p_vaddr + ph->p_filesz;
        for (uintptr_t w = lo; w + 32 <= hi && r->n < 4; w += 8)
            if (*(const uintptr_t *)w == r->str)
                r->where[r->n++] = w;
    }
}

/* The dispatch array at d: fourteen distinct ids 1..14, functions in the object's code, then
 * {0, NULL}. Fills t; false with why on any difference. */
static bool check_dispatch(const struct tlsm_table_copy *c, uintptr_t d,
                           struct tlsm_cipher_table *t, char *why, size_t cap)
{
    unsigned seen = 0;
    int k = 0;
    for (;; k++) {
        uintptr_t e = d + (uintptr_t)k * 16;
        /* data: read-only, or RELRO inside the RW segment */
        if (k > 2 * TLSM_TBL_FN_MAX || !(seg_kind(c, e, 16) & SEG_DATA))
            return snprintf(why, cap, "no {0, NULL} end within %d entries", k), false;
        int id = *(const int *)e;
        uintptr_t fn = *(const uintptr_t *)(e + 8);
        if (!id && !fn)
            break;
        if (id < 1 || id > TLSM_TBL_FN_MAX || (seen & (1u << id)))
            return snprintf(why, cap, "entry %d has function id %d (want 1..%d, each once)", k, id,
                            TLSM_TBL_FN_MAX),
                   false;
        if (!(seg_kind(c, fn, 1) & SEG_CODE))
            return snprintf(why, cap, "entry %d (id %d) points outside its code", k, id), false;
        seen |= 1u << id;
        t->orig[id] = (void (*)(void))fn;
        t->slot[id] = e + 8;
    }
    if (k != TLSM_TBL_FN_MAX)
        return snprintf(why, cap, "%d entries (want %d)", k, TLSM_TBL_FN_MAX), false;
    return true;
}

int tlsm_tables_find(const struct tlsm_table_copy *c, struct tlsm_cipher_table *out, int max,
                     char *why, size_t whycap)
{
    int n = 0;
    bool any = false;
    why[0] = 0;
    struct refs rs[NKNOWN + 1];
    rs[NKNOWN] = (struct refs){0, {UINTPTR_MAX, 0}, 0};
    for (int i = 0; i < NKNOWN; i++) {
        rs[i] = (struct refs){find_string(c, known[i].names), {0}, 0};
        any |= rs[i].str != 0;
        if (rs[i].str && rs[i].str < rs[NKNOWN].where[0])
            rs[NKNOWN].where[0] = rs[i].str;
        if (rs[i].str > rs[NKNOWN].where[1])
            rs[NKNOWN].where[1] = rs[i].str;
    }
    if (any) /* one pass over the relocations for every name */
        tlsm_elf_relatives(c->lm, refs_cb, rs);
    for (int i = 0; i < NKNOWN && n < max; i++) {
        struct refs r = rs[i];
        if (!r.str)
            continue;
        if (!r.n && !c->lm->l_addr)
            absolute_refs(c, &r);
        for (int k = 0; k < r.n && n < max; k++) {
            uintptr_t w = r.where[k];
            if (!seg_kind(c, w, 32))
                continue;
            const char *prop = *(const char *const *)(w + 8);
            uintptr_t disp = *(const uintptr_t *)(w + 16);
            /* Only the default provider's OSSL_ALGORITHM: property "provider=default". */
            if (!(seg_kind(c, (uintptr_t)prop, 17) & SEG_TEXT) ||
                strcmp(prop, "provider=default") || (disp & 7) ||
                !(seg_kind(c, disp, 16) & SEG_DATA))
                continue;
            struct tlsm_cipher_table *t = &out[n];
            memset(t, 0, sizeof(*t));
            char w2[160];
            if (!check_dispatch(c, disp, t, w2, sizeof(w2))) {
                snprintf(why, whycap, "%s dispatch table at +0x%lx: %s", known[i].cipher,
                         (unsigned long)(disp - c->lm->l_addr), w2);
                continue;
            }
            t->lm = c->lm;
            t->cipher = known[i].cipher;
            t->gcm = known[i].gcm;
            t->disp = disp;
            n++;
        }
    }
    return n;
}

bool tlsm_tables_holds(const struct tlsm_table_copy *c, const void *p, bool code)
{
    int k = seg_kind(c, (uintptr_t)p, 1);
    return code ? (k & SEG_CODE) != 0 : k != 0;
}

bool tlsm_tables_set(const struct tlsm_table_copy *c, struct tlsm_cipher_table *t, int id,
                     void (*fn)(void))
{
    if (id < 1 || id > TLSM_TBL_FN_MAX || !t->slot[id])
        return false;
    uintptr_t v = (uintptr_t)(fn ? fn : t->orig[id]);
    return tlsm_got_write_ptr(c->phdr, c->phnum, c->lm->l_addr, t->slot[id], v);
}
