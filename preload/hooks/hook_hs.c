/* hook_hs.c: the libcrypto calls libssl makes during a handshake (hooks.def family H), each
 * timed as a part of the current connection's handshake (hs.h). libssl reaches all of them
 * through its PLT, so the preload interposes them; libssl's own internals (the state
 * machine, transcript hashing, ticket encoding) are not reachable and stay in "other".
 * Outside a handshake-driving SSL_* call, or nested inside a part, a hook only forwards. */
#include "base/clock.h"
#include "trace/config.h"
#include "trace/cputime.h"
#include "hooks/hook.h"
#include "core/hs.h"
#include "forward/obj.h"

#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/x509.h>

/* One part in flight: where the thread's clock stood (the per-record method, cputime.h). */
struct part {
    struct tlsm_hs *hs;
    enum tlsm_hs_part p;
    bool thread_clock; /* no switch detector here: the thread CPU clock instead */
    uint64_t t0;
    uint64_t own0; /* the thread's hs_own_ns at the start: the calibration is not the part's */
    struct tlsm_rsm_mark m;
};

/* Start timing a part, if this call is one: inside a handshake and not nested in a part.
 * Inlined into each hook (with part_end): ~47 parts per TLS 1.3 client handshake, 40 of them
 * the key schedule's fetch/derive pairs, so the call and its register saves showed. */
static inline __attribute__((always_inline)) bool part_begin(struct part *pt, enum tlsm_hs_part p)
{
    struct tlsm_thread *th = &tlsm_th;
    if (__builtin_expect(!th->hs_cur, 1) || th->hs_part || th->guard)
        return false;
    pt->hs = th->hs_cur;
    pt->p = p;
    th->hs_part = (uint8_t)p;
    if (__builtin_expect(th->cpu_kind == TLSM_CPU_UNSET, 0)) { /* its system calls: errno */
        int saved = errno;
        tlsm_cpu_thread_setup(th);
        errno = saved;
    }
    /* Without a switch detector (wall: qemu-user, no rseq) a part's wall time would count
     * other programs' time slices unflagged: read the thread CPU clock (a system call per
     * part, only there). */
    pt->thread_clock = th->cpu_kind == TLSM_CPU_WALL || th->cpu_kind == TLSM_CPU_BLIND;
    pt->own0 = th->hs_own_ns;
    if (pt->thread_clock) {
        pt->t0 = tlsm_hs_cpu_now(th);
        return true;
    }
    tlsm_cpu_begin(th, &pt->m);
    pt->t0 = tlsm_now();
    return true;
}

/* Leaves errno as the timed call left it: only the thread CPU clock (a system call) could
 * change it, so only that path saves it. */
static inline __attribute__((always_inline)) void part_end(struct part *pt)
{
    struct tlsm_thread *th = &tlsm_th;
    struct tlsm_cpu_span sp;
    if (__builtin_expect(pt->thread_clock, 0)) {
        int saved = errno;
        sp.cpu_ns = tlsm_hs_cpu_now(th) - pt->t0;
        sp.preempt = 0;
        errno = saved;
    } else {
        tlsm_cpu_end(th, pt->t0, &pt->m, &sp);
    }
    th->hs_part = TLSM_HS_NONE;
    uint64_t own = th->hs_own_ns - pt->own0;
    pt->hs->part_ns[pt->p] += sp.cpu_ns > own ? sp.cpu_ns - own : 0;
    pt->hs->part_calls[pt->p]++;
    pt->hs->preempt += sp.preempt != 0;
}

/* A key as the trace names it, asked of the libcrypto the call went to (our own calls
 * under guard, so hooks they reach only forward). */
static struct tlsm_hs_key key_of(const struct tlsm_obj *lib, const EVP_PKEY *pk)
{
    struct tlsm_hs_key k = {0, TLSM_KEY_NONE};
    const struct tlsm_abi *a = lib ? &lib->abi : NULL;
    if (!pk || !a || !a->pkey_base_id || !a->pkey_bits)
        return k;
    tlsm_th.guard++;
    int id = a->pkey_base_id(pk), bits = a->pkey_bits(pk);
    /* A provider-only key type (3.0's HMAC keys for PSK binders) has no legacy id. */
    if (id <= 0 && a->pkey_is_a && a->pkey_is_a(pk, "HMAC"))
        id = EVP_PKEY_HMAC;
    tlsm_th.guard--;
    k.bits = bits > 0 && bits < 65536 ? (uint16_t)bits : 0;
    k.kind = id == EVP_PKEY_RSA       ? TLSM_KEY_RSA
             : id == EVP_PKEY_RSA_PSS ? TLSM_KEY_RSA_PSS
             : id == EVP_PKEY_EC      ? TLSM_KEY_EC
             : id == EVP_PKEY_ED25519 ? TLSM_KEY_ED25519
             : id == EVP_PKEY_ED448   ? TLSM_KEY_ED448
             : id == EVP_PKEY_DSA     ? TLSM_KEY_DSA
             : id == EVP_PKEY_HMAC    ? TLSM_KEY_MAC
                                      : TLSM_KEY_OTHER;
    return k;
}

