/* compare.c: two traces (or two groups) side by side with ratios: the A/B of the reroute,
 * or before/after a vendor fix ("crypto share 40 % -> 0.92 %, 43x"). */
#include "output/report.h"

#include "base/fmt.h"

#include <math.h>
#include <string.h>

static const char *change(struct fmtbuf *b, double a, double v)
{
    double r;

    if (a <= 0 || v < 0)
        return "";
    r = v / a;
    if (fabs(r - 1) < 0.005)
        return "same";
    if (r > 1)
        snprintf(b->s, sizeof(b->s), "%s more", fmt_ratio(&(struct fmtbuf){0}, r));
    else if (r > 0)
        snprintf(b->s, sizeof(b->s), "%s less", fmt_ratio(&(struct fmtbuf){0}, 1 / r));
    else
        return "-";
    return b->s;
}

static void line(FILE *out, const char *what, const char *a, const char *b, const char *chg)
{
    fprintf(out, "%-22s %22s %22s   %s\n", what, a, b, chg);
}

static void row_ns(FILE *out, const char *what, double a, double b)
{
    struct fmtbuf x, y, z;

    line(out, what, a >= 0 ? fmt_ns(&x, a) : "-", b >= 0 ? fmt_ns(&y, b) : "-",
         a >= 0 && b >= 0 ? change(&z, a, b) : "");
}

static void row_num(FILE *out, const char *what, const char *fmt, double a, double b)
{
    char x[32], y[32];
    struct fmtbuf z;

    snprintf(x, sizeof(x), a >= 0 ? fmt : "-", a); /* < 0: not known */
    snprintf(y, sizeof(y), b >= 0 ? fmt : "-", b);
    line(out, what, x, y, change(&z, a, b));
}

static void row_pct(FILE *out, const char *what, double a, double b)
{
    struct fmtbuf x, y, z;

    line(out, what, a >= 0 ? fmt_pct(&x, a) : "-", b >= 0 ? fmt_pct(&y, b) : "-",
         a >= 0 && b >= 0 ? change(&z, a, b) : "");
}

static void paths(const struct summary *s, char *buf, size_t n)
{
    size_t off = 0;
    int i;

    buf[0] = '\0';
    for (i = 0; i < s->nrows && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? "," : "",
                                model__name(s->m, s->rows[i].path));
}

/* The bulk median of the cipher with most bulk records (-1: too few): the throughput figure
 * fixed per-record costs do not move. */
static double bulk_median(const struct summary *s)
{
    const struct class_fig *best = NULL;
    int i;

    for (i = 0; i < s->nciphers; i++)
        if (!best || s->ciphers[i].fig[SC_BULK].used > best->used)
            best = &s->ciphers[i].fig[SC_BULK];
    return best && best->used >= BULK_MIN_RECORDS ? best->median : -1;
}

static void ids(FILE *out, const char *tag, const struct summary *s)
{
    int i;

    fprintf(out, "verdicts %s:", tag);
    for (i = 0; i < s->nv; i++)
        fprintf(out, " %s", s->v[i].id);
    fprintf(out, "%s\n", s->nv ? "" : " none");
}

static const char *group_name(const struct summary *s, char *buf, size_t n)
{
    if (s->m->ntraces == 1)
        snprintf(buf, n, "%s", s->m->traces[0].file);
    else
        snprintf(buf, n, "%zu traces", s->m->ntraces);
    return buf;
}

void report_compare_text(FILE *out, const struct summary *a, const struct summary *b)
{
    const struct stats *x = &a->m->st, *y = &b->m->st;
    char na[64], nb[64], pa[64], pb[64];

    line(out, "", "A", "B", "B vs A");
    line(out, "trace", group_name(a, na, sizeof(na)), group_name(b, nb, sizeof(nb)), "");
    row_ns(out, "duration", (double)a->duration_ns, (double)b->duration_ns);
    row_num(out, "received MiB", "%.1f", (double)x->got / 1048576, (double)y->got / 1048576);
    row_num(out, "throughput MB/s", "%.1f", a->throughput / 1e6, b->throughput / 1e6);
    row_ns(out, "CPU", (double)a->cpu_ns, (double)b->cpu_ns);
    row_num(out, "reads", "%.0f", (double)x->reads, (double)y->reads);
    row_num(out, "bytes/read p50", "%.0f", (double)hist__pct(&a->m->read_got, 0.5),
            (double)hist__pct(&b->m->read_got, 0.5));
    row_num(out, "records", "%.0f", (double)x->recs, (double)y->recs);
    row_ns(out, "crypto time", (double)a->crypto_ns, (double)b->crypto_ns);
    row_num(out, "crypto ns/B", "%.3f", a->nspb, b->nspb);
    row_num(out, "bulk ns/B median", "%.3f", bulk_median(a), bulk_median(b));
    row_pct(out, "crypto share of CPU", a->share_cpu, b->share_cpu);
    row_pct(out, "crypto share of wall", a->share_wall, b->share_wall);
    line(out, "implementation", impl__name(a->impl), impl__name(b->impl),
         a->impl == b->impl ? "same" : "changed");
    paths(a, pa, sizeof(pa));
    paths(b, pb, sizeof(pb));
    line(out, "paths", pa, pb, strcmp(pa, pb) ? "changed" : "same");
    report_compare_hs(out, a, b);
    ids(out, "A", a);
    ids(out, "B", b);
}

static json_t *ratio(double a, double b)
{
    return a > 0 && b >= 0 ? json_real(round(b / a * 1e4) / 1e4) : json_null();
}

int report_compare_json(FILE *out, const struct summary *a, const struct summary *b)
{
    json_t *o = json_object(), *r = json_object();
    int rc;

    json_object_set_new(o, "a", report_json_object(a));
    json_object_set_new(o, "b", report_json_object(b));
    json_object_set_new(r, "duration_ns", ratio((double)a->duration_ns, (double)b->duration_ns));
    json_object_set_new(r, "cpu_ns", ratio((double)a->cpu_ns, (double)b->cpu_ns));
    json_object_set_new(r, "crypto_ns", ratio((double)a->crypto_ns, (double)b->crypto_ns));
    json_object_set_new(r, "crypto_ns_per_byte", ratio(a->nspb, b->nspb));
    json_object_set_new(r, "bulk_ns_per_byte_median", ratio(bulk_median(a), bulk_median(b)));
    json_object_set_new(r, "crypto_share_cpu", ratio(a->share_cpu, b->share_cpu));
    json_object_set_new(r, "throughput", ratio(a->throughput, b->throughput));
    json_object_set_new(r, "reads", ratio((double)a->m->st.reads, (double)b->m->st.reads));
    json_object_set_new(r, "handshake", report_compare_hs_json(a, b));
    json_object_set_new(o, "ratio_b_over_a", r);
    rc = json_dumpf(o, out, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    fputc('\n', out);
    json_decref(o);
    return rc;
}
