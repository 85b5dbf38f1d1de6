/* hook_evp.c: the EVP calls libssl makes per record. Each hook forwards unchanged; for
 * contexts record.c tracks it reports the call. Calls nested inside another EVP hook
 * (EVP_CipherUpdate tail-calling EVP_DecryptUpdate) are the same operation: forwarded only. */
#include "base/tls.h"
#include "base/clock.h"
#include "hooks/hook.h"
#include "core/impl.h"
#include "core/record.h"
#include "forward/bindpast.h"
#include "forward/obj.h"
#include "reroute/reroute.h"
#include "trace/config.h"

#include <openssl/evp.h>
#include <string.h>

/* Around a tracked context's data call: GCM inner calls during it belong to its record (if
 * one is open: a record only begins at Init or ctrl, never inside a data call). */
#define DATA_CALL_BEGIN(st)                                                                        \
    struct tlsm_rsm_ctx *outer = tlsm_th.rec_cur;                                                  \
    tlsm_th.rec_cur = (st)->rsm.in_rec ? &(st)->rsm : NULL;                                        \
    tlsm_th.evp_depth++
#define DATA_CALL_END()                                                                            \
    tlsm_th.evp_depth--;                                                                           \
    tlsm_th.rec_cur = outer

/* Untraced: set-up not finished, our own call, or nested inside another EVP hook. */
static inline __attribute__((always_inline)) bool untraced_evp(void)
{
    return !tlsm_tracing(&tlsm_th) || tlsm_th.evp_depth;
}

/* Per thread and nested function, the answer for the last outer function: the real
 * EVP_CipherUpdate of one libcrypto always binds the same EVP_DecryptUpdate, until an object
 * is unloaded (tlsm_resolve_gen). */
struct nest_memo {
    const void *outer;
    void *fn;
    unsigned gen;
};
static __thread struct nest_memo nest_memo[2] TLSM_IE;

/* Before a traced call of the real EVP_CipherUpdate/EVP_CipherFinal_ex (fn) on ctx: its nested
 * call of the hooked EVP_DecryptUpdate/EVP_DecryptFinal_ex (id; TLSM_FN_COUNT: none) on ctx
 * goes to what the linker bound for fn's object, resolved with fn as the caller (an address
 * inside that object): the answer the nested hook would find (tlsm_fwd_last). */
static inline __attribute__((always_inline)) void nest_begin(int id, const void *ctx, void *fn)
{
    if (id == TLSM_FN_COUNT)
        return;
    struct nest_memo *m = &nest_memo[id == TLSM_FN_EVP_DecryptFinal_ex];
    unsigned gen = atomic_load_explicit(&tlsm_resolve_gen, memory_order_acquire);
    if (__builtin_expect(m->outer != fn || m->gen != gen, 0)) {
        struct tlsm_fwd f = tlsm_forward((enum tlsm_fn)id, fn);
        *m = (struct nest_memo){f.fn ? fn : NULL, f.fn, gen};
    }
    if (m->fn) {
        tlsm_th.nest_fn = m->fn;
        tlsm_th.nest_ctx = ctx;
    }
}

/* The nested call announced by nest_begin: counted and forwarded, nothing else (the outer
 * hook traces the operation). The token is taken once: a further call on ctx during the
 * outer one goes the full way. */
