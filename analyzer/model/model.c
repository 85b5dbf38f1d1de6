/* model.c: aggregation of rec, read and conn events into traces, buckets, connections and
 * threads. Input numbers are untrusted: negatives are clamped and sums are unsigned. */
#include "model/model.h"

#include "base/util.h"

#include <stdlib.h>
#include <string.h>

void model__init(struct model *m)
{
    memset(m, 0, sizeof(*m));
    m->names[m->nnames++] = xstrdup(""); /* index 0: "not given" */
}

static int name_add(struct model *m, char *s)
{
    m->names[m->nnames] = s;
    m->name_len[m->nnames] = strlen(s);
    return m->nnames++;
}

static void free_trace(struct trace *t)
{
    int i;

    free(t->file), free(t->comm), free(t->exe), free(t->arch), free(t->cpu);
    free(t->clock), free(t->mode), free(t->version), free(t->quiet), free(t->reroute_reason);
    free(t->exec), free(t->cputime), free(t->cputime_why), free(t->warn_first);
    free(t->io), free(t->io_error);
    for (i = 0; i < t->nunfired; i++)
        free(t->unfired[i]);
    for (i = 0; i < t->nlibs; i++) {
        struct lib *l = &t->libs[i];

        free(l->path), free(l->version), free(l->platform), free(l->role), free(l->cpuinfo);
        free(l->reach), free(l->build_id), free(l->gcm_layout);
    }
    model__reach_free(t);
    for (i = 0; i < t->nblind; i++)
        model__blind_free(&t->blind[i]);
}

void model__free(struct model *m)
{
    size_t i;
    int k;

    for (i = 0; i < m->ntraces; i++)
        free_trace(&m->traces[i]);
    for (i = 0; i < m->nbuckets; i++)
        for (k = 0; k < SC_N; k++)
            class_stats__free(&m->buckets[i].cls[k]);
    for (k = 0; k < m->nnames; k++)
        free(m->names[k]);
    free(m->traces), free(m->buckets), free(m->conns), free(m->threads), free(m->other);
    imap__free(&m->bucket_map), imap__free(&m->conn_map), imap__free(&m->other_map);
    imap__free(&m->thread_map);
    stacks__free(&m->stacks);
    hist__free(&m->read_got), hist__free(&m->read_want);
    hist__free(&m->rec_len), hist__free(&m->recs_per_read);
}

struct trace *model__new_trace(struct model *m, const char *file)
{
    struct trace *t;

    grow_array((void **)&m->traces, &m->cap_traces, m->ntraces, sizeof(*m->traces));
    t = &m->traces[m->ntraces++];
    memset(t, 0, sizeof(*t));
    t->file = xstrdup(file);
    t->pid = -1;
    t->preempted = -1;
    return t;
}

static uint64_t load8(const char *p)
{
    uint64_t v;

    memcpy(&v, p, 8);
    return v;
}

static uint32_t load4(const char *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return v;
}

/* Names are a few bytes to a few dozen: two overlapping loads per side up to 16 bytes, in
 * place of a call into libc's memcmp (every rec compares two). */
static bool same_bytes(const char *a, const char *b, size_t n)
{
    if (n >= 8 && n <= 16)
        return load8(a) == load8(b) && load8(a + n - 8) == load8(b + n - 8);
    if (n >= 4 && n < 8)
        return load4(a) == load4(b) && load4(a + n - 4) == load4(b + n - 4);
    return !memcmp(a, b, n);
}

static bool name_is(const struct model *m, int i, const char *p, size_t n)
{
    return m->name_len[i] == n && same_bytes(m->names[i], p, n);
}

/* Every rec interns its cipher and path: a hint per (length, end bytes) names the index a
 * lookup of the same bytes found before. A hint is only ever the first index holding its
 * bytes (a name cut at a NUL byte gets none), so it gives what the scan would. */
int model__intern(struct model *m, const char *p, size_t n)
{
    int i, *hint;

    if (!n)
        return 0;
    hint = &m->name_hint[(n * 31u + (unsigned char)p[0] * 7u + (unsigned char)p[n - 1]) & 15];
    if (*hint && name_is(m, *hint, p, n))
        return *hint;
    for (i = 1; i < m->nnames; i++)
        if (name_is(m, i, p, n))
            return *hint = i;
    /* A trace has a handful of ciphers, paths and suites; a flood of new names (a broken
     * or hostile trace) is folded into one so memory stays bounded. */
    if (m->nnames == MAX_NAMES - 1)
        name_add(m, xstrdup("(other)"));
    if (m->nnames == MAX_NAMES)
        return MAX_NAMES - 1;
    i = name_add(m, xstrndup(p, n));
    if (m->name_len[i] == n)
        *hint = i;
    return i;
}

