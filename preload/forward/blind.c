/* blind.c: objects holding OpenSSL's TLS record layer that tlsmeter cannot see, found at
 * exit from what the dynamic linker sees (flags, relocations, the GOT) and from the bytes
 * OpenSSL always carries (its version text, its source file names), so that a stripped,
 * hidden or -Bsymbolic vendor copy is named in the trace instead of leaving a silent zero.
 * Also writes the forwarding table (`fwd` events): which caller object each hook sent
 * where, the same facts LD_DEBUG=bindings shows without tlsmeter. */
#include "forward/blind.h"
#include "forward/bindpast.h"
#include "base/caps.h"
#include "base/clock.h"
#include "base/elfdyn.h"
#include "base/glibc_compat.h"
#include "forward/got.h"
#include "forward/marks.h"
#include "base/json.h"
#include "trace/log.h"
#include "trace/thread.h"
#include "forward/obj.h"
#include "forward/resolve.h"
#include "trace/trace.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Why an object is blind: a bit per reason of the schema (common/schema.def names them). */
enum {
    BL_SYMBOLIC = 1u << TLSM_BLIND_SYMBOLIC, /* DT_SYMBOLIC / DF_SYMBOLIC: own definitions first */
    BL_NO_EXPORTS = 1u << TLSM_BLIND_NO_EXPORTS, /* exports no OpenSSL name: nothing to interpose */
    BL_NO_RELOCS = 1u << TLSM_BLIND_NO_RELOCS, /* no JUMP_SLOT/GLOB_DAT for the record functions */
    BL_GOT_ELSEWHERE = 1u << TLSM_BLIND_GOT_ELSEWHERE, /* bound past the preload (RTLD_DEEPBIND) */
    BL_OLD_ABI = 1u << TLSM_BLIND_OPENSSL_1,           /* OpenSSL 1.0 or older (abi.h) */
};
/* The reasons in words (`why`), for every reason the preload writes. */
static const char *const reason_text[TLSM_BLIND_N] = {
    [TLSM_BLIND_SYMBOLIC] =
        "linked -Bsymbolic (DF_SYMBOLIC): its calls into its own OpenSSL bypass the PLT",
    [TLSM_BLIND_NO_EXPORTS] = "exports no OpenSSL symbols (hidden visibility or a version script)",
    [TLSM_BLIND_NO_RELOCS] = "has no JUMP_SLOT/GLOB_DAT relocations for "
                             "EVP_CipherUpdate/EVP_DecryptUpdate/EVP_Cipher",
    [TLSM_BLIND_GOT_ELSEWHERE] = "its GOT entries for the record functions are bound past "
                                 "tlsmeter (RTLD_DEEPBIND or another link-map namespace)",
    [TLSM_BLIND_OPENSSL_1] =
        "OpenSSL 1.0 or older: tlsmeter hooks OpenSSL 3 and 1.1.1 only and leaves this copy alone",
    [TLSM_BLIND_KTLS] = "kernel TLS receive: the kernel decrypts this connection's records, no "
                        "EVP call is made",
    [TLSM_BLIND_KTLS_SEND] = "kernel TLS send: the kernel encrypts this connection's records, no "
                             "EVP call is made",
    [TLSM_BLIND_OTHER_LIBRARY] = "another TLS library (not OpenSSL 3 or 1.1.1) does TLS in this "
                                 "process: tlsmeter measures OpenSSL only",
};

/* The record-level functions: an object whose TLS code calls none of them through a
 * relocation never produces a rec event. */
static const char *const record_fns[] = {"EVP_CipherUpdate", "EVP_DecryptUpdate", "EVP_Cipher"};
#define NRECORD_FNS 3

#define MAX_BLIND 8
struct blind {
    char path[512];
    char version[64]; /* "OpenSSL 3.0.19 27 Jan 2026", "" if not found */
    char build_id[80];
    unsigned reasons;
    bool noticed;                      /* old copy abi.c already named on stderr */
    int relocs, got_us, got_elsewhere; /* record-function relocations and where they point */
};
static struct blind found[MAX_BLIND];
static int nfound;

struct relocs_arg {
    const struct link_map *lm;
    struct blind *b;
};

/* One relocation for a record function: where does its slot point now? Into tlsmeter
 * (seen), into the object's own definition or another object (bypassed), or back into its
 * PLT (lazy, never called: no evidence either way). */
