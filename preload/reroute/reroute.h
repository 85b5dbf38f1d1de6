/* reroute.h: A/B without rebuild: a shadow context in tlsmeter's backend instance mirrors
 * every metadata call of a tracked context (key, nonce, ctrls); the data calls of a routed
 * record go to the shadow only. */
#ifndef TLSM_REROUTE_H
#define TLSM_REROUTE_H

#include "core/record.h"

/* Native data-call functions, for verification and fallback. */
typedef int (*tlsm_update_fn)(EVP_CIPHER_CTX *, unsigned char *, int *, const unsigned char *, int);
typedef int (*tlsm_final_fn)(EVP_CIPHER_CTX *, unsigned char *, int *);
typedef int (*tlsm_cipher_fn)(EVP_CIPHER_CTX *, unsigned char *, const unsigned char *,
                              unsigned int);

/* A tracked context was (re)keyed with a cipher: make its shadow. */
void tlsm_reroute_attach(struct tlsm_rec_state *st, const unsigned char *key,
                         const unsigned char *iv, int enc);
/* A later Init on the context; has_params: it came with OSSL_PARAMs (not mirrored). */
void tlsm_reroute_mirror_init(struct tlsm_rec_state *st, const unsigned char *key,
                              const unsigned char *iv, int enc, bool has_params);
void tlsm_reroute_mirror_ctrl(struct tlsm_rec_state *st, int type, int arg, void *ptr, int ret);
/* A record starts: route it (and maybe verify it) if the shadow is healthy. */
void tlsm_reroute_begin(struct tlsm_rec_state *st);
int tlsm_reroute_update(struct tlsm_rec_state *st, tlsm_update_fn native, EVP_CIPHER_CTX *ctx,
                        unsigned char *out, int *outl, const unsigned char *in, int inl);
int tlsm_reroute_final(struct tlsm_rec_state *st, tlsm_final_fn native, EVP_CIPHER_CTX *ctx,
                       unsigned char *out, int *outl);
int tlsm_reroute_cipher(struct tlsm_rec_state *st, tlsm_cipher_fn native, EVP_CIPHER_CTX *ctx,
                        unsigned char *out, const unsigned char *in, unsigned int inl);
/* EVP_CIPHER_CTX_ctrl before forwarding: libssl reading a rerouted TLS 1.3 record's tag
 * (GET_TAG after Final) gets the backend's (or, after a verify mismatch, the native one);
 * setting an unverified rerouted record's tag (SET_TAG, decryption) sets the shadow's only.
 * true: answered in *ret, the native ctrl is not called (its context sealed or opens
 * nothing of the record). */
bool tlsm_reroute_tag(struct tlsm_rec_state *st, int type, int arg, void *ptr, int *ret);
/* The record ended (emitted): release verification buffers. */
void tlsm_reroute_end(struct tlsm_rec_state *st);
/* Free the shadow (OpenSSL cleanses its key schedule on free). */
void tlsm_reroute_detach(struct tlsm_rec_state *st);
/* Follow the core's tracked contexts (struct tlsm_rec_observer); once, at start-up. */
void tlsm_reroute_observe(void);
/* The end event's "reroute" object. */
void tlsm_reroute_write(struct tlsm_json *j);

#endif
