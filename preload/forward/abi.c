/* abi.c: which OpenSSL ABI a copy speaks, decided once per object (abi.h), and the name of
 * each ABI. The rule: a version text "OpenSSL 3.x" (or OPENSSL_version_major) is 3.x,
 * "OpenSSL 1.1.1" is 1.1.1, any other "OpenSSL 1." or "0." is old and left alone; forks
 * (BoringSSL, LibreSSL) are foreign; without a text, the soname (libssl.so.1*) or the
 * names the copy defines decide. */
#include "forward/abi.h"
#include "forward/blind.h"
#include "trace/log.h"
#include "forward/obj.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static int parse_num(const char **p)
{
    int n = 0;
    while (**p >= '0' && **p <= '9' && n < 1000)
        n = n * 10 + (*(*p)++ - '0');
    return n;
}

/* "OpenSSL 1.1.1w  11 Sep 2023" -> 1, 1; 0 when the text is not OpenSSL's. */
static bool version_numbers(const char *v, int *major, int *minor, int *patch)
{
    if (strncmp(v, "OpenSSL ", 8) || v[8] < '0' || v[8] > '9')
        return false;
    const char *p = v + 8;
    *major = parse_num(&p);
    *minor = *p == '.' ? (p++, parse_num(&p)) : 0;
    *patch = *p == '.' ? (p++, parse_num(&p)) : 0;
    return true;
}

enum tlsm_abi_kind tlsm_abi_of_text(const char *v)
{
    int major, minor, patch;
    if (!v || !version_numbers(v, &major, &minor, &patch))
        return TLSM_ABI_UNKNOWN;
    if (major >= 3)
        return TLSM_ABI_OSSL3;
    if (major == 1 && minor == 1 && patch == 1)
        return TLSM_ABI_OSSL111;
    return TLSM_ABI_OLD;
}

/* Exactly one of the checked series; a fork that reports one of them and changed the structs
 * is caught by the pointer checks of core/impl.c only. */
enum tlsm_gcm_layout tlsm_abi_gcm_layout(const struct tlsm_abi *a, const char *v)
{
    enum tlsm_gcm_layout l = TLSM_LAYOUT_NONE;
    if (a->kind != TLSM_ABI_OSSL111 && a->kind != TLSM_ABI_OSSL3)
        return TLSM_LAYOUT_NONE;
    if (!strncmp(v, "OpenSSL 1.1.1", 13))
        l = TLSM_LAYOUT_111;
    else if (!strncmp(v, "OpenSSL 3.0.", 12))
        l = TLSM_LAYOUT_30;
    else if (!strncmp(v, "OpenSSL 3.5.", 12))
        l = TLSM_LAYOUT_35;
    return (l == TLSM_LAYOUT_111) == (a->kind == TLSM_ABI_OSSL111) ? l : TLSM_LAYOUT_NONE;
}

const char *tlsm_gcm_layout_name(enum tlsm_gcm_layout l)
{
    static const char *const names[] = {"unverified", "3.0", "3.5", "1.1.1"};
    return names[l];
}

const char *tlsm_abi_name(enum tlsm_abi_kind k)
{
    switch (k) {
    case TLSM_ABI_OSSL3:
        return "3";
    case TLSM_ABI_OSSL111:
        return "1.1.1";
    case TLSM_ABI_OLD:
        return "old";
    case TLSM_ABI_FOREIGN:
        return "foreign";
    default:
        return "unknown";
    }
}

/* The version text: OpenSSL_version (1.1.0+), else 1.0's SSLeay_version (same signature). */
static void version_text(struct tlsm_obj *o, void *h, tlsm_abi_lookup_fn lookup)
{
    const char *(*text)(int) = (const char *(*)(int))lookup(h, "OpenSSL_version");
    if (!text)
        text = (const char *(*)(int))lookup(h, "SSLeay_version");
    const char *v = text ? text(TLSM_ABI_VERSION_TEXT) : NULL;
    snprintf(o->version, sizeof(o->version), "%s", v ? v : "");
}

/* No version text: the soname, then the names only one ABI defines. */
static enum tlsm_abi_kind without_text(const struct tlsm_obj *o, void *h, tlsm_abi_lookup_fn lookup)
{
    const char *base = strrchr(o->path, '/');
    base = base ? base + 1 : o->path;
    if (!strncmp(base, "libssl.so.1", 11) || !strncmp(base, "libcrypto.so.1", 14))
        return TLSM_ABI_OLD;
    if (lookup(h, "EVP_CIPHER_get_nid"))
        return TLSM_ABI_OSSL3;
    return TLSM_ABI_UNKNOWN;
}

/* OpenSSL 1.0 and older: structures, record layer and EVP behaviour not checked here. Forget
 * every entry point so nothing of ours ever calls into it, and say so once. */
static void leave_alone(const struct tlsm_obj *o)
{
    static _Atomic int said;
    if (!atomic_exchange(&said, 1))
        tlsm_warn("%s is %s: tlsmeter supports OpenSSL 3 and 1.1.1 and leaves this copy alone "
                  "(its calls are forwarded, its records not traced)",
                  o->path, o->version[0] ? o->version : "an old OpenSSL");
}

void tlsm_abi_decide(struct tlsm_obj *o, void *h, tlsm_abi_lookup_fn lookup)
{
    struct tlsm_abi *a = &o->abi;
    memset(a, 0, sizeof(*a));
    version_text(o, h, lookup);
    int (*major3)(void) = (int (*)(void))lookup(h, "OPENSSL_version_major");
    int patch = 0;
    version_numbers(o->version, &a->major, &a->minor, &patch);
    if (tlsm_other_fork(o, h)) /* BoringSSL, LibreSSL: named there, left alone here */
        a->kind = TLSM_ABI_FOREIGN;
    else if (major3 && major3() >= 3)
        a->kind = TLSM_ABI_OSSL3;
    else if (o->version[0])
        a->kind = tlsm_abi_of_text(o->version);
    else
        a->kind = without_text(o, h, lookup);
    if (a->kind == TLSM_ABI_OSSL3)
        tlsm_abi_load_ossl3(a, h, lookup);
    else if (a->kind == TLSM_ABI_OSSL111)
        tlsm_abi_load_ossl111(a, h, lookup);
    else if (a->kind == TLSM_ABI_OLD)
        leave_alone(o);
}