/* A plain part: forward, timed when it is one. R is the return type. */
#define PART_HOOK(R, name, which, params, args)                                                    \
    TLSM_EXPORT R name params                                                                      \
    {                                                                                              \
        TLSM_HOOK_ENTER(name, f);                                                                  \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, (R)0;                                                           \
        struct part pt;                                                                            \
        if (!part_begin(&pt, which))                                                               \
            return TLSM_REAL(name, f) args;                                                        \
        R ret = TLSM_REAL(name, f) args;                                                           \
        part_end(&pt);                                                                             \
        return ret;                                                                                \
    }

PART_HOOK(int, X509_verify_cert, TLSM_HS_CHAIN_VERIFY, (X509_STORE_CTX * ctx), (ctx))
PART_HOOK(int, EVP_PKEY_paramgen, TLSM_HS_KEY_EXCHANGE, (EVP_PKEY_CTX * ctx, EVP_PKEY **ppkey),
          (ctx, ppkey))
PART_HOOK(int, EVP_PKEY_keygen, TLSM_HS_KEY_EXCHANGE, (EVP_PKEY_CTX * ctx, EVP_PKEY **ppkey),
          (ctx, ppkey))
/* A derivation is a key exchange when its context holds a key (ECDH, DH, X25519), else a KDF:
 * 1.1.1's libssl runs HKDF (TLS 1.3) and the TLS 1.2 PRF as EVP_PKEY_derive on a context made
 * from an id (EVP_PKEY_HKDF, EVP_PKEY_TLS1_PRF), which holds none: its key schedule. 3.x's
 * libssl derives only in the key exchange (its KDFs are EVP_KDF_*). Asked of the copy only
 * when the call can be a part. */
static enum tlsm_hs_part derive_part(const struct tlsm_obj *lib, EVP_PKEY_CTX *ctx)
{
    struct tlsm_thread *th = &tlsm_th;
    if (__builtin_expect(!th->hs_cur, 1) || th->hs_part || th->guard || !ctx || !lib ||
        !lib->abi.pkey_ctx_pkey)
        return TLSM_HS_KEY_EXCHANGE;
    th->guard++;
    const struct evp_pkey_st *pk = lib->abi.pkey_ctx_pkey(ctx);
    th->guard--;
    return pk ? TLSM_HS_KEY_EXCHANGE : TLSM_HS_KEY_SCHEDULE;
}

PART_HOOK(int, EVP_PKEY_derive_init, derive_part(f.target, ctx), (EVP_PKEY_CTX * ctx), (ctx))
PART_HOOK(int, EVP_PKEY_derive_set_peer, TLSM_HS_KEY_EXCHANGE, (EVP_PKEY_CTX * ctx, EVP_PKEY *peer),
          (ctx, peer))
PART_HOOK(int, EVP_PKEY_derive, derive_part(f.target, ctx),
          (EVP_PKEY_CTX * ctx, unsigned char *key, size_t *keylen), (ctx, key, keylen))
PART_HOOK(EVP_KDF *, EVP_KDF_fetch, TLSM_HS_KEY_SCHEDULE,
          (OSSL_LIB_CTX * libctx, const char *algorithm, const char *properties),
          (libctx, algorithm, properties))
PART_HOOK(int, EVP_KDF_derive, TLSM_HS_KEY_SCHEDULE,
          (EVP_KDF_CTX * ctx, unsigned char *key, size_t keylen, const OSSL_PARAM params[]),
          (ctx, key, keylen, params))
PART_HOOK(unsigned char *, EVP_Q_mac, TLSM_HS_KEY_SCHEDULE,
          (OSSL_LIB_CTX * libctx, const char *name, const char *propq, const char *subalg,
           const OSSL_PARAM *params, const void *key, size_t keylen, const unsigned char *data,
           size_t datalen, unsigned char *out, size_t outsize, size_t *outlen),
          (libctx, name, propq, subalg, params, key, keylen, data, datalen, out, outsize, outlen))

/* Certificates as libssl parses them from the peer's Certificate message (X509_new_ex,
 * then d2i_X509 into it): size and key of each, one part call per certificate. A d2i_X509
 * called from libcrypto itself is a trust store being read during the handshake (curl
 * loads its CA file into each new connection's store there): cert_load, counted only. */
