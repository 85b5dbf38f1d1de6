/* verdict_prov.c: records a provider other than the default one, or an engine, decrypted
 * (prov events): one verdict per provider, before the verdicts on the crypto, so a FIPS
 * module or a vendor's provider is never read as the copy's own default code. */
#include "model/prov.h"
#include "verdicts/summary.h"

#include "base/fmt.h"

#include <stdio.h>

/* The provider's buckets in trace ti: bytes, records, and the largest bucket. */
static const struct bucket *prov_bytes(const struct model *m, size_t ti, int64_t id, uint64_t *ct,
                                       uint64_t *recs)
{
    const struct bucket *big = NULL;

    *ct = *recs = 0;
    for (size_t i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];
        if (b->trace != ti || b->prov != id)
            continue;
        *ct += b->st.rec_ct, *recs += b->st.recs;
        if (!big || b->st.rec_ct > big->st.rec_ct)
            big = b;
    }
    return big;
}

void verdicts_prov(struct summary *s)
{
    const struct model *m = s->m;
    uint64_t all = 0;

    for (size_t i = 0; i < m->nbuckets; i++)
        all += m->buckets[i].st.rec_ct;
    for (size_t ti = 0; ti < m->ntraces; ti++) {
        const struct trace *t = &m->traces[ti];
        for (int k = 0; k < t->nprovs; k++) {
            const struct prov_ev *p = &t->provs[k];
            uint64_t ct, recs;
            const struct bucket *big = prov_bytes(m, ti, p->id, &ct, &recs);
            struct impl_result r;
            struct fmtbuf fb, fp;
            char label[400];

            if (!big || !recs)
                continue;
            impl__classify(m, big, &r);
            prov__label(p, label, sizeof(label));
            struct verdict *v = summary__verdict(
                s, V_PROVIDER, "info",
                "%s of %s's %s: %s of the bytes (%s in %llu records, %s) were %s by %s, not by "
                "the default provider; implementation: %s (%s)",
                model__name(m, big->cipher), trace_name(t), s->out ? "encryption" : "decryption",
                fmt_pct(&fp, all ? (double)ct / (double)all : 0), fmt_bytes(&fb, ct),
                (unsigned long long)recs, model__name(m, big->path),
                s->out ? "encrypted" : "decrypted", label, impl__name(r.cls), r.detail);
            if (v)
                verdict__evidence(v, "share_bytes", all ? (double)ct / (double)all : 0);
        }
    }
}
