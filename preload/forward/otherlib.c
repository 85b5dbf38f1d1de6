/* otherlib.c: TLS libraries other than OpenSSL 3 (GnuTLS, NSS, Mbed TLS, wolfSSL, and
 * BoringSSL or LibreSSL under their own sonames). tlsmeter measures none of them, but a
 * process that does its TLS with one must not leave a silent zero (or no trace at all).
 * Their handshake and read entry points are hooked only to count calls and forward, no
 * argument looked at: a library merely loaded (curl links GnuTLS through librtmp and never
 * calls it) says nothing; the first call names it once on stderr and in the trace (a
 * `blind` event, what "other_tls", opening the trace if nothing else did); end.blind has the
 * call counts. OpenSSL forks are recognised when the SSL_* hooks first forward into them. */
#include "forward/blind.h"
#include "base/caps.h"
#include "base/clock.h"
#include "base/json.h"
#include "trace/log.h"
#include "forward/obj.h"
#include "forward/resolve.h"
#include "trace/thread.h"
#include "trace/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

enum other_kind { K_GNUTLS, K_NSS, K_MBEDTLS, K_WOLFSSL, K_BORINGSSL, K_LIBRESSL, K_N };
static const char *const kind_names[K_N] = {"GnuTLS",  "NSS",       "Mbed TLS",
                                            "wolfSSL", "BoringSSL", "LibreSSL"};

struct other {
    _Atomic int state; /* 0 not seen, 1 being described, 2 described */
    char path[512], version[64], build_id[80];
    unsigned gen; /* trace generation its event went to */
};
static struct other others[K_N];

/* The version text, from the library's own function (pure, no state touched). */
static void find_version(enum other_kind k, void *h, char *buf, size_t cap)
{
    const char *v = NULL;
    char mbed[32] = "";
    buf[0] = 0;
    if (!h)
        return;
    if (k == K_GNUTLS) {
        const char *(*f)(const char *) =
            (const char *(*)(const char *))dlsym(h, "gnutls_check_version");
        v = f ? f(NULL) : NULL;
    } else if (k == K_NSS || k == K_WOLFSSL) {
        const char *(*f)(void) =
            (const char *(*)(void))dlsym(h, k == K_NSS ? "NSS_GetVersion" : "wolfSSL_lib_version");
        v = f ? f() : NULL;
    } else if (k == K_MBEDTLS) {
        void (*f)(char *) = (void (*)(char *))dlsym(h, "mbedtls_version_get_string");
        if (f)
            f(mbed); /* writes at most 9 bytes */
        v = mbed;
    }
    snprintf(buf, cap, "%s", v ? v : "");
}

static void write_event(struct other *o, enum other_kind k)
{
    char line[TLSM_LINE_MAX];
    struct tlsm_json j;
    o->gen = tlsm_trace_generation();
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(BLIND));
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(tlsm_now() - tlsm_trace_t0));
    tlsm_json_str(&j, "path", o->path);
    tlsm_json_str(&j, "build_id", o->build_id);
    tlsm_json_str(&j, "version", o->version);
    tlsm_json_str(&j, "what", "other_tls");
    tlsm_json_str(&j, "library", kind_names[k]);
    tlsm_blind_one_reason_write(&j, TLSM_BLIND_OTHER_LIBRARY);
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
}

/* First sight of library k in object lm (path): name it once. h: a handle on it, or NULL. */
static void describe(enum other_kind k, const struct link_map *lm, const char *path, void *h,
                     const char *version)
{
    struct other *o = &others[k];
    snprintf(o->path, sizeof(o->path), "%s", path);
    if (version)
        snprintf(o->version, sizeof(o->version), "%s", version);
    else
        find_version(k, h, o->version, sizeof(o->version));
    if (lm)
        tlsm_build_id(lm, o->build_id, sizeof(o->build_id));
    /* "GnuTLS 3.7.9"; a fork's version text names it already ("LibreSSL 3.8.2") */
    bool named = !strncmp(o->version, kind_names[k], strlen(kind_names[k]));
    tlsm_warn("%s is %s%s%s, which does TLS in this process: tlsmeter measures OpenSSL 3 only, "
              "its connections, reads and records are not in the trace",
              o->path, named ? "" : kind_names[k], o->version[0] && !named ? " " : "", o->version);
    if (tlsm_trace_ready())
        write_event(o, k);
    atomic_store(&o->state, 2);
}

