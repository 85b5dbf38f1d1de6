/* recsm.h: the TLS record state machine, pure: events in, finished records out to a sink.
 * It knows the EVP call sequences libssl makes per record (OpenSSL 3.0):
 *   TLS 1.3: Init(nonce) [ctrl(SET_TAG)] Update(NULL, hdr, 5) Update(out, in, n) Final
 *   TLS 1.2: ctrl(TLS1_AAD, 13) Update(out, in, n)        (or EVP_Cipher in 1.1-style code)
 * in both directions, per context: state lives in a struct tlsm_rsm_ctx per EVP_CIPHER_CTX,
 * never per thread, so a write inside a read or two contexts interleaved on one thread keep
 * their records apart. It knows nothing of hooks, clocks, traces or OpenSSL headers: times
 * come in as numbers, storage is the caller's (the preload keeps one per context in table.c,
 * keyed by the EVP_CIPHER_CTX pointer; tests keep an array), results go to the sink. */
#ifndef TLSM_RECSM_H
#define TLSM_RECSM_H

#include "base/cpumark.h"

#include <stdbool.h>
#include <stdint.h>

enum tlsm_dir { TLSM_DIR_IN = 0, TLSM_DIR_OUT = 1 };
enum tlsm_tls { TLSM_TLS_UNKNOWN = 0, TLSM_TLS12 = 12, TLSM_TLS13 = 13 };

/* The OpenSSL values the machine must recognise (evp.h EVP_CTRL_AEAD_TLS1_AAD,
 * EVP_AEAD_TLS1_AAD_LEN; the TLS 1.3 record header). Stable ABI values since 1.0.1. */
enum {
    TLSM_RSM_CTRL_TLS1_AAD = 0x16,
    TLSM_RSM_TLS1_AAD_LEN = 13,
    TLSM_RSM_TLS13_HDR_LEN = 5,
};

/* Init call arguments that were given (non-NULL). */
enum { TLSM_RSM_CIPHER = 1, TLSM_RSM_KEY = 2, TLSM_RSM_IV = 4 };

/* GCM inner entry points, bits of gcm_fns. */
enum { TLSM_RSM_GCM_PLAIN = 1, TLSM_RSM_GCM_CTR32 = 2 };

/* One context: its direction and the record in flight on it. */
struct tlsm_rsm_ctx {
    const char *cipher; /* static name, given at key time */
    uint8_t dir;        /* enum tlsm_dir */
    uint8_t tls;        /* enum tlsm_tls */
    bool in_rec;
    int16_t type;      /* content type, -1 unknown */
    int32_t len;       /* record length on the wire (header), -1 unknown */
    int32_t pt;        /* out: plaintext length known before the seal (TLS 1.2 AAD), else -1 */
    uint8_t eiv;       /* TLS 1.2 explicit nonce bytes of the cipher (8 AES-GCM/CCM, 0 ChaCha20) */
    uint64_t t0;       /* wall time of the record's first call */
    uint64_t chk_t0;   /* TLSMETER_CPUTIME_CHECK: the thread CPU clock then */
    uint64_t chk_pair; /* ... and what one read of it cost just before (a second read) */
    struct tlsm_rsm_mark mark;
    const unsigned char *out; /* in, TLS 1.3: payload output, scanned at Final */
    int32_t outl;
    uint64_t gcm_ticks; /* GCM inner calls of this record: time, bytes, which entries */
    uint64_t gcm_bytes;
    uint8_t gcm_fns;
};

/* Where finished records go. arg is the sink's own; calls happen on the thread of the event. */
struct tlsm_rsm_sink {
    void *arg;
    /* A record begins (its first call, time c->t0): the sink may start its clock (c->mark)
     * and adjust c->t0. Called last, so the record's time starts after the machine's work. */
    void (*record_begin)(void *arg, struct tlsm_rsm_ctx *c);
    /* A record finished: tag_ok (sealed, for out), pt = plaintext bytes (content only, for
     * TLS 1.3 without type and padding). c still holds its fields; c->in_rec is false. */
    void (*record_done)(void *arg, struct tlsm_rsm_ctx *c, bool tag_ok, int32_t pt);
    /* The context is being forgotten (reset, free, re-keyed); was_open: a record in flight
     * is dropped unfinished. */
    void (*forgotten)(void *arg, struct tlsm_rsm_ctx *c, bool was_open);
};

/* Key time (Init with a cipher): the context starts afresh in direction dir. eiv: the
 * cipher's TLS 1.2 explicit nonce length (8 for AES-GCM/CCM, 0 for ChaCha20-Poly1305), which
 * the AAD's length includes when sealing. */
void tlsm_rsm_key(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, const char *cipher,
                  enum tlsm_dir dir, int eiv);
/* Any Init call before it runs: given = TLSM_RSM_* bits, enc = 1, 0, or -1 (unchanged).
 * A nonce alone starts a TLS 1.3 record at time t; enc turning the direction around ends
 * the record in flight (forgotten) and flips c->dir. */
void tlsm_rsm_init(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, unsigned given, int enc,
                   uint64_t t);
/* EVP_CIPHER_CTX_ctrl before it runs: a TLS 1.2 AAD (seq 8, type 1, version 2, length 2)
 * starts a record at time t. */
void tlsm_rsm_ctrl(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, int type, int arg,
                   const unsigned char *ptr, uint64_t t);
/* Update with no output: AAD (TLS 1.3: the 5-byte record header). */
void tlsm_rsm_aad(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, const unsigned char *in,
                  int inl);
/* Update with output: the payload. plain = the record's plaintext as it can be seen: for in,
 * the output after the call (plain_len = outl, ok = the call succeeded); for out, the input
 * before the call (plain_len = inl; libssl seals in place). in_len = the call's inl. */
void tlsm_rsm_payload(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c,
                      const unsigned char *plain, int32_t plain_len, int32_t in_len, bool ok);
/* out, TLS 1.3, before the payload call is forwarded: libssl seals in place, so the plaintext
 * (content ‖ type ‖ padding) is only readable now. Notes the content type and length; the
 * payload event after the call then does not read its buffer again. */
void tlsm_rsm_seal_peek(struct tlsm_rsm_ctx *c, const unsigned char *plain, int32_t plain_len);
/* Final: ends a TLS 1.3 record; ok = the tag verified (in) or was produced (out). */
void tlsm_rsm_final(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, bool ok);
/* EVP_Cipher on a TLS 1.2 AEAD context (1.1-style): ret = length or -1, has_out = out given. */
void tlsm_rsm_cipher(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c, bool has_out,
                     int32_t in_len, int ret);
/* A GCM inner call (which: TLSM_RSM_GCM_*) during this context's data call: ticks of time. */
static inline void tlsm_rsm_gcm(struct tlsm_rsm_ctx *c, uint64_t ticks, uint64_t bytes,
                                unsigned which)
{
    if (!c->in_rec)
        return;
    c->gcm_ticks += ticks;
    c->gcm_bytes += bytes;
    c->gcm_fns |= (uint8_t)which;
}
/* Reset or free: tells the sink, then clears c. */
void tlsm_rsm_forget(const struct tlsm_rsm_sink *s, struct tlsm_rsm_ctx *c);

#endif
