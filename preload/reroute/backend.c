/* backend.c: load a private libcrypto. Measured pitfalls (docs/design.md section 5): dlmopen
 * gives a second libc (pthread keys and malloc break); a hard link of the same file is the
 * same instance; an empty or colon-less OPENSSL_ia32cap masks more than AES. */
#include "reroute/backend.h"
#include "reroute/backend_copy.h"
#include "arch/arch.h"
#include "base/caps.h"
#include "base/clock.h"
#include "base/elfdyn.h"
#include "forward/obj.h"
#include "base/json.h"
#include "trace/log.h"
#include "forward/resolve.h"
#include "trace/thread.h"
#include "trace/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <link.h>
#include <unistd.h>

static const char *const cipher_names[] = {"AES-128-GCM", "AES-256-GCM", "ChaCha20-Poly1305",
                                           "AES-192-GCM", "AES-128-CCM", "AES-256-CCM"};
/* The same ciphers by 1.1.1's long names (EVP_get_cipherbyname). */
static const char *const cipher_names111[] = {"aes-128-gcm", "aes-256-gcm", "chacha20-poly1305",
                                              "aes-192-gcm", "aes-128-ccm", "aes-256-ccm"};

static struct tlsm_backend backends[3];
static int load_state[3]; /* 0 not tried, 2 loading, 1 loaded, -1 failed */
static pid_t load_pid[3]; /* the process that set 2: a forked child may inherit it */
static char last_error[512];
static bool copy_symbolic; /* the last copy binds to itself (DF_SYMBOLIC): no DEEPBIND needed */

/* The multiarch directory and the software-AES mask (arch/$ARCH/counter.h). */
#define TRIPLET   TLSM_ARCH_TRIPLET
#define SOFT_MASK TLSM_ARCH_SOFT_MASK

int tlsm_backend_cipher_index(const char *name)
{
    for (size_t i = 0; i < sizeof(cipher_names) / sizeof(cipher_names[0]); i++)
        if (!strcmp(name, cipher_names[i]))
            return (int)i;
    return -1;
}

const char *tlsm_backend_error(void)
{
    return last_error;
}

static int fail(const char *fmt, const char *a, const char *b)
{
    snprintf(last_error, sizeof(last_error), fmt, a, b);
    return -1;
}

/* Readable: open(2), not access(2): qemu-user (make check-aarch64) maps open's path into
 * its -L sysroot but not faccessat's. */
