/* chrome.c: Chrome Trace Event JSON (Perfetto, chrome://tracing), written while reading:
 * reads and records as slices on per-thread tracks, one process per trace. Written with
 * fprintf, not built as jansson objects: a tree of ~10 allocations per event and jansson's
 * dump made --chrome (and the fuzz target, where every allocation is an ASan one) several
 * times slower than reading the trace. The text is what json_dumpf wrote (compact, keys in
 * order, reals as %.15g with a '.0' or exponent). */
#include "output/report.h"

#include "base/utf8.h"
#include "base/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct chrome {
    FILE *out;
    size_t n;          /* events written */
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

/* s[0..n) as a JSON string: escapes as jansson's; a byte that is not UTF-8 (none should
 * reach here: trace strings are checked by the reader) becomes U+FFFD, never dropped. */
static void put_str(FILE *out, const char *s, size_t n)
{
    size_t i = 0, k;
    uint32_t cp;

    fputc('"', out);
    while (i < n) {
        k = utf8_char(s + i, n - i, &cp);
        if (!k) {
            fputs("\\ufffd", out);
            i++;
            continue;
        }
        if (cp == '"' || cp == '\\')
            fprintf(out, "\\%c", (int)cp);
        else if (cp == '\n')
            fputs("\\n", out);
        else if (cp == '\t')
            fputs("\\t", out);
        else if (cp == '\r')
            fputs("\\r", out);
        else if (cp == '\b')
            fputs("\\b", out);
        else if (cp == '\f')
            fputs("\\f", out);
        else if (cp < 0x20 || cp == 0x7f)
            fprintf(out, "\\u%04x", (unsigned)cp);
        else
            fwrite(s + i, 1, k, out);
        i += k;
    }
    fputc('"', out);
}

static void put_cstr(FILE *out, const char *s)
{
    put_str(out, s ? s : "", s ? strlen(s) : 0);
}

/* A real as jansson writes it with JSON_REAL_PRECISION(15): %.15g, then ".0" when it would
 * read as an integer, and an exponent without '+' or leading zeros. */
static void put_real(FILE *out, double v)
{
    char buf[48], *e;
    size_t n;

    if (!isfinite(v))
        v = 0;
    n = (size_t)snprintf(buf, sizeof(buf), "%.15g", v);
    e = strchr(buf, 'e');
    if (!e && !strchr(buf, '.') && n + 2 < sizeof(buf)) {
        memcpy(buf + n, ".0", 3);
    } else if (e) {
        char *d = e + 1, *q;

        if (*d == '+')
            memmove(d, d + 1, strlen(d));
        q = *d == '-' ? d + 1 : d;
        while (q[0] == '0' && q[1])
            memmove(q, q + 1, strlen(q));
    }
    fputs(buf, out);
}

static void begin(struct chrome *c)
{
    if (c->n++)
        fputs(",\n", c->out);
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
    begin(c);
    fprintf(c->out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,\"args\":{\"name\":",
            (long long)t->pid);
    put_cstr(c->out, trace_name(t));
    fputs("}}", c->out);
}

/* The common head of a slice, up to and with ",\"args\":{". */
static void slice(struct chrome *c, const struct trace *t, const struct event *e, const char *name,
                  size_t name_n, const char *cat, int64_t dur)
{
    begin(c);
    fputs("{\"ph\":\"X\",\"name\":", c->out);
    put_str(c->out, name, name_n);
    fprintf(c->out, ",\"cat\":\"%s\",\"pid\":%lld,\"tid\":%lld,\"ts\":", cat, (long long)t->pid,
            (long long)e->i[I_TID]);
    put_real(c->out, us(c, t, e->i[I_T]));
    fputs(",\"dur\":", c->out);
    put_real(c->out, dur > 0 ? (double)dur / 1e3 : 0.0);
    fputs(",\"args\":{", c->out);
}

static void rec_slice(struct chrome *c, const struct trace *t, const struct event *e,
                      uint64_t oncpu_ns)
{
    char name[64];
    int n;

    /* 40 bytes of the cipher at most, cut between characters (half a character is not
     * UTF-8: json_pack refused it and the slice was lost). */
    n = snprintf(name, sizeof(name), "%s %.*s", event__is_out(e) ? "encrypt" : "decrypt",
                 (int)(e->s[S_CIPHER].n ? utf8_prefix(e->s[S_CIPHER].p, e->s[S_CIPHER].n, 40) : 0),
                 e->s[S_CIPHER].n ? e->s[S_CIPHER].p : "");
    slice(c, t, e, name, (size_t)n, "record", e->i[I_CRYPTO_NS]);
    fprintf(c->out, "\"conn\":%lld,\"len\":%lld,\"pt\":%lld,\"path\":", (long long)e->i[I_CONN],
            (long long)e->i[I_LEN], (long long)e->i[I_PT]);
    put_str(c->out, e->s[S_PATH].p ? e->s[S_PATH].p : "", e->s[S_PATH].n);
    fputs(",\"gcm_fn\":", c->out);
    put_str(c->out, e->s[S_GCM_FN].p ? e->s[S_GCM_FN].p : "", e->s[S_GCM_FN].n);
    /* crypto_ns as written (the slice's length), oncpu_ns the weight the report counts */
    fprintf(c->out, ",\"crypto_ns\":%lld,\"oncpu_ns\":%llu}}", (long long)e->i[I_CRYPTO_NS],
            (unsigned long long)oncpu_ns);
}

void chrome__event(void *ctx, const struct model *m, const struct trace *t, const struct event *e,
                   uint64_t oncpu_ns)
{
    struct chrome *c = ctx;

    name_process(c, m, t);
    if (e->kind == EV_REC) {
        rec_slice(c, t, e, oncpu_ns);
        return;
    }
    if (e->kind == EV_WRITE) { /* the sending side's calls, a category of their own */
        slice(c, t, e, "SSL_write", 9, "write", e->i[I_NS]);
        fprintf(c->out,
                "\"conn\":%lld,\"asked\":%lld,\"written\":%lld,\"recs\":%lld,\"crypto_ns\":%lld}}",
                (long long)e->i[I_CONN], (long long)e->i[I_ASKED], (long long)e->i[I_WRITTEN],
                (long long)e->i[I_RECS], (long long)e->i[I_CRYPTO_NS]);
        return;
    }
    slice(c, t, e, "SSL_read", 8, "read", e->i[I_NS]);
    fprintf(c->out, "\"conn\":%lld,\"want\":%lld,\"got\":%lld,\"recs\":%lld,\"crypto_ns\":%lld}}",
            (long long)e->i[I_CONN], (long long)e->i[I_WANT], (long long)e->i[I_GOT],
            (long long)e->i[I_RECS], (long long)e->i[I_CRYPTO_NS]);
}

int chrome__close(struct chrome *c)
{
    int rc;

    /* what a record's oncpu_ns is, where the format keeps metadata */
    fprintf(c->out, "\n],\"otherData\":{\"oncpu_ns\":\"%s\"}}\n", ONCPU_RULE);
    rc = ferror(c->out) ? -1 : 0;
    free(c);
    return rc;
}
