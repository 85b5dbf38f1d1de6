/* report_json.c: one JSON object per analysis, stable keys, for scripts and CI gates. */
#include "output/report.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static json_t *jint(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v); /* saturated sums */
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

/* One size class: what the ns/B figures cover and the figures (null when no record). */
static json_t *class_obj(const struct class_fig *f)
{
    json_t *o = json_object();
    bool any = f->used > 0;

    json_object_set_new(o, "records", jint(f->recs));
    json_object_set_new(o, "in_ns_per_byte", jint(f->used));
    json_object_set_new(o, "left_out", jint(f->left_out));
    json_object_set_new(o, "crypto_ns", jint(f->crypto_ns));
    json_object_set_new(o, "mean", any ? jreal(f->mean) : json_null());
    json_object_set_new(o, "median", any ? jreal(f->median) : json_null());
    json_object_set_new(o, "p90", any ? jreal(f->p90) : json_null());
    return o;
}

static json_t *classes_obj(const struct class_fig fig[SC_N])
{
    json_t *o = json_object();
    int k;

    for (k = 0; k < SC_N; k++)
        json_object_set_new(o, size_class__name((enum size_class)k), class_obj(&fig[k]));
    return o;
}

static json_t *ciphers_nspb_arr(const struct summary *s)
{
    json_t *a = json_array();
    int i;

    for (i = 0; i < s->nciphers; i++) {
        json_t *o = classes_obj(s->ciphers[i].fig);

        json_object_set_new(o, "cipher", jstr(model__name(s->m, s->ciphers[i].cipher)));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *buckets_arr(const struct summary *s)
{
    const struct model *m = s->m;
    struct class_fig fig[SC_N];
    json_t *a = json_array();
    size_t i;

    for (i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];
        json_t *o = json_object();

        bucket__class_figs(b, fig);
        json_object_set_new(o, "file", jstr(m->traces[b->trace].file));
        json_object_set_new(o, "lib", json_integer(b->lib));
        json_object_set_new(o, "cipher", jstr(model__name(m, b->cipher)));
        json_object_set_new(o, "path", jstr(model__name(m, b->path)));
        json_object_set_new(o, "crypto_ns", jint(bucket__crypto_ns(b)));
        json_object_set_new(o, "size_classes", classes_obj(fig));
        json_array_append_new(a, o);
    }
    return a;
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
        json_object_set_new(o, "impl_split", wsplit__json(&w->split));
        json_object_set_new(o, "crypto_ns", jint(w->crypto_ns));
        json_object_set_new(o, "crypto_ns_per_byte",
                            jreal(w->st.rec_ct ? (double)w->crypto_ns / (double)w->st.rec_ct : 0));
        json_object_set_new(o, "size_classes", classes_obj(w->fig));
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
    json_object_set_new(o, "verdict",
                        jstr(!strcmp(b->what, "ktls")        ? "ktls"
                             : !strcmp(b->what, "calls")     ? "reads-bypassed"
                             : !strcmp(b->what, "other_tls") ? "other-tls"
                                                             : "blind-copy"));
    if (!strcmp(b->what, "ktls")) {
        json_object_set_new(o, "conns", json_integer(b->conns));
        json_object_set_new(o, "send_conns", json_integer(b->send_conns));
    } else if (!strcmp(b->what, "calls")) {
        json_object_set_new(o, "fns", jstr(b->fns));
        json_object_set_new(o, "bound_to", jstr(b->bound_to));
        json_object_set_new(o, "scope", jstr(b->scope));
        json_object_set_new(o, "needed_by", jstr(b->needed_by));
        json_object_set_new(o, "records_outside_reads",
                            json_integer((json_int_t)t->recs_outside_reads));
    } else if (!strcmp(b->what, "other_tls")) {
        json_object_set_new(o, "library", jstr(b->library));
        json_object_set_new(o, "calls", json_integer(b->calls));
    } else {
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

/* The connections of the summary's direction, most bytes first (the text report's table,
 * uncut): a server's view. Bytes are the calls' (read got / write written). */
static int by_bytes(const void *a, const void *b)
{
    const struct conn *x = *(const struct conn *const *)a, *y = *(const struct conn *const *)b;

    if (x->st.got != y->st.got)
        return x->st.got > y->st.got ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static json_t *conns_arr(const struct summary *s)
{
    const struct model *m = s->m;
    const struct conn **v = xmalloc((m->nconns + 1) * sizeof(*v));
    json_t *a = json_array();
    size_t i;

    for (i = 0; i < m->nconns; i++)
        v[i] = &m->conns[i];
    qsort(v, m->nconns, sizeof(*v), by_bytes);
    for (i = 0; i < m->nconns; i++) {
        const struct conn *c = v[i];
        json_t *o = json_object();

        if (!c->st.got && !c->st.recs)
            continue;
        json_object_set_new(o, "file", jstr(m->traces[c->trace].file));
        json_object_set_new(o, "conn", json_integer(c->id));
        json_object_set_new(o, "suite", jstr(model__name(m, c->suite)));
        json_object_set_new(o, "calls", jint(c->st.reads));
        json_object_set_new(o, "bytes", jint(c->st.got));
        json_object_set_new(o, "records", jint(c->st.recs));
        json_object_set_new(o, "crypto_ns", jint(c->st.oncpu_ns)); /* on-CPU weights */
        json_array_append_new(a, o);
    }
    free(v);
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
        if (t->attached) { /* `tlsmeter attach`: a window, and the connections open at its start */
            json_object_set_new(o, "attached", json_true());
            json_object_set_new(o, "joined_conns", json_integer(t->joined));
        }
        json_object_set_new(o, "cpu_ns", json_integer(trace__cpu_ns(t)));
        if (t->cpu_overflow)
            json_object_set_new(o, "cpu_note", json_string("overflow"));
        json_object_set_new(o, "complete", json_boolean(t->has_end && !t->partial_last));
        json_object_set_new(o, "dropped", json_integer(t->dropped));
        json_object_set_new(o, "lines_skipped", jint(t->lines_skipped));
        json_object_set_new(o, "emulated", json_boolean(t->emulated));
        json_object_set_new(o, "unfired", unfired_arr(t));
        json_object_set_new(o, "cputime", jstr(t->cputime ? t->cputime : "wall"));
        json_object_set_new(o, "cputime_why", t->cputime_why ? jstr(t->cputime_why) : json_null());
        json_object_set_new(o, "records_switched_out", jint(t->recs_flagged));
        json_object_set_new(o, "records_left_out", jint(t->recs_left_out));
        json_object_set_new(o, "records_stalled", jint(t->recs_stalled));
        json_object_set_new(o, "preempted",
                            t->preempted >= 0 ? json_integer(t->preempted) : json_null());
        json_object_set_new(o, "offcpu_ns", jint(t->offcpu_ns));
        json_array_append_new(a, o);
    }
    return a;
}

static void totals(json_t *o, const struct summary *s)
{
    const struct stats *st = &s->m->st;

    /* The encrypting side's calls are writes: the same figures under their own names. */
    json_object_set_new(o, s->out ? "bytes_written" : "bytes_read", jint(st->got));
    if (!s->out) { /* with the bytes on the sockets of copies whose SSL_read is unreachable */
        json_object_set_new(o, "bytes_received", jint(st->got + s->socket_bytes));
        json_object_set_new(o, "bytes_socket_reads", jint(s->socket_bytes));
    }
    json_object_set_new(o, s->out ? "writes" : "reads", jint(st->reads));
    json_object_set_new(o, s->out ? "writes_want_write" : "reads_want_read", jint(st->want_read));
    json_object_set_new(o, "records", jint(st->recs));
    json_object_set_new(o, "records_app", jint(st->recs_app));
    json_object_set_new(o, "records_tag_failed", jint(st->tag_fail));
    json_object_set_new(o, "crypto_ns", jint(s->crypto_ns));
    json_object_set_new(o, "crypto_ns_written", jint(s->crypto_ns_raw));
    json_object_set_new(o, "crypto_ns_per_byte", jreal(s->nspb));
    uint64_t bulk;
    double med = summary__bulk_median(s, &bulk);
    json_object_set_new(o, "bulk_records", jint(bulk));
    json_object_set_new(o, "bulk_ns_per_byte_median", med >= 0 ? jreal(med) : json_null());
    json_object_set_new(o, "cputime", jstr(s->cputime));
    json_object_set_new(o, "cputime_text", jstr(s->cputime_text));
    json_object_set_new(o, "records_switched_out", jint(s->recs_flagged));
    json_object_set_new(o, "records_left_out", jint(s->recs_left_out));
    json_object_set_new(o, "records_stalled", jint(s->recs_stalled));
    json_object_set_new(o, "impl", jstr(impl__name(s->impl)));
    json_object_set_new(o, "impl_split", wsplit__json(&s->split));
    json_object_set_new(o, "blind_spots", json_integer(s->blind));
    json_object_set_new(o, "paths", paths_obj(s));
    json_object_set_new(o, "duration_ns", json_integer(s->duration_ns));
    json_object_set_new(o, "cpu_ns", json_integer(s->cpu_ns));
    json_object_set_new(o, "throughput_bytes_per_s", jreal(s->throughput));
    json_object_set_new(o, "crypto_share_wall", jreal(s->share_wall));
    json_object_set_new(o, "crypto_share_cpu",
                        s->share_cpu >= 0 ? jreal(s->share_cpu) : json_null());
    json_object_set_new(o, "decrypting_threads", jint(s->nthreads_dec));
    json_object_set_new(o, "cpu_undercount_ns", json_integer(s->cpu_short_ns));
    json_object_set_new(o, "wall_overrun_ns", json_integer(s->wall_short_ns));
}

json_t *report_json_object(const struct summary *s)
{
    json_t *o = json_object();

    if (s->out)
        json_object_set_new(o, "direction", jstr("out"));
    totals(o, s);
    json_object_set_new(o, s->out ? "write_bytes" : "read_bytes", hist_obj(&s->m->read_got));
    json_object_set_new(o, s->out ? "write_asked" : "read_want", hist_obj(&s->m->read_want));
    json_object_set_new(o, "record_len", hist_obj(&s->m->rec_len));
    json_object_set_new(o, s->out ? "records_per_write" : "records_per_read",
                        hist_obj(&s->m->recs_per_read));
    json_object_set_new(o, "ciphers", rows_arr(s));
    json_object_set_new(o, "record_ns_per_byte", ciphers_nspb_arr(s));
    json_object_set_new(o, "buckets", buckets_arr(s));
    json_object_set_new(o, "connections", jint(s->m->nconns));
    if (s->out) /* the encrypting side's per-connection table (a server's downloads) */
        json_object_set_new(o, "conn_table", conns_arr(s));
    json_object_set_new(o, "threads", jint(s->m->nthreads));
    json_object_set_new(o, "handshake", hs_summary__json(&s->hs, s->cpu_ns));
    if (s->prof)
        json_object_set_new(o, "callers", report_callers_json(s->prof));
    json_object_set_new(o, "verdicts", verdicts_arr(s));
    if (s->gate)
        json_object_set_new(o, "gate", gate__json(s->gate));
    json_object_set_new(o, "blind", blind_arr(s));
    if (!s->out) { /* the copies are the process's: said once, beside the decrypt figures */
        int more;
        json_t *copies = report_reach_json(s, &more);

        weights__copies_json(s, copies); /* class, bytes and shares of each copy */
        json_object_set_new(o, "copies", copies);
        json_object_set_new(o, "copies_more", json_integer(more));
    }
    json_object_set_new(o, "traces", traces_arr(s));
    json_object_set_new(o, "lines", jint(s->lines));
    json_object_set_new(o, "lines_skipped", jint(s->lines_skipped));
    json_object_set_new(o, "lines_unknown", jint(s->lines_unknown));
    json_object_set_new(o, "dropped", jint(s->dropped));
    json_object_set_new(o, "truncated", json_boolean(s->truncated));
    /* The encrypting side, the same figures from the same code (docs/analyzer.md). */
    if (s->enc)
        json_object_set_new(o, "encrypt", report_json_object(s->enc));
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
