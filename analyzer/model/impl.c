/* impl.c: the class comes from the code that ran: for AES-GCM the impl event (the AES and
 * GHASH functions the GCM context pointed at, identified from their instructions); for
 * ChaCha20-Poly1305 OpenSSL's dispatch rules applied to the instance's capability bits.
 * Traces without impl events fall back to capability bits and which GCM entry carried the
 * bytes. ns/byte only cross-checks, on bulk records: the bands move with the CPU and mean
 * nothing under emulation. */
#include "model/impl.h"
#include "model/prov.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Wide sanity bands for the cross-check only (docs/design.md section 8: ~0.26 / 1.65-3.8 /
 * 7.9 ns/B on x86_64 here, about 0.46 / 9.8 on the OTA SoC). The verdicts never use them. */
static const double band_lo[] = {[IMPL_HARDWARE] = 0.0, [IMPL_VECTOR] = 0.8, [IMPL_TABLE] = 2.5};
static const double band_hi[] = {[IMPL_HARDWARE] = 1.2, [IMPL_VECTOR] = 8.0, [IMPL_TABLE] = 1e9};

const char *impl__name(enum impl_class c)
{
    return tlsm_class_name((enum tlsm_class)c);
}

bool impl__is_aes_gcm(const char *c)
{
    size_t n = strlen(c);

    return !strncmp(c, "AES-", 4) && n > 8 && !strcmp(c + n - 4, "-GCM");
}

bool impl__is_chacha(const char *c)
{
    return !strncasecmp(c, "chacha20", 8);
}

bool trace__unfired(const struct trace *t, const char *fn)
{
    int i;

    for (i = 0; i < t->nunfired; i++)
        if (!strcmp(t->unfired[i], fn))
            return true;
    return false;
}

static bool is_arm(const struct trace *t, const struct lib *l)
{
    if (t->arch)
        return !strcmp(t->arch, "aarch64");
    return l && (l->caps_known & (1u << CAP_PMULL));
}

static bool cap(const struct lib *l, enum cap c)
{
    return l && (l->caps & (1u << c));
}

static bool caps_known(const struct lib *l, enum cap a, enum cap b)
{
    return l && (l->caps_known & (1u << a)) && (l->caps_known & (1u << b));
}

static void caps_text(const struct trace *t, const struct lib *l, char *buf, size_t n)
{
    static const enum cap x86[] = {CAP_AESNI, CAP_PCLMULQDQ, CAP_SSSE3,
                                   CAP_AVX2,  CAP_AVX512F,   CAP_AVX512VL};
    static const enum cap arm[] = {CAP_AES, CAP_PMULL, CAP_NEON};
    const enum cap *list = is_arm(t, l) ? arm : x86;
    size_t k, cnt = is_arm(t, l) ? 3 : 6, off = 0;

    buf[0] = '\0';
    for (k = 0; l && k < cnt && off < n; k++)
        if (l->caps_known & (1u << list[k]))
            off += (size_t)snprintf(buf + off, n - off, "%s%c%s", off ? " " : "",
                                    cap(l, list[k]) ? '+' : '-', cap__name(list[k]));
    if (!off)
        snprintf(buf, n, "unknown");
}

/* AES + carry-less multiply: the stitched hardware GCM kernel can run. */
static bool caps_hw(const struct trace *t, const struct lib *l)
{
    return is_arm(t, l) ? cap(l, CAP_AES) && cap(l, CAP_PMULL)
                        : cap(l, CAP_AESNI) && cap(l, CAP_PCLMULQDQ);
}

static bool caps_hw_known(const struct trace *t, const struct lib *l)
{
    return is_arm(t, l) ? caps_known(l, CAP_AES, CAP_PMULL)
                        : caps_known(l, CAP_AESNI, CAP_PCLMULQDQ);
}