static bool readable(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

/* The program's own libcrypto when it is one (3.x or 1.1.1); else the system's OpenSSL 3. */
static const char *pick_source(const char *app_crypto)
{
    static const char *const sys[] = {"/lib/" TRIPLET "/libcrypto.so.3",
                                      "/usr/lib/" TRIPLET "/libcrypto.so.3",
                                      "/usr/lib/libcrypto.so.3", "/lib/libcrypto.so.3"};
    if (tlsm_cfg.backend_lib && tlsm_cfg.backend_lib[0])
        return tlsm_cfg.backend_lib;
    const char *base = app_crypto ? strrchr(app_crypto, '/') : NULL;
    if (base && !strncmp(base + 1, "libcrypto.so", 12))
        return app_crypto;
    for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
        if (readable(sys[i]))
            return sys[i];
    return NULL;
}

static int copy_to_memfd(const char *src)
{
    return tlsm_backend_copy(src, &copy_symbolic, last_error, sizeof(last_error));
}

/* The capability masks the copy's start-up code (OPENSSL_cpuid_setup) reads with getenv. */
static const char *const cap_names[] = {"OPENSSL_ia32cap", "OPENSSL_armcap"};
#define N_CAPS (sizeof(cap_names) / sizeof(cap_names[0]))

/* The environment the copy's start-up code sees: the program's, without capability masks
 * (hw) or with ours (soft). Changed only through unsetenv/putenv, which take glibc's
 * environment lock: a setenv of another thread is serialised with ours, never lost, and
 * no array is swapped, freed or restored under it (assigning environ directly did all
 * three: setenv loops segfaulted in __add_to_environ). The entries in *orig are the
 * program's own strings, put back as they were by program_caps. */
static void backend_caps(enum tlsm_crypto_mode mode, char *orig[N_CAPS])
{
    for (size_t i = 0; i < N_CAPS; i++) {
        char *v = getenv(cap_names[i]);
        orig[i] = v ? v - strlen(cap_names[i]) - 1 : NULL; /* the whole "NAME=value" entry */
        if (v)
            unsetenv(cap_names[i]);
    }
    if (mode == TLSM_MODE_SOFT)
        putenv((char *)SOFT_MASK);
}

/* What remains: while the copy loads, the program's other threads see the masks as the
 * copy does, and a setenv of OPENSSL_ia32cap/armcap of theirs in that window is undone
 * here. tlsm_backend_early loads at constructor time, when there is no other thread. */
static void program_caps(enum tlsm_crypto_mode mode, char *orig[N_CAPS])
{
    if (mode == TLSM_MODE_SOFT)
        for (size_t i = 0; i < N_CAPS; i++)
            unsetenv(cap_names[i]);
    for (size_t i = 0; i < N_CAPS; i++)
        if (orig[i])
            putenv(orig[i]);
}

static void fd_path(char *path, size_t cap, int fd)
{
    snprintf(path, cap, "/proc/self/fd/%d", fd);
}

/* cpuinfo: the capability words a 1.1.1 copy computes at load (its start-up reads the
 * environment then), taken under the same environment; a 3.x copy says them itself. */
static void *open_copy(int fd, enum tlsm_crypto_mode mode, const char *src_name, char *cpuinfo,
                       size_t cap)
{
    char path[64], *orig[N_CAPS];
    fd_path(path, sizeof(path), fd);
    backend_caps(mode, orig);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | (copy_symbolic ? 0 : RTLD_DEEPBIND));
    tlsm_arch_ossl111_cpuinfo(cpuinfo, cap);
    program_caps(mode, orig);
    if (!h) {
        /* dlerror names /proc/self/fd/N; say which file the user gave us instead. */
        const char *e = dlerror(), *colon = e ? strstr(e, ": ") : NULL;
        fail("cannot load a copy of %s: %s", src_name, colon ? colon + 2 : "dlopen failed");
    }
    return h;
}

/* The copy must not read the program's OPENSSL_CONF: providers and engines named there are
 * linked against the program's libcrypto, not this instance. Initialising without the
 * config first makes the later implicit initialisation skip it. Nor does it load its error
 * strings (~0.9 M instructions at its first error queue; tlsmeter passes its errors on as
 * codes, which the program's copy names) or run its OPENSSL_cleanup at exit (~1 M: the
 * process is ending, and a thread of the program still using a shadow then would find it
 * freed). */
static void skip_config(void *h)
{
    __typeof__(&OPENSSL_init_crypto) init = (__typeof__(init))dlsym(h, "OPENSSL_init_crypto");
    if (init)
        init(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS |
                 OPENSSL_INIT_NO_ATEXIT,
             NULL);
}

/* A copy that failed a check: unload it and close its memfd. If it stays loaded anyway
 * (libcrypto pins itself with RTLD_NODELETE once initialised), the memfd stays open too:
 * the loader knows objects by path, and a next load at the same /proc/self/fd/N would get
 * this object back. */
static void discard_copy(void *h, int fd)
{
    char path[64];
    tlsm_real_dlclose(h);
    fd_path(path, sizeof(path), fd);
    void *still = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (still)
        tlsm_real_dlclose(still);
    else
        close(fd);
}

