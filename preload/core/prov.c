/* prov.c: the provider or engine that decrypts a record context's records (prov.h).
 *
 * OpenSSL 3 binds a context to the provider its cipher was fetched from: the default one
 * unless the program's configuration says otherwise (the FIPS module under
 * `default_properties = fips=yes`, a vendor's provider). An ENGINE (both 1.1.1 and 3.x) takes
 * a context when the engine was set as the default for that cipher; the context then holds it
 * (evp_cipher_ctx_st's second member, the same in 1.1.1 to 3.5; 3.x has no getter for it).
 * The answer is per (cipher, engine) pair, so it is cached by the two pointers: a key asks
 * the copy once per distinct cipher, a record not at all.
 *
 * The FIPS module is OpenSSL's own code compiled apart (fips.so), with the same AES-GCM
 * sources as the default provider but its own copy of them, which calls its own
 * CRYPTO_gcm128_* (not exported, so those hooks never fire for its records). Its cipher
 * context is 3.0's PROV_GCM_CTX when the module is 3.0.x (the same offsets as
 * hooks/hook_table.c reads), reached through evp_cipher_ctx_st.algctx (at 168 in 3.0 and 3.1,
 * LP64). The context's code is noted for the impl event only when the module is 3.0.x, the
 * copy is 3.0 or 3.1 (impl.c reads the GCM context by the copy's version) and the pointers
 * found there lie inside the module; otherwise the records name no implementation. */
#include "core/prov.h"
#include "base/caps.h"
#include "base/glibc_compat.h"
#include "base/json.h"
#include "core/impl.h"
#include "trace/trace.h"

#include <openssl/core.h>
#include <openssl/core_names.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_PROVS   16
#define MAX_CIPHERS 64

/* evp_cipher_ctx_st (crypto/evp/evp_local.h): engine second in 1.1.1 and 3.x; algctx at 168
 * in 3.0/3.1 on LP64. PROV_GCM_CTX of 3.0 (ciphercommon_gcm.h): hw at 240, the GCM128_CONTEXT
 * at 248 (its block at 248 + 376), ctr at 688. */
enum { CTX_ENGINE = 1, CTX_ALGCTX_OFF = 168 };
enum { GCM_HW_OFF = 240, GCM_CTX_OFF = 248, GCM_BLOCK_OFF = 248 + 376, GCM_CTR_OFF = 688 };

struct prov {
    const void *who; /* the OSSL_PROVIDER or ENGINE */
    const struct tlsm_obj *lib;
    uintptr_t start, end; /* the module's mapping, 0 when none was found */
    bool gcm30;           /* its GCM contexts are 3.0's PROV_GCM_CTX (header comment) */
    unsigned gen;         /* trace file generation its line went to */
    char line[TLSM_LINE_MAX];
    size_t len;
    char tail[24];
    size_t tail_n;
};

struct cipher_memo {
    const void *cipher, *engine;
    const struct tlsm_obj *lib;
    int id;
};

static struct prov provs[MAX_PROVS];
static _Atomic int nprovs;
static struct cipher_memo memo[MAX_CIPHERS];
static _Atomic int nmemo;
/* Held for a few stores (no loader or OpenSSL call inside): the holder's pid, so a forked
 * child takes over a lock a parent thread held at the fork. */
static _Atomic int lock;

