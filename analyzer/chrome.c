/* chrome.c: Chrome Trace Event JSON (Perfetto, chrome://tracing), written while reading:
 * reads and records as slices on per-thread tracks, one process per trace. */
#include "report.h"

#include "utf8.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct chrome {
    FILE *out;
    size_t n;          /* events written */
    size_t dropped;    /* events that could not be encoded (said at close, never silent) */
    long named;        /* index of the last trace whose process name was written */
    int64_t origin_ns; /* start_unix_ns of the first trace: aligns a fleet on one axis */
};

struct chrome *chrome__open(FILE *out)
{
    struct chrome *c = xcalloc(1, sizeof(*c));

    c->out = out;
    c->named = -1;
    fprintf(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    return c;
}

static void emit(struct chrome *c, json_t *o)
{
    if (!o) {
        c->dropped++;
        return;
    }
    if (c->n++)
        fputs(",\n", c->out);
    json_dumpf(o, c->out, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(o);
}

static double us(const struct chrome *c, const struct trace *t, int64_t ns)
{
    /* In double: the difference of two hostile int64 values may not fit in one. */
    double off =
        t->start_unix_ns && c->origin_ns ? (double)t->start_unix_ns - (double)c->origin_ns : 0;

    return (off + (double)ns) / 1e3;
}

static void name_process(struct chrome *c, const struct model *m, const struct trace *t)
{
    long idx = (long)(t - m->traces);

    if (idx == c->named)
        return;
    c->named = idx;
    if (!c->origin_ns)
        c->origin_ns = t->start_unix_ns;
    emit(c, json_pack("{s:s, s:s, s:I, s:{s:s}}", "ph", "M", "name", "process_name", "pid",
                      (json_int_t)t->pid, "args", "name", trace_name(t)));
}

static json_t *slice(const struct chrome *c, const struct trace *t, const struct event *e,
                     const char *name, const char *cat, int64_t dur)
{
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:f, s:f}", "ph", "X", "name", name, "cat", cat,
                     "pid", (json_int_t)t->pid, "tid", (json_int_t)e->i[I_TID], "ts",
                     us(c, t, e->i[I_T]), "dur", dur > 0 ? (double)dur / 1e3 : 0.0);
}

static json_t *rec_slice(const struct chrome *c, const struct trace *t, const struct event *e)
{
    char name[64];
    json_t *o;

    /* 40 bytes of the cipher at most, cut between characters: json_pack refuses a string
     * that is not UTF-8, and the slice would be lost. */
    snprintf(name, sizeof(name), "decrypt %.*s",
             (int)(e->s[S_CIPHER].n ? utf8_prefix(e->s[S_CIPHER].p, e->s[S_CIPHER].n, 40) : 0),
             e->s[S_CIPHER].n ? e->s[S_CIPHER].p : "");
    o = slice(c, t, e, name, "record", e->i[I_CRYPTO_NS]);
    if (!o)
        return NULL;
    json_object_set_new(o, "args",
                        json_pack("{s:I, s:I, s:I, s:s%, s:s%, s:I}", "conn",
                                  (json_int_t)e->i[I_CONN], "len", (json_int_t)e->i[I_LEN], "pt",
                                  (json_int_t)e->i[I_PT], "path",
                                  e->s[S_PATH].p ? e->s[S_PATH].p : "", e->s[S_PATH].n, "gcm_fn",
                                  e->s[S_GCM_FN].p ? e->s[S_GCM_FN].p : "", e->s[S_GCM_FN].n,
                                  "crypto_ns", (json_int_t)e->i[I_CRYPTO_NS]));
    return o;
}

void chrome__event(void *ctx, const struct model *m, const struct trace *t, const struct event *e)
{
    struct chrome *c = ctx;
    json_t *o;

    name_process(c, m, t);
    if (e->kind == EV_REC) {
        o = rec_slice(c, t, e);
    } else {
        o = slice(c, t, e, "SSL_read", "read", e->i[I_NS]);
        if (o)
            json_object_set_new(
                o, "args",
                json_pack("{s:I, s:I, s:I, s:I, s:I}", "conn", (json_int_t)e->i[I_CONN], "want",
                          (json_int_t)e->i[I_WANT], "got", (json_int_t)e->i[I_GOT], "recs",
                          (json_int_t)e->i[I_RECS], "crypto_ns", (json_int_t)e->i[I_CRYPTO_NS]));
    }
    emit(c, o);
}

int chrome__close(struct chrome *c)
{
    int rc;

    fprintf(c->out, "\n]}\n");
    rc = ferror(c->out) ? -1 : 0;
    if (c->dropped)
        fprintf(stderr,
                "tlsmeter-analyze: --chrome: %zu events could not be encoded and are not in "
                "the output\n",
                c->dropped);
    free(c);
    return rc;
}
