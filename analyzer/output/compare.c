/* compare.c: two traces (or two groups) side by side with ratios: the A/B of the reroute,
 * or before/after a vendor fix ("crypto share 40 % -> 0.92 %, 43x"). */
#include "output/report.h"

#include "base/fmt.h"

#include <math.h>
#include <string.h>

/* B against A in words; "" when either is unknown (the cell says why). */
static const char *change(struct fmtbuf *b, double a, double v)
{
    double r;

    if (a < 0 || v < 0)
        return "";
    if (a == 0)
        return v == 0 ? "same" : "none in A";
    r = v / a;
    if (fabs(r - 1) < 0.005)
        return "same";
    if (r == 0)
        return "none in B";
    if (r > 1)
        snprintf(b->s, sizeof(b->s), "%s more", fmt_ratio(&(struct fmtbuf){0}, r));
    else
        snprintf(b->s, sizeof(b->s), "%s less", fmt_ratio(&(struct fmtbuf){0}, 1 / r));
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

/* Shares below what the cell shows (< 0.01 %) are not compared: a ratio of two figures
 * nobody can read is noise. unknown: why a share is "-". */
static void row_pct(FILE *out, const char *what, double a, double b, const char *unknown)
{
    struct fmtbuf x, y, z;
    const char *chg = a >= 0 && b >= 0 && a < 1e-4 && b < 1e-4 ? "both negligible"
                      : a >= 0 && b >= 0                       ? change(&z, a, b)
                                                               : unknown;

    line(out, what, a >= 0 ? fmt_pct(&x, a) : "-", b >= 0 ? fmt_pct(&y, b) : "-", chg);
}

/* A bulk median per group, "-" with the reason when fewer than 16 bulk records. */
static void row_bulk(FILE *out, const struct summary *a, const struct summary *b)
{
    char x[32], y[32];
    struct fmtbuf z;
    double ma = summary__bulk_median(a, NULL), mb = summary__bulk_median(b, NULL);

    snprintf(x, sizeof(x), ma >= 0 ? "%.3f" : "-", ma);
    snprintf(y, sizeof(y), mb >= 0 ? "%.3f" : "-", mb);
    line(out, "bulk ns/B median", x, y,
         ma >= 0 && mb >= 0 ? change(&z, ma, mb) : "- : fewer than 16 bulk (>= 2 KiB) records");
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

static double bulk_median(const struct summary *s)
{
    return summary__bulk_median(s, NULL);
}

/* Why a CPU figure is "-": the trace has no end line (the process died) or it overflowed. */
#define CPU_UNKNOWN "- : process CPU unknown (no end line)"

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

/* The encrypting side of both groups: the same rows (sent instead of received). */
static void compare_encrypt(FILE *out, const struct summary *a, const struct summary *b)
{
    const struct stats *x = &a->m->st, *y = &b->m->st;
    char pa[64], pb[64];

    fprintf(out, "\nencryption (records sent)\n");
    row_num(out, "sent MiB", "%.1f", (double)x->got / 1048576, (double)y->got / 1048576);
    row_num(out, "writes", "%.0f", (double)x->reads, (double)y->reads);
    row_num(out, "records", "%.0f", (double)x->recs, (double)y->recs);
    row_ns(out, "crypto time", (double)a->crypto_ns, (double)b->crypto_ns);
    row_num(out, "crypto ns/B", "%.3f", a->nspb, b->nspb);
    row_bulk(out, a, b);
    row_pct(out, "crypto share of CPU", a->share_cpu, b->share_cpu, CPU_UNKNOWN);
    line(out, "implementation", impl__name(a->impl), impl__name(b->impl),
         a->impl == b->impl ? "same" : "changed");
    paths(a, pa, sizeof(pa));
    paths(b, pb, sizeof(pb));
    line(out, "paths", pa, pb, strcmp(pa, pb) ? "changed" : "same");
    ids(out, "A", a);
    ids(out, "B", b);
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
    if (a->cpu_ns < 0 || b->cpu_ns < 0)
        line(out, "", "", "", CPU_UNKNOWN);
    row_num(out, "reads", "%.0f", (double)x->reads, (double)y->reads);
    row_num(out, "bytes/read p50", "%.0f", (double)hist__pct(&a->m->read_got, 0.5),
            (double)hist__pct(&b->m->read_got, 0.5));
    row_num(out, "records", "%.0f", (double)x->recs, (double)y->recs);
    row_ns(out, "crypto time", (double)a->crypto_ns, (double)b->crypto_ns);
    row_num(out, "crypto ns/B", "%.3f", a->nspb, b->nspb);
    row_bulk(out, a, b);
    row_pct(out, "crypto share of CPU", a->share_cpu, b->share_cpu, CPU_UNKNOWN);
    row_pct(out, "crypto share of wall", a->share_wall, b->share_wall, "");
    line(out, "implementation", impl__name(a->impl), impl__name(b->impl),
         a->impl == b->impl ? "same" : "changed");
    paths(a, pa, sizeof(pa));
    paths(b, pb, sizeof(pb));
    line(out, "paths", pa, pb, strcmp(pa, pb) ? "changed" : "same");
    report_compare_hs(out, a, b);
    ids(out, "A", a);
    ids(out, "B", b);
    if (a->enc && b->enc)
        compare_encrypt(out, a->enc, b->enc);
}

static json_t *ratio(double a, double b)
{
    return a > 0 && b >= 0 ? json_real(round(b / a * 1e4) / 1e4) : json_null();
}

/* B over A of the figures an A/B reads; reads or writes after the summary's direction. */
static json_t *ratios(const struct summary *a, const struct summary *b)
{
    json_t *r = json_object();

    json_object_set_new(r, "duration_ns", ratio((double)a->duration_ns, (double)b->duration_ns));
    json_object_set_new(r, "cpu_ns", ratio((double)a->cpu_ns, (double)b->cpu_ns));
    json_object_set_new(r, "crypto_ns", ratio((double)a->crypto_ns, (double)b->crypto_ns));
    json_object_set_new(r, "crypto_ns_per_byte", ratio(a->nspb, b->nspb));
    json_object_set_new(r, "bulk_ns_per_byte_median", ratio(bulk_median(a), bulk_median(b)));
    json_object_set_new(r, "crypto_share_cpu", ratio(a->share_cpu, b->share_cpu));
    json_object_set_new(r, "throughput", ratio(a->throughput, b->throughput));
    json_object_set_new(r, a->out ? "writes" : "reads",
                        ratio((double)a->m->st.reads, (double)b->m->st.reads));
    if (!a->out)
        json_object_set_new(r, "handshake", report_compare_hs_json(a, b));
    return r;
}

int report_compare_json(FILE *out, const struct summary *a, const struct summary *b)
{
    json_t *o = json_object(), *r;
    int rc;

    json_object_set_new(o, "a", report_json_object(a));
    json_object_set_new(o, "b", report_json_object(b));
    /* a.encrypt and b.encrypt hold each group's encrypting side; its ratios sit here. */
    if (a->enc && b->enc)
        json_object_set_new(o, "encrypt_ratio_b_over_a", ratios(a->enc, b->enc));
    r = ratios(a, b);
    json_object_set_new(o, "ratio_b_over_a", r);
    rc = json_dumpf(o, out, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    fputc('\n', out);
    json_decref(o);
    return rc;
}