static void lock_take(void)
{
    int me = getpid();
    for (;;) {
        int held = 0;
        if (__atomic_compare_exchange_n(&lock, &held, me, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return;
        if (held != me && __atomic_compare_exchange_n(&lock, &held, me, false, __ATOMIC_ACQUIRE,
                                                      __ATOMIC_RELAXED))
            return; /* a parent's thread held it at fork */
        sched_yield();
    }
}

static void lock_give(void)
{
    __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

static int memo_find(const void *cipher, const void *engine, const struct tlsm_obj *lib)
{
    int n = atomic_load_explicit(&nmemo, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (memo[i].cipher == cipher && memo[i].engine == engine && memo[i].lib == lib)
            return memo[i].id;
    return -1;
}

static void memo_add(const void *cipher, const void *engine, const struct tlsm_obj *lib, int id)
{
    lock_take();
    int n = atomic_load_explicit(&nmemo, memory_order_relaxed);
    if (n < MAX_CIPHERS && memo_find(cipher, engine, lib) < 0) {
        memo[n] = (struct cipher_memo){cipher, engine, lib, id};
        atomic_store_explicit(&nmemo, n + 1, memory_order_release);
    }
    lock_give();
}

/* What a provider says of itself: OSSL_PROV_PARAM_NAME, _VERSION, _BUILDINFO (UTF8 pointers:
 * OSSL_PARAM is a public struct, filled here without the copy's constructors). */
struct prov_info {
    const char *name, *full_name, *version, *buildinfo;
};

static void provider_info(const struct tlsm_abi *a, const struct ossl_provider_st *p,
                          struct prov_info *pi)
{
    memset(pi, 0, sizeof(*pi));
    pi->name = a->provider_name ? a->provider_name(p) : NULL;
    if (!a->provider_params)
        return;
    OSSL_PARAM prm[] = {
        {OSSL_PROV_PARAM_NAME, OSSL_PARAM_UTF8_PTR, &pi->full_name, sizeof(char *), 0},
        {OSSL_PROV_PARAM_VERSION, OSSL_PARAM_UTF8_PTR, &pi->version, sizeof(char *), 0},
        {OSSL_PROV_PARAM_BUILDINFO, OSSL_PARAM_UTF8_PTR, &pi->buildinfo, sizeof(char *), 0},
        {NULL, 0, NULL, 0, 0},
    };
    if (a->provider_params(p, (struct ossl_param_st *)prm) != 1)
        pi->full_name = pi->version = pi->buildinfo = NULL;
}

/* The object holding addr: its path, build id and mapping (none: empty path, start 0). */
static void module_of(const void *addr, struct prov *p, char *path, size_t pcap, char *bid,
                      size_t bcap)
{
    struct dl_find_object f;
    path[0] = bid[0] = '\0';
    if (!addr || _dl_find_object((void *)(uintptr_t)addr, &f) != 0 || !f.dlfo_link_map)
        return;
    p->start = (uintptr_t)f.dlfo_map_start;
    p->end = (uintptr_t)f.dlfo_map_end;
    snprintf(path, pcap, "%s", f.dlfo_link_map->l_name ? f.dlfo_link_map->l_name : "");
    tlsm_build_id(f.dlfo_link_map, bid, bcap);
}

static void make_line(struct prov *p, int id, const char *kind, const char *name,
                      const struct prov_info *pi, const char *path, const char *bid)
{
    struct tlsm_json j;
    tlsm_json_begin(&j, p->line, sizeof(p->line), TLSM_EV(PROV));
    tlsm_json_int(&j, "id", id);
    tlsm_json_int(&j, "lib", p->lib->lib_id);
    tlsm_json_safe(&j, "kind", kind);
    tlsm_json_str(&j, "name", name ? name : "");
    tlsm_json_str(&j, "full_name", pi->full_name ? pi->full_name : "");
    tlsm_json_str(&j, "version", pi->version ? pi->version : "");
    tlsm_json_str(&j, "buildinfo", pi->buildinfo ? pi->buildinfo : "");
    tlsm_json_str(&j, "module", path);
    tlsm_json_safe(&j, "build_id", bid);
    tlsm_json_safe(&j, "gcm_layout", p->gcm30 ? "3.0" : "");
    p->len = tlsm_json_end(&j, p->line);
    p->tail_n = (size_t)snprintf(p->tail, sizeof(p->tail), ",\"prov\":%d", id);
}

/* A new entry for who (all OpenSSL and loader calls made by the caller, none under the lock);
 * its id, or 0 when the table is full. An entry another thread made first is reused. */
static int prov_add(const struct prov *tmpl, const char *kind, const char *name,
                    const struct prov_info *pi, const char *path, const char *bid)
{
    int id = 0;
    lock_take();
    int n = atomic_load_explicit(&nprovs, memory_order_relaxed);
    for (int i = 0; i < n && !id; i++)
        if (provs[i].who == tmpl->who && provs[i].lib == tmpl->lib)
            id = i + 1;
    if (!id && n < MAX_PROVS) {
        provs[n] = *tmpl;
        make_line(&provs[n], n + 1, kind, name, pi, path, bid);
        atomic_store_explicit(&nprovs, n + 1, memory_order_release);
        id = n + 1;
    }
    lock_give();
    return id;
}

static int engine_entry(struct tlsm_obj *lib, const void *engine, const void *cipher)
{
    const struct tlsm_abi *a = &lib->abi;
    const struct engine_st *e = engine;
    struct prov p = {.who = engine, .lib = lib};
    struct prov_info pi = {0};
    char path[512], bid[48];
    /* An engine's EVP_CIPHER is often static data of its module (else heap: no module). */
    module_of(cipher, &p, path, sizeof(path), bid, sizeof(bid));
    if (p.start && p.start <= (uintptr_t)lib->start && (uintptr_t)lib->start < p.end)
        path[0] = bid[0] = '\0', p.start = p.end = 0; /* the copy itself: not the engine's */
    pi.full_name = a->engine_name ? a->engine_name(e) : NULL;
    return prov_add(&p, "engine", a->engine_id ? a->engine_id(e) : "?", &pi, path, bid);
}

static int provider_entry(struct tlsm_obj *lib, const struct ossl_provider_st *pv, bool gcm)
{
    const struct tlsm_abi *a = &lib->abi;
    struct prov_info pi;
    provider_info(a, pv, &pi);
    if (!pi.name || !strcmp(pi.name, "default"))
        return 0;
    struct prov p = {.who = pv, .lib = lib};
    char path[512], bid[48];
    /* The provider's dispatch table is its module's data: the built-in ones' is libcrypto. */
    module_of(a->provider_dispatch ? (const void *)a->provider_dispatch(pv) : NULL, &p, path,
              sizeof(path), bid, sizeof(bid));
    p.gcm30 = gcm && p.start && !strcmp(pi.name, "fips") && pi.version &&
              !strncmp(pi.version, "3.0.", 4) && a->major == 3 && a->minor <= 1;
    return prov_add(&p, "provider", pi.name, &pi, path, bid);
}

int tlsm_prov_of(struct tlsm_obj *lib, const EVP_CIPHER_CTX *ctx, bool gcm)
{
    if (!lib || !ctx || !tlsm_abi_traced(&lib->abi) || !lib->abi.ctx_cipher)
        return 0;
    const struct tlsm_abi *a = &lib->abi;
    const void *cipher = a->ctx_cipher((const struct evp_cipher_ctx_st *)ctx);
    const void *const *raw = (const void *const *)ctx;
    /* The engine member is read only where the cipher member is where the copy says. */
    const void *engine = cipher && raw[0] == cipher ? raw[CTX_ENGINE] : NULL;
    if (!cipher)
        return 0;
    int id = memo_find(cipher, engine, lib);
    if (id >= 0)
        return id;
    if (engine && a->engine_id)
        id = engine_entry(lib, engine, cipher);
    else if (a->cipher_provider && a->cipher_provider(cipher))
        id = provider_entry(lib, a->cipher_provider(cipher), gcm);
    else
        id = 0;
    memo_add(cipher, engine, lib, id);
    return id;
}

static bool inside(const struct prov *p, const void *q)
{
    return (uintptr_t)q >= p->start && (uintptr_t)q < p->end;
}

void tlsm_prov_record(int id, struct tlsm_obj *lib, const EVP_CIPHER_CTX *ctx)
{
    if (id <= 0 || id > atomic_load_explicit(&nprovs, memory_order_acquire))
        return;
    struct prov *p = &provs[id - 1];
    unsigned gen = tlsm_trace_generation();
    if (__atomic_load_n(&p->gen, __ATOMIC_ACQUIRE) != gen && tlsm_trace_ready()) {
        lock_take(); /* first record of it in this trace file (also a forked child's) */
        if (p->gen != gen && p->len) {
            tlsm_trace_line(p->line, p->len);
            __atomic_store_n(&p->gen, gen, __ATOMIC_RELEASE);
        }
        lock_give();
    }
    if (!p->gcm30 || !ctx)
        return;
    const char *alg = *(const char *const *)((const char *)ctx + CTX_ALGCTX_OFF);
    if (!alg)
        return;
    const void *hw = *(const void *const *)(alg + GCM_HW_OFF);
    const void *block = *(const void *const *)(alg + GCM_BLOCK_OFF);
    const void *ctr = *(const void *const *)(alg + GCM_CTR_OFF);
    if (inside(p, hw) && inside(p, block) && (!ctr || inside(p, ctr)))
        tlsm_impl_note_gcm(lib, alg + GCM_CTX_OFF, ctr);
}

const char *tlsm_prov_tail(int id, size_t *n)
{
    if (id <= 0 || id > atomic_load_explicit(&nprovs, memory_order_acquire))
        return *n = 0, NULL;
    *n = provs[id - 1].tail_n;
    return provs[id - 1].tail;
}
