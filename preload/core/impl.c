/* impl.c: the implementation that ran, from the GCM context's function pointers (impl.h).
 * A layout is read only for the versions whose binaries it was checked against here; any
 * other version (3.1-3.4, 3.6+, forks reporting them) gets no read at all: its records are
 * still measured through the public API, its lib event says gcm_layout "unverified".
 *
 * GCM128_CONTEXT (include/crypto/modes.h, LP64, TABLE_BITS 4): Yi EKi EK0 len Xi H (6 x 16),
 * Htable[16] (256) at 96, then
 *   1.1.1, 3.0: gmult 352, ghash 360, mres/ares 368, block 376, key 384; 440 bytes
 *               (1.1.1: crypto/modes/modes_local.h, the same struct)
 *   3.5:        funcs {ginit 352, ghash 360, gmult 368}, mres/ares 376, block 384, key 392,
 *               Xn 400; 448 bytes
 * Checked: 3.0 against Debian 12's 3.0.19 CRYPTO_gcm128_decrypt_ctr32 (x86_64: ghash
 * 0x168(%rdi), gmult 0x160, block 0x178, key 0x180); 1.1.1 against Debian 11's 1.1.1w (ghash
 * 0x168, gmult 0x160, mres 0x170); 3.5 against Debian 13's 3.5.9 libcrypto.so.3 (source
 * 3.5.7), CRYPTO_gcm128_decrypt_ctr32 on x86_64 (ghash call *0x168, gmult call *0x170, block
 * call *0x180, key 0x188, mres 0x178, Xn 0x190) and on arm64 (ldr [x19, #360] ghash, #368
 * gmult, #376 mres, #384 block, #392 key). 3.1 has 3.0's struct in its headers, 3.2-3.4 3.5's,
 * but no binary of them was checked: not read.
 *
 * The provider's context (providers/implementations/include/prov/ciphercommon_gcm.h
 * PROV_GCM_CTX, LP64): hw (its PROV_GCM_HW table: setkey, setiv, aadupdate, cipherupdate,
 * cipherfinal, oneshot) at 240, the GCM128_CONTEXT at 248, ctr after it: 688 in 3.0, 696 in
 * 3.5. EVP_CIPHER_CTX (crypto/evp/evp_local.h) holds it as algctx: 168 in 3.0, 176 in 3.5
 * (numpipes came before it); its cipher at 0, whose get_ctx_params sits at 216 (3.0) / 240
 * (3.5) of EVP_CIPHER. Checked: EVP_CIPHER_CTX_get_params of Debian 12's 3.0 (0xa8(%rdi),
 * cipher 0xd8) and Debian 13's 3.5.9 (x86_64: 0xb0(%rdi), cipher 0xf0; arm64: [x0, #176]);
 * 3.5's provider offsets in trixie's libcrypto.a (x86_64 and arm64): ossl_gcm_initctx stores
 * hw at 240, gcm_cipher_internal calls hw->cipherupdate (slot 3), aesni_gcm_initkey and
 * armv8_aes_gcm_initkey pass ctx + 0xf8 to CRYPTO_gcm128_init and store ctr at 0x2b8 (696),
 * vaes_gcm_setkey zeroes 0x1c0 bytes from 0xf8 and stores key at 0x280. 3.0's in Debian 12's
 * 3.0.19 libcrypto.a (x86_64): ossl_gcm_initctx stores hw at 0xf0, aesni_gcm_initkey passes
 * ctx + 0xf8 to CRYPTO_gcm128_init and stores ctr at 0x2b0 (688), ks at 0x2b8.
 *
 * 3.5's VAES/AVX-512 GCM (cipher_aes_gcm_hw_vaes_avx512.inc, chosen when
 * ossl_vaes_vpclmulqdq_capable: AVX512F/DQ/BW/VL + VAES + VPCLMULQDQ) never enters
 * CRYPTO_gcm128_*: its setkey zeroes the GCM context and sets only key, so block, ghash and
 * gmult are NULL. What ran is then its PROV_GCM_HW's cipherupdate (vaes_gcm_cipherupdate),
 * identified from the instructions of it and its callees (ossl_aes_gcm_decrypt_avx512: EVEX
 * vaesenc and vpclmulqdq). 3.5 has no AVX2 VAES GCM path (crypto/modes/asm: aesni-gcm-x86_64
 * uses 128-bit VEX forms only).
 *
 * Built without assembler (1.1.1-3.1, `no-asm` or a target with no modules): neither
 * GHASH_ASM nor OPENSSL_CPUID_OBJ is defined, so CRYPTO_gcm128_init zeroes the context and
 * sets only block and key: gmult and ghash stay NULL and gcm128.c calls its static C
 * gcm_gmult_4bit/gcm_ghash_4bit directly; block is aes_core.c's C AES_encrypt and there is no
 * CTR function (AES_CTR_ASM undefined). Any build with assembler sets both pointers on x86_64
 * and aarch64 (checked in 3.0.22's and 1.1.1w's gcm128.c and cipher_aes_gcm_hw.c / e_aes.c). */