static void vector_detail(const struct trace *t, const struct lib *l, char *buf, size_t n)
{
    if (is_arm(t, l))
        snprintf(buf, n, "%s",
                 cap(l, CAP_AES) ? "ARMv8 AES + software GHASH"
                                 : "AES: vector (vpaes/bit-sliced, NEON) via ctr32");
    else if (cap(l, CAP_AESNI))
        snprintf(buf, n, "AES: AES-NI; GHASH: software (no PCLMULQDQ) via ctr32");
    else if (cap(l, CAP_PCLMULQDQ))
        snprintf(buf, n, "AES: bit-sliced (SSSE3) in software; GHASH: PCLMULQDQ, via ctr32");
    else
        snprintf(buf, n, "AES: bit-sliced (SSSE3); GHASH: 4-bit table; both in software");
}

static bool caps_name_kernel(const struct lib *l);

/* Versions on which the software mask was checked to leave table AES only. */
static bool mask_verified(const struct lib *l)
{
    return l && l->version &&
           (!strncmp(l->version, "OpenSSL 1.1.1", 13) || !strncmp(l->version, "OpenSSL 3.0.", 12) ||
            !strncmp(l->version, "OpenSSL 3.5.", 12));
}

/* Rerouted records carry no GCM-level data (tlsmeter does not trace its own backend): the
 * class comes from the backend's mode and capability bits. */
static bool classify_rerouted(const struct trace *t, const struct lib *l, const char *path,
                              struct impl_result *r)
{
    char caps[96];

    if (!strcmp(path, "native") || !*path)
        return false;
    caps_text(t, l, caps, sizeof(caps));
    snprintf(r->evidence, sizeof(r->evidence), "reroute backend (path %s); caps %s", path, caps);
    if (!strcmp(path, "soft")) {
        /* The soft backend is the copy loaded under the software mask; that mask is checked
         * to leave only table AES on 1.1.1, 3.0 and 3.5 (scripts/tlsmeter-mask.sh). */
        if (mask_verified(l)) {
            r->cls = IMPL_TABLE;
            snprintf(r->detail, sizeof(r->detail), "reroute soft backend: table AES + 4-bit GHASH");
        } else {
            snprintf(r->detail, sizeof(r->detail),
                     "reroute soft backend on %s: the software mask is verified on OpenSSL "
                     "1.1.1, 3.0 and 3.5 only",
                     l && l->version && *l->version ? l->version : "an unknown OpenSSL");
        }
    } else if (caps_hw(t, l)) {
        r->cls = IMPL_HARDWARE;
        if (caps_name_kernel(l) || is_arm(t, l))
            snprintf(r->detail, sizeof(r->detail), "reroute hw backend: %s",
                     is_arm(t, l) ? "ARMv8 AES + PMULL" : "AES-NI + PCLMULQDQ");
        else
            snprintf(r->detail, sizeof(r->detail),
                     "reroute hw backend: hardware AES and carry-less multiply on (%s picks "
                     "its kernel from them; the backend's code is not traced)",
                     l && l->version && *l->version ? l->version : "the copy");
    } else {
        snprintf(r->detail, sizeof(r->detail), "reroute backend without known hardware caps");
    }
    return true;
}

/* One half's tier and words, by the impl event's names (common/schema.def); unknown code
 * has no entry (text NULL). */
struct half {
    enum impl_class cls;
    const char *text;
};

static const struct half aes_halves[TLSM_AES_N] = {
    [TLSM_AES_AESNI] = {IMPL_HARDWARE, "AES-NI"},
    [TLSM_AES_ARMV8] = {IMPL_HARDWARE, "ARMv8 AES"},
    [TLSM_AES_BSAES] = {IMPL_VECTOR, "bit-sliced (bsaes; runs under 8 blocks: table AES_encrypt)"},
    [TLSM_AES_VPAES] = {IMPL_VECTOR, "vpaes (byte shuffles)"},
    [TLSM_AES_TABLE] = {IMPL_TABLE, "table (AES_encrypt)"},
    [TLSM_AES_TABLE_C] = {IMPL_TABLE, "C table (AES_encrypt)"},
    [TLSM_AES_VAES_AVX512] = {IMPL_HARDWARE, "VAES (AVX-512)"},
};

static const struct half bsaes_short = {
    IMPL_TABLE, "table (bsaes's AES_encrypt fallback: these records are under 8 blocks)"};

