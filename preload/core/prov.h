/* prov.h: who decrypts a record context's records when it is not the OpenSSL copy's own
 * default code: another provider (the FIPS module, a third-party provider) or an ENGINE. Asked
 * once per (cipher, engine) and cached, so a key costs a few compares and a record nothing; a
 * record of such a context names it by id (rec.prov, the prov event: docs/trace-format.md). */
#ifndef TLSM_PROV_H
#define TLSM_PROV_H

#include "forward/obj.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>

/* At a key: the id of the provider or engine behind ctx's cipher, 0 for the copy's default
 * provider (or 1.1.1's built-in ciphers), or when it cannot be told. lib: the copy the Init
 * went to. gcm: an AES-GCM cipher (whose GCM context the FIPS module's may be read). */
int tlsm_prov_of(struct tlsm_obj *lib, const EVP_CIPHER_CTX *ctx, bool gcm);
/* At the end of a record of provider id (not 0): its prov line into this trace file if not
 * there yet, and the GCM context's code noted for the impl event (core/impl.h) when the
 * provider's context layout is known. ctx: the record's EVP_CIPHER_CTX. */
void tlsm_prov_record(int id, struct tlsm_obj *lib, const EVP_CIPHER_CTX *ctx);
/* The rec's JSON members naming id (",\"prov\":N"), for the format-2 tail; n its length. */
const char *tlsm_prov_tail(int id, size_t *n);

#endif