const char *model__name(const struct model *m, int idx)
{
    return idx >= 0 && idx < m->nnames ? m->names[idx] : "";
}

static uint64_t pos(int64_t v)
{
    return v > 0 ? (uint64_t)v : 0;
}

static uint32_t trace_idx(const struct model *m, const struct trace *t)
{
    return (uint32_t)(t - m->traces);
}

/* prov: rec.prov, kept apart from the default provider's records of the same copy (in the
 * key's upper half: lib ids are small). */
static struct bucket *bucket_get(struct model *m, uint32_t ti, int64_t lib, int cipher, int path,
                                 int64_t prov)
{
    uint64_t a = (uint64_t)ti << 32 | (uint64_t)cipher << 16 | (uint64_t)path;
    uint64_t l = (uint64_t)lib ^ (uint64_t)prov << 40;
    long i = imap__get(&m->bucket_map, a, l);
    struct bucket *b;

    if (i >= 0)
        return &m->buckets[i];
    grow_array((void **)&m->buckets, &m->cap_buckets, m->nbuckets, sizeof(*m->buckets));
    b = &m->buckets[m->nbuckets];
    b->trace = ti, b->lib = lib, b->cipher = cipher, b->path = path, b->prov = prov;
    imap__put(&m->bucket_map, a, l, (uint32_t)m->nbuckets++);
    return b;
}

/* The cache entry for (ti, id): its array index, or -1 (and the entry to fill). */
static long cache_get(struct id_cache *c, uint32_t ti, int64_t id, struct id_cache **slot)
{
    *slot = &c[((uint64_t)id ^ ti * 7u) & 15];
    return (*slot)->idx1 && (*slot)->ti == ti && (*slot)->id == id ? (long)(*slot)->idx1 - 1 : -1;
}

static struct conn *conn_get(struct model *m, struct trace *t, int64_t id)
{
    uint32_t ti = trace_idx(m, t);
    struct id_cache *slot;
    long i = cache_get(m->conn_cache, ti, id, &slot);
    struct conn *c;

    if (i >= 0)
        return &m->conns[i];
    i = imap__get(&m->conn_map, ti, (uint64_t)id);
    if (i < 0) {
        i = (long)m->nconns;
        grow_array((void **)&m->conns, &m->cap_conns, m->nconns, sizeof(*m->conns));
        c = &m->conns[m->nconns];
        c->trace = ti, c->id = id, c->hs_ns = c->hs_call_ns = -1;
        imap__put(&m->conn_map, ti, (uint64_t)id, (uint32_t)m->nconns++);
        t->nconns++;
    }
    *slot = (struct id_cache){ti, (uint32_t)i + 1, id};
    return &m->conns[i];
}

struct conn *model__conn(struct model *m, struct trace *t, int64_t id)
{
    return conn_get(m, t, id);
}

static struct thread *thread_get(struct model *m, struct trace *t, int64_t tid)
{
    uint32_t ti = trace_idx(m, t);
    struct id_cache *slot;
    long i = cache_get(m->thread_cache, ti, tid, &slot);
    struct thread *th;

    if (i >= 0)
        return &m->threads[i];
    i = imap__get(&m->thread_map, ti, (uint64_t)tid);
    if (i < 0) {
        i = (long)m->nthreads;
        grow_array((void **)&m->threads, &m->cap_threads, m->nthreads, sizeof(*m->threads));
        th = &m->threads[m->nthreads];
        th->trace = ti, th->tid = tid;
        imap__put(&m->thread_map, ti, (uint64_t)tid, (uint32_t)m->nthreads++);
        t->nthreads++;
    }
    *slot = (struct id_cache){ti, (uint32_t)i + 1, tid};
    return &m->threads[i];
}

/* The bytes the cipher processed: the wire length less the tag (and TLS 1.2's explicit
 * nonce). ns/byte is computed over these, so a failed tag (pt 0) still counts its work. */