static const struct half ghash_halves[TLSM_GHASH_N] = {
    [TLSM_GHASH_CLMUL_AVX] = {IMPL_HARDWARE, "PCLMULQDQ (AVX)"},
    [TLSM_GHASH_CLMUL] = {IMPL_HARDWARE, "PCLMULQDQ"},
    [TLSM_GHASH_PMULL] = {IMPL_HARDWARE, "PMULL"},
    [TLSM_GHASH_NEON] = {IMPL_VECTOR, "NEON 8-bit multiplies"},
    [TLSM_GHASH_4BIT] = {IMPL_TABLE, "4-bit table"},
    [TLSM_GHASH_4BIT_C] = {IMPL_TABLE, "C 4-bit table"},
    [TLSM_GHASH_VPCLMUL_AVX512] = {IMPL_HARDWARE, "VPCLMULQDQ (AVX-512)"},
};

/* The entry for code i (-1: a name the schema does not know), NULL when none. */
static const struct half *half_of(const struct half *h, int i)
{
    return i >= 0 && h[i].text ? &h[i] : NULL;
}

/* aarch64 3.5 (cipher_aes_gcm_hw_armv8.inc): armv8_aes_gcm_{en,de}crypt pick the unrolled
 * EOR3 kernels (aes-gcm-armv8-unroll8_64.pl) when the copy's OPENSSL_armcap has
 * ARMV8_UNROLL8_EOR3 (bit 12, set from the CPU model: Neoverse V1/N2/V2, Ampere, Cobalt 100),
 * else aes-gcm-armv8_64.pl's; 3.0 has only the latter. The word is the copy's own, as its
 * lib event read it: the dispatch reads the same word on every call. */
static const char *arm_kernel(const struct lib *l)
{
    const char *w = l && l->cpuinfo ? strstr(l->cpuinfo, "OPENSSL_armcap=0x") : NULL;

    if (!l || !l->gcm_layout || !strcmp(l->gcm_layout, "1.1.1"))
        return "";
    if (!strcmp(l->gcm_layout, "3.0"))
        return " (aes_gcm_*_kernel)";
    if (strcmp(l->gcm_layout, "3.5"))
        return "";
    if (!w)
        return " (kernel variant unknown: armcap not read)";
    return strtoull(w + 17, NULL, 16) & (1u << 12)
               ? " (unroll8_eor3 kernel: armcap has UNROLL8_EOR3)"
               : " (aes_gcm_*_kernel: armcap has no UNROLL8_EOR3)";
}

/* Both halves known: hardware when both are, else the slower half's tier. */
static bool classify_code(const struct trace *t, const struct lib *l, const struct bucket *b,
                          struct impl_result *r)
{
    const struct impl_ev *e = b->impl ? trace__impl(t, b->impl) : NULL;
    const struct half *a, *g;