#include "base/tls.h"
#include "core/impl.h"
#include "arch/arch.h"
#include "base/codeid.h"
#include "base/json.h"
#include "trace/trace.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_IMPLS 32

/* forward/abi.h decides the layout (the version text and ABI); these are its values. */
enum layout {
    LAYOUT_NONE = TLSM_LAYOUT_NONE,
    LAYOUT_30 = TLSM_LAYOUT_30,
    LAYOUT_35 = TLSM_LAYOUT_35,
    LAYOUT_111 = TLSM_LAYOUT_111
};

/* Offsets of the header comment. */
enum { PROV_HW_OFF = 240, PROV_GCM_OFF = 248, HW_CIPHERUPDATE = 3 };

struct key {
    const void *block, *ghash, *gmult, *stream;
    const void *kernel; /* the provider's cipherupdate, when the GCM context names nothing */
    const struct tlsm_obj *lib;
};

struct impl {
    struct key k;
    int id;
    unsigned gen; /* trace file generation its line went to */
    char line[TLSM_LINE_MAX];
    size_t len;
};

static struct impl impls[MAX_IMPLS];
static int nimpls;
/* Try-lock holding the holder's pid: a record never waits, and a forked child takes over a
 * lock a parent thread held at fork (that thread does not exist in the child). */
static int lock;

/* Per thread: the record in flight, and the last set seen (so steady state is one compare). */
static __thread struct {
    struct key cur, last;
    bool have;
    int last_id;
    const struct tlsm_obj *layout_lib;
    enum layout layout;
    /* The provider pointers last believed for layout_lib (tlsm_code_same_object is slow). */
    const void *ok_params, *ok_hw;
} th TLSM_IE;

static enum layout layout_of(const struct tlsm_obj *lib)
{
    return (enum layout)tlsm_abi_gcm_layout(&lib->abi, lib->version);
}

static void th_layout(const struct tlsm_obj *lib)
{
    if (th.layout_lib != lib) {
        th.layout = layout_of(lib);
        th.layout_lib = lib;
        th.ok_params = th.ok_hw = NULL;
    }
}

void tlsm_impl_note_gcm(struct tlsm_obj *lib, const void *gcm_ctx, const void *stream)
{
    if (!lib || !gcm_ctx)
        return;
    th_layout(lib);
    const char *c = gcm_ctx;
    const void *const *p;
    if (th.layout == LAYOUT_30 || th.layout == LAYOUT_111) {
        p = (const void *const *)(c + 352);
        th.cur.gmult = p[0], th.cur.ghash = p[1], th.cur.block = p[3];
    } else if (th.layout == LAYOUT_35) {
        p = (const void *const *)(c + 360);
        th.cur.ghash = p[0], th.cur.gmult = p[1], th.cur.block = p[3];
    } else {
        return;
    }
    if (stream)
        th.cur.stream = stream;
    th.cur.kernel = NULL; /* note_prov sets it after, for this context */
    th.cur.lib = lib;
    th.have = true;
}

