/* report_callers.c: "who is decrypting" in the text report and the JSON summary: the library
 * and the function that call into the SSL library, and the library that decrypts, by crypto
 * time over the sampled stacks. */
#include "output/report.h"

#include "base/fmt.h"

#include <stdlib.h>

static double share(const struct profile *p, uint64_t ns)
{
    return p->crypto_ns ? (double)ns / (double)p->crypto_ns : 0;
}

static void rows_line(FILE *out, const struct profile *p, const char *label,
                      const struct prow *rows, int n)
{
    struct fmtbuf b;
    int i;

    fprintf(out, "  %-21s", label);
    if (!n)
        fprintf(out, " (not found in the stacks)");
    for (i = 0; i < n && i < 3; i++)
        fprintf(out, "%s %s %s", i ? "," : "", profile__name(p, rows[i].name),
                fmt_pct(&b, share(p, rows[i].ns)));
    fputc('\n', out);
}

void report_callers(FILE *out, const struct profile *p)
{
    struct fmtbuf a, b, c;
    int i;

    if (!p->any_stacks) {
        fprintf(out, "callers      no stack events in the trace (record with TLSMETER_STACKS=N "
                     "to see who decrypts)\n");
        return;
    }
    fprintf(out,
            "callers      %llu stacks (TLSMETER_STACKS=%lld); crypto time on a sampled stack "
            "%s, on a nearby sampled one (not sampled itself) %s, on none %s\n",
            (unsigned long long)p->nstacks, (long long)p->sampling,
            fmt_pct(&a, share(p, p->ns_sampled)), fmt_pct(&b, share(p, p->ns_inherited)),
            fmt_pct(&c, share(p, p->ns_none)));
    rows_line(out, p, "SSL_* called from", p->callers.mods, p->callers.nmods);
    rows_line(out, p, "crypto done by", p->callers.crypto, p->callers.ncrypto);
    fprintf(out, "  top callers by crypto time\n");
    for (i = 0; i < p->callers.ntop; i++)
        fprintf(out, "    %8s  %s\n", fmt_pct(&a, share(p, p->callers.top[i].ns)),
                profile__name(p, p->callers.top[i].name));
}

static json_t *rows_arr(const struct profile *p, const struct prow *rows, int n)
{
    json_t *a = json_array();
    int i;

    for (i = 0; i < n; i++) {
        json_t *o = json_object();
        char buf[32];

        snprintf(buf, sizeof(buf), "%.6g", share(p, rows[i].ns));
        json_object_set_new(o, "name", json_string(profile__name(p, rows[i].name)));
        json_object_set_new(o, "crypto_ns", json_integer((json_int_t)rows[i].ns));
        json_object_set_new(o, "share", json_real(strtod(buf, NULL)));
        json_array_append_new(a, o);
    }
    return a;
}

json_t *report_callers_json(const struct profile *p)
{
    json_t *o = json_object();

    json_object_set_new(o, "stacks", json_integer((json_int_t)p->nstacks));
    json_object_set_new(o, "sampling", json_integer(p->sampling));
    json_object_set_new(o, "crypto_ns_sampled", json_integer((json_int_t)p->ns_sampled));
    json_object_set_new(o, "crypto_ns_inherited", json_integer((json_int_t)p->ns_inherited));
    json_object_set_new(o, "crypto_ns_no_stack", json_integer((json_int_t)p->ns_none));
    json_object_set_new(o, "ssl_caller_modules", rows_arr(p, p->callers.mods, p->callers.nmods));
    json_object_set_new(o, "crypto_modules", rows_arr(p, p->callers.crypto, p->callers.ncrypto));
    json_object_set_new(o, "top_callers", rows_arr(p, p->callers.top, p->callers.ntop));
    return o;
}
