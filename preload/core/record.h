/* record.h: TLS records from the EVP calls libssl makes on its decrypt contexts.
 * The adapter between the EVP hooks and the record state machine (recsm.h, which knows the
 * sequences; docs/design.md sections 2 and 3): it decides which contexts are record sources,
 * translates each hooked call into a machine event, and is the machine's sink (the rec line,
 * connections, reroute, stacks). */
#ifndef TLSM_RECORD_H
#define TLSM_RECORD_H

#include "base/tls.h"
#include "forward/obj.h"
#include "core/recsm.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>

struct tlsm_backend;

/* What tlsmeter knows of one libssl record context (decrypt or encrypt). Only the thread driving
 * the context touches it (OpenSSL objects are single-threaded), so no field needs a lock. */
struct tlsm_rec_state {
    struct tlsm_rsm_ctx rsm; /* the record machine's part: direction, record in flight */
    const void *key;         /* the context it is for, NULL once forgotten (the lookup cache) */
    struct tlsm_obj *lib;
    uint32_t conn;
    int prov; /* core/prov.h: who decrypts when not the copy's default provider, else 0 */
    /* Whether the EVP data hooks read this keyed context for the code that runs
     * (core/impl.h tlsm_impl_note_evp): 0 not asked yet, 1 no (the common case, one load a
     * call), 2 yes, at every record (3.5's VAES kernel: no CRYPTO_gcm128_* call names it). */
    uint8_t evp_note;
    /* Reroute: a backend context keyed like this one (reroute.c). */
    struct tlsm_backend *backend;
    int backend_lib; /* its lib id, for the rec line of a routed record */
    EVP_CIPHER_CTX *shadow;
    bool shadow_ok;      /* every metadata call so far mirrored successfully */
    bool routed;         /* the record in flight goes to the backend */
    bool verify;         /* ... and is run natively too, for comparison */
    bool data_sent;      /* a data call of the routed record went to the backend */
    int8_t verdict;      /* verify result: 0 none, 1 same, -1 mismatch */
    unsigned char *vbuf; /* verify: native output of the record in flight */
    int vbuf_len, vret, vcap;
    /* Encryption (reroute.c): the native context (TLS 1.2 GCM nonce counter kept in step with
     * the shadow's), the routed TLS 1.3 record's output and tag, served to libssl's GET_TAG. */
    EVP_CIPHER_CTX *ctx;
    unsigned char *vout;
    int voutl;
    bool have_tag;
    bool nonce_pinned; /* the native nonce counter could not follow: stay on the shadow */
    bool native_only;  /* never rerouted (no shadow): a provider-table sealing context */
    unsigned char tag[16];
    /* A TLS 1.3 nonce held back from an OpenSSL 3 AES-GCM shadow (reroute.c nonce_later), to
     * go with the record's tag in one parameter call: nonce_ctrl the shadow takes nonces by
     * parameter (set once per key), nonce_later the IV is 12 bytes long (kept over). */
    bool nonce_ctrl, nonce_later, nonce_held;
    unsigned char held_iv[12];
    /* Decryption: the routed record's tag went to the shadow only (tag[], tagl bytes); the
     * native context is owed it should the record fall back (reroute.c tag_to_shadow). */
    bool tag_owed;
    uint8_t tagl;
    /* The context's pace (core/record.c stall_judge), tiny (< 256 B), small (< 2048 B) and
     * bulk records apart: records judged, the lowest ns per unit seen (KiB; a record for
     * tiny ones), and on-CPU ns and units of all but the first. */
    struct {
        uint64_t ns, units;
        uint32_t n, min_q;
    } pace[3];
    /* A context measured at its provider tables names the same code at every record of a
     * key (the GCM context's pointers are set when it is keyed): its impl event id, taken at
     * its first record, is kept for the others of this trace file (impl_gen), which then
     * read nothing (impl_cache: the tables measure it; the GCM hooks note every record). */
    bool impl_cache;
    int impl_id;
    unsigned impl_gen;
};

/* Who follows the tracked contexts besides the trace: the reroute (reroute/reroute.c)
 * mirrors each keyed context into a shadow and routes its records. It registers at start-up
 * (main.c), so the core never calls up into it; a NULL member: nobody to tell. */