static void check_slot(int name, uintptr_t slot, uintptr_t value, void *arg)
{
    const struct relocs_arg *a = arg;
    struct blind *b = a->b;
    struct dl_find_object f;
    (void)name;
    b->relocs++;
    uintptr_t v = *(const uintptr_t *)slot;
    if (tlsm_is_self((const void *)v) || tlsm_bindpast_holds(slot))
        b->got_us++;
    else if (_dl_find_object((void *)v, &f) == 0 &&
             (f.dlfo_link_map != a->lm || (value && v == a->lm->l_addr + value)))
        b->got_elsewhere++;
}

struct marks {
    bool ssl;         /* TLS record layer code (its source file name) */
    bool looked;      /* version searched for */
    char version[64]; /* OPENSSL_VERSION_TEXT */
};

/* "OpenSSL 3.0.19 27 Jan 2026": the version text libcrypto always carries. */
static void find_version(const char *p, size_t n, struct marks *m)
{
    const char *end = p + n, *q = p;
    while (!m->version[0] && (q = memmem(q, (size_t)(end - q), "OpenSSL ", 8))) {
        const char *v = q + 8;
        if (v + 3 < end && v[0] >= '0' && v[0] <= '9' && v[1] == '.' && (q == p || !q[-1])) {
            size_t l = strnlen(q, (size_t)(end - q));
            snprintf(m->version, sizeof(m->version), "%.*s", (int)(l < 63 ? l : 63), q);
        }
        q += 8;
    }
}

/* The version text of an object that holds the record layer, searched for when needed: only
 * for a copy whose ABI is not known otherwise, or that is blind. */
static const char *version_of(const struct dl_phdr_info *info, struct marks *m)
{
    for (int i = 0; i < info->dlpi_phnum && !m->looked; i++)
        if (tlsm_marks_holds_strings(info, &info->dlpi_phdr[i]))
            find_version((const char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr),
                         info->dlpi_phdr[i].p_filesz, m);
    m->looked = true;
    return m->version;
}

static bool exports_openssl(const char *path, uintptr_t start, uintptr_t end)
{
    static const char *const names[] = {"SSL_read", "SSL_CTX_new", "EVP_CipherUpdate"};
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    bool yes = false;
    for (size_t i = 0; h && !yes && i < sizeof(names) / sizeof(names[0]); i++) {
        uintptr_t p = (uintptr_t)dlsym(h, names[i]);
        yes = p >= start && p < end;
    }
    if (h)
        tlsm_real_dlclose(h);
    return yes;
}

static void object_path(const struct dl_phdr_info *info, char *buf, size_t cap)
{
    if (info->dlpi_name && info->dlpi_name[0]) {
        snprintf(buf, cap, "%s", info->dlpi_name);
        return;
    }
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    buf[n > 0 ? n : 0] = 0;
}