/* The provider context prov of lib (layout l, its hw table checked by the caller): the GCM
 * context's pointers, and when they name no code (3.5's VAES kernel), the cipherupdate. */
static void note_prov(struct tlsm_obj *lib, const char *prov, const void *const *hw)
{
    const void *ctr =
        *(const void *const *)(prov + PROV_GCM_OFF + (th.layout == LAYOUT_35 ? 448 : 440));
    tlsm_impl_note_gcm(lib, prov + PROV_GCM_OFF, ctr);
    if (th.have && !th.cur.block && !th.cur.ghash && !th.cur.gmult)
        th.cur.kernel = hw[HW_CIPHERUPDATE];
}

void tlsm_impl_note_prov(struct tlsm_obj *lib, const void *prov, const void *hw)
{
    if (!lib || !prov || !hw)
        return;
    th_layout(lib);
    if (th.layout == LAYOUT_30 || th.layout == LAYOUT_35)
        note_prov(lib, prov, hw);
}

bool tlsm_impl_note_evp(struct tlsm_obj *lib, const void *evp_ctx, const void *anchor)
{
    if (!lib || !evp_ctx)
        return false;
    th_layout(lib);
    if (th.layout != LAYOUT_30 && th.layout != LAYOUT_35)
        return false;
    bool v35 = th.layout == LAYOUT_35;
    const char *ctx = evp_ctx;
    const char *cipher = *(const char *const *)ctx;
    const char *prov = *(const char *const *)(ctx + (v35 ? 176 : 168));
    if (!cipher || !prov)
        return false;
    /* The context is this copy's own PROV_GCM_CTX only when its cipher's code is this copy's
     * (not the FIPS module's or another provider's): get_ctx_params inside the copy. */
    const void *params = *(const void *const *)(cipher + (v35 ? 240 : 216));
    if (params != th.ok_params) {
        if (!tlsm_code_same_object(anchor, params, 1, true))
            return false;
        th.ok_params = params;
    }
    /* A GCM context that names its code is read by the CRYPTO_gcm128_* hooks (they run). */
    if (*(const void *const *)(prov + PROV_GCM_OFF + (v35 ? 384 : 376)))
        return false;
    const void *const *hw = *(const void *const *const *)(prov + PROV_HW_OFF);
    if ((const void *)hw != th.ok_hw) {
        if (!tlsm_code_same_object(anchor, hw, 6 * sizeof(void *), false) ||
            !tlsm_code_same_object(anchor, hw[HW_CIPHERUPDATE], 1, true))
            return false;
        th.ok_hw = hw;
    }
    note_prov(lib, prov, hw);
    return true;
}

static bool is_arm(void)
{
    return TLSM_ARCH_IS_ARM;
}

/* OpenSSL's pairings (providers/implementations/ciphers/cipher_aes_gcm_hw.c): AES-NI/ARMv8
 * keys give an AES block function; with AES-NI hidden and SSSE3 present the bit-sliced CTR
 * (ossl_bsaes_ctr32_encrypt_blocks, table AES_encrypt for the block and for runs under 8
 * blocks) wins over vpaes, which has no CTR function in GCM; else table AES. */
static enum tlsm_aes aes_code(const struct tlsm_code *b, const struct tlsm_code *s)
{
    uint32_t hw = is_arm() ? TLSM_ISA_A64_AES : TLSM_ISA_AES | TLSM_ISA_AES_VEX;
    uint32_t simd = is_arm() ? TLSM_ISA_A64_TBL : TLSM_ISA_PSHUFB;
    if (b->isa & hw)
        return is_arm() ? TLSM_AES_ARMV8 : TLSM_AES_AESNI;
    if (s->bounded && !(s->isa & hw) && (s->isa & simd))
        return TLSM_AES_BSAES;
    if (b->isa & simd)
        return TLSM_AES_VPAES;
    if (b->bounded && (!s->found || s->bounded))
        return TLSM_AES_TABLE;
    return TLSM_AES_UNKNOWN;
}

