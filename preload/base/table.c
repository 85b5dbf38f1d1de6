/* table.c: open addressing with linear probing, bounded probe length, tombstones. */
#include "base/table.h"

#include <string.h>
#include <sys/mman.h>

#define EMPTY     0
#define TOMB      1
#define MAX_PROBE 64

int tlsm_table_init(struct tlsm_table *t, const char *what, size_t cap, size_t state_size)
{
    /* mmap, not malloc: zeroed, and untouched pages cost nothing. */
    size_t bytes = cap * (sizeof(uintptr_t) + state_size);
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    t->what = what;
    t->cap = cap;
    t->state_size = state_size;
    t->keys = m;
    t->states = (unsigned char *)m + cap * sizeof(uintptr_t);
    return 0;
}

static size_t slot_of(const struct tlsm_table *t, uintptr_t key)
{
    /* Fibonacci hashing; heap pointers share their low bits, so mix them all in. */
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (t->cap - 1);
}

static void *state_at(struct tlsm_table *t, size_t i)
{
    return t->states + i * t->state_size;
}

void *tlsm_table_get(struct tlsm_table *t, const void *key)
{
    if (!t->keys)
        return NULL;
    uintptr_t k = (uintptr_t)key;
    size_t i = slot_of(t, k);
    for (int p = 0; p < MAX_PROBE; p++, i = (i + 1) & (t->cap - 1)) {
        uintptr_t cur = atomic_load_explicit(&t->keys[i], memory_order_acquire);
        if (cur == k)
            return state_at(t, i);
        if (cur == EMPTY)
            return NULL;
    }
    return NULL;
}

void *tlsm_table_put(struct tlsm_table *t, const void *key)
{
    void *s = tlsm_table_get(t, key);
    if (s || !t->keys)
        return s;
    uintptr_t k = (uintptr_t)key;
    size_t i = slot_of(t, k);
    for (int p = 0; p < MAX_PROBE; p++, i = (i + 1) & (t->cap - 1)) {
        uintptr_t cur = atomic_load_explicit(&t->keys[i], memory_order_relaxed);
        if (cur != EMPTY && cur != TOMB)
            continue;
        /* Claim first, then clear: the slot's state is ours only once the CAS won. */
        if (atomic_compare_exchange_strong_explicit(&t->keys[i], &cur, k, memory_order_acq_rel,
                                                    memory_order_relaxed)) {
            memset(state_at(t, i), 0, t->state_size);
            return state_at(t, i);
        }
    }
    atomic_fetch_add_explicit(&t->full, 1, memory_order_relaxed);
    return NULL;
}

void tlsm_table_del(struct tlsm_table *t, const void *key)
{
    if (!t->keys)
        return;
    uintptr_t k = (uintptr_t)key;
    size_t i = slot_of(t, k);
    for (int p = 0; p < MAX_PROBE; p++, i = (i + 1) & (t->cap - 1)) {
        uintptr_t cur = atomic_load_explicit(&t->keys[i], memory_order_relaxed);
        if (cur == k) {
            atomic_store_explicit(&t->keys[i], TOMB, memory_order_release);
            return;
        }
        if (cur == EMPTY)
            return;
    }
}

void tlsm_table_clear(struct tlsm_table *t)
{
    for (size_t i = 0; t->keys && i < t->cap; i++)
        if (atomic_load_explicit(&t->keys[i], memory_order_relaxed)) {
            memset(state_at(t, i), 0, t->state_size);
            atomic_store_explicit(&t->keys[i], 0, memory_order_release);
        }
}
