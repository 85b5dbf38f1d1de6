/* obj.c: the registry of objects (bounded, append-only; entries outlive dlclose as stale)
 * and the lib event of each OpenSSL instance. */
#include "forward/obj.h"
#include "forward/blind.h"
#include "base/caps.h"
#include "base/clock.h"
#include "base/elfdyn.h"
#include "base/glibc_compat.h"
#include "base/json.h"
#include "trace/log.h"
#include "trace/thread.h"
#include "trace/trace.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_OBJS 128

/* Append-only under obj_lock; readers see only fully built entries (nobjs is published
 * after the entry is written). No dl* call ever happens under this lock: dlsym and dlopen
 * take the loader lock, and a constructor running under the loader lock may call a hook. */
static struct tlsm_obj objs[MAX_OBJS];
static _Atomic int nobjs;
static pthread_mutex_t obj_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const hook_names[TLSM_FN_COUNT] = {
#define X(name, fam, req) #name,
#include "base/hooks.def"
#undef X
};

static void obj_path(struct tlsm_obj *o)
{
    const char *n = o->lm->l_name;
    if (n && *n) {
        snprintf(o->path, sizeof(o->path), "%s", n);
        return;
    }
    ssize_t len = readlink("/proc/self/exe", o->path, sizeof(o->path) - 1);
    o->path[len > 0 ? len : 0] = 0;
}