/* Judge one object that holds the TLS record layer: which reasons make it blind. */
static unsigned judge(const struct dl_phdr_info *info, const struct link_map *lm, struct marks *m,
                      struct blind *b)
{
    struct dl_find_object f;
    struct relocs_arg ra = {lm, b};
    unsigned r = 0;
    tlsm_elf_slots(lm, record_fns, NRECORD_FNS, check_slot, &ra);
    const char *v;
    /* The ABI decision of abi.c: the instance's own, else the same rule on the text. */
    enum tlsm_abi_kind k = tlsm_obj_abi(lm, &v);
    if (k == TLSM_ABI_OLD ||
        (k == TLSM_ABI_UNKNOWN && tlsm_abi_of_text(version_of(info, m)) == TLSM_ABI_OLD))
        r |= BL_OLD_ABI;
    /* -Bsymbolic hides calls to what the object defines itself. When every record function
     * it calls goes through a GOT slot that leads to tlsmeter, it defines none of them (a
     * libssl over a separate libcrypto, as Debian's OpenSSL 3.6 is linked): its records are
     * seen, and binding to itself first hides nothing of them. */
    if (tlsm_elf_flags(lm).symbolic && !(b->relocs && b->got_us && !b->got_elsewhere))
        r |= BL_SYMBOLIC;
    if (_dl_find_object((void *)lm->l_ld, &f) == 0 &&
        !exports_openssl(info->dlpi_name[0] ? info->dlpi_name : NULL, (uintptr_t)f.dlfo_map_start,
                         (uintptr_t)f.dlfo_map_end))
        r |= BL_NO_EXPORTS;
    if (!b->relocs)
        r |= BL_NO_RELOCS;
    else if (b->got_elsewhere && !b->got_us)
        r |= BL_GOT_ELSEWHERE;
    return r;
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct marks m = {0};
    struct dl_find_object f;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    /* tlsmeter itself, its backend copies (memfd), the vDSO. */
    if (!strncmp(name, "/proc/self/fd/", 14) || !strncmp(name, "linux-vdso", 10) ||
        !strncmp(name, "linux-gate", 10) || nfound >= MAX_BLIND)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD &&
            tlsm_is_self((const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr)))
            return 0;
    if (!info->dlpi_phnum ||
        _dl_find_object((void *)(info->dlpi_addr + info->dlpi_phdr[0].p_vaddr), &f) != 0 ||
        !f.dlfo_link_map)
        return 0;
    /* A libcrypto our hooks forward into holds no record layer: skip its megabytes of
     * constants. Objects with libssl code are always scanned: exported SSL_read does not
     * mean its record decryption is visible (-Bsymbolic). */
    if (tlsm_obj_crypto_only(f.dlfo_link_map))
        return 0;
    /* Reached through its provider tables (lib reach "table"): not blind. */
    if (tlsm_obj_reach_of(f.dlfo_link_map) & TLSM_REACH_TABLE)
        return 0;
    /* The record layer's mark, found once per object (marks.c): at start-up for those loaded
     * with the program, here for those loaded since. */
    m.ssl = tlsm_marks_of(info).ssl;
    if (!m.ssl)
        return 0;
    struct blind *b = &found[nfound];
    memset(b, 0, sizeof(*b));
    b->reasons = judge(info, f.dlfo_link_map, &m, b);
    if (!b->reasons)
        return 0;
    object_path(info, b->path, sizeof(b->path));
    const char *v;
    b->noticed = tlsm_obj_abi(f.dlfo_link_map, &v) == TLSM_ABI_OLD;
    version_of(info, &m);
    snprintf(b->version, sizeof(b->version), "%s", m.version[0] || !b->noticed ? m.version : v);
    tlsm_build_id(f.dlfo_link_map, b->build_id, sizeof(b->build_id));
    nfound++;
    return 0;
}

void tlsm_blind_reasons_write(struct tlsm_json *j, unsigned reasons)
{
    tlsm_json_arr(j, "reasons");
    for (int i = 0; i < TLSM_BLIND_N; i++)
        if (reasons >> i & 1)
            tlsm_json_item_safe(j, tlsm_blind_name((enum tlsm_blind)i));
    tlsm_json_arr_end(j);
}

/* `why`: the reasons in words; those without words here are the caller's to say. */
static void why_write(struct tlsm_json *j, unsigned reasons)
{
    tlsm_json_arr(j, "why");
    for (int i = 0; i < TLSM_BLIND_N; i++)
        if (reasons >> i & 1 && reason_text[i])
            tlsm_json_item_safe(j, reason_text[i]);
    tlsm_json_arr_end(j);
}

/* The reasons and their words of a blind event or entry that has one reason only. */
void tlsm_blind_one_reason_write(struct tlsm_json *j, enum tlsm_blind r)
{
    tlsm_blind_reasons_write(j, 1u << r);
    why_write(j, 1u << r);
}

/* Plain-words summary of the reasons, for the stderr notice. */
static void reasons_words(unsigned r, char *buf, size_t cap)
{
    static const char *const words[] = {"linked -Bsymbolic", "no exported OpenSSL symbols",
                                        "no PLT relocations for the record functions",
                                        "GOT bound past tlsmeter", "OpenSSL 1.0 or older"};
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < TLSM_BLIND_OPENSSL_1 + 1 && n < cap; i++)
        if (r & (1u << i))
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", words[i]);
}