/* A hooked entry point of library k was called: the first call describes it. */
static void used(enum other_kind k, struct tlsm_fwd f)
{
    struct other *o = &others[k];
    struct tlsm_thread *th = &tlsm_th;
    int expect = 0;
    if (!tlsm_tracing(th) || !atomic_compare_exchange_strong(&o->state, &expect, 1))
        return;
    Dl_info info;
    struct link_map *lm = NULL;
    const char *path = f.target ? f.target->path : "";
    if (!f.target && dladdr1(f.fn, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm)
        path = lm->l_name;
    th->guard++;
    void *h = path[0] ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    describe(k, f.target ? f.target->lm : lm, path, h, NULL);
    if (h)
        tlsm_real_dlclose(h);
    th->guard--;
}

/* Count, name on first use, forward the program's exact arguments. */
#define OTHER_HOOK(kind, ret, fail, name, params, args)                                            \
    ret name params;                                                                               \
    TLSM_EXPORT ret name params                                                                    \
    {                                                                                              \
        TLSM_HOOK_ENTER(name, f);                                                                  \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, fail;                                                           \
        if (atomic_load_explicit(&others[kind].state, memory_order_relaxed) != 2) {                \
            int saved = errno;                                                                     \
            used(kind, f);                                                                         \
            errno = saved;                                                                         \
        }                                                                                          \
        return ((ret(*) params)f.fn)args;                                                          \
    }

/* Declared here, not from the libraries' headers (not installed on a build host): only
 * pointers and sizes pass through. */
OTHER_HOOK(K_GNUTLS, int, -1, gnutls_handshake, (void *session), (session))
OTHER_HOOK(K_GNUTLS, ssize_t, -1, gnutls_record_recv, (void *session, void *data, size_t size),
           (session, data, size))
OTHER_HOOK(K_NSS, void *, NULL, SSL_ImportFD, (void *model, void *fd), (model, fd))
OTHER_HOOK(K_MBEDTLS, int, -1, mbedtls_ssl_handshake, (void *ssl), (ssl))
OTHER_HOOK(K_MBEDTLS, int, -1, mbedtls_ssl_read, (void *ssl, unsigned char *buf, size_t len),
           (ssl, buf, len))
OTHER_HOOK(K_WOLFSSL, int, -1, wolfSSL_connect, (void *ssl), (ssl))
OTHER_HOOK(K_WOLFSSL, int, -1, wolfSSL_accept, (void *ssl), (ssl))
OTHER_HOOK(K_WOLFSSL, int, -1, wolfSSL_read, (void *ssl, void *data, int sz), (ssl, data, sz))

/* Which library each hook counts for (hooks.def family F). */
static int hook_kind(int id)
{
    switch (id) {
    case TLSM_FN_gnutls_handshake:
    case TLSM_FN_gnutls_record_recv:
        return K_GNUTLS;
    case TLSM_FN_SSL_ImportFD:
        return K_NSS;
    case TLSM_FN_mbedtls_ssl_handshake:
    case TLSM_FN_mbedtls_ssl_read:
        return K_MBEDTLS;
    case TLSM_FN_wolfSSL_connect:
    case TLSM_FN_wolfSSL_accept:
    case TLSM_FN_wolfSSL_read:
        return K_WOLFSSL;
    default:
        return -1;
    }
}

bool tlsm_other_fork(const struct tlsm_obj *o, void *h)
{
    const char *v = o->version;
    void *strict = h ? dlsym(h, "SSL_CTX_set_strict_cipher_list") : NULL;
    enum other_kind k;
    /* BoringSSL says "BoringSSL" in OpenSSL_version and alone has the strict cipher list. */
    if (!strncmp(v, "BoringSSL", 9) ||
        ((uintptr_t)strict >= o->start && (uintptr_t)strict < o->end && !tlsm_is_self(strict)))
        k = K_BORINGSSL;
    else if (!strncmp(v, "LibreSSL", 8))
        k = K_LIBRESSL;
    else
        return false;
    int expect = 0;
    if (atomic_compare_exchange_strong(&others[k].state, &expect, 1))
        describe(k, o->lm, o->path, h, v);
    return true;
}

void tlsm_other_at_exit(void)
{
    for (int k = 0; k < K_N; k++)
        if (atomic_load(&others[k].state) == 2 && tlsm_trace_ready() &&
            others[k].gen != tlsm_trace_generation())
            write_event(&others[k], (enum other_kind)k); /* a forked child's own file */
}

void tlsm_other_end_write(struct tlsm_json *j)
{
    for (int k = 0; k < K_N; k++) {
        const struct other *o = &others[k];
        uint64_t calls = 0;
        char *mark = j->p;
        if (atomic_load(&o->state) != 2)
            continue;
        for (int id = 0; id < TLSM_FN_COUNT; id++)
            if (hook_kind(id) == k)
                calls += tlsm_thread_calls(id);
        tlsm_json_obj_item(j);
        tlsm_json_str(j, "path", o->path);
        tlsm_json_safe(j, "what", "other_tls");
        tlsm_json_safe(j, "library", kind_names[k]);
        tlsm_blind_reasons_write(j, 1u << TLSM_BLIND_OTHER_LIBRARY);
        if (k < K_BORINGSSL) /* forks are counted under the SSL_* hooks */
            tlsm_json_int(j, "calls", (int64_t)calls);
        tlsm_json_obj_end(j);
        tlsm_json_entry_kept(j, mark);
    }
}
