/* gate.c: --require-hw[=PCT], a CI gate without a script: rejects a trace whose decrypted bytes
 * ran in software above a share, or (unless allowed) in code that could not be named, or whose
 * process did TLS the trace could not measure. Judged on the process split (weights.h). */
#include "verdicts/summary.h"

#include "base/fmt.h"

#include <stdlib.h>
#include <string.h>

static double frac(uint64_t part, uint64_t all)
{
    return all ? (double)part / (double)all : 0;
}

static size_t add(char *buf, size_t n, size_t cap, const char *fmt, const char *a, const char *b)
{
    if (n + 1 >= cap)
        return n;
    n += (size_t)snprintf(buf + n, cap - n, fmt, n ? "; " : "", a, b);
    return n < cap ? n : cap - 1;
}

/* Why the gate rejects, each reason with its figure; returns whether there is one. */
static bool reasons(const struct gate *g, const struct summary *s, struct gate_result *r, char *buf,
                    size_t cap)
{
    const struct wsplit *w = &s->split;
    struct fmtbuf a;
    char who[512];
    size_t n = 0;

    buf[0] = 0;
    if (!w->bytes) /* nothing shows hardware */
        n = add(buf, n, cap, "%sno decrypted bytes in the trace%s%s", "", "");
    if (r->software * 100 > g->pct) {
        snprintf(who, sizeof(who), " (limit %.4g %%)", g->pct);
        n = add(buf, n, cap, "%ssoftware for %s of the decrypted bytes%s", fmt_pct(&a, r->software),
                who);
    }
    if (!g->allow_unknown && w->g[WG_UNKNOWN].bytes)
        n = add(buf, n, cap, "%sunknown code for %s of the decrypted bytes%s",
                fmt_pct(&a, r->unknown), " (--allow-unknown accepts it)");
    if (!g->allow_blind && r->blind) {
        char more[32] = "";

        for (size_t i = 0; i < s->m->ntraces; i++)
            if (weights__blind(s, &s->m->traces[i], who, sizeof(who)))
                break;
        if (r->blind > 1)
            snprintf(more, sizeof(more), " and %d more", r->blind - 1);
        n = add(buf, n, cap, "%sTLS the trace could not measure (%s%s; --allow-blind accepts it)",
                who, more);
    }
    return n > 0;
}

void gate__eval(const struct gate *g, const struct summary *s, struct gate_result *r)
{
    const struct wsplit *w = &s->split;
    char why[640];
    struct fmtbuf a;

    memset(r, 0, sizeof(*r));
    r->opt = *g;
    r->bytes = w->bytes;
    r->software = frac(w->g[WG_SOFTWARE].bytes, w->bytes);
    r->unknown = frac(w->g[WG_UNKNOWN].bytes, w->bytes);
    r->unmeasured = frac(w->g[WG_UNMEASURED].bytes, w->bytes);
    r->blind = s->blind;
    if (reasons(g, s, r, why, sizeof(why))) {
        snprintf(r->why, sizeof(r->why), "rejected: %s", why);
        return;
    }
    r->passed = true;
    snprintf(r->why, sizeof(r->why),
             "accepted: software for %s of the decrypted bytes (limit %.4g %%)%s%s",
             fmt_pct(&a, r->software), g->pct, r->unknown > 0 ? ", unknown code allowed" : "",
             r->blind ? ", TLS the trace could not measure allowed" : "");
}

static json_t *real6(double v)
{
    char buf[32];

    snprintf(buf, sizeof(buf), "%.6g", v);
    return json_real(strtod(buf, NULL));
}

json_t *gate__json(const struct gate_result *r)
{
    const struct gate *g = &r->opt;
    json_t *o = json_object();

    json_object_set_new(o, "option", json_string("require-hw"));
    json_object_set_new(o, "max_software_pct", real6(g->pct));
    json_object_set_new(o, "allow_unknown", json_boolean(g->allow_unknown));
    json_object_set_new(o, "allow_blind", json_boolean(g->allow_blind));
    json_object_set_new(o, "passed", json_boolean(r->passed));
    json_object_set_new(o, "bytes", json_integer((json_int_t)r->bytes));
    json_object_set_new(o, "share_software", real6(r->software));
    json_object_set_new(o, "share_unknown", real6(r->unknown));
    json_object_set_new(o, "share_unmeasured", real6(r->unmeasured));
    json_object_set_new(o, "blind", json_integer(r->blind));
    json_object_set_new(o, "text", json_string(r->why));
    return o;
}