static void write_blind_event(const struct blind *b)
{
    char line[TLSM_LINE_MAX];
    struct tlsm_json j;
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(BLIND));
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(tlsm_now() - tlsm_trace_t0));
    tlsm_json_str(&j, "path", b->path);
    tlsm_json_str(&j, "build_id", b->build_id);
    tlsm_json_str(&j, "version", b->version);
    tlsm_json_str(&j, "what", "tls");
    tlsm_blind_reasons_write(&j, b->reasons);
    why_write(&j, b->reasons);
    tlsm_json_int(&j, "record_relocs", b->relocs);
    tlsm_json_int(&j, "got_tlsmeter", b->got_us);
    tlsm_json_int(&j, "got_elsewhere", b->got_elsewhere);
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
}

/* kTLS per instance: connections whose records the kernel decrypted (conns[0]) or
 * encrypted (conns[1]). */
#define MAX_KTLS 8
static struct {
    struct tlsm_obj *_Atomic lib;
    _Atomic int conns[2];
} ktls_libs[MAX_KTLS];

/* The counters of lib (its slot claimed on first use); NULL when all are taken by other
 * instances. */
static _Atomic int *ktls_counts(struct tlsm_obj *lib)
{
    for (int i = 0; i < MAX_KTLS; i++) {
        struct tlsm_obj *cur = NULL;
        if (atomic_compare_exchange_strong(&ktls_libs[i].lib, &cur, lib) || cur == lib)
            return ktls_libs[i].conns;
    }
    return NULL;
}

static void write_ktls_event(const struct tlsm_obj *lib, uint32_t conn, bool out)
{
    char line[TLSM_LINE_MAX], bid[80];
    struct tlsm_json j;
    tlsm_build_id(lib->lm, bid, sizeof(bid));
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(BLIND));
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(tlsm_now() - tlsm_trace_t0));
    tlsm_json_int(&j, "tid", tlsm_th.tid);
    tlsm_json_int(&j, "conn", conn);
    tlsm_json_int(&j, "lib", lib->lib_id);
    tlsm_json_str(&j, "path", lib->path);
    tlsm_json_str(&j, "build_id", bid);
    tlsm_json_str(&j, "version", lib->version);
    tlsm_json_str(&j, "what", "ktls");
    tlsm_json_str(&j, "dir", out ? "out" : "in");
    tlsm_blind_one_reason_write(&j, out ? TLSM_BLIND_KTLS_SEND : TLSM_BLIND_KTLS);
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
}

void tlsm_blind_ktls(struct tlsm_obj *lib, const struct ssl_st *ssl, uint32_t *conn,
                     uint32_t (*new_id)(void), bool out)
{
    const struct tlsm_abi *a = lib ? &lib->abi : NULL;
    int (*ask)(const struct tlsm_abi *, const struct ssl_st *) = !a    ? NULL
                                                                 : out ? a->ssl_ktls_send
                                                                       : a->ssl_ktls_recv;
    if (!ask)
        return;
    tlsm_th.guard++;
    int on = ask(a, ssl);
    tlsm_th.guard--;
    _Atomic int *counts = on > 0 ? ktls_counts(lib) : NULL;
    if (!counts)
        return;
    if (atomic_fetch_add(&counts[out], 1) == 0)
        tlsm_warn("%s %s with kernel TLS (kTLS): the kernel %s those connections' records, "
                  "their crypto cost is not in the trace",
                  lib->path, out ? "sends" : "receives", out ? "encrypts" : "decrypts");
    if (!*conn)
        *conn = new_id();
    if (tlsm_trace_ready())
        write_ktls_event(lib, *conn, out);
}

/* The forwarding cache as (caller object, target object, functions) triples. */
#define MAX_PAIRS (TLSM_FN_COUNT * TLSM_FWD_SLOTS)
struct fwd_pair {
    struct tlsm_obj *from, *to;
    uint64_t fns;
};
static struct fwd_pair pairs[MAX_PAIRS];

static int collect_pairs(void)
{
    int np = 0;
    for (int id = 0; id < TLSM_FN_COUNT; id++) {
        struct tlsm_hook *h = &tlsm_hooks[id];
        int n = atomic_load(&h->nslots);
        for (int s = 0; s < n; s++) {
            const struct tlsm_fwd_entry *e = atomic_load(&h->slot[s]);
            struct tlsm_obj *c = e ? tlsm_obj_of((const void *)e->start) : NULL;
            struct tlsm_obj *t = e ? e->fwd.target : NULL;
            /* only forwards into OpenSSL instances; patched callers: got.c writes theirs */
            if (!c || !t || !t->lib_id || tlsm_got_patched(c))
                continue;
            int k = 0;
            while (k < np && !(pairs[k].from == c && pairs[k].to == t))
                k++;
            if (k == np)
                pairs[np++] = (struct fwd_pair){c, t, 0};
            pairs[k].fns |= 1ull << id;
        }
    }
    return np;
}

