/* profile_callers.c: who is decrypting: crypto ns by the frame that called into the SSL library
 * (module!function), by that frame's library, and by the library that decrypted. */
#include "model/profile.h"

#include "base/util.h"

#include <stdlib.h>

/* The n largest of acc[] into rows (largest first, ties by first interned). */
static int top(const uint64_t *acc, size_t nacc, struct prow *rows, int n)
{
    int k = 0, j;
    size_t i;

    for (i = 0; i < nacc; i++) {
        if (!acc[i])
            continue;
        for (j = k < n ? k++ : n; j > 0 && rows[j - 1].ns < acc[i]; j--)
            if (j < n)
                rows[j] = rows[j - 1];
        if (j < n)
            rows[j] = (struct prow){.name = (int)i, .ns = acc[i]};
    }
    return k;
}

void profile__callers(struct profile *p)
{
    uint64_t *by_frame = xcalloc(p->nnames + 1, sizeof(uint64_t));
    uint64_t *by_mod = xcalloc(p->nnames + 1, sizeof(uint64_t));
    uint64_t *by_crypto = xcalloc(p->nnames + 1, sizeof(uint64_t));
    struct callers *c = &p->callers;
    size_t i;

    for (i = 0; i < p->ne; i++) {
        const struct pentry *e = &p->e[i];

        if (!e->stacked)
            continue;
        if (e->caller >= 0)
            by_frame[e->caller] += e->ns;
        if (e->caller_mod >= 0)
            by_mod[e->caller_mod] += e->ns;
        if (e->crypto_mod >= 0)
            by_crypto[e->crypto_mod] += e->ns;
    }
    c->ntop = top(by_frame, p->nnames, c->top, PROFILE_TOP);
    c->nmods = top(by_mod, p->nnames, c->mods, PROFILE_TOP);
    c->ncrypto = top(by_crypto, p->nnames, c->crypto, PROFILE_TOP);
    free(by_frame), free(by_mod), free(by_crypto);
}
