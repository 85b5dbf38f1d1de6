/* imap.h: open-addressing hash map from a pair of 64-bit keys to a dense index. */
#ifndef TLSM_IMAP_H
#define TLSM_IMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

struct imap_slot {
    uint64_t a, b;
    uint32_t val; /* index + 1; 0 = empty */
};

struct imap {
    struct imap_slot *slots;
    size_t cap, len;
    /* The last hits, direct-mapped by key (val 0: empty): a trace's events name the same few
     * connections, threads and buckets over and over (the analyzer's hot path). */
    struct imap_slot recent[8];
};

/* Index stored for (a, b), or -1. */
long imap__get(const struct imap *m, uint64_t a, uint64_t b);
/* Store (a, b) -> val (val < 2^32 - 1); the pair must not be present yet. */
void imap__put(struct imap *m, uint64_t a, uint64_t b, uint32_t val);
void imap__free(struct imap *m);

#endif
