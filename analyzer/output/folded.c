/* folded.c: folded stacks (one "frame;frame;... weight" line per call path, outermost frame
 * first), for flamegraph.pl, speedscope, inferno. Weighted by crypto ns or by bytes. */
#include "output/report.h"

void report_folded(FILE *out, const struct profile *p, bool bytes)
{
    size_t i;
    uint32_t k;

    for (i = 0; i < p->ne; i++) {
        const struct pentry *e = &p->e[i];
        uint64_t w = bytes ? e->bytes : e->ns;

        if (!w)
            continue;
        for (k = 0; k < e->n; k++)
            fprintf(out, "%s%s", k ? ";" : "", profile__name(p, (int)p->frames[e->first + k]));
        fprintf(out, " %llu\n", (unsigned long long)w);
    }
}