static void write_fwd_event(const struct fwd_pair *p)
{
    char line[TLSM_LINE_MAX];
    struct tlsm_json j;
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(FWD));
    tlsm_json_str(&j, "from", p->from->path);
    tlsm_json_int(&j, "lib", p->to->lib_id);
    tlsm_json_str(&j, "to", p->to->path);
    tlsm_hooks_write(&j, "fns", p->fns);
    /* A copy's calls into its own patched entry points (no binding to compare). */
    if (p->from == p->to && (atomic_load(&p->to->reach) & TLSM_REACH_ENTRY))
        tlsm_json_str(&j, "reach", "entry");
    size_t len = tlsm_json_end(&j, line);
    if (len)
        tlsm_trace_line(line, len);
}

void tlsm_blind_at_exit(void)
{
    char words[256];
    tlsm_blind_calls_at_exit(); /* these two write their own events */
    tlsm_other_at_exit();
    nfound = 0;
    dl_iterate_phdr(scan_cb, NULL);
    for (int i = 0; i < nfound; i++) {
        const struct blind *b = &found[i];
        if (b->noticed && b->reasons == BL_OLD_ABI)
            continue; /* one notice per problem: obj.c gave it */
        reasons_words(b->reasons, words, sizeof(words));
        tlsm_warn("%s holds %s TLS code tlsmeter cannot see (%s): its records are not in the "
                  "trace",
                  b->path, b->version[0] ? b->version : "OpenSSL", words);
    }
    int np = collect_pairs();
    if (tlsm_trace_generation() && tlsm_trace_ready()) /* a trace some instance opened */
        tlsm_got_write_fwd();
    /* Forwards into an instance opened the trace already (its lib event); blind objects
     * open it here: a process whose only TLS is blind still gets a trace that says so. */
    if ((!nfound && !np) || !tlsm_trace_ready())
        return;
    for (int i = 0; i < nfound; i++)
        write_blind_event(&found[i]);
    for (int k = 0; k < np; k++)
        write_fwd_event(&pairs[k]);
}

void tlsm_blind_end_write(struct tlsm_json *j)
{
    enum { BLIND_MAX = 1536 }; /* the end line's other members keep their room */
    char *end = j->end;
    if (j->end - j->p > BLIND_MAX)
        j->end = j->p + BLIND_MAX;
    tlsm_json_arr(j, "blind");
    for (int i = 0; i < nfound; i++) {
        char *mark = j->p;
        tlsm_json_obj_item(j);
        tlsm_json_str(j, "path", found[i].path);
        tlsm_json_safe(j, "what", "tls");
        tlsm_blind_reasons_write(j, found[i].reasons);
        tlsm_json_obj_end(j);
        tlsm_json_entry_kept(j, mark);
    }
    for (int i = 0; i < MAX_KTLS; i++) {
        const struct tlsm_obj *lib = atomic_load(&ktls_libs[i].lib);
        char *mark = j->p;
        if (!lib)
            continue;
        tlsm_json_obj_item(j);
        tlsm_json_str(j, "path", lib->path);
        int in = atomic_load(&ktls_libs[i].conns[0]), out = atomic_load(&ktls_libs[i].conns[1]);
        tlsm_json_safe(j, "what", "ktls");
        tlsm_blind_reasons_write(j, (in ? 1u << TLSM_BLIND_KTLS : 0) |
                                        (out ? 1u << TLSM_BLIND_KTLS_SEND : 0));
        tlsm_json_int(j, "conns", in);
        tlsm_json_int(j, "send_conns", out);
        tlsm_json_obj_end(j);
        tlsm_json_entry_kept(j, mark);
    }
    tlsm_blind_calls_end_write(j);
    tlsm_other_end_write(j);
    j->end = end; /* the closing bracket always has its room again */
    tlsm_json_arr_end(j);
}
