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
/* From the EVP data hooks, inside an AES-GCM record, before the call: when the copy's
 * layout was verified (impl.c) and ctx's provider context is the copy's own, its GCM context
 * and, where that names no code (3.5's VAES/AVX-512 kernel, which never enters
 * CRYPTO_gcm128_*), its PROV_GCM_HW's cipherupdate. anchor: any code address of lib.
 * Returns false when nothing is to be read from this keyed context at its later records
 * (layout not verified, another provider's context, or a GCM context that names its code,
 * which the CRYPTO_gcm128_* hooks read): the caller stops asking until it is keyed again. */
bool tlsm_impl_note_evp(struct tlsm_obj *lib, const void *evp_ctx, const void *anchor);
/* The same from a provider dispatch table wrapper (hooks/hook_table.c): prov is the provider
 * context, hw the PROV_GCM_HW pointer read from it, both checked by the caller. */
void tlsm_impl_note_prov(struct tlsm_obj *lib, const void *prov, const void *hw);
/* At the end of a record: the id of its impl event (written now when new), 0 when the
 * record carried no readable GCM context; forgets the record's pointers. */
int tlsm_impl_take(void);

#endif
