/* bindpast.c: the per-record EVP and GCM calls of copies measured at their provider tables,
 * bound past the hooks (bindpast.h). A slot is written only when it holds the hook (or a
 * lazy PLT stub) and the linker, without tlsmeter, would bind it to that copy: the answer
 * tlsm_forward gives for a call from that object, the rule every hook forwards by. */
#include "forward/bindpast.h"
#include "base/elfdyn.h"
#include "base/glibc_compat.h"
#include "forward/got.h"
#include "forward/obj.h"
#include "forward/resolve.h"
#include "trace/thread.h"

#include <link.h>
#include <pthread.h>
#include <string.h>

/* The calls a record makes below libssl's per-record EVP_CipherInit_ex: the tag ctrl, the
 * updates and finals (with the nested Decrypt ones libcrypto makes through its own PLT),
 * EVP_Cipher (TLS 1.2 through the 1.1 interface), and the GCM calls the provider makes
 * (bound only where the tables read the code from the provider context: obj->tbl_gcm). */
static const enum tlsm_fn ids[] = {
    TLSM_FN_EVP_CIPHER_CTX_ctrl,   TLSM_FN_EVP_CipherUpdate,
    TLSM_FN_EVP_DecryptUpdate,     TLSM_FN_EVP_CipherFinal_ex,
    TLSM_FN_EVP_DecryptFinal_ex,   TLSM_FN_EVP_Cipher,
    TLSM_FN_CRYPTO_gcm128_decrypt, TLSM_FN_CRYPTO_gcm128_decrypt_ctr32,
    TLSM_FN_CRYPTO_gcm128_encrypt, TLSM_FN_CRYPTO_gcm128_encrypt_ctr32,
};
#define NIDS  (int)(sizeof(ids) / sizeof(ids[0]))
#define NGCM  4
#define NOBJ  256
#define NSLOT 1024

/* One slot written: where, what it held (the hook, given back by undo), the object holding it. */
struct bound {
    uintptr_t slot, hook;
    enum tlsm_fn id;
    const struct link_map *lm;
    const ElfW(Phdr) * phdr;
    int phnum;
    struct tlsm_obj *copy;
};
static struct bound bound[NSLOT];
static int nbound;
/* Objects are kept by link map and the address of their dynamic section: after a dlclose
 * the link map is freed, and only the address is asked about (never the map read). */
static struct {
    const struct link_map *lm;
    uintptr_t base, ld;
} scanned[NOBJ];
static int nscanned;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const struct link_map *lm;
    uintptr_t ld;
} copies[16];
static int ncopies;

struct found {
    const struct link_map *lm;
    const ElfW(Phdr) * phdr;
    int phnum;
};
struct walk {
    struct found obj[64];
    int n, skip, seen;
};

static bool was_scanned(const struct link_map *lm)
{
    for (int i = 0; i < nscanned; i++)
        if (scanned[i].lm == lm && scanned[i].base == lm->l_addr)
            return true;
    return false;
}

/* Loaded objects not scanned yet, not tlsmeter, not the vDSO; 64 per walk. */
static int walk_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct walk *w = arg;
    struct dl_find_object f;
    (void)size;
    if (w->seen++ < w->skip)
        return 0;
    if (w->n == (int)(sizeof(w->obj) / sizeof(w->obj[0])))
        return 1;
    w->skip++;
    uintptr_t at = 0;
    for (int i = 0; i < info->dlpi_phnum && !at; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD)
            at = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
    if (!at || tlsm_is_self((const void *)at) || _dl_find_object((void *)at, &f) != 0 ||
        !f.dlfo_link_map || !f.dlfo_link_map->l_ld || was_scanned(f.dlfo_link_map))
        return 0;
    w->obj[w->n++] = (struct found){f.dlfo_link_map, info->dlpi_phdr, info->dlpi_phnum};
    return 0;
}

struct scan {
    const struct found *o;
    const char *names[NIDS];
    struct tlsm_fwd to[NIDS]; /* where the linker would bind each name for this object */
    uintptr_t start, end;
    int done;
};

static void bind_slot(int k, uintptr_t slot, uintptr_t value, void *arg)
{
    struct scan *s = arg;
    struct tlsm_obj *copy = s->to[k].target;
    (void)value; /* the copy's own calls of its own names are bound past too */
    if (!s->to[k].fn || !copy || !atomic_load(&copy->tbl_records) ||
        atomic_load(&copy->evp_records) || (k >= NIDS - NGCM && !copy->tbl_gcm) || nbound == NSLOT)
        return;
    uintptr_t cur = __atomic_load_n((uintptr_t *)slot, __ATOMIC_ACQUIRE);
    uintptr_t hook = (uintptr_t)tlsm_got_self_hook(ids[k]);
    /* The hook, or a lazy PLT stub of the object itself (bound to the hook on first call). */
    if (!hook || (cur != hook && !(cur >= s->start && cur < s->end)))
        return;
    if (tlsm_got_write_ptr(s->o->phdr, s->o->phnum, s->o->lm->l_addr, slot,
                           (uintptr_t)s->to[k].fn)) {
        bound[nbound++] =
            (struct bound){slot, hook, ids[k], s->o->lm, s->o->phdr, s->o->phnum, copy};
        s->done++;
    }
}