static int bind_api(struct tlsm_backend *b, void *h)
{
#define SYM(name)                                                                                  \
    if (!(b->name = (__typeof__(b->name))dlsym(h, #name)))                                         \
        return fail("%s is not an OpenSSL 3 or 1.1.1 libcrypto (no %s)", b->source, #name);
    SYM(EVP_CIPHER_CTX_new);
    SYM(EVP_CIPHER_CTX_free);
    SYM(EVP_CipherInit_ex);
    SYM(EVP_CIPHER_CTX_ctrl);
    SYM(EVP_CipherUpdate);
    SYM(EVP_CipherFinal_ex);
    SYM(EVP_Cipher);
    SYM(ERR_clear_error);
    SYM(OpenSSL_version);
    /* The ABI by the rule every copy is judged by (forward/abi.c), then its own two calls. */
    const char *v = b->OpenSSL_version(TLSM_ABI_VERSION_TEXT);
    __typeof__(&OPENSSL_version_major) major = dlsym(h, "OPENSSL_version_major");
    b->abi = major && major() >= 3 ? TLSM_ABI_OSSL3 : tlsm_abi_of_text(v);
    if (b->abi == TLSM_ABI_OSSL3) {
        SYM(EVP_CIPHER_fetch);
        SYM(ERR_get_error_all);
    } else if (b->abi == TLSM_ABI_OSSL111) {
        SYM(EVP_get_cipherbyname);
        SYM(ERR_get_error_line_data);
    } else {
        return fail("%s is %s: the backend needs OpenSSL 3 or 1.1.1", b->source,
                    v && v[0] ? v : "not OpenSSL");
    }
#undef SYM
    /* Optional: the TLS 1.2 AES-GCM sealing nonce step (reroute.c) needs it. */
    b->EVP_CIPHER_CTX_get_updated_iv =
        (__typeof__(b->EVP_CIPHER_CTX_get_updated_iv))dlsym(h, "EVP_CIPHER_CTX_get_updated_iv");
    /* Optional: a TLS 1.3 record's nonce and tag in one call (reroute.c give_nonce). */
    b->EVP_CIPHER_CTX_set_params =
        b->abi == TLSM_ABI_OSSL3
            ? (__typeof__(b->EVP_CIPHER_CTX_set_params))dlsym(h, "EVP_CIPHER_CTX_set_params")
            : NULL;
    return 0;
}

bool tlsm_backend_next_error(struct tlsm_backend *b, int *lib, int *reason, const char **file,
                             int *line, const char **func)
{
    unsigned long e;
    *func = NULL;
    if (b->abi == TLSM_ABI_OSSL111) { /* ERR_PACK: lib << 24 | func << 12 | reason */
        e = b->ERR_get_error_line_data(file, line, NULL, NULL);
        *lib = (int)((e >> 24) & 0xff), *reason = (int)(e & 0xfff);
    } else {
        e = b->ERR_get_error_all(file, line, func, NULL, NULL);
        *lib = ERR_GET_LIB(e), *reason = ERR_GET_REASON(e);
    }
    return e != 0;
}

static void write_lib_event(struct tlsm_backend *b)
{
    char line[TLSM_LINE_MAX];
    struct tlsm_json j;
    const char *cpuinfo = b->cpuinfo;
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(LIB));
    tlsm_json_int(&j, "id", b->lib_id);
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(tlsm_now() - tlsm_trace_t0));
    tlsm_json_str(&j, "path", b->source);
    tlsm_json_bool(&j, "has_ssl", false);
    tlsm_json_bool(&j, "has_crypto", true);
    tlsm_json_str(&j, "version", b->OpenSSL_version(OPENSSL_VERSION));
    tlsm_json_safe(&j, "abi", tlsm_abi_name(b->abi));
    tlsm_json_str(&j, "platform", b->OpenSSL_version(OPENSSL_PLATFORM));
    tlsm_json_str(&j, "cflags", b->OpenSSL_version(OPENSSL_CFLAGS));
    tlsm_json_str(&j, "cpuinfo", cpuinfo);
    tlsm_caps_write(&j, b->caps);
    tlsm_json_str(&j, "role", "backend");
    tlsm_json_str(&j, "mode", tlsm_mode_name(b->mode));
    tlsm_json_str(&j, "propq", b->propq ? b->propq : "");
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
}

/* A backend's lib line goes to each trace file (generation gen) once, from whichever of a
 * lazy load and the replay at open claims it first. Trace open; no lock: the replay runs
 * under the trace's open lock, which a load may take after ours. */
static void lib_line_once(struct tlsm_backend *b, unsigned gen)
{
    unsigned seen = __atomic_load_n(&b->lib_gen, __ATOMIC_ACQUIRE);
    do
        if (seen == gen)
            return;
    while (!__atomic_compare_exchange_n(&b->lib_gen, &seen, gen, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE));
    tlsm_th.guard++;
    write_lib_event(b);
    tlsm_th.guard--;
}

void tlsm_backend_replay_libs(unsigned gen)
{
    for (int m = TLSM_MODE_HW; m <= TLSM_MODE_SOFT; m++)
        if (__atomic_load_n(&load_state[m], __ATOMIC_ACQUIRE) == 1)
            lib_line_once(&backends[m], gen);
}

/* An OpenSSL 3 or 1.1.1 libcrypto whose cipher the program most likely uses matches the
 * query (3.x; 1.1.1 has no property queries). */
static int check_copy(struct tlsm_backend *b, void *h, const char *src)
{
    if (bind_api(b, h))
        return -1;
    if (!tlsm_backend_cipher(b, 0) && !tlsm_backend_cipher(b, 2))
        return fail("no AES-GCM or ChaCha20-Poly1305 in %s matches the property query \"%s\"", src,
                    b->propq ? b->propq : "");
    return 0;
}

static int load(struct tlsm_backend *b, enum tlsm_crypto_mode mode, const char *app_crypto)
{
    const char *src = pick_source(app_crypto);
    if (!src)
        return fail("the program's libcrypto is not known and no libcrypto.so.3 found to copy%s%s "
                    "(set TLSMETER_BACKEND_LIB)",
                    "", "");
    snprintf(b->source, sizeof(b->source), "%s", src);
    b->mode = mode;
    b->propq = tlsm_cfg.backend_propq && tlsm_cfg.backend_propq[0] ? tlsm_cfg.backend_propq : NULL;
    int fd = copy_to_memfd(src);
    if (fd < 0)
        return -1;
    /* The copy stays open, out of the program's way at a high number: the loader knows an
     * object by its path, and a reused /proc/self/fd/N would return the other backend. */
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 900);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    void *h = open_copy(fd, mode, src, b->cpuinfo, sizeof(b->cpuinfo));
    if (!h) {
        close(fd);
        return -1;
    }
    skip_config(h);
    if (check_copy(b, h, src)) {
        discard_copy(h, fd);
        memset(b->ciphers, 0, sizeof(b->ciphers));
        return -1;
    }
    if (b->abi == TLSM_ABI_OSSL3) /* 3.x says its words itself */
        snprintf(b->cpuinfo, sizeof(b->cpuinfo), "%s", b->OpenSSL_version(OPENSSL_CPU_INFO));
    b->caps = tlsm_caps_decode(b->cpuinfo);
    b->lib_id = tlsm_next_lib_id();
    return 0;
}

EVP_CIPHER *tlsm_backend_cipher(struct tlsm_backend *b, int idx)
{
    if (idx < 0 || idx >= (int)(sizeof(cipher_names) / sizeof(cipher_names[0])))
        return NULL;
    EVP_CIPHER *c = __atomic_load_n(&b->ciphers[idx], __ATOMIC_ACQUIRE);
    if (c)
        return c;
    c = b->abi == TLSM_ABI_OSSL111 ? (EVP_CIPHER *)b->EVP_get_cipherbyname(cipher_names111[idx])
                                   : b->EVP_CIPHER_fetch(NULL, cipher_names[idx], b->propq);
    EVP_CIPHER *expect = NULL;
    /* A racing fetch leaks one refcount of a process-lifetime object: harmless. */
    if (c && !__atomic_compare_exchange_n(&b->ciphers[idx], &expect, c, 0, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE))
        return expect;
    return c;
}

/* Once per mode. No lock is held while loading: the load dlopens the copy, i.e. takes the
 * loader lock, and a library constructor holding the loader lock may decrypt a record here.
 * The thread that wins the state loads; a thread that finds it loading does not wait: its
 * record is decrypted natively (and counted so). A forked child that inherited "loading"
 * from a parent thread that does not exist there loads again. */
static struct tlsm_backend *get(enum tlsm_crypto_mode mode, const char *app_crypto)
{
    int st = __atomic_load_n(&load_state[mode], __ATOMIC_ACQUIRE);
    if (st == 2 && __atomic_load_n(&load_pid[mode], __ATOMIC_ACQUIRE) != getpid() &&
        __atomic_compare_exchange_n(&load_state[mode], &st, 0, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        st = 0;
    if (st == 1)
        return &backends[mode];
    if (st != 0 || !__atomic_compare_exchange_n(&load_state[mode], &st, 2, false, __ATOMIC_ACQ_REL,
                                                __ATOMIC_ACQUIRE))
        return NULL;
    __atomic_store_n(&load_pid[mode], getpid(), __ATOMIC_RELEASE);
    tlsm_th.guard++;
    int ok = load(&backends[mode], mode, app_crypto) == 0;
    tlsm_th.guard--;
    if (!ok)
        tlsm_warn("reroute to %s off: %s; records are decrypted natively", tlsm_mode_name(mode),
                  last_error);
    __atomic_store_n(&load_state[mode], ok ? 1 : -1, __ATOMIC_RELEASE);
    return ok ? &backends[mode] : NULL;
}

struct tlsm_backend *tlsm_backend_get(enum tlsm_crypto_mode mode, const char *app_crypto)
{
    if (mode == TLSM_MODE_NATIVE)
        return NULL;
    struct tlsm_backend *b = get(mode, app_crypto);
    /* Loaded early (no trace then) or just now: its lib line, once in this trace file.
     * Opening the trace here replays it already, then this finds it written. */
    if (b && tlsm_trace_ready())
        lib_line_once(b, tlsm_trace_generation());
    return b;
}

/* Constructor time: the program's libcrypto is not known yet; a libcrypto.so.3 (else .so.1.1)
 * it already loaded (its DT_NEEDED, or libssl's) is the best guess of it. NULL when none is loaded.
 */
static const char *const sonames[] = {"libcrypto.so.3", "libcrypto.so.1.1"};
#define N_SONAMES (sizeof(sonames) / sizeof(sonames[0]))

/* Is an object that dlopen(soname, RTLD_NOLOAD) would return loaded at all? The loader knows
 * an object by the names it was loaded as (the file name a DT_NEEDED or dlopen searched for)
 * and its DT_SONAME: both are looked at here, without the loader's lock and name search. */
static bool any_libcrypto(void)
{
    for (const struct link_map *lm = _r_debug.r_map; lm; lm = lm->l_next) {
        const char *base = lm->l_name ? strrchr(lm->l_name, '/') : NULL;
        const char *so = tlsm_elf_soname(lm);
        for (size_t i = 0; i < N_SONAMES; i++)
            if ((base && !strcmp(base + 1, sonames[i])) || (so && !strcmp(so, sonames[i])))
                return true;
    }
    return false;
}

static const char *loaded_libcrypto(char *buf, size_t cap)
{
    buf[0] = 0;
    if (!any_libcrypto()) /* env, timeout, a shell: no dlopen at all */
        return NULL;
    for (size_t i = 0; i < N_SONAMES && !buf[0]; i++) {
        struct link_map *lm = NULL;
        void *h = dlopen(sonames[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
            snprintf(buf, cap, "%s", lm->l_name);
        if (h)
            tlsm_real_dlclose(h);
    }
    return buf[0] ? buf : NULL;
}

void tlsm_backend_early(void)
{
    static char app_crypto[512];
    bool hw = tlsm_cfg.crypto == TLSM_MODE_HW || tlsm_cfg.calibrate;
    bool soft = tlsm_cfg.crypto == TLSM_MODE_SOFT || tlsm_cfg.calibrate;
    if (!hw && !soft)
        return;
    /* Only where an OpenSSL copy is already loaded: env, timeout or a shell in a pipeline
     * never decrypts a record, and a copy costs milliseconds. A program that loads libcrypto
     * later (python's _ssl) gets its copy lazily, at its first record (reroute.c). */
    tlsm_th.guard++;
    const char *src = loaded_libcrypto(app_crypto, sizeof(app_crypto));
    if (src && hw)
        get(TLSM_MODE_HW, src);
    if (src && soft)
        get(TLSM_MODE_SOFT, src);
    tlsm_th.guard--;
}

/* fork(): nothing to hold: loading takes no lock (see get). */
void tlsm_backend_atfork(bool take)
{
    (void)take;
}