struct tlsm_rec_observer {
    /* A context started being tracked (keyed with a cipher); params: it came with
     * OSSL_PARAMs, which are not mirrored. */
    void (*keyed)(struct tlsm_rec_state *st, const unsigned char *key, const unsigned char *iv,
                  bool has_params);
    /* A later Init on it; enc -1: unchanged. */
    void (*mirror_init)(struct tlsm_rec_state *st, const unsigned char *key,
                        const unsigned char *iv, int enc, bool has_params);
    void (*mirror_ctrl)(struct tlsm_rec_state *st, int type, int arg, void *ptr, int ret);
    /* A record's route is decided (its nonce or AAD is in). */
    void (*record_begin)(struct tlsm_rec_state *st);
    void (*record_end)(struct tlsm_rec_state *st);
    /* The context is re-keyed with another cipher, reset or freed. */
    void (*forget)(struct tlsm_rec_state *st);
};
extern struct tlsm_rec_observer tlsm_rec_obs;

int tlsm_rec_init(void);
/* The state this thread found last, so the five calls of a record on one context cost one
 * compare each, not a hash probe: taken only while the state still names ctx (forgetting
 * clears its key; a state reused for another context names that one). */
struct tlsm_rec_last {
    const void *ctx;
    struct tlsm_rec_state *st;
};
extern __thread struct tlsm_rec_last tlsm_rec_last TLSM_IE;
struct tlsm_rec_state *tlsm_rec_lookup_slow(const void *ctx);
/* Tracked state of ctx, NULL for contexts that are not libssl AEAD record contexts. */
static inline struct tlsm_rec_state *tlsm_rec_lookup(const void *ctx)
{
    struct tlsm_rec_state *st = tlsm_rec_last.st;
    if (__builtin_expect(ctx == tlsm_rec_last.ctx && st != NULL, 1) &&
        __atomic_load_n(&st->key, __ATOMIC_RELAXED) == ctx)
        return st;
    return tlsm_rec_lookup_slow(ctx);
}
/* Attached to a running program (preload/hooks/attach.c): a record call of libssl (caller) on a
 * context no Init was seen for adopts it, from the copy's own answers (cipher, direction),
 * measured only. tlsm_rec_forget_all: a detach. */
extern _Atomic bool tlsm_rec_adopting;
struct tlsm_rec_state *tlsm_rec_adopt(EVP_CIPHER_CTX *ctx, const void *caller,
                                      struct tlsm_obj *target);
void tlsm_rec_forget_all(void);

/* Any *Init* call: (re)key, change of mode, or a TLS 1.3 per-record nonce. Inline (the two
 * calls below run once per TLS 1.3 record): only a new key leaves the header. */
static inline void tlsm_rec_on_init(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher,
                                    const unsigned char *key, const unsigned char *iv, int enc,
                                    const void *caller, struct tlsm_obj *target, uint64_t t_entry);
/* After the native Init: start tracking (cipher given) or mirror it to the shadow. params:
 * the OSSL_PARAM array of EVP_CipherInit_ex2/EVP_DecryptInit_ex2, NULL for the others. */
static inline void tlsm_rec_after_init(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher,
                                       const unsigned char *key, const unsigned char *iv, int enc,
                                       const OSSL_PARAM *params, const void *caller,
                                       struct tlsm_obj *target, int ret);
/* The keying part of tlsm_rec_after_init (cipher given): track ctx if it is a record context. */
void tlsm_rec_keyed(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, const unsigned char *key,
                    const unsigned char *iv, int enc, bool has_params, const void *caller,
                    struct tlsm_obj *target);
/* After the native ctrl: mirror it; a TLS 1.2 AAD decides the record's route. */
void tlsm_rec_after_ctrl(struct tlsm_rec_state *st, int type, int arg, void *ptr, int ret);
/* The machine's sink (record.c), for the per-record calls below: inline, so a hooked call
 * reaches the machine in one call. */
extern const struct tlsm_rsm_sink tlsm_rec_sink;

/* EVP_CIPHER_CTX_ctrl before forwarding (TLS 1.2 AAD starts a record). */
static inline void tlsm_rec_on_ctrl(struct tlsm_rec_state *st, int type, int arg, const void *ptr,
                                    uint64_t t_entry)
{
    tlsm_rsm_ctrl(&tlsm_rec_sink, &st->rsm, type, arg, ptr, t_entry);
}

