/* model_summary.c: summary events (TLSMETER_EVENTS=summary) into the model: each carries
 * the sums and histograms of the records or reads since the previous one, added where their
 * rec and read events would have gone (docs/trace-format.md, "summary"). Exact: counts, bytes,
 * crypto time; binned: ns/B (1.6 % wide bins), sizes (log2 buckets, counted at their lower
 * bound). Per-thread figures and per-event outputs (timelines, --chrome) need events. Parts
 * with "dir" "out" are the encrypting side's, read by the model of that direction. */
#include "model/model.h"

#include <math.h>
#include <string.h>

static uint64_t u(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);

    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

/* The preload's ns/B bin k: 64 linear steps per doubling from 2^-7 ns/B; its middle. */
static double nspb_mid(int64_t k)
{
    return ldexp(1.0 + ((double)(k % 64) + 0.5) / 64.0, (int)(k / 64) - 7);
}

/* "[[bin,count],...]"; bins outside 0..max are an error. */
static int pairs(json_t *arr, int64_t max, void (*add)(void *, int64_t, uint64_t), void *arg,
                 char *err, size_t errlen)
{
    size_t i;
    json_t *p;

    if (!arr)
        return 0;
    if (!json_is_array(arr))
        goto bad;
    json_array_foreach(arr, i, p)
    {
        json_t *k = json_array_get(p, 0), *c = json_array_get(p, 1);
        if (json_array_size(p) != 2 || !json_is_integer(k) || !json_is_integer(c) ||
            json_integer_value(k) < 0 || json_integer_value(k) > max || json_integer_value(c) < 0)
            goto bad;
        add(arg, json_integer_value(k), (uint64_t)json_integer_value(c));
    }
    return 0;
bad:
    snprintf(err, errlen, "summary histogram is not [[bin (0-%lld), count], ...]", (long long)max);
    return -1;
}

static void add_nspb(void *arg, int64_t k, uint64_t count)
{
    rhist__add_n(arg, nspb_mid(k), count);
}

static void add_log2(void *arg, int64_t k, uint64_t count)
{
    hist__add(arg, hist__log2_lo((int)k), count);
}

static const char *const class_names[SC_N] = {"tiny", "small", "bulk"};

static int records(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    json_t *cipher = json_object_get(o, "cipher"), *path = json_object_get(o, "path");
    const char *cls = json_string_value(json_object_get(o, "class"));
    int k = 0;

    while (cls && k < SC_N && strcmp(cls, class_names[k]))
        k++;
    if (!json_is_string(cipher) || !json_is_string(path) || !cls || k == SC_N) {
        snprintf(err, errlen,
                 "summary records need \"cipher\", \"path\" and \"class\" "
                 "(tiny, small, bulk)");
        return -1;
    }
    struct bucket *b =
        model__bucket(m, t, (int64_t)u(o, "lib"),
                      model__intern(m, json_string_value(cipher), json_string_length(cipher)),
                      model__intern(m, json_string_value(path), json_string_length(path)));
    struct stats s = {.recs = u(o, "recs"),
                      .recs_app = u(o, "recs_app"),
                      .recs_other = u(o, "recs_other"),
                      .tag_fail = u(o, "tag_fail"),
                      .rec_len = u(o, "rec_len"),
                      .rec_ct = u(o, "rec_ct"),
                      .rec_pt = u(o, "rec_pt"),
                      .crypto_ns = u(o, "crypto_ns"),
                      .gcm_ns = u(o, "gcm_ns"),
                      .gcm_dec = u(o, "gcm_dec"),
                      .gcm_ctr = u(o, "gcm_ctr"),
                      .gcm_both = u(o, "gcm_both")};
    struct class_stats *c = &b->cls[k];
    uint64_t fl = u(o, "fl_recs"), st = u(o, "st_recs");
    bool ex = t->cputime_exact;
    /* The snapshot's records weighed by the rule every record is (oncpu__batch): added to
     * what came before, never revised, so the totals only grow snapshot by snapshot. Stalled
     * records (st_*) are estimated whatever the method, switched-out ones unless it is exact. */
    s.oncpu_ns = oncpu__batch(
        &c->sums, ex && !st, s.rec_pt, s.crypto_ns, (ex ? 0 : u(o, "fl_pt")) + u(o, "st_pt"),
        (ex ? 0 : u(o, "fl_ns")) + u(o, "st_ns"), ex ? 0 : u(o, "fl_nopt_ns"));
    c->oncpu_ns += s.oncpu_ns;
    stats__add(&m->st, &s);
    stats__add(&t->st, &s);
    if (!m->out) { /* the decrypting side's part says them */
        t->sum_lost_recs += u(o, "lost_recs");
        t->sum_lost_sockreads += u(o, "lost_sockreads");
        if (json_is_integer(json_object_get(o, "threads_unlisted")))
            t->sum_threads_unlisted = json_integer_value(json_object_get(o, "threads_unlisted"));
    }
    stats__add(&b->st, &s);
    c->recs += s.recs;
    c->crypto_ns += s.crypto_ns;
    c->flagged += fl;
    t->recs_flagged += fl;
    c->left_out += st; /* never in nspb (preload/core/summary.c) */
    c->left_pt += u(o, "st_pt");
    c->left_ns += u(o, "st_ns");
    t->recs_stalled += st;
    if (!t->cputime_exact) { /* as classes.c: switched-out records leave the ns/B */
        c->left_out += fl;
        t->recs_left_out += fl;
        c->left_pt += u(o, "fl_pt");
        c->left_ns += u(o, "fl_ns");
        c->left_nopt_ns += u(o, "fl_nopt_ns");
    } else if (pairs(json_object_get(o, "fl_nspb"), 25 * 64 - 1, add_nspb, &c->nspb, err, errlen)) {
        return -1;
    }
    if (json_is_integer(json_object_get(o, "impl")) && !b->impl)
        b->impl = json_integer_value(json_object_get(o, "impl"));
    b->impl_ct += u(o, "impl_ct");
    b->impl_other_ct += u(o, "impl_other_ct");
    b->impl_none_ct += u(o, "impl_none_ct");
    return pairs(json_object_get(o, "nspb"), 25 * 64 - 1, add_nspb, &c->nspb, err, errlen);
}

