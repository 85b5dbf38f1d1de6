/* report_json.c: one JSON object per analysis, stable keys, for scripts and CI gates. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

static json_t *jint(uint64_t v)
{
    return json_integer((json_int_t)v);
}

/* Reals rounded to 6 significant digits so golden outputs do not churn on the last
 * bit of a division. */
static json_t *jreal(double v)
{
    char buf[32];

    snprintf(buf, sizeof(buf), "%.6g", v);
    return json_real(strtod(buf, NULL));
}

static json_t *jstr(const char *s)
{
    return json_string(s ? s : "");
}

static json_t *hist_obj(const struct hist *h)
{
    json_t *o = json_object(), *b = json_object();
    char key[24];
    int k;

    json_object_set_new(o, "count", jint(h->n));
    json_object_set_new(o, "p50", jint(hist__pct(h, 0.5)));
    json_object_set_new(o, "p90", jint(hist__pct(h, 0.9)));
    json_object_set_new(o, "p99", jint(hist__pct(h, 0.99)));
    json_object_set_new(o, "max", jint(h->max));
    json_object_set_new(o, "mean", jreal(hist__mean(h)));
    for (k = 0; k < HIST_LOG2_N; k++)
        if (h->log2[k]) {
            snprintf(key, sizeof(key), "%llu", (unsigned long long)hist__log2_lo(k));
            json_object_set_new(b, key, jint(h->log2[k]));
        }
    json_object_set_new(o, "log2", b); /* bucket lower bound -> count */
    return o;
}

static json_t *stats_obj(const struct stats *s)
{
    json_t *o = json_object();

    json_object_set_new(o, "records", jint(s->recs));
    json_object_set_new(o, "bytes", jint(s->rec_ct));
    json_object_set_new(o, "crypto_ns", jint(s->crypto_ns));
    json_object_set_new(o, "crypto_ns_per_byte", jreal(stats__ns_per_byte(s)));
    json_object_set_new(o, "gcm_bytes_decrypt", jint(s->gcm_dec));
    json_object_set_new(o, "gcm_bytes_ctr32", jint(s->gcm_ctr));
    return o;
}