TLSM_EXPORT X509 *d2i_X509(X509 **a, const unsigned char **in, long len)
{
    TLSM_HOOK_ENTER(d2i_X509, f);
    if (!f.fn)
        return errno = ENOSYS, NULL;
    struct part pt;
    const unsigned char *start = in ? *in : NULL;
    uintptr_t ra = (uintptr_t)__builtin_return_address(0);
    bool load = f.target && ra - f.target->start < f.target->end - f.target->start;
    if (!part_begin(&pt, load ? TLSM_HS_CERT_LOAD : TLSM_HS_CERT_PARSE))
        return TLSM_REAL(d2i_X509, f)(a, in, len);
    X509 *x = TLSM_REAL(d2i_X509, f)(a, in, len);
    int saved = errno;
    part_end(&pt);
    struct tlsm_hs *hs = pt.hs;
    if (load) {
        errno = saved;
        return x;
    }
    if (x && hs->ncerts < TLSM_HS_CERTS) {
        const struct tlsm_abi *api = f.target ? &f.target->abi : NULL;
        struct tlsm_hs_cert *c = &hs->certs[hs->ncerts];
        c->bytes = (uint32_t)(start && *in > start ? *in - start : len > 0 ? len : 0);
        EVP_PKEY *pk = NULL;
        if (api && api->x509_pubkey) {
            tlsm_th.guard++;
            pk = api->x509_pubkey(x);
            tlsm_th.guard--;
        }
        c->key = key_of(f.target, pk);
        if (tlsm_cfg.certs && *tlsm_cfg.certs && start)
            c->der_id = tlsm_hs_save_cert(start, c->bytes);
    }
    if (x && hs->ncerts < UINT16_MAX)
        hs->ncerts++;
    errno = saved;
    return x;
}

/* Digest-sign set-up names the key: a signature key makes this a signature (CertificateVerify,
 * TLS 1.2 ServerKeyExchange), an HMAC key a TLS 1.3 PSK binder or, in 1.1.1, a Finished MAC
 * (key schedule). The context is remembered so the DigestSign/DigestSignFinal that follow
 * land in the same part. 3.x's libssl calls the _ex form, 1.1.1's EVP_DigestSignInit. */
static bool sign_init_begin(struct part *pt, const struct tlsm_obj *lib, EVP_MD_CTX *ctx,
                            const EVP_PKEY *pkey)
{
    struct tlsm_thread *th = &tlsm_th;
    if (!th->hs_cur || th->hs_part || th->guard)
        return false;
    struct tlsm_hs_key k = key_of(lib, pkey);
    bool mac = k.kind == TLSM_KEY_MAC;
    th->hs_mac_ctx = mac ? ctx : NULL;
    if (!mac && k.kind)
        th->hs_cur->sign_key = k;
    return part_begin(pt, mac ? TLSM_HS_KEY_SCHEDULE : TLSM_HS_SIGN);
}

TLSM_EXPORT int EVP_DigestSignInit_ex(EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const char *mdname,
                                      OSSL_LIB_CTX *libctx, const char *props, EVP_PKEY *pkey,
                                      const OSSL_PARAM params[])
{
    TLSM_HOOK_ENTER(EVP_DigestSignInit_ex, f);
    if (!f.fn)
        return errno = ENOSYS, 0;
    struct part pt;
    if (!sign_init_begin(&pt, f.target, ctx, pkey))
        return TLSM_REAL(EVP_DigestSignInit_ex, f)(ctx, pctx, mdname, libctx, props, pkey, params);
    int ret = TLSM_REAL(EVP_DigestSignInit_ex, f)(ctx, pctx, mdname, libctx, props, pkey, params);
    int saved = errno;
    part_end(&pt);
    errno = saved;
    return ret;
}

TLSM_EXPORT int EVP_DigestSignInit(EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type,
                                   ENGINE *e, EVP_PKEY *pkey)
{
    TLSM_HOOK_ENTER(EVP_DigestSignInit, f);
    if (!f.fn)
        return errno = ENOSYS, 0;
    struct part pt;
    if (!sign_init_begin(&pt, f.target, ctx, pkey))
        return TLSM_REAL(EVP_DigestSignInit, f)(ctx, pctx, type, e, pkey);
    int ret = TLSM_REAL(EVP_DigestSignInit, f)(ctx, pctx, type, e, pkey);
    int saved = errno;
    part_end(&pt);
    errno = saved;
    return ret;
}

static enum tlsm_hs_part sign_part(const EVP_MD_CTX *ctx)
{
    return ctx && ctx == tlsm_th.hs_mac_ctx ? TLSM_HS_KEY_SCHEDULE : TLSM_HS_SIGN;
}

