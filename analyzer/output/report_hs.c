/* report_hs.c: the handshake table of the text report (per part: calls, time, per
 * connection, share of the handshake) and the handshake rows of --compare. */
#include "output/report.h"

#include "base/fmt.h"

#include <math.h>
#include <string.h>

#define U(x) ((unsigned long long)(x))

static void certs_line(FILE *out, const struct hs_summary *h)
{
    struct fmtbuf a;
    int i;

    if (!h->ncerts)
        return;
    fprintf(out, "  peer certificates parsed:");
    for (i = 0; i < h->ncerts; i++)
        fprintf(out, "%s %llu x %s %s", i ? "," : "", U(h->certs[i].count),
                fmt_bytes(&a, (uint64_t)h->certs[i].bytes), h->certs[i].key);
    fputc('\n', out);
}

void report_handshake(FILE *out, const struct summary *s, bool verbose)
{
    const struct hs_summary *h = &s->hs;
    struct fmtbuf a, b, c, d;
    int k;

    if (!h->conns)
        return;
    fprintf(out, "handshakes   %llu (%llu full, %llu resumed), %s on-CPU, %s each (p50), %s (p90)",
            U(h->conns), U(h->full), U(h->resumed), fmt_ns(&a, (double)h->ns),
            fmt_ns(&b, (double)h->p50_ns), fmt_ns(&c, (double)h->p90_ns));
    if (s->cpu_ns > 0)
        fprintf(out, ", %s of CPU", fmt_pct(&d, (double)h->ns / (double)s->cpu_ns));
    fputc('\n', out);
    /* The parts matter where handshakes cost: several connections, or a tenth of the CPU. */
    if (!h->parts_conns ||
        (!verbose && h->conns < 2 && (s->cpu_ns <= 0 || (double)h->ns < 0.1 * (double)s->cpu_ns)))
        return;
    fprintf(out, "  %-14s %8s %12s %12s %8s\n", "part", "calls", "time", "per conn", "share");
    for (k = 0; k <= HP_OTHER; k++) {
        if (k < HP_OTHER && !h->part_calls[k])
            continue;
        fprintf(out, "  %-14s %8s %12s %12s %8s\n", hs_part_names[k],
                k < HP_OTHER ? (snprintf(d.s, sizeof(d.s), "%llu", U(h->part_calls[k])), d.s) : "",
                fmt_ns(&a, (double)h->part_ns[k]), fmt_ns(&b, hs_summary__per_conn(h, k)),
                h->parts_total_ns ? fmt_pct(&c, (double)h->part_ns[k] / (double)h->parts_total_ns)
                                  : "-");
    }
    if (h->preempted)
        fprintf(out, "  (%llu connection%s left out of the parts: a part was switched out)\n",
                U(h->preempted), h->preempted == 1 ? "" : "s");
    certs_line(out, h);
}

static void row(FILE *out, const char *what, double x, double y)
{
    struct fmtbuf a, b, c;

    c.s[0] = 0;
    if (x > 0 && y >= 0)
        snprintf(c.s, sizeof(c.s), "%.2fx", y / x);
    fprintf(out, "%-22s %22s %22s   %s\n", what, x >= 0 ? fmt_ns(&a, x) : "-",
            y >= 0 ? fmt_ns(&b, y) : "-", c.s);
}

void report_compare_hs(FILE *out, const struct summary *a, const struct summary *b)
{
    const struct hs_summary *x = &a->hs, *y = &b->hs;
    char name[40];
    int k;

    if (!x->conns && !y->conns)
        return;
    fprintf(out, "%-22s %22llu %22llu\n", "handshakes", U(x->conns), U(y->conns));
    fprintf(out, "%-22s %22llu %22llu\n", "  resumed", U(x->resumed), U(y->resumed));
    row(out, "  per conn p50", x->conns ? (double)x->p50_ns : -1,
        y->conns ? (double)y->p50_ns : -1);
    row(out, "  per conn p90", x->conns ? (double)x->p90_ns : -1,
        y->conns ? (double)y->p90_ns : -1);
    for (k = 0; k <= HP_OTHER; k++) {
        if (k < HP_OTHER && !x->part_calls[k] && !y->part_calls[k])
            continue;
        snprintf(name, sizeof(name), "  %s/conn", hs_part_names[k]);
        row(out, name, x->parts_conns ? hs_summary__per_conn(x, k) : -1,
            y->parts_conns ? hs_summary__per_conn(y, k) : -1);
    }
}

static json_t *ratio(double a, double b)
{
    return a > 0 && b >= 0 ? json_real(round(b / a * 1e4) / 1e4) : json_null();
}

json_t *report_compare_hs_json(const struct summary *a, const struct summary *b)
{
    const struct hs_summary *x = &a->hs, *y = &b->hs;
    json_t *o = json_object(), *p = json_object();
    int k;

    json_object_set_new(o, "p50_ns", ratio((double)x->p50_ns, (double)y->p50_ns));
    json_object_set_new(o, "p90_ns", ratio((double)x->p90_ns, (double)y->p90_ns));
    for (k = 0; k <= HP_OTHER; k++)
        if (x->parts_conns && y->parts_conns)
            json_object_set_new(p, hs_part_names[k],
                                ratio(hs_summary__per_conn(x, k), hs_summary__per_conn(y, k)));
    json_object_set_new(o, "parts_per_conn", p);
    return o;
}