static uint64_t rec_ct(const struct event *e)
{
    int64_t over = 16 + (strv_eq(e->s[S_TLS], "1.2") ? 8 : 0);

    return e->i[I_LEN] > over ? (uint64_t)(e->i[I_LEN] - over) : 0;
}

/* What one rec adds to each stats it counts in (model, trace, bucket, connection, thread):
 * worked out once per event, added five times. */
struct rec_add {
    uint64_t app, tag_fail, len, ct, pt, crypto_ns, oncpu_ns, gcm_ns, gcm_dec, gcm_ctr, gcm_both;
};

static void rec_add_of(struct rec_add *d, const struct event *e, uint64_t oncpu_ns)
{
    uint64_t gb = pos(e->i[I_GCM_BYTES]);
    struct strv fn = e->s[S_GCM_FN];

    *d = (struct rec_add){.app = e->i[I_TYPE] == 23,
                          .tag_fail = e->have_tag_ok && !e->tag_ok,
                          .len = pos(e->i[I_LEN]),
                          .ct = rec_ct(e),
                          .pt = pos(e->i[I_PT]),
                          .crypto_ns = pos(e->i[I_CRYPTO_NS]),
                          .oncpu_ns = oncpu_ns,
                          .gcm_ns = pos(e->i[I_GCM_NS])};
    if (!(e->have_s & (1u << S_GCM_FN)))
        return;
    if (strv_eq(fn, "decrypt") || strv_eq(fn, "encrypt")) /* the plain entry, per direction */
        d->gcm_dec = gb;
    else if (strv_eq(fn, "ctr32"))
        d->gcm_ctr = gb;
    else if (strv_eq(fn, "both"))
        d->gcm_both = gb;
}

static void stats_rec(struct stats *s, const struct rec_add *d)
{
    s->recs++;
    s->recs_app += d->app;
    s->recs_other += !d->app;
    s->tag_fail += d->tag_fail;
    s->rec_len += d->len;
    s->rec_ct += d->ct;
    s->rec_pt += d->pt;
    s->crypto_ns += d->crypto_ns;
    s->oncpu_ns += d->oncpu_ns;
    s->gcm_ns += d->gcm_ns;
    s->gcm_dec += d->gcm_dec;
    s->gcm_ctr += d->gcm_ctr;
    s->gcm_both += d->gcm_both;
}

/* The same for a read (model, trace, connection, thread). */
struct read_add {
    bool peek;
    uint64_t ok, got, want_read, zero_ret, want, want_big, read_ns, recs;
};

static void read_add_of(struct read_add *d, const struct event *e)
{
    /* A peek returns bytes a later read returns again: counting them would double the
     * bytes received. Its records (decrypted during the peek) are counted with the recs. */
    *d = (struct read_add){
        .peek = (e->have_s & (1u << S_FN)) &&
                (strv_eq(e->s[S_FN], "SSL_peek") || strv_eq(e->s[S_FN], "SSL_peek_ex")),
        .ok = e->i[I_GOT] > 0,
        .got = pos(e->i[I_GOT]),
        .want_read = e->i[I_GOT] <= 0 && e->i[I_ERR] == 2,
        .zero_ret = e->i[I_GOT] <= 0 && e->i[I_ERR] == 6,
        .want = pos(e->i[I_WANT]),
        .want_big = e->i[I_WANT] > TLS_RECORD_PT_MAX,
        .read_ns = pos(e->i[I_NS]),
        .recs = pos(e->i[I_RECS])};
}

static void stats_read(struct stats *s, const struct read_add *d)
{
    s->recs_in_reads += d->recs;
    if (d->peek) {
        s->peeks++;
        return;
    }
    s->reads++;
    s->reads_ok += d->ok;
    s->reads_fail += !d->ok;
    s->got += d->got;
    s->want_read += d->want_read;
    s->zero_ret += d->zero_ret;
    s->want += d->want;
    s->want_big += d->want_big;
    s->read_ns += d->read_ns;
}

static void see_time(struct trace *t, int64_t at, int64_t dur)
{
    uint64_t end = pos(at) + pos(dur);

    if (end > (uint64_t)t->max_t && end < (1ULL << 62))
        t->max_t = (int64_t)end;
}

