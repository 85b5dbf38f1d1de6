/* blind.h: blind spots: loaded objects that hold OpenSSL's TLS record layer whose calls
 * never reach tlsmeter's hooks (-Bsymbolic, hidden symbols, no PLT relocations, GOT bound
 * elsewhere, OpenSSL 1.x), so that a trace with zero records never reads as "no TLS". */
#ifndef TLSM_BLIND_H
#define TLSM_BLIND_H

#include <stddef.h>
#include <stdint.h>

struct tlsm_obj;
struct ssl_st;

/* At exit, before the end event: scan every loaded object, write one `blind` event per
 * object tlsmeter cannot see (opening the trace if nothing else did) and one `fwd` event per
 * (caller object, target) pair the hooks forwarded for. One stderr line per blind object. */
void tlsm_blind_at_exit(void);
/* kTLS receive: conn.c calls this once per connection, at its first read that returned
 * bytes without decrypting a record. Asks the instance BIO_get_ktls_recv(SSL_get_rbio(ssl));
 * when the kernel decrypts, writes a blind event (what "ktls") and, once per instance, a
 * notice on stderr. */
void tlsm_blind_ktls(struct tlsm_obj *lib, const struct ssl_st *ssl, uint32_t conn);
/* The end event's `blind` array (JSON), "[]" when there is none; 0 if it did not fit. */
size_t tlsm_blind_end_json(char *buf, size_t cap);

#endif