static struct tlsm_obj *find_obj(const struct link_map *lm)
{
    int n = atomic_load_explicit(&nobjs, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (!objs[i].stale && objs[i].lm == lm)
            return &objs[i];
    return NULL;
}

struct tlsm_obj *tlsm_obj_of(const void *addr)
{
    struct dl_find_object f;
    if (_dl_find_object((void *)addr, &f) != 0)
        return NULL;
    struct tlsm_obj *o = find_obj(f.dlfo_link_map);
    if (o)
        return o;
    pthread_mutex_lock(&obj_lock);
    o = find_obj(f.dlfo_link_map);
    int n = atomic_load_explicit(&nobjs, memory_order_relaxed);
    if (!o && n < MAX_OBJS) {
        o = &objs[n];
        memset(o, 0, sizeof(*o));
        o->lm = f.dlfo_link_map;
        o->start = (uintptr_t)f.dlfo_map_start;
        o->end = (uintptr_t)f.dlfo_map_end;
        obj_path(o);
        o->refs = tlsm_elf_refs(o->lm, hook_names, TLSM_FN_COUNT, o->want);
        atomic_store_explicit(&nobjs, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&obj_lock);
    return o;
}

/* Still the same loaded object? Its range must map to a live link_map with its name
 * (a new object may get both the address and the freed link_map's memory). */
static bool gone(const struct tlsm_obj *o)
{
    struct dl_find_object f;
    if (_dl_find_object((void *)o->start, &f) != 0 || f.dlfo_link_map != o->lm ||
        (uintptr_t)f.dlfo_map_start != o->start || (uintptr_t)f.dlfo_map_end != o->end)
        return true;
    const char *n = f.dlfo_link_map->l_name;
    return n && n[0] && strcmp(n, o->path) != 0;
}

/* After dlclose: only the objects that really went away become stale. */
void tlsm_obj_mark_stale(void)
{
    pthread_mutex_lock(&obj_lock);
    int n = atomic_load_explicit(&nobjs, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        if (!objs[i].stale && gone(&objs[i]))
            objs[i].stale = true;
    pthread_mutex_unlock(&obj_lock);
}

/* dlsym in the object's own scope; keep only definitions from this object or its
 * dependencies, never our own hooks. */
static void *scoped_sym(void *h, const char *name)
{
    void *p = h ? dlsym(h, name) : NULL;
    return p && !tlsm_is_self(p) ? p : NULL;
}

static bool defines(const struct tlsm_obj *o, void *h, const char *name)
{
    uintptr_t p = (uintptr_t)scoped_sym(h, name);
    return p >= o->start && p < o->end;
}

static void load_api(struct tlsm_obj *o, void *h)
{
    struct tlsm_api *a = &o->api;
#define API(name) a->name = (__typeof__(a->name))scoped_sym(h, #name)
    API(SSL_get_version);
    API(SSL_get_current_cipher);
    API(SSL_CIPHER_get_name);
    API(SSL_is_server);
    API(SSL_get_error);
    API(SSL_is_init_finished);
    API(EVP_CIPHER_get_nid);
    API(EVP_CIPHER_CTX_get0_cipher);
    API(OpenSSL_version);
    API(OPENSSL_version_major);
    API(ERR_new);
    API(ERR_set_debug);
    API(ERR_set_error);
    API(SSL_get_rbio);
    API(BIO_ctrl);
    API(BIO_method_type);
    API(SSL_session_reused);
    API(X509_get0_pubkey);
    API(EVP_PKEY_get_base_id);
    API(EVP_PKEY_get_bits);
    API(EVP_PKEY_is_a);
#undef API
}

static const char *version_str(const struct tlsm_obj *o, int which)
{
    const char *s = o->api.OpenSSL_version ? o->api.OpenSSL_version(which) : NULL;
    return s ? s : "";
}

/* The major version: OPENSSL_version_major (3.0+), else the version text ("OpenSSL 1.1.1w",
 * from OpenSSL_version or 1.0's SSLeay_version: same signature), else the soname. */
static int find_major(struct tlsm_obj *o, void *h)
{
    __typeof__(&OpenSSL_version) text = o->api.OpenSSL_version;
    if (!text)
        text = (__typeof__(text))scoped_sym(h, "SSLeay_version");
    const char *v = text ? text(OPENSSL_VERSION) : NULL;
    snprintf(o->version, sizeof(o->version), "%s", v ? v : "");
    if (o->api.OPENSSL_version_major)
        return (int)o->api.OPENSSL_version_major();
    if (!strncmp(o->version, "OpenSSL ", 8) && o->version[8] >= '0' && o->version[8] <= '9')
        return o->version[8] - '0';
    const char *base = strrchr(o->path, '/');
    base = base ? base + 1 : o->path;
    if (!strncmp(base, "libssl.so.1", 11) || !strncmp(base, "libcrypto.so.1", 14))
        return 1;
    return 0;
}

/* OpenSSL 1.x: structures, record layer and EVP behaviour differ (EVP_Cipher returns the
 * length, no OSSL_PARAM, ...). Supporting it means testing it, which Debian 12 cannot:
 * forget every helper so nothing of ours ever calls into it, and say so once. */
static void leave_alone(struct tlsm_obj *o)
{
    static _Atomic int said;
    o->old_abi = true;
    memset(&o->api, 0, sizeof(o->api));
    if (!atomic_exchange(&said, 1))
        tlsm_warn("%s is %s: tlsmeter supports OpenSSL 3 only and leaves this copy alone "
                  "(its calls are forwarded, its records not traced)",
                  o->path, o->version[0] ? o->version : "OpenSSL 1.x");
}

const char *tlsm_obj_old_abi(const struct link_map *lm)
{
    int n = atomic_load_explicit(&nobjs, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (objs[i].lm == lm && objs[i].old_abi && !objs[i].foreign)
            return objs[i].version;
    return NULL;
}

bool tlsm_obj_crypto_only(const struct link_map *lm)
{
    int n = atomic_load_explicit(&nobjs, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (objs[i].lm == lm && objs[i].lib_id && objs[i].has_crypto && !objs[i].has_ssl)
            return true;
    return false;
}

static void write_lib_event(struct tlsm_obj *o)
{
    unsigned gen = tlsm_trace_generation();
    if (o->lib_gen == gen) /* once per trace file */
        return;
    o->lib_gen = gen;
    char line[TLSM_LINE_MAX], base[24], bid[80];
    struct tlsm_json j;
    const char *cpuinfo = version_str(o, OPENSSL_CPU_INFO);
    snprintf(base, sizeof(base), "0x%lx", (unsigned long)o->lm->l_addr);
    tlsm_build_id(o->lm, bid, sizeof(bid));
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(LIB));
    tlsm_json_int(&j, "id", o->lib_id);
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(tlsm_now() - tlsm_trace_t0));
    tlsm_json_str(&j, "path", o->path);
    tlsm_json_str(&j, "base", base);
    tlsm_json_str(&j, "build_id", bid);
    tlsm_json_bool(&j, "has_ssl", o->has_ssl);
    tlsm_json_bool(&j, "has_crypto", o->has_crypto);
    tlsm_json_str(&j, "version", o->version);
    tlsm_json_str(&j, "platform", version_str(o, OPENSSL_PLATFORM));
    tlsm_json_str(&j, "cflags", version_str(o, OPENSSL_CFLAGS));
    tlsm_json_str(&j, "cpuinfo", cpuinfo);
    tlsm_caps_write(&j, tlsm_caps_decode(cpuinfo));
    tlsm_json_str(&j, "role", "app");
    if (o->old_abi)
        tlsm_json_str(&j, "left_alone", o->foreign ? "other_tls" : "openssl_1");
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
}

static _Atomic int next_lib_id;

/* Lib ids are shared by the program's instances and tlsmeter's backends. */
int tlsm_next_lib_id(void)
{
    return atomic_fetch_add(&next_lib_id, 1) + 1;
}

void tlsm_obj_describe(struct tlsm_obj *o)
{
    int expect = 0;
    /* First caller describes; racing callers go on without waiting (lib id 0 meanwhile). */
    if (!atomic_compare_exchange_strong(&o->described, &expect, 1))
        return;
    /* tlsmeter's own backends (memfd copies) describe themselves, as role "backend". */
    if (!strncmp(o->path, "/proc/self/fd/", 14))
        return;
    void *h = dlopen(o->lm->l_name[0] ? o->lm->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
    o->has_ssl = defines(o, h, "SSL_read");
    o->has_crypto = defines(o, h, "EVP_CipherUpdate");
    load_api(o, h);
    if (!o->has_ssl && !o->has_crypto) {
        if (h)
            tlsm_real_dlclose(h);
        return;
    }
    tlsm_th.guard++;
    o->major = find_major(o, h);
    if (o->major > 0 && o->major < 3)
        leave_alone(o);
    else if (tlsm_other_fork(o, h)) { /* BoringSSL, LibreSSL: named there, left alone here */
        o->old_abi = o->foreign = true;
        memset(&o->api, 0, sizeof(o->api));
    }
    if (h)
        tlsm_real_dlclose(h);
    o->lib_id = tlsm_next_lib_id();
    if (tlsm_trace_ready())
        write_lib_event(o);
    tlsm_th.guard--;
}

void tlsm_obj_end_write(struct tlsm_json *j)
{
    enum { LIBS_MAX = 2048 }; /* the end line's other members keep their room */
    char *start = j->p;
    int count = atomic_load_explicit(&nobjs, memory_order_acquire);
    tlsm_json_arr(j, "libs");
    for (int i = 0; i < count; i++) {
        if (!objs[i].lib_id)
            continue;
        tlsm_json_obj_item(j);
        tlsm_json_int(j, "id", objs[i].lib_id);
        tlsm_hooks_write(j, "hooks", objs[i].hooks_into);
        tlsm_json_obj_end(j);
    }
    tlsm_json_arr_end(j);
    if (j->full || j->p - start > LIBS_MAX) {
        tlsm_json_rewind(j, start);
        tlsm_json_arr(j, "libs");
        tlsm_json_arr_end(j);
    }
}

/* fork(): see main.c. */
void tlsm_obj_atfork(bool take)
{
    if (take)
        pthread_mutex_lock(&obj_lock);
    else
        pthread_mutex_unlock(&obj_lock);
}

/* A new trace file (first open, or a forked child's): every instance already known gets
 * its lib line there too, so rec.lib always points at a lib line of the same file. */
void tlsm_obj_replay_libs(unsigned gen)
{
    int n = atomic_load_explicit(&nobjs, memory_order_acquire);
    (void)gen;
    tlsm_th.guard++;
    for (int i = 0; i < n; i++)
        if (objs[i].lib_id && !objs[i].stale)
            write_lib_event(&objs[i]);
    tlsm_th.guard--;
}
