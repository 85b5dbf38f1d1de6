/* blind.h: blind spots: loaded objects that hold OpenSSL's TLS record layer whose calls
 * never reach tlsmeter's hooks (-Bsymbolic, hidden symbols, no PLT relocations, GOT bound
 * elsewhere, OpenSSL 1.x), so that a trace with zero records never reads as "no TLS". */
#ifndef TLSM_BLIND_H
#define TLSM_BLIND_H

#include "common/schema.h"
#include "base/json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tlsm_obj;
struct ssl_st;

/* At exit, before the end event: scan every loaded object, write one `blind` event per
 * object tlsmeter cannot see (opening the trace if nothing else did) and one `fwd` event per
 * (caller object, target) pair the hooks forwarded for. One stderr line per blind object. */
void tlsm_blind_at_exit(void);
/* kTLS: conn.c calls this once per connection and direction, at its first read (out: write)
 * that returned bytes without decrypting (sealing) a record, and at SSL_free for a direction
 * no hooked call carried (an SSL BIO's, inside libssl). Asks the instance
 * BIO_get_ktls_recv(SSL_get_rbio(ssl)) (out: BIO_get_ktls_send(SSL_get_wbio(ssl))); when the
 * kernel does the crypto, writes a blind event (what "ktls", dir "in" or "out"; *conn 0, a
 * connection no hooked call saw, gets new_id() there) and, once per instance and direction,
 * a notice on stderr. */
void tlsm_blind_ktls(struct tlsm_obj *lib, const struct ssl_st *ssl, uint32_t *conn,
                     uint32_t (*new_id)(void), bool out);
/* blind_calls.c: objects whose SSL_* calls bind past the hooks (RTLD_DEEPBIND, dlmopen).
 * record.c calls tlsm_blind_orphan_record for a record decrypted with no hooked SSL_* call in
 * flight on its thread (now: a tick after it): a compare unless a scan is due (at most once a
 * second, only when objects were loaded since the last). Each object found gets one stderr
 * line and a blind event (what "calls"). */
void tlsm_blind_orphan_record(uint64_t now);
void tlsm_blind_calls_at_exit(void);
/* dlclose hook, before the real dlclose: the object may be the one calling past the hooks. */
void tlsm_blind_calls_before_dlclose(void);
/* Its entries of end.blind, as items of the open array; whole entries only. */
void tlsm_blind_calls_end_write(struct tlsm_json *j);
/* `"reasons"`: the names of the reasons set (bit per enum tlsm_blind). */
void tlsm_blind_reasons_write(struct tlsm_json *j, unsigned reasons);
/* `"reasons"` and `"why"` of an event with the one reason r (ktls, other_library). */
void tlsm_blind_one_reason_write(struct tlsm_json *j, enum tlsm_blind r);

/* otherlib.c: other TLS libraries (GnuTLS, NSS, Mbed TLS, wolfSSL) named at their first
 * hooked call; OpenSSL forks (BoringSSL, LibreSSL) when tlsm_obj_describe meets one: true
 * means o is one (and was named), h a handle on it. */
bool tlsm_other_fork(const struct tlsm_obj *o, void *h);
void tlsm_other_at_exit(void);
/* Its entries of end.blind, as items of the open array; whole entries only. */
void tlsm_other_end_write(struct tlsm_json *j);
/* The end event's `blind` array, `[]` when there is none; entries past its share of the
 * line are left out whole. */
void tlsm_blind_end_write(struct tlsm_json *j);

#endif