#define NESTED_CALL(name, ctx, ...)                                                                \
    do {                                                                                           \
        if ((ctx) == tlsm_th.nest_ctx && (ctx)) {                                                  \
            void *nfn = tlsm_th.nest_fn;                                                           \
            tlsm_th.nest_ctx = NULL;                                                               \
            tlsm_th.calls[TLSM_FN_##name]++;                                                       \
            return ((__typeof__(&name))nfn)(ctx, __VA_ARGS__);                                     \
        }                                                                                          \
    } while (0)

/* After an Init on a copy measured at its provider tables (obj->tbl_records) that gave or
 * changed the key or cipher (seen: the table wrapper the call reached, NULL for none): a
 * context its tables serve is theirs; a libssl record context they do not serve (another
 * provider's cipher, an ENGINE's) is measured here, at its EVP calls, which go back to the
 * hooks for good (tlsm_bindpast_undo). */
static void tbl_keyed(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, const unsigned char *key,
                      const unsigned char *iv, int enc, const OSSL_PARAM *prm, const void *ra,
                      struct tlsm_obj *target, int ret, const void *seen)
{
    if (ret <= 0)
        return;
    if (seen) {
        tlsm_rec_forget(ctx);
        return;
    }
    if (!cipher || !tlsm_rec_keys_record(ra, cipher, target))
        return;
    if (!atomic_load(&target->evp_records))
        tlsm_bindpast_undo(target);
    tlsm_rec_after_init(ctx, cipher, key, iv, enc, prm, ra, target, ret);
}

#define TLSM_UNPAREN(...) __VA_ARGS__

/* Untraced: set-up not finished, our own call, or nested inside another EVP hook (from
 * loads only, for a fast path: a thread's first traced call is set up on the full way). */
static inline __attribute__((always_inline)) bool untraced_evp_fast(void)
{
    return !atomic_load_explicit(&tlsm_active, memory_order_relaxed) || tlsm_th.guard ||
           tlsm_th.exiting || tlsm_th.evp_depth;
}

/* The Init hooks. On a copy measured at its tables, a TLS 1.3 record's nonce (no cipher, no
 * key) is only forwarded, by a tail call from the exported hook with no register saved: the
 * table wrapper under it starts the record (unless some context of the copy is measured here,
 * evp_records). full_X is the rest: a key or cipher on such a copy is forwarded with
 * tbl_keying saying whether libssl keys; on any other copy the record's EVP calls are traced
 * here. */
#define INIT_HOOK(name, params, args, cipher, key, iv, enc, prm)                                   \
    static __attribute__((noinline)) int full_##name(TLSM_UNPAREN params, const void *ra)          \
    {                                                                                              \
        struct tlsm_fwd f = tlsm_forward(TLSM_FN_##name, ra);                                      \
        tlsm_th.calls[TLSM_FN_##name]++;                                                           \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, 0;                                                              \
        if (untraced_evp())                                                                        \
            return TLSM_REAL(name, f) args;                                                        \
        if (f.target && atomic_load_explicit(&f.target->tbl_records, memory_order_relaxed) &&      \
            (cipher || !atomic_load_explicit(&f.target->evp_records, memory_order_relaxed) ||      \
             !tlsm_rec_lookup(ctx))) {                                                             \
            if (!cipher && !key)                                                                   \
                return TLSM_REAL(name, f) args;                                                    \
            struct tlsm_obj *co = tlsm_obj_of(ra);                                                 \
            if (co)                                                                                \
                tlsm_obj_describe(co);                                                             \
            tlsm_th.tbl_keying = co && co->has_ssl;                                                \
            tlsm_th.tbl_seen = NULL;                                                               \
            int ret = TLSM_REAL(name, f) args;                                                     \
            const void *seen = tlsm_th.tbl_seen;                                                   \
            tlsm_th.tbl_keying = false;                                                            \
            int *ep = tlsm_errno(&tlsm_th), saved = *ep;                                           \
            tbl_keyed(ctx, cipher, key, iv, enc, prm, ra, f.target, ret, seen);                    \
            *ep = saved;                                                                           \
            return ret;                                                                            \
        }                                                                                          \
        tlsm_rec_on_init(ctx, cipher, key, iv, enc, ra, f.target, tlsm_now());                     \
        tlsm_th.evp_depth++;                                                                       \
        int ret = TLSM_REAL(name, f) args;                                                         \
        tlsm_th.evp_depth--;                                                                       \
        int *ep = tlsm_errno(&tlsm_th), saved = *ep;                                               \
        tlsm_rec_after_init(ctx, cipher, key, iv, enc, prm, ra, f.target, ret);                    \
        *ep = saved;                                                                               \
        return ret;                                                                                \
    }                                                                                              \
    TLSM_EXPORT int name params                                                                    \
    {                                                                                              \
        const struct tlsm_fwd *f = tlsm_forward_fast(TLSM_FN_##name, __builtin_return_address(0)); \
        if (__builtin_expect(                                                                      \
                f && !cipher && !key && f->target &&                                               \
                    atomic_load_explicit(&f->target->tbl_records, memory_order_relaxed) &&         \
                    !atomic_load_explicit(&f->target->evp_records, memory_order_relaxed),          \
                1)) {                                                                              \
            tlsm_th.calls[TLSM_FN_##name]++;                                                       \
            return TLSM_REAL(name, *f) args;                                                       \
        }                                                                                          \
        return full_##name(TLSM_UNPAREN args, __builtin_return_address(0));                        \
    }

INIT_HOOK(EVP_CipherInit_ex,
          (EVP_CIPHER_CTX * ctx, const EVP_CIPHER *cipher, ENGINE *impl, const unsigned char *key,
           const unsigned char *iv, int enc),
          (ctx, cipher, impl, key, iv, enc), cipher, key, iv, enc, NULL)
INIT_HOOK(EVP_CipherInit_ex2,
          (EVP_CIPHER_CTX * ctx, const EVP_CIPHER *cipher, const unsigned char *key,
           const unsigned char *iv, int enc, const OSSL_PARAM params[]),
          (ctx, cipher, key, iv, enc, params), cipher, key, iv, enc, params)
INIT_HOOK(EVP_DecryptInit_ex,
          (EVP_CIPHER_CTX * ctx, const EVP_CIPHER *cipher, ENGINE *impl, const unsigned char *key,
           const unsigned char *iv),
          (ctx, cipher, impl, key, iv), cipher, key, iv, 0, NULL)
INIT_HOOK(EVP_DecryptInit_ex2,
          (EVP_CIPHER_CTX * ctx, const EVP_CIPHER *cipher, const unsigned char *key,
           const unsigned char *iv, const OSSL_PARAM params[]),
          (ctx, cipher, key, iv, params), cipher, key, iv, 0, params)

/* The Update and Final hooks run several times per record, half of them nested (untraced),
 * so each is three parts: the exported hook is a fast path with no call of its own (the published
 * answer for its caller, tlsm_forward_fast; the tracing decision from loads only) ending in a tail
 * call, so it saves no register and passes the program's arguments on in the registers they came
 * in; traced_X (the real function last) traces the call; full_X is the full way for what the fast
 * path cannot answer (first call of a thread, a new caller, a function defined nowhere). */

/* The full way of EVP_CIPHER_CTX_ctrl (ra: the program's return address; fast: the fast
 * path's forwarding answer, NULL when it had none). */
static __attribute__((noinline)) int full_ctrl(EVP_CIPHER_CTX *ctx, int type, int arg, void *ptr,
                                               const void *ra, const struct tlsm_fwd *fast)
{
    struct tlsm_fwd f = fast ? *fast : tlsm_forward(TLSM_FN_EVP_CIPHER_CTX_ctrl, ra);
    tlsm_th.calls[TLSM_FN_EVP_CIPHER_CTX_ctrl]++;
    if (!f.fn)
        return errno = ENOSYS, 0;
    struct tlsm_rec_state *st = untraced_evp() ? NULL : tlsm_rec_lookup(ctx);
    if (!st && type == EVP_CTRL_AEAD_TLS1_AAD && !untraced_evp() &&
        atomic_load_explicit(&tlsm_rec_adopting, memory_order_relaxed))
        st = tlsm_rec_adopt(ctx, ra, f.target); /* a TLS 1.2 record keyed before an attach */
    if (!st)
        return TLSM_REAL(EVP_CIPHER_CTX_ctrl, f)(ctx, type, arg, ptr);
    if (type == EVP_CTRL_AEAD_TLS1_AAD)
        tlsm_rec_on_ctrl(st, type, arg, ptr, tlsm_now());
    int tag_ret; /* a rerouted record's tag (TLS 1.3): the backend's, or given to it only */
    if ((type == EVP_CTRL_AEAD_GET_TAG || type == EVP_CTRL_AEAD_SET_TAG) && st->routed &&
        tlsm_reroute_tag(st, type, arg, ptr, &tag_ret))
        return tag_ret;
    tlsm_th.evp_depth++;
    int ret = TLSM_REAL(EVP_CIPHER_CTX_ctrl, f)(ctx, type, arg, ptr);
    tlsm_th.evp_depth--;
    if (type != EVP_CTRL_AEAD_TLS1_AAD && !tlsm_rec_obs.mirror_ctrl)
        return ret;
    int *ep = tlsm_errno(&tlsm_th), saved = *ep;
    tlsm_rec_after_ctrl(st, type, arg, ptr, ret);
    *ep = saved;
    return ret;
}

/* The tag ctrl of every TLS 1.3 record (SET_TAG when opening, GET_TAG when sealing) with
 * nobody to tell (no reroute: no routed record, no mirror) is only forwarded, a tail call with
 * no register saved: tlsm_rec_after_ctrl acts on an AAD or for an observer, and the real ctrl
 * copies a tag, calling no hooked function that evp_depth would have to keep untraced. */
TLSM_EXPORT int EVP_CIPHER_CTX_ctrl(EVP_CIPHER_CTX *ctx, int type, int arg, void *ptr)
{
    const struct tlsm_fwd *f =
        tlsm_forward_fast(TLSM_FN_EVP_CIPHER_CTX_ctrl, __builtin_return_address(0));
    if (__builtin_expect(f && (type == EVP_CTRL_AEAD_SET_TAG || type == EVP_CTRL_AEAD_GET_TAG) &&
                             !tlsm_rec_obs.mirror_ctrl && tlsm_cfg.crypto == TLSM_MODE_NATIVE,
                         1)) {
        tlsm_th.calls[TLSM_FN_EVP_CIPHER_CTX_ctrl]++;
        return TLSM_REAL(EVP_CIPHER_CTX_ctrl, *f)(ctx, type, arg, ptr);
    }
    return full_ctrl(ctx, type, arg, ptr, __builtin_return_address(0), f);
}

/* NESTED_CALL with its arguments expanded first (an argument list from TLSM_UNPAREN). */
#define NESTED_CALL_EXPANDED(...) NESTED_CALL(__VA_ARGS__)

/* full_X and the exported X of a data hook whose traced_X(ARGS..., fn) is defined: PARAMS and
 * ARGS are the hook's parameter and argument lists, in parentheses. */
#define DATA_HOOK_ENTRY(name, PARAMS, ARGS)                                                        \
    static __attribute__((noinline)) int full_##name(TLSM_UNPAREN PARAMS, const void *ra)          \
    {                                                                                              \
        struct tlsm_fwd f = tlsm_forward(TLSM_FN_##name, ra);                                      \
        tlsm_th.calls[TLSM_FN_##name]++;                                                           \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, 0;                                                              \
        if (untraced_evp())                                                                        \
            return TLSM_REAL(name, f) ARGS;                                                        \
        return traced_##name(TLSM_UNPAREN ARGS, f.fn);                                             \
    }                                                                                              \
    TLSM_EXPORT int name PARAMS                                                                    \
    {                                                                                              \
        NESTED_CALL_EXPANDED(name, TLSM_UNPAREN ARGS);                                             \
        const struct tlsm_fwd *f = tlsm_forward_fast(TLSM_FN_##name, __builtin_return_address(0)); \
        if (!f)                                                                                    \
            return full_##name(TLSM_UNPAREN ARGS, __builtin_return_address(0));                    \
        tlsm_th.calls[TLSM_FN_##name]++;                                                           \
        if (untraced_evp_fast())                                                                   \
            return TLSM_REAL(name, *f) ARGS;                                                       \
        return traced_##name(TLSM_UNPAREN ARGS, f->fn);                                            \
    }

/* An AES-GCM record's payload call on its native code: what code runs, where the context shows
 * it (core/impl.h). Asked once per key; after that one load and a compare, unless the
 * context is one whose code only its provider context names (3.5's VAES kernel). */
static inline __attribute__((always_inline)) void
note_evp(struct tlsm_rec_state *st, const EVP_CIPHER_CTX *ctx, const void *fn)
{
    if (__builtin_expect(st->evp_note == 1, 1))
        return;
    if (!st->evp_note) {
        const char *c = st->rsm.cipher;
        if (!c || c[0] != 'A' || c[1] != 'E' || c[2] != 'S' || !strstr(c, "-GCM")) {
            st->evp_note = 1;
            return;
        }
    }
    st->evp_note = tlsm_impl_note_evp(st->lib, ctx, fn) ? 2 : 1;
}

/* nest: the hooked function the real one calls on the same context (TLSM_FN_COUNT: none). */
#define UPDATE_HOOK(name, nest)                                                                    \
    static __attribute__((noinline)) int traced_##name(EVP_CIPHER_CTX *ctx, unsigned char *out,    \
                                                       int *outl, const unsigned char *in,         \
                                                       int inl, void *fn)                          \
    {                                                                                              \
        tlsm_traced_start(&tlsm_th);                                                               \
        struct tlsm_rec_state *st = tlsm_rec_lookup(ctx);                                          \
        if (!st)                                                                                   \
            return ((__typeof__(&name))fn)(ctx, out, outl, in, inl);                               \
        tlsm_rec_before_update(st, out, in, inl);                                                  \
        DATA_CALL_BEGIN(st);                                                                       \
        int ret;                                                                                   \
        if (st->rsm.in_rec && st->routed)                                                          \
            ret = tlsm_reroute_update(st, (tlsm_update_fn)fn, ctx, out, outl, in, inl);            \
        else {                                                                                     \
            if (out && st->rsm.in_rec)                                                             \
                note_evp(st, ctx, fn);                                                             \
            nest_begin(nest, ctx, fn);                                                             \
            ret = ((__typeof__(&name))fn)(ctx, out, outl, in, inl);                                \
            tlsm_th.nest_ctx = NULL;                                                               \
        }                                                                                          \
        DATA_CALL_END();                                                                           \
        int *ep = tlsm_errno(&tlsm_th), saved = *ep;                                               \
        tlsm_rec_on_update(st, out, outl, in, inl, ret);                                           \
        *ep = saved;                                                                               \
        return ret;                                                                                \
    }                                                                                              \
    DATA_HOOK_ENTRY(                                                                               \
        name,                                                                                      \
        (EVP_CIPHER_CTX * ctx, unsigned char *out, int *outl, const unsigned char *in, int inl),   \
        (ctx, out, outl, in, inl))

UPDATE_HOOK(EVP_CipherUpdate, TLSM_FN_EVP_DecryptUpdate)
UPDATE_HOOK(EVP_DecryptUpdate, TLSM_FN_COUNT)

#define FINAL_HOOK(name, nest)                                                                     \
    static __attribute__((noinline)) int traced_##name(EVP_CIPHER_CTX *ctx, unsigned char *outm,   \
                                                       int *outl, void *fn)                        \
    {                                                                                              \
        tlsm_traced_start(&tlsm_th);                                                               \
        struct tlsm_rec_state *st = tlsm_rec_lookup(ctx);                                          \
        if (!st)                                                                                   \
            return ((__typeof__(&name))fn)(ctx, outm, outl);                                       \
        DATA_CALL_BEGIN(st);                                                                       \
        int ret;                                                                                   \
        if (st->rsm.in_rec && st->routed)                                                          \
            ret = tlsm_reroute_final(st, (tlsm_final_fn)fn, ctx, outm, outl);                      \
        else {                                                                                     \
            nest_begin(nest, ctx, fn);                                                             \
            ret = ((__typeof__(&name))fn)(ctx, outm, outl);                                        \
            tlsm_th.nest_ctx = NULL;                                                               \
        }                                                                                          \
        DATA_CALL_END();                                                                           \
        int *ep = tlsm_errno(&tlsm_th), saved = *ep;                                               \
        tlsm_rec_on_final(st, ret);                                                                \
        *ep = saved;                                                                               \
        return ret;                                                                                \
    }                                                                                              \
    DATA_HOOK_ENTRY(name, (EVP_CIPHER_CTX * ctx, unsigned char *outm, int *outl), (ctx, outm, outl))

FINAL_HOOK(EVP_CipherFinal_ex, TLSM_FN_EVP_DecryptFinal_ex)
FINAL_HOOK(EVP_DecryptFinal_ex, TLSM_FN_COUNT)

TLSM_EXPORT int EVP_Cipher(EVP_CIPHER_CTX *ctx, unsigned char *out, const unsigned char *in,
                           unsigned int inl)
{
    TLSM_HOOK_ENTER(EVP_Cipher, f);
    if (!f.fn)
        return errno = ENOSYS, -1;
    struct tlsm_rec_state *st = untraced_evp() ? NULL : tlsm_rec_lookup(ctx);
    if (!st)
        return TLSM_REAL(EVP_Cipher, f)(ctx, out, in, inl);
    DATA_CALL_BEGIN(st);
    if (out && st->rsm.in_rec && !st->routed)
        note_evp(st, ctx, (const void *)f.fn);
    int ret = st->rsm.in_rec && st->routed
                  ? tlsm_reroute_cipher(st, (tlsm_cipher_fn)f.fn, ctx, out, in, inl)
                  : TLSM_REAL(EVP_Cipher, f)(ctx, out, in, inl);
    DATA_CALL_END();
    int *ep = tlsm_errno(&tlsm_th), saved = *ep;
    tlsm_rec_on_cipher(st, out, (int)inl, ret);
    *ep = saved;
    return ret;
}

/* Forget before forwarding: once freed, another thread may get the same address. */
TLSM_EXPORT int EVP_CIPHER_CTX_reset(EVP_CIPHER_CTX *ctx)
{
    TLSM_HOOK_ENTER(EVP_CIPHER_CTX_reset, f);
    if (!f.fn)
        return errno = ENOSYS, 0;
    if (tlsm_tracing(&tlsm_th))
        tlsm_rec_forget(ctx);
    return TLSM_REAL(EVP_CIPHER_CTX_reset, f)(ctx);
}

TLSM_EXPORT void EVP_CIPHER_CTX_free(EVP_CIPHER_CTX *ctx)
{
    TLSM_HOOK_ENTER(EVP_CIPHER_CTX_free, f);
    if (!f.fn)
        return;
    if (tlsm_tracing(&tlsm_th))
        tlsm_rec_forget(ctx);
    TLSM_REAL(EVP_CIPHER_CTX_free, f)(ctx);
}