    if (!e || b->impl_ct < b->impl_none_ct)
        return false;
    int ai = tlsm_aes_parse(e->aes, strlen(e->aes));
    a = half_of(aes_halves, ai);
    g = half_of(ghash_halves, tlsm_ghash_parse(e->ghash, strlen(e->ghash)));
    if (!a || !g)
        return false;
    /* ossl_bsaes_ctr32_encrypt_blocks hands calls under 8 blocks to AES_encrypt: records
     * averaging under 128 bytes ran table AES. */
    if (ai == TLSM_AES_BSAES && b->st.rec_ct < 128 * b->st.recs)
        a = &bsaes_short;
    r->cls = a->cls > g->cls ? a->cls : g->cls;
    snprintf(r->detail, sizeof(r->detail), "AES: %s%s; GHASH: %s%s%s", a->text,
             a->cls == IMPL_HARDWARE ? "" : " in software", g->text,
             g->cls == IMPL_HARDWARE ? "" : " in software",
             ai == TLSM_AES_VAES_AVX512 ? "; stitched VAES/AVX-512 GCM kernel "
                                          "(aes-gcm-avx512.pl)"
             : e->stitched              ? "; stitched AES-GCM kernel for bulk"
                                        : "");
    if (e->stitched && ai == TLSM_AES_ARMV8) { /* appended: the bounded part above stays whole */
        size_t n = strlen(r->detail);
        snprintf(r->detail + n, sizeof(r->detail) - n, "%s", arm_kernel(l));
    }
    if (ai == TLSM_AES_VAES_AVX512)
        snprintf(r->evidence, sizeof(r->evidence),
                 "read from the copy's code (impl event %lld): the GCM context names no code "
                 "(it never enters CRYPTO_gcm128_*); the provider's cipherupdate and its "
                 "callees hold EVEX vaesenc and vpclmulqdq%s",
                 (long long)e->id,
                 b->impl_other_ct ? "; some records name another implementation" : "");
    else if (ai == TLSM_AES_TABLE_C)
        snprintf(r->evidence, sizeof(r->evidence),
                 "read from the copy's code (impl event %lld): the GCM context has no GHASH "
                 "function pointer and its block is table AES_encrypt: an OpenSSL built "
                 "without its assembler modules%s",
                 (long long)e->id,
                 b->impl_other_ct ? "; some records name another implementation" : "");
    else
        snprintf(r->evidence, sizeof(r->evidence),
                 "read from the copy's code (impl event %lld): the GCM context's functions are "
                 "%s AES and %s GHASH, identified from their instructions%s",
                 (long long)e->id, e->aes, e->ghash,
                 b->impl_other_ct ? "; some records name another implementation" : "");
    return true;
}

/* The copy's GCM context is not read (lib gcm_layout "unverified": a version whose layout
 * was not checked against a binary): no code is named; the class comes from the speed band
 * alone, on bulk records of a real CPU, else unknown. The reason names the version. */
static bool classify_unverified(const struct trace *t, const struct lib *l, const struct bucket *b,
                                struct impl_result *r)
{
    double nspb = bucket__bulk_median(b);
    const char *v = l && l->version && *l->version ? l->version : "this OpenSSL";

    if (!l || !l->gcm_layout || strcmp(l->gcm_layout, "unverified"))
        return false;
    snprintf(r->evidence, sizeof(r->evidence),
             "%s: its GCM context layout is not verified, so the code that ran is not read", v);
    if (t->emulated || nspb < 0) {
        snprintf(r->detail, sizeof(r->detail), "code not named (%s: layout not verified)", v);
        return true;
    }
    /* The bands overlap (they are what a class may measure, for the cross-check): the cut
     * between two neighbours is where their bands' edges meet halfway on a log scale,
     * sqrt(0.8 * 1.2) and sqrt(2.5 * 8) ns/B, so table AES on a fast core (7 ns/B here) is
     * not taken for vector AES. */
    r->cls = nspb < 0.98 ? IMPL_HARDWARE : nspb < 4.47 ? IMPL_VECTOR : IMPL_TABLE;
    snprintf(r->detail, sizeof(r->detail),
             "%s speed (bulk median %.2f ns/B); code not named (%s: layout not verified)",
             impl__name(r->cls), nspb, v);
    return true;
}

/* Capability bits name the kernel only where the version's kernels are known: 1.1.1 and 3.0
 * have no VAES path (3.5 chooses its VAES/AVX-512 kernel from the same bits). */
static bool caps_name_kernel(const struct lib *l)
{
    return l && l->version &&
           (!strncmp(l->version, "OpenSSL 3.0.", 12) || !strncmp(l->version, "OpenSSL 1.1.1", 13));
}

static void classify_gcm(const struct trace *t, const struct lib *l, const struct stats *s,
                         struct impl_result *r)
{
    double total = (double)s->rec_ct, dec = (double)s->gcm_dec, ctr = (double)s->gcm_ctr;
    double seen = dec + ctr + (double)s->gcm_both;
    bool blind = trace__unfired(t, "CRYPTO_gcm128_decrypt") &&
                 trace__unfired(t, "CRYPTO_gcm128_decrypt_ctr32");
    char caps[96];