static int feed_rec(struct model *m, struct trace *t, const struct event *e, uint64_t *oncpu_ns,
                    char *err, size_t errlen)
{
    uint32_t ti = trace_idx(m, t);
    int cipher = model__intern(m, e->s[S_CIPHER].p, e->s[S_CIPHER].n);
    int path = model__intern(m, e->s[S_PATH].p, e->s[S_PATH].n);
    struct bucket *b;
    struct rec_add d;

    if (!event__has(e, I_LEN) || !event__has(e, I_CRYPTO_NS)) {
        snprintf(err, errlen, "rec without \"len\" or \"crypto_ns\"");
        return -1;
    }
    b = bucket_get(m, ti, e->i[I_LIB], cipher, path, e->i[I_PROV]);
    *oncpu_ns = classes__rec(t, b, e); /* before the stats: they all count this weight */
    rec_add_of(&d, e, *oncpu_ns);
    stats_rec(&m->st, &d);
    stats_rec(&t->st, &d);
    if (e->i[I_TYPE] == 23 && event__has(e, I_READ) && e->i[I_READ] == 0)
        t->recs_outside_reads++; /* its read bypassed the hooks (verdict_blind.c) */
    stats_rec(&b->st, &d);
    model__bucket_impl(b, e, d.ct);
    stats_rec(&conn_get(m, t, e->i[I_CONN])->st, &d);
    stats_rec(&thread_get(m, t, e->i[I_TID])->st, &d);
    hist__add(&m->rec_len, pos(e->i[I_LEN]), 1);
    stacks__rec(&m->stacks, ti, e, cipher, path, *oncpu_ns);
    see_time(t, e->i[I_T], e->i[I_CRYPTO_NS]);
    return 0;
}

/* A record of the direction this model does not hold, for a timeline: its on-CPU weight by
 * the same rule, from sums kept per (trace, instance, cipher, path) and size class. */
static uint64_t other_weight(struct model *m, struct trace *t, const struct event *e)
{
    int cipher = model__intern(m, e->s[S_CIPHER].p, e->s[S_CIPHER].n);
    int path = model__intern(m, e->s[S_PATH].p, e->s[S_PATH].n);
    uint64_t a = (uint64_t)trace_idx(m, t) << 32 | (uint64_t)cipher << 16 | (uint64_t)path;
    uint64_t pt = pos(e->i[I_PT]);
    long i = imap__get(&m->other_map, a, (uint64_t)e->i[I_LIB]);

    if (i < 0) {
        grow_array((void **)&m->other, &m->cap_other, m->nother, sizeof(*m->other));
        memset(m->other[m->nother], 0, sizeof(*m->other));
        imap__put(&m->other_map, a, (uint64_t)e->i[I_LIB], (uint32_t)m->nother);
        i = (long)m->nother++;
    }
    return oncpu__rec(&m->other[i][size_class__of((int64_t)pt)],
                      t->cputime_exact && e->i[I_STALL] <= 0, pt, pos(e->i[I_CRYPTO_NS]),
                      e->i[I_PREEMPT] > 0 || e->i[I_STALL] > 0);
}

static int feed_read(struct model *m, struct trace *t, const struct event *e, char *err,
                     size_t errlen)
{
    struct read_add d;

    if (!event__has(e, I_GOT)) {
        snprintf(err, errlen, "read without \"got\"");
        return -1;
    }
    read_add_of(&d, e);
    stats_read(&m->st, &d);
    stats_read(&t->st, &d);
    stats_read(&conn_get(m, t, e->i[I_CONN])->st, &d);
    stats_read(&thread_get(m, t, e->i[I_TID])->st, &d);
    if (e->i[I_GOT] > 0)
        hist__add(&m->read_got, (uint64_t)e->i[I_GOT], 1);
    if (event__has(e, I_WANT))
        hist__add(&m->read_want, pos(e->i[I_WANT]), 1);
    hist__add(&m->recs_per_read, pos(e->i[I_RECS]), 1);
    stacks__read(&m->stacks, trace_idx(m, t), e);
    see_time(t, e->i[I_T], e->i[I_NS]);
    return 0;
}

struct bucket *model__bucket(struct model *m, struct trace *t, int64_t lib, int cipher, int path)
{
    return bucket_get(m, trace_idx(m, t), lib, cipher, path, 0);
}