static enum tlsm_ghash ghash_code(const struct tlsm_code *g)
{
    if (is_arm())
        return g->isa & TLSM_ISA_A64_PMULL    ? TLSM_GHASH_PMULL
               : g->isa & TLSM_ISA_A64_PMULL8 ? TLSM_GHASH_NEON
               : g->bounded                   ? TLSM_GHASH_4BIT
                                              : TLSM_GHASH_UNKNOWN;
    return g->isa & TLSM_ISA_CLMUL_VEX ? TLSM_GHASH_CLMUL_AVX
           : g->isa & TLSM_ISA_CLMUL   ? TLSM_GHASH_CLMUL
           : g->bounded                ? TLSM_GHASH_4BIT
                                       : TLSM_GHASH_UNKNOWN;
}

/* OpenSSL's C code for both halves, read from the context (the header comment): a verified
 * layout of 1.1.1-3.1, no GHASH pointer, no CTR function, and a block that is table AES with
 * no vector or crypto instruction, inside a loaded object. */
static bool c_only(const struct key *k, enum tlsm_aes aes, const struct tlsm_code *b)
{
    enum layout l = layout_of(k->lib);
    return (l == LAYOUT_30 || l == LAYOUT_111) && !k->ghash && !k->gmult && !k->stream &&
           aes == TLSM_AES_TABLE && b->found && b->bounded && !b->isa;
}

/* A provider cipherupdate whose own code or direct callees hold EVEX vaesenc and vpclmulqdq:
 * 3.5's vaes_gcm_cipherupdate calls ossl_aes_gcm_{de,en}crypt_avx512 and
 * ossl_gcm_gmult_avx512. Any other (or one not bounded) names nothing. */
static bool kernel_wide(const void *fn)
{
    struct tlsm_code c;
    uint32_t want = TLSM_ISA_AES_EVEX | TLSM_ISA_CLMUL_EVEX;
    return !is_arm() && tlsm_code_identify(fn, &c) && c.bounded && (c.isa & want) == want;
}

/* One function's keys: fn_WHAT_module, _off (module-relative: the .symtab value), _size
 * (from its FDE, -1 unknown), _isa (instruction families in it and its direct callees). */
static void fn_keys(struct tlsm_json *j, const char *what, const void *fn)
{
    struct tlsm_code c;
    char k[40], off[24];
    if (!fn)
        return;
    tlsm_code_identify(fn, &c);
    snprintf(off, sizeof(off), "0x%lx", (unsigned long)c.off);
    tlsm_json_str_k(j, k, (size_t)snprintf(k, sizeof(k), ",\"fn_%s_module\":", what),
                    c.found ? c.path : "");
    tlsm_json_safe_k(j, k, (size_t)snprintf(k, sizeof(k), ",\"fn_%s_off\":", what),
                     c.found ? off : "");
    tlsm_json_int_k(j, k, (size_t)snprintf(k, sizeof(k), ",\"fn_%s_size\":", what),
                    c.bounded ? (int64_t)c.size : -1);
    tlsm_json_nest_k(j, k, (size_t)snprintf(k, sizeof(k), ",\"fn_%s_isa\":", what));
    tlsm_isa_write(j, c.isa);
    tlsm_json_arr_end(j);
}

