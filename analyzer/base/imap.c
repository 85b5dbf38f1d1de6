/* imap.c: the hash map behind connections, threads and folded-stack keys. */
#include "base/imap.h"

#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t a, uint64_t b)
{
    /* splitmix64 finaliser: trace ids and connection ids are small and dense. */
    uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL);

    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

long imap__get(const struct imap *m, uint64_t a, uint64_t b)
{
    /* The cache is not part of the map's value: a lookup may refresh it. */
    struct imap_slot *r = (struct imap_slot *)&m->recent[(a * 31 + b) & 7];
    size_t i;

    if (r->val && r->a == a && r->b == b)
        return (long)r->val - 1;
    if (!m->cap)
        return -1;
    for (i = mix(a, b) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const struct imap_slot *s = &m->slots[i];

        if (!s->val)
            return -1;
        if (s->a == a && s->b == b) {
            *r = *s;
            return (long)s->val - 1;
        }
    }
}

static void insert(struct imap_slot *slots, size_t cap, struct imap_slot in)
{
    size_t i = mix(in.a, in.b) & (cap - 1);

    while (slots[i].val)
        i = (i + 1) & (cap - 1);
    slots[i] = in;
}

static void rehash(struct imap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64, i;
    struct imap_slot *ns = xcalloc(ncap, sizeof(*ns));

    for (i = 0; i < m->cap; i++)
        if (m->slots[i].val)
            insert(ns, ncap, m->slots[i]);
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
}

void imap__put(struct imap *m, uint64_t a, uint64_t b, uint32_t val)
{
    struct imap_slot s = {a, b, val + 1};

    /* Keep the load factor under 1/2 so probes stay short. */
    if ((m->len + 1) * 2 > m->cap)
        rehash(m);
    insert(m->slots, m->cap, s);
    m->len++;
}

void imap__free(struct imap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->len = 0;
    memset(m->recent, 0, sizeof(m->recent));
}