static void feed_conn(struct model *m, struct trace *t, const struct event *e)
{
    struct conn *c = conn_get(m, t, e->i[I_CONN]);

    if (strv_eq(e->s[S_PHASE], "close")) {
        c->closed = true;
        if (t->summary) { /* no rec/read events: the close event's totals are all there is */
            c->st.reads += pos(e->i[I_READS]);
            c->st.got += pos(e->i[I_GOT]);
            c->st.recs += pos(e->i[I_RECS]);
            /* per connection only the written sum is known: the close's */
            c->st.crypto_ns += pos(e->i[I_CRYPTO_NS]);
            c->st.oncpu_ns += pos(e->i[I_CRYPTO_NS]);
        }
        return;
    }
    c->opened = true;
    c->suite = model__intern(m, e->s[S_SUITE].p, e->s[S_SUITE].n);
    c->proto = model__intern(m, e->s[S_PROTO].p, e->s[S_PROTO].n);
    c->role = model__intern(m, e->s[S_ROLE].p, e->s[S_ROLE].n);
    if (event__has(e, I_HS_NS))
        c->hs_ns = e->i[I_HS_NS];
    /* An attached trace's connection opened with no handshake seen was open at the attach
     * (conn.joined; the handshake of one driven unseen in an SSL BIO would be seen here). */
    if (t->attached && c->hs_ns < 0)
        t->joined++;
    if (event__has(e, I_HS_CALL_NS))
        c->hs_call_ns = e->i[I_HS_CALL_NS];
    see_time(t, e->i[I_T], 0);
}

/* An event of the encrypting side as the decrypting side's code reads it: a write's asked and
 * written become want and got, an out record's enclosing write its read. */
static const struct event *as_in(const struct event *e, struct event *tmp)
{
    struct map {
        enum ev_int from, to;
    };
    static const struct map io[] = {{I_ASKED, I_WANT}, {I_WRITTEN, I_GOT}, {I_WRITE, I_READ}};
    /* A close's sending totals (a summary trace's only per-connection figures). */
    static const struct map conn[] = {
        {I_WRITES, I_READS}, {I_WBYTES, I_GOT}, {I_WRECS, I_RECS}, {I_WCRYPTO_NS, I_CRYPTO_NS}};
    const struct map *map = e->kind == EV_CONN ? conn : io;
    size_t i, n = e->kind == EV_CONN ? sizeof(conn) / sizeof(conn[0]) : sizeof(io) / sizeof(io[0]);

    *tmp = *e;
    for (i = 0; i < n; i++) {
        tmp->have_i &= ~(1ull << map[i].to);
        if (!event__has(e, map[i].from))
            continue;
        tmp->i[map[i].to] = e->i[map[i].from];
        tmp->have_i |= 1ull << map[i].to;
    }
    if (e->kind == EV_WRITE)
        tmp->kind = EV_READ;
    return tmp;
}

/* Whether e belongs to the model's direction; the other direction's hot events are counted. */
static bool this_dir(struct model *m, const struct event *e)
{
    bool out;

    if (e->kind == EV_REC)
        out = event__is_out(e);
    else if (e->kind == EV_READ || e->kind == EV_WRITE)
        out = e->kind == EV_WRITE;
    else
        return true;
    if (out != m->out)
        m->other_dir++;
    return out == m->out;
}

int model__event(struct model *m, struct trace *t, const struct event *e, char *err, size_t errlen)
{
    int rc = 0;
    struct event tmp;
    const struct event *f = e;
    uint64_t oncpu_ns = 0;

    if (this_dir(m, e)) {
        if (m->out)
            f = as_in(e, &tmp);
        if (f->kind == EV_REC)
            rc = feed_rec(m, t, f, &oncpu_ns, err, errlen);
        else if (f->kind == EV_READ)
            rc = feed_read(m, t, f, err, errlen);
        else if (f->kind == EV_CONN)
            feed_conn(m, t, f);
    }
    /* A timeline (--chrome, --perfetto) shows both directions, each event as written. */
    if (!rc && m->hook && e->kind != EV_CONN) {
        if (e->kind == EV_REC && event__is_out(e) != m->out)
            oncpu_ns = other_weight(m, t, e);
        m->hook(m->hook_ctx, m, t, e, oncpu_ns);
    }
    return rc;
}

const char *trace_name(const struct trace *t)
{
    return t->comm ? t->comm : t->exe ? t->exe : "?";
}