static int process(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    struct stats s = {.reads = u(o, "reads"),
                      .reads_ok = u(o, "reads_ok"),
                      .reads_fail = u(o, "reads_fail"),
                      .want_read = u(o, "want_read"),
                      .zero_ret = u(o, "zero_ret"),
                      .got = u(o, "got"),
                      .want = u(o, "want"),
                      .want_big = u(o, "want_big"),
                      .read_ns = u(o, "read_ns"),
                      .peeks = u(o, "peeks"),
                      .recs_in_reads = u(o, "recs_in_reads")};
    stats__add(&m->st, &s);
    stats__add(&t->st, &s);
    if (!m->out) { /* the decrypting side's part says them */
        t->sum_lost_recs += u(o, "lost_recs");
        t->sum_lost_sockreads += u(o, "lost_sockreads");
        if (json_is_integer(json_object_get(o, "threads_unlisted")))
            t->sum_threads_unlisted = json_integer_value(json_object_get(o, "threads_unlisted"));
    }
    if (pairs(json_object_get(o, "rec_len_log2"), HIST_LOG2_N - 1, add_log2, &m->rec_len, err,
              errlen) ||
        pairs(json_object_get(o, "read_got_log2"), HIST_LOG2_N - 1, add_log2, &m->read_got, err,
              errlen) ||
        pairs(json_object_get(o, "read_want_log2"), HIST_LOG2_N - 1, add_log2, &m->read_want, err,
              errlen))
        return -1;
    return pairs(json_object_get(o, "recs_per_read_log2"), HIST_LOG2_N - 1, add_log2,
                 &m->recs_per_read, err, errlen);
}

/* Whether o (records, process or process_out) is of the model's direction, as model.c's
 * this_dir: "dir" "out" (and process_out, which counts writes under the read keys) is the
 * encrypting side, absent or "in" the decrypting one; the other side's parts are counted,
 * for the second pass. */
static bool this_dir(struct model *m, json_t *o, bool out)
{
    json_t *dir = json_object_get(o, "dir");

    out |= json_is_string(dir) && !strcmp(json_string_value(dir), "out");

    if (out != m->out)
        m->other_dir++;
    return out == m->out;
}

int model__summary(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    const char *what = json_string_value(json_object_get(o, "what"));
    json_t *at = json_object_get(o, "t");

    if (t->summary_copy)
        return 0; /* TLSMETER_EVENTS=both: the rec and read events already count all of it */
    t->summary = true;
    if (json_is_integer(at) && json_integer_value(at) > t->max_t)
        t->max_t = json_integer_value(at);
    if (what && !strcmp(what, "records"))
        return this_dir(m, o, false) ? records(m, t, o, err, errlen) : 0;
    if (what && !strcmp(what, "sockets")) /* a copy's socket reads past the hooks */
        return model__summary_sockets(t, o, err, errlen);
    if (what && (!strcmp(what, "process") || !strcmp(what, "process_out")))
        return this_dir(m, o, !strcmp(what, "process_out")) ? process(m, t, o, err, errlen) : 0;
    t->lines_unknown++; /* a part from a newer writer */
    return 0;
}

bool model__has_summary(const struct model *m)
{
    for (size_t i = 0; i < m->ntraces; i++)
        if (m->traces[i].summary)
            return true;
    return false;
}
