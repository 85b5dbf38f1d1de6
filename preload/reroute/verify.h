/* verify.h: TLSMETER_VERIFY on rerouted records (verify.c): a verified record is also run
 * natively, on a copy of its input, and compared; when the two differ the program gets the
 * native result and the backend's output is overwritten or zeroed. */
#ifndef TLSM_REROUTE_VERIFY_H
#define TLSM_REROUTE_VERIFY_H

#include "reroute/reroute.h"

#include <stdint.h>

/* The payload Update of a verified record, both ways: compared here for TLS 1.2 (the one
 * call checks the tag), kept for Final for TLS 1.3. */
int tlsm_verify_payload(struct tlsm_rec_state *st, tlsm_update_fn native, EVP_CIPHER_CTX *ctx,
                        unsigned char *out, int *outl, const unsigned char *in, int inl);
/* After the shadow's Final (ret) of a verified TLS 1.3 record: the native Final and the
 * comparison; returns what the program gets. Opening: plaintext and tag result. */
int tlsm_verify_open_final(struct tlsm_rec_state *st, tlsm_final_fn native, EVP_CIPHER_CTX *ctx,
                           int ret);
/* Sealing: ciphertext and tag (the shadow's kept in st->tag), before libssl sends it. */
int tlsm_verify_seal(struct tlsm_rec_state *st, tlsm_final_fn native, EVP_CIPHER_CTX *ctx, int ret);
/* end.reroute's counts: verified, mismatches, and the two of the encrypting side. */
void tlsm_verify_counts(uint64_t v[4]);

#endif