TLSM_EXPORT int EVP_DigestSign(EVP_MD_CTX *ctx, unsigned char *sigret, size_t *siglen,
                               const unsigned char *tbs, size_t tbslen)
{
    TLSM_HOOK_ENTER(EVP_DigestSign, f);
    if (!f.fn)
        return errno = ENOSYS, 0;
    struct part pt;
    if (!part_begin(&pt, sign_part(ctx)))
        return TLSM_REAL(EVP_DigestSign, f)(ctx, sigret, siglen, tbs, tbslen);
    int ret = TLSM_REAL(EVP_DigestSign, f)(ctx, sigret, siglen, tbs, tbslen);
    int saved = errno;
    part_end(&pt);
    errno = saved;
    return ret;
}

TLSM_EXPORT int EVP_DigestSignFinal(EVP_MD_CTX *ctx, unsigned char *sigret, size_t *siglen)
{
    TLSM_HOOK_ENTER(EVP_DigestSignFinal, f);
    if (!f.fn)
        return errno = ENOSYS, 0;
    struct part pt;
    if (!part_begin(&pt, sign_part(ctx)))
        return TLSM_REAL(EVP_DigestSignFinal, f)(ctx, sigret, siglen);
    int ret = TLSM_REAL(EVP_DigestSignFinal, f)(ctx, sigret, siglen);
    int saved = errno;
    part_end(&pt);
    errno = saved;
    return ret;
}

/* Signature checks libssl asks for itself (CertificateVerify, TLS 1.2 ServerKeyExchange);
 * the chain's signatures are checked inside X509_verify_cert and count there. 3.x's libssl
 * sets them up with the _ex form, 1.1.1's with EVP_DigestVerifyInit. */
static void verify_key(const struct part *pt, const struct tlsm_obj *lib, const EVP_PKEY *pkey)
{
    struct tlsm_hs_key k = key_of(lib, pkey);
    if (k.kind)
        pt->hs->verify_key = k;
}

TLSM_EXPORT int EVP_DigestVerifyInit_ex(EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const char *mdname,
                                        OSSL_LIB_CTX *libctx, const char *props, EVP_PKEY *pkey,
                                        const OSSL_PARAM params[])
{
    TLSM_HOOK_ENTER(EVP_DigestVerifyInit_ex, f);
    if (!f.fn)
        return errno = ENOSYS, 0;
    struct part pt;
    if (!part_begin(&pt, TLSM_HS_VERIFY))
        return TLSM_REAL(EVP_DigestVerifyInit_ex, f)(ctx, pctx, mdname, libctx, props, pkey,
                                                     params);
    int ret = TLSM_REAL(EVP_DigestVerifyInit_ex, f)(ctx, pctx, mdname, libctx, props, pkey, params);
    int saved = errno;
    part_end(&pt);
    verify_key(&pt, f.target, pkey);
    errno = saved;
    return ret;
}

TLSM_EXPORT int EVP_DigestVerifyInit(EVP_MD_CTX *ctx, EVP_PKEY_CTX **pctx, const EVP_MD *type,
                                     ENGINE *e, EVP_PKEY *pkey)
{
    TLSM_HOOK_ENTER(EVP_DigestVerifyInit, f);
    if (!f.fn)
        return errno = ENOSYS, 0;
    struct part pt;
    if (!part_begin(&pt, TLSM_HS_VERIFY))
        return TLSM_REAL(EVP_DigestVerifyInit, f)(ctx, pctx, type, e, pkey);
    int ret = TLSM_REAL(EVP_DigestVerifyInit, f)(ctx, pctx, type, e, pkey);
    int saved = errno;
    part_end(&pt);
    verify_key(&pt, f.target, pkey);
    errno = saved;
    return ret;
}

PART_HOOK(int, EVP_DigestVerify, TLSM_HS_VERIFY,
          (EVP_MD_CTX * ctx, const unsigned char *sigret, size_t siglen, const unsigned char *tbs,
           size_t tbslen),
          (ctx, sigret, siglen, tbs, tbslen))

/* libssl encrypts a session ticket with EVP_EncryptInit_ex (its records use
 * EVP_CipherInit_ex): one call per ticket issued. Counted, not a part: the ticket's
 * encoding, encryption and MAC are spread over calls that are not only tickets'. */
TLSM_EXPORT int EVP_EncryptInit_ex(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, ENGINE *impl,
                                   const unsigned char *key, const unsigned char *iv)
{
    TLSM_HOOK_ENTER(EVP_EncryptInit_ex, f);
    if (!f.fn)
        return errno = ENOSYS, 0;
    struct tlsm_thread *th = &tlsm_th;
    if (th->hs_cur && !th->hs_part && !th->guard && cipher && key &&
        th->hs_cur->tickets < UINT16_MAX)
        th->hs_cur->tickets++;
    return TLSM_REAL(EVP_EncryptInit_ex, f)(ctx, cipher, impl, key, iv);
}