    caps_text(t, l, caps, sizeof(caps));
    snprintf(r->evidence, sizeof(r->evidence),
             "%.1f %% of bytes through CRYPTO_gcm128_decrypt, %.1f %% through _ctr32; caps %s",
             100 * dec / total, 100 * ctr / total, caps);
    if (dec >= 0.5 * total) {
        r->cls = IMPL_TABLE;
        snprintf(r->detail, sizeof(r->detail), "table AES + 4-bit GHASH");
        if (caps_hw(t, l))
            snprintf(r->detail, sizeof(r->detail),
                     "table AES + 4-bit GHASH although the CPU has AES: built without asm");
    } else if (ctr >= 0.5 * total) {
        r->cls = IMPL_VECTOR;
        vector_detail(t, l, r->detail, sizeof(r->detail));
    } else if (seen >= 0.5 * total) {
        snprintf(r->detail, sizeof(r->detail), "both GCM entries carried the bytes");
    } else if ((caps_hw(t, l) && caps_name_kernel(l)) ||
               (!caps_hw_known(t, l) && seen > 0 && !blind)) {
        r->cls = IMPL_HARDWARE;
        snprintf(r->detail, sizeof(r->detail), "%s stitched GCM kernel",
                 is_arm(t, l) ? "ARMv8 AES + PMULL" : "AES-NI + PCLMULQDQ");
    } else if (caps_hw(t, l)) {
        snprintf(r->detail, sizeof(r->detail),
                 "bytes bypass CRYPTO_gcm128_*; %s chooses among several hardware kernels "
                 "and no impl event names the one that ran",
                 l && l->version ? l->version : "this OpenSSL");
    } else if (blind) {
        snprintf(r->detail, sizeof(r->detail),
                 "the CRYPTO_gcm128_* hooks never fired: code path not visible");
    } else {
        snprintf(r->detail, sizeof(r->detail), "bytes bypass CRYPTO_gcm128_* but %s",
                 caps_hw_known(t, l) ? "the capability bits show no hardware AES"
                                     : "the capability bits are unknown");
    }
}

/* OpenSSL 3.0-3.x dispatch (crypto/chacha/asm/chacha-x86_64.pl, ChaCha20_ctr32): AVX512F,
 * then AVX512VL, are tested before SSSE3; XOP and AVX2 only inside the SSSE3 path (AVX2 for
 * more than 128 bytes). Poly1305 (poly1305-x86_64.pl, poly1305_init): AVX512F+IFMA+VL, AVX2,
 * AVX, else scalar. aarch64 (chacha-armv8.pl): NEON for 192 bytes and more. */
static void chacha_x86(const struct lib *l, char *cc, size_t n, bool *simd)
{
    *simd = true;
    if (cap(l, CAP_AVX512F))
        snprintf(cc, n, "AVX-512");
    else if (cap(l, CAP_AVX512VL))
        snprintf(cc, n, "AVX-512VL (256-bit)");
    else if (!cap(l, CAP_SSSE3))
        *simd = false, snprintf(cc, n, "scalar, plain software (no SSSE3, no AVX-512)");
    else if (cap(l, CAP_XOP))
        snprintf(cc, n, "XOP");
    else if (cap(l, CAP_AVX2))
        snprintf(cc, n, "AVX2 over 128 B, SSSE3 below");
    else
        snprintf(cc, n, "SSSE3");
}

static void classify_chacha(const struct trace *t, const struct lib *l, struct impl_result *r)
{
    char caps[96], cc[48];
    const char *poly;
    bool simd;

    caps_text(t, l, caps, sizeof(caps));
    snprintf(r->evidence, sizeof(r->evidence),
             "OpenSSL's ChaCha20/Poly1305 dispatch rules on the instance's caps %s", caps);
    if (!l || !l->caps_known) {
        snprintf(r->detail, sizeof(r->detail), "ChaCha20 implementation not known from the caps");
        return;
    }
    if (is_arm(t, l)) {
        simd = cap(l, CAP_NEON);
        snprintf(cc, sizeof(cc), "%s", simd ? "NEON from 192 B, scalar below" : "scalar");
        poly = simd ? "NEON" : "scalar";
    } else {
        chacha_x86(l, cc, sizeof(cc), &simd);
        poly = cap(l, CAP_AVX512F) && cap(l, CAP_AVX512VL) && cap(l, CAP_AVX512IFMA)
                   ? "AVX-512 IFMA"
               : cap(l, CAP_AVX2) ? "AVX2"
               : cap(l, CAP_AVX)  ? "AVX"
                                  : "scalar";
    }
    r->cls = simd ? IMPL_VECTOR : IMPL_TABLE;
    snprintf(r->detail, sizeof(r->detail), "ChaCha20: %s; Poly1305: %s", cc, poly);
}