static json_t *rows_arr(const struct summary *s)
{
    json_t *a = json_array();
    int i;

    for (i = 0; i < s->nrows; i++) {
        const struct row *w = &s->rows[i];
        json_t *o = stats_obj(&w->st);

        json_object_set_new(o, "cipher", jstr(model__name(s->m, w->cipher)));
        json_object_set_new(o, "path", jstr(model__name(s->m, w->path)));
        json_object_set_new(o, "impl", jstr(impl__name(w->cls)));
        json_object_set_new(o, "impl_detail", jstr(w->detail));
        json_object_set_new(o, "impl_mixed", json_boolean(w->mixed));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *paths_obj(const struct summary *s)
{
    json_t *o = json_object();
    int i;

    for (i = 0; i < s->nrows; i++) {
        const char *p = model__name(s->m, s->rows[i].path);
        json_t *old = json_object_get(o, p);
        uint64_t n = s->rows[i].st.recs + (old ? (uint64_t)json_integer_value(old) : 0);

        json_object_set_new(o, p, jint(n));
    }
    return o;
}

static json_t *verdicts_arr(const struct summary *s)
{
    json_t *a = json_array();
    int i, k;

    for (i = 0; i < s->nv; i++) {
        json_t *o = json_object(), *ev = json_object();

        json_object_set_new(o, "id", jstr(s->v[i].id));
        json_object_set_new(o, "kind", jstr(s->v[i].kind));
        json_object_set_new(o, "text", jstr(s->v[i].text));
        for (k = 0; k < s->v[i].nev; k++)
            json_object_set_new(ev, s->v[i].ev[k].key, jreal(s->v[i].ev[k].val));
        json_object_set_new(o, "evidence", ev);
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *blind_obj(const struct trace *t, const struct blind *b)
{
    json_t *o = json_object(), *names = json_array(), *why = json_array();
    int r;

    for (r = 0; r < BR_N; r++)
        if (b->reasons & (1u << r)) {
            json_array_append_new(names, jstr(blind_reason__name((enum blind_reason)r)));
            json_array_append_new(why, jstr(blind_reason__text((enum blind_reason)r)));
        }
    if (b->unknown) {
        json_array_append_new(names, jstr(b->unknown));
        json_array_append_new(why, jstr("(a reason this analyzer does not know)"));
    }
    json_object_set_new(o, "trace", jstr(t->file));
    json_object_set_new(o, "what", jstr(b->what));
    json_object_set_new(o, "path", jstr(b->path));
    json_object_set_new(o, "version", jstr(b->version));
    json_object_set_new(o, "reasons", names);
    json_object_set_new(o, "why", why);
    json_object_set_new(o, "verdict", jstr(strcmp(b->what, "ktls") ? "blind-copy" : "ktls"));
    if (!strcmp(b->what, "ktls"))
        json_object_set_new(o, "conns", json_integer(b->conns));
    else {
        json_object_set_new(o, "record_relocs", json_integer(b->record_relocs));
        json_object_set_new(o, "got_tlsmeter", json_integer(b->got_tlsmeter));
        json_object_set_new(o, "got_elsewhere", json_integer(b->got_elsewhere));
    }
    return o;
}

/* Every blind spot of every trace: what the totals above do not include. */
static json_t *blind_arr(const struct summary *s)
{
    json_t *a = json_array();
    size_t i;
    int k;

    for (i = 0; i < s->m->ntraces; i++)
        for (k = 0; k < s->m->traces[i].nblind; k++)
            json_array_append_new(a, blind_obj(&s->m->traces[i], &s->m->traces[i].blind[k]));
    return a;
}

static json_t *unfired_arr(const struct trace *t)
{
    json_t *a = json_array();
    int i;

    for (i = 0; i < t->nunfired; i++)
        json_array_append_new(a, jstr(t->unfired[i]));
    return a;
}

static json_t *traces_arr(const struct summary *s)
{
    json_t *a = json_array();
    size_t i;

    for (i = 0; i < s->m->ntraces; i++) {
        const struct trace *t = &s->m->traces[i];
        json_t *o = json_object();

        json_object_set_new(o, "file", jstr(t->file));
        json_object_set_new(o, "comm", jstr(t->comm));
        json_object_set_new(o, "pid", json_integer(t->pid));
        json_object_set_new(o, "duration_ns", json_integer(trace__duration(t)));
        json_object_set_new(o, "cpu_ns", json_integer(trace__cpu_ns(t)));
        if (t->cpu_overflow)
            json_object_set_new(o, "cpu_note", json_string("overflow"));
        json_object_set_new(o, "complete", json_boolean(t->has_end && !t->partial_last));
        json_object_set_new(o, "dropped", json_integer(t->dropped));
        json_object_set_new(o, "lines_skipped", jint(t->lines_skipped));
        json_object_set_new(o, "emulated", json_boolean(t->emulated));
        json_object_set_new(o, "unfired", unfired_arr(t));
        json_array_append_new(a, o);
    }
    return a;
}

static void totals(json_t *o, const struct summary *s)
{
    const struct stats *st = &s->m->st;

    json_object_set_new(o, "bytes_read", jint(st->got));
    json_object_set_new(o, "reads", jint(st->reads));
    json_object_set_new(o, "reads_want_read", jint(st->want_read));
    json_object_set_new(o, "records", jint(st->recs));
    json_object_set_new(o, "records_app", jint(st->recs_app));
    json_object_set_new(o, "records_tag_failed", jint(st->tag_fail));
    json_object_set_new(o, "crypto_ns", jint(st->crypto_ns));
    json_object_set_new(o, "crypto_ns_per_byte", jreal(s->nspb));
    json_object_set_new(o, "impl", jstr(impl__name(s->impl)));
    json_object_set_new(o, "paths", paths_obj(s));
    json_object_set_new(o, "duration_ns", json_integer(s->duration_ns));
    json_object_set_new(o, "cpu_ns", json_integer(s->cpu_ns));
    json_object_set_new(o, "throughput_bytes_per_s", jreal(s->throughput));
    json_object_set_new(o, "crypto_share_wall", jreal(s->share_wall));
    json_object_set_new(o, "crypto_share_cpu",
                        s->share_cpu >= 0 ? jreal(s->share_cpu) : json_null());
}

json_t *report_json_object(const struct summary *s)
{
    json_t *o = json_object();

    totals(o, s);
    json_object_set_new(o, "read_bytes", hist_obj(&s->m->read_got));
    json_object_set_new(o, "read_want", hist_obj(&s->m->read_want));
    json_object_set_new(o, "record_len", hist_obj(&s->m->rec_len));
    json_object_set_new(o, "records_per_read", hist_obj(&s->m->recs_per_read));
    json_object_set_new(o, "ciphers", rows_arr(s));
    json_object_set_new(o, "connections", jint(s->m->nconns));
    json_object_set_new(o, "threads", jint(s->m->nthreads));
    if (s->prof)
        json_object_set_new(o, "callers", report_callers_json(s->prof));
    json_object_set_new(o, "verdicts", verdicts_arr(s));
    json_object_set_new(o, "blind", blind_arr(s));
    json_object_set_new(o, "traces", traces_arr(s));
    json_object_set_new(o, "lines", jint(s->lines));
    json_object_set_new(o, "lines_skipped", jint(s->lines_skipped));
    json_object_set_new(o, "lines_unknown", jint(s->lines_unknown));
    json_object_set_new(o, "dropped", jint(s->dropped));
    json_object_set_new(o, "truncated", json_boolean(s->truncated));
    return o;
}

int report_json(FILE *out, const struct summary *s)
{
    json_t *o = report_json_object(s);
    int rc = json_dumpf(o, out, JSON_INDENT(2) | JSON_REAL_PRECISION(6));

    fputc('\n', out);
    json_decref(o);
    return rc;
}