/* The objects whose record calls matter: a libssl (it defines SSL_read) and the copies
 * themselves (their nested EVP and GCM calls). Another object's own EVP calls stay hooked:
 * its contexts are never record sources. */
static bool may_call(const struct link_map *lm)
{
    if (tlsm_elf_may_define(lm, "SSL_read"))
        return true;
    for (int i = 0; i < ncopies; i++)
        if (copies[i].lm == lm)
            return true;
    return false;
}

static int scan_one(const struct found *o)
{
    struct dl_find_object f;
    struct scan s = {.o = o};
    bool any = false;
    if (!may_call(o->lm) || _dl_find_object((void *)o->lm->l_ld, &f) != 0)
        return 0;
    s.start = (uintptr_t)f.dlfo_map_start, s.end = (uintptr_t)f.dlfo_map_end;
    for (int k = 0; k < NIDS; k++) {
        s.names[k] = tlsm_hooks[ids[k]].name;
        s.to[k] = tlsm_resolve_peek(ids[k], (const void *)o->lm->l_ld);
        any |= s.to[k].target && atomic_load(&s.to[k].target->tbl_records);
    }
    if (any)
        tlsm_elf_slots(o->lm, s.names, NIDS, bind_slot, &s);
    return s.done;
}

void tlsm_bindpast_add_copy(const struct link_map *copy)
{
    pthread_mutex_lock(&lock);
    bool known = false;
    for (int i = 0; i < ncopies; i++)
        known |= copies[i].lm == copy;
    if (!known && ncopies < (int)(sizeof(copies) / sizeof(copies[0])))
        copies[ncopies++] = (__typeof__(copies[0])){copy, (uintptr_t)copy->l_ld};
    pthread_mutex_unlock(&lock);
}

int tlsm_bindpast_scan(void)
{
    struct walk w = {.skip = 0};
    int done = 0;
    tlsm_th.guard++;
    pthread_mutex_lock(&lock);
    do {
        w.n = w.seen = 0;
        dl_iterate_phdr(walk_cb, &w);
        for (int i = 0; i < w.n; i++) {
            done += scan_one(&w.obj[i]);
            if (nscanned < NOBJ)
                scanned[nscanned++] = (__typeof__(scanned[0])){w.obj[i].lm, w.obj[i].lm->l_addr,
                                                               (uintptr_t)w.obj[i].lm->l_ld};
        }
    } while (w.n == (int)(sizeof(w.obj) / sizeof(w.obj[0])));
    pthread_mutex_unlock(&lock);
    tlsm_th.guard--;
    return done;
}

int tlsm_bindpast_object(const struct link_map *lm, const ElfW(Phdr) * phdr, int phnum)
{
    struct found o = {lm, phdr, phnum};
    int done = 0;
    tlsm_th.guard++;
    pthread_mutex_lock(&lock);
    if (!was_scanned(lm)) {
        done = scan_one(&o);
        if (nscanned < NOBJ)
            scanned[nscanned++] = (__typeof__(scanned[0])){lm, lm->l_addr, (uintptr_t)lm->l_ld};
    }
    pthread_mutex_unlock(&lock);
    tlsm_th.guard--;
    return done;
}

void tlsm_bindpast_after_dlclose(void)
{
    struct dl_find_object f;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nbound; i++)
        if (bound[i].copy &&
            (_dl_find_object((void *)bound[i].slot, &f) != 0 || f.dlfo_link_map != bound[i].lm))
            bound[i] = bound[--nbound], i--;
    for (int i = 0; i < nscanned; i++)
        if (_dl_find_object((void *)scanned[i].ld, &f) != 0 || f.dlfo_link_map != scanned[i].lm)
            scanned[i] = scanned[--nscanned], i--;
    for (int i = 0; i < ncopies; i++)
        if (_dl_find_object((void *)copies[i].ld, &f) != 0 || f.dlfo_link_map != copies[i].lm)
            copies[i] = copies[--ncopies], i--;
    pthread_mutex_unlock(&lock);
}

void tlsm_bindpast_undo(struct tlsm_obj *copy)
{
    struct dl_find_object f;
    pthread_mutex_lock(&lock);
    atomic_store(&copy->evp_records, true); /* before: a scan running later binds none of it */
    for (int i = 0; i < nbound; i++) {
        struct bound *b = &bound[i];
        /* Only where the object that held the slot is still the one loaded there. */
        if (b->copy != copy || _dl_find_object((void *)b->slot, &f) != 0 ||
            f.dlfo_link_map != b->lm)
            continue;
        tlsm_got_write_ptr(b->phdr, b->phnum, b->lm->l_addr, b->slot, b->hook);
        b->copy = NULL;
    }
    pthread_mutex_unlock(&lock);
}

int tlsm_bindpast_count(const struct tlsm_obj *copy)
{
    int n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nbound; i++)
        n += bound[i].copy == copy;
    pthread_mutex_unlock(&lock);
    return n;
}

bool tlsm_bindpast_holds(uintptr_t slot)
{
    bool yes = false;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nbound && !yes; i++)
        yes = bound[i].slot == slot && bound[i].copy;
    pthread_mutex_unlock(&lock);
    return yes;
}

uint64_t tlsm_bindpast_ids(void)
{
    uint64_t mask = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nbound; i++)
        if (bound[i].copy)
            mask |= 1ull << bound[i].id;
    pthread_mutex_unlock(&lock);
    return mask;
}
