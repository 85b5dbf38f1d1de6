/* impl.h: which AES and GHASH code decrypted a record, from the function pointers OpenSSL
 * keeps in the GCM context (block, ghash/gmult) and the CTR function it passes to
 * CRYPTO_gcm128_decrypt_ctr32, identified once per distinct set (codeid.c) and written as
 * an `impl` event; the record carries the event's id. */
#ifndef TLSM_IMPL_H
#define TLSM_IMPL_H

#include "forward/obj.h"

/* From the CRYPTO_gcm128_decrypt* hooks, inside a record: note the context's pointers
 * (stream: the _ctr32 argument, NULL from _decrypt). Cheap: a few loads. lib is the
 * instance the call went to; its version decides the context layout (nothing is read for
 * versions whose layout tlsmeter does not know). */
void tlsm_impl_note_gcm(struct tlsm_obj *lib, const void *gcm_ctx, const void *stream);
/* At the end of a record: the id of its impl event (written now when new), 0 when the
 * record carried no readable GCM context; forgets the record's pointers. */
int tlsm_impl_take(void);

#endif