static const struct calib *calib_for(const struct trace *t, int cipher, enum impl_class c)
{
    int i;

    for (i = 0; i < t->ncalibs; i++)
        if (t->calibs[i].cipher == cipher && !strcmp(t->calibs[i].impl, impl__name(c)))
            return &t->calibs[i];
    return NULL;
}

static void cross_check(const struct trace *t, const struct bucket *b, struct impl_result *r)
{
    double nspb = bucket__bulk_median(b), lo, hi; /* preemption inflates means, not this */
    const struct calib *ref = calib_for(t, b->cipher, r->cls);
    const char *what = ref ? "this trace's calibration" : "the usual band";

    if (t->emulated) {
        snprintf(r->check, sizeof(r->check),
                 "no ns/B cross-check: emulated CPU (qemu), "
                 "time is meaningless there");
        return;
    }
    if (r->cls == IMPL_UNKNOWN || !r->aes_gcm || nspb < 0)
        return; /* too few bulk records: fixed per-record costs dominate ns/B */
    lo = ref ? ref->ns_per_byte / 3 : band_lo[r->cls];
    hi = ref ? ref->ns_per_byte * 3 : band_hi[r->cls];
    r->mismatch = nspb < lo || nspb > hi;
    snprintf(r->check, sizeof(r->check), "bulk median %.2f ns/B %s %s for %s (%.2f-%.2f ns/B)",
             nspb, r->mismatch ? "DISAGREES with" : "agrees with", what, impl__name(r->cls), lo,
             hi > 1e8 ? 999.0 : hi);
}

void impl__classify(const struct model *m, const struct bucket *b, struct impl_result *r)
{
    const struct trace *t = &m->traces[b->trace];
    const char *cipher = model__name(m, b->cipher);
    const struct lib *l = trace__bucket_lib(t, b, model__name(m, b->path));

    memset(r, 0, sizeof(*r));
    r->aes_gcm = impl__is_aes_gcm(cipher);
    if (!b->st.rec_ct)
        snprintf(r->detail, sizeof(r->detail), "no bytes decrypted");
    else if (r->aes_gcm && !(b->st.gcm_dec + b->st.gcm_ctr + b->st.gcm_both) &&
             classify_rerouted(t, l, model__name(m, b->path), r))
        ;
    else if (r->aes_gcm) {
        if (!classify_code(t, l, b, r) && !classify_unverified(t, l, b, r))
            classify_gcm(t, l, &b->st, r);
    } else if (impl__is_chacha(cipher))
        classify_chacha(t, l, r);
    else
        snprintf(r->detail, sizeof(r->detail), "no classification for %s", cipher);
    prov__classify(m, b, r); /* another provider's records: its code or unknown */
    cross_check(t, b, r);
}

enum impl_class impl__overall(const struct model *m)
{
    uint64_t bytes[4] = {0}, native = 0;
    size_t i;
    int c, best = IMPL_UNKNOWN;
    struct impl_result r;

    for (i = 0; i < m->nbuckets; i++)
        if (!strcmp(model__name(m, m->buckets[i].path), "native"))
            native += m->buckets[i].st.rec_ct;
    for (i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];

        if (native && strcmp(model__name(m, b->path), "native"))
            continue;
        impl__classify(m, b, &r);
        bytes[r.cls] += b->st.rec_ct;
    }
    for (c = 0; c < 4; c++)
        if (bytes[c] > bytes[best])
            best = c;
    return (enum impl_class)best;
}
