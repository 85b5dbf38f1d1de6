/* table.h: a fixed-size, lock-free map from an OpenSSL object pointer (EVP_CIPHER_CTX*,
 * SSL*) to tlsmeter's state for it. Lookups never lock. Inserts claim a slot with one CAS.
 * Correct because OpenSSL objects are used by one thread at a time: only the thread
 * driving an object inserts, reads, or removes its entry. */
#ifndef TLSM_TABLE_H
#define TLSM_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct tlsm_table {
    const char *what;
    size_t cap;        /* power of two */
    size_t state_size; /* bytes per entry, a multiple of 8 */
    _Atomic uintptr_t *keys;
    unsigned char *states;
    _Atomic uint64_t full; /* inserts refused: table full or probe limit reached */
};

int tlsm_table_init(struct tlsm_table *t, const char *what, size_t cap, size_t state_size);
/* State for key, or NULL. */
void *tlsm_table_get(struct tlsm_table *t, const void *key);
/* State for key, created zeroed if absent; NULL when the table is full. */
void *tlsm_table_put(struct tlsm_table *t, const void *key);
void tlsm_table_del(struct tlsm_table *t, const void *key);
/* Every entry gone (a detach, every other thread stopped); the memory stays. */
void tlsm_table_clear(struct tlsm_table *t);

#endif