/* Update with output, before forwarding: an out record's plaintext is sealed in place, read
 * it now (recsm.h). */
static inline void tlsm_rec_before_update(struct tlsm_rec_state *st, const unsigned char *out,
                                          const unsigned char *in, int inl)
{
    if (out && st->rsm.dir == TLSM_DIR_OUT && st->rsm.in_rec)
        tlsm_rsm_seal_peek(&st->rsm, in, inl);
}

/* Update: AAD (out == NULL) or payload; after forwarding. */
static inline void tlsm_rec_on_update(struct tlsm_rec_state *st, unsigned char *out,
                                      const int *outl, const unsigned char *in, int inl, int ret)
{
    if (!out)
        tlsm_rsm_aad(&tlsm_rec_sink, &st->rsm, in, inl);
    else
        tlsm_rsm_payload(&tlsm_rec_sink, &st->rsm, out, ret > 0 && outl ? *outl : 0, inl, ret > 0);
}

static inline void tlsm_rec_on_final(struct tlsm_rec_state *st, int ret)
{
    tlsm_rsm_final(&tlsm_rec_sink, &st->rsm, ret > 0);
}

/* EVP_Cipher on a TLS 1.2 AEAD context: returns length or -1. */
static inline void tlsm_rec_on_cipher(struct tlsm_rec_state *st, unsigned char *out, int inl,
                                      int ret)
{
    tlsm_rsm_cipher(&tlsm_rec_sink, &st->rsm, out != NULL, inl, ret);
}

static inline void tlsm_rec_on_init(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher,
                                    const unsigned char *key, const unsigned char *iv, int enc,
                                    const void *caller, struct tlsm_obj *target, uint64_t t_entry)
{
    struct tlsm_rec_state *st = tlsm_rec_lookup(ctx);
    if (!st && (cipher || key || !atomic_load_explicit(&tlsm_rec_adopting, memory_order_relaxed) ||
                !(st = tlsm_rec_adopt(ctx, caller, target))))
        return;
    unsigned given =
        (cipher ? TLSM_RSM_CIPHER : 0) | (key ? TLSM_RSM_KEY : 0) | (iv ? TLSM_RSM_IV : 0);
    tlsm_rsm_init(&tlsm_rec_sink, &st->rsm, given, enc, t_entry);
}

static inline void tlsm_rec_after_init(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher,
                                       const unsigned char *key, const unsigned char *iv, int enc,
                                       const OSSL_PARAM *params, const void *caller,
                                       struct tlsm_obj *target, int ret)
{
    if (ret <= 0)
        return;
    bool has_params = params && params[0].key; /* an empty list sets nothing */
    if (cipher) {
        tlsm_rec_keyed(ctx, cipher, key, iv, enc, has_params, caller, target);
        return;
    }
    struct tlsm_rec_state *st = tlsm_rec_lookup(ctx);
    if (!st)
        return;
    if (tlsm_rec_obs.mirror_init)
        tlsm_rec_obs.mirror_init(st, key, iv, enc, has_params);
    if (st->rsm.in_rec && !key && iv && tlsm_rec_obs.record_begin)
        tlsm_rec_obs.record_begin(st);
}

void tlsm_rec_forget(const EVP_CIPHER_CTX *ctx);
/* The impl id of st's key is known for this trace file: nothing to read at its records. */
bool tlsm_rec_impl_cached(const struct tlsm_rec_state *st);
/* Would libssl keying cipher from caller in copy target make a record source (a TLS AEAD)? */
bool tlsm_rec_keys_record(const void *caller, const EVP_CIPHER *cipher, struct tlsm_obj *target);
/* Start tracking ctx (any pointer that names one record context: an EVP_CIPHER_CTX, or a
 * provider's cipher context reached through its dispatch table, hooks/hook_table.c) as a
 * record source of direction dir and cipher name (a static string) in instance target.
 * native_only: measured only, the reroute never gets it (no shadow, no fallback counted). */
void tlsm_rec_track_as(const void *ctx, const char *name, enum tlsm_dir dir,
                       struct tlsm_obj *target, const unsigned char *key, const unsigned char *iv,
                       bool has_params, bool native_only);
uint64_t tlsm_rec_untracked(void);

#endif