static void build(struct impl *m)
{
    struct tlsm_code b, g, s = {0};
    const struct key *k = &m->k;
    struct tlsm_json j;
    tlsm_code_identify(k->block, &b);
    tlsm_code_identify(k->ghash ? k->ghash : k->gmult, &g);
    if (k->stream)
        tlsm_code_identify(k->stream, &s);
    enum tlsm_aes aes = aes_code(&b, &s);
    enum tlsm_ghash gh = ghash_code(&g);
    if (c_only(k, aes, &b))
        aes = TLSM_AES_TABLE_C, gh = TLSM_GHASH_4BIT_C;
    bool wide = k->kernel && kernel_wide(k->kernel);
    if (wide)
        aes = TLSM_AES_VAES_AVX512, gh = TLSM_GHASH_VPCLMUL_AVX512;
    tlsm_json_begin(&j, m->line, sizeof(m->line), TLSM_EV(IMPL));
    tlsm_json_int(&j, "id", m->id);
    tlsm_json_int(&j, "lib", k->lib->lib_id);
    tlsm_json_safe(&j, "layout", tlsm_gcm_layout_name((enum tlsm_gcm_layout)layout_of(k->lib)));
    tlsm_json_safe(&j, "aes", tlsm_aes_name(aes));
    tlsm_json_safe(&j, "ghash", tlsm_ghash_name(gh));
    /* AES_GCM_ASM: the stitched kernel takes bulk data past CRYPTO_gcm128_* when the CTR
     * function is the hardware one and GHASH the AVX (x86_64) / PMULL (aarch64) one. 1.1.1
     * has the x86_64 kernel (aesni-gcm-x86_64.pl) but no aarch64 one (3.0 added it). */
    bool stitched =
        is_arm() ? layout_of(k->lib) != LAYOUT_111 && aes == TLSM_AES_ARMV8 &&
                       gh == TLSM_GHASH_PMULL && k->stream
                 : (aes == TLSM_AES_AESNI && gh == TLSM_GHASH_CLMUL_AVX && k->stream) || wide;
    tlsm_json_bool(&j, "stitched", stitched);
    fn_keys(&j, "block", k->block);
    fn_keys(&j, "ghash", k->ghash);
    fn_keys(&j, "gmult", k->gmult);
    fn_keys(&j, "stream", k->stream);
    fn_keys(&j, "kernel", k->kernel);
    m->len = tlsm_json_end(&j, m->line);
}

/* The impl for key: found, or made (identification runs here, once per set). */
static struct impl *lookup(const struct key *k)
{
    for (int i = 0; i < nimpls; i++)
        if (!memcmp(&impls[i].k, k, sizeof(*k)))
            return &impls[i];
    if (nimpls == MAX_IMPLS)
        return NULL;
    struct impl *m = &impls[nimpls];
    memset(m, 0, sizeof(*m));
    m->k = *k;
    m->id = nimpls + 1;
    build(m);
    nimpls++;
    return m;
}

int tlsm_impl_take(void)
{
    if (!th.have)
        return 0;
    th.have = false;
    unsigned gen = tlsm_trace_generation();
    /* Steady state: the set of the last record. The note sets block, ghash, gmult and lib
     * together each time, the stream only from a _ctr32 call: that one is cleared for the
     * next record, nothing else is copied. */
    if (th.cur.block == th.last.block && th.cur.ghash == th.last.ghash &&
        th.cur.gmult == th.last.gmult && th.cur.stream == th.last.stream &&
        th.cur.kernel == th.last.kernel && th.cur.lib == th.last.lib && th.last_id > 0 &&
        __atomic_load_n(&impls[th.last_id - 1].gen, __ATOMIC_ACQUIRE) == gen) {
        th.cur.stream = NULL;
        return th.last_id;
    }
    struct key k = th.cur;
    memset(&th.cur, 0, sizeof(th.cur));
    int me = getpid(), held = 0;
    if (!__atomic_compare_exchange_n(&lock, &held, me, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED) &&
        (held == me ||
         !__atomic_compare_exchange_n(&lock, &held, me, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
        return 0; /* another thread is identifying: this record goes without */
    struct impl *m = lookup(&k);
    int id = 0;
    if (m && m->len) {
        if (m->gen != gen) { /* first use in this trace file (also a forked child's) */
            tlsm_trace_line(m->line, m->len);
            __atomic_store_n(&m->gen, gen, __ATOMIC_RELEASE);
        }
        id = m->id;
    }
    __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
    th.last = k;
    th.last_id = id;
    return id;
}
