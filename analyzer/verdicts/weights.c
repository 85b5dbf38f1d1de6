/* weights.c: classes weighted by bytes (a row, a copy, the process), the split where they are
 * mixed, bytes and TLS the trace could not measure, and how much CPU the trace explains. */
#include "verdicts/weights.h"

#include "base/fmt.h"
#include "verdicts/reach.h"
#include "verdicts/summary.h"

#include <stdlib.h>
#include <string.h>

static const char *const group_names[WG_N] = {"hardware", "software", "unknown", "unmeasured"};

enum wgroup wgroup_of(enum impl_class c)
{
    return c == IMPL_HARDWARE                    ? WG_HARDWARE
           : c == IMPL_TABLE || c == IMPL_VECTOR ? WG_SOFTWARE
                                                 : WG_UNKNOWN;
}

const char *wgroup__name(enum wgroup g)
{
    return g < WG_N ? group_names[g] : "?";
}

/* Keeps the copies of a group largest first; the smallest falls off when there is no room. */
static void part_copy(struct wpart *p, const struct lib *l, uint64_t bytes)
{
    int i;

    if (!l || !bytes)
        return;
    for (i = 0; i < p->ncopies && p->copies[i] != l; i++)
        ;
    if (i == p->ncopies) {
        if (p->ncopies == WSPLIT_COPIES) {
            p->copies_more = true;
            if (p->copy_bytes[i - 1] >= bytes)
                return;
            i--;
        } else {
            p->ncopies++;
        }
        p->copies[i] = l, p->copy_bytes[i] = 0;
    }
    p->copy_bytes[i] += bytes;
    for (; i > 0 && p->copy_bytes[i] > p->copy_bytes[i - 1]; i--) {
        const struct lib *tl = p->copies[i];
        uint64_t tb = p->copy_bytes[i];

        p->copies[i] = p->copies[i - 1], p->copy_bytes[i] = p->copy_bytes[i - 1];
        p->copies[i - 1] = tl, p->copy_bytes[i - 1] = tb;
    }
}

void wsplit__add(struct wsplit *w, enum impl_class c, const struct lib *l, uint64_t bytes,
                 uint64_t ns)
{
    struct wpart *p = &w->g[wgroup_of(c)];

    w->cls_bytes[c] += bytes, w->cls_ns[c] += ns;
    p->bytes += bytes, p->ns += ns;
    w->bytes += bytes, w->ns += ns;
    part_copy(p, l, bytes);
}

void wsplit__add_unmeasured(struct wsplit *w, const struct lib *l, uint64_t bytes)
{
    w->g[WG_UNMEASURED].bytes += bytes;
    w->bytes += bytes;
    part_copy(&w->g[WG_UNMEASURED], l, bytes);
}

enum impl_class wsplit__class(const struct wsplit *w)
{
    static const enum impl_class worse_first[] = {IMPL_UNKNOWN, IMPL_TABLE, IMPL_VECTOR,
                                                  IMPL_HARDWARE};
    enum impl_class best = IMPL_UNKNOWN;
    uint64_t top = 0;
    size_t i;

    for (i = 0; i < sizeof(worse_first) / sizeof(worse_first[0]); i++) {
        enum impl_class c = worse_first[i];
        uint64_t b = w->cls_bytes[c] + (c == IMPL_UNKNOWN ? w->g[WG_UNMEASURED].bytes : 0);

        if (b > top)
            top = b, best = c;
    }
    return best;
}

bool wsplit__mixed(const struct wsplit *w)
{
    int g, n = 0;

    for (g = 0; g < WG_N; g++)
        n += w->g[g].bytes > 0;
    return n > 1;
}

static const char *base_name(const char *p)
{
    const char *b = p ? strrchr(p, '/') : NULL;

    return b ? b + 1 : p ? p : "?";
}

/* ", in libvendor.so and libcrypto.so.3" */
static size_t copies_text(const struct wpart *p, char *buf, size_t cap)
{
    size_t n = 0;
    int i;

    for (i = 0; i < p->ncopies && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s",
                              !i                                     ? ", in "
                              : i + 1 < p->ncopies || p->copies_more ? ", "
                                                                     : " and ",
                              base_name(p->copies[i]->path));
    if (p->copies_more && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, " and more");
    return n < cap ? n : cap - 1;
}

/* The groups with bytes, most bytes first. */
static int groups_by_bytes(const struct wsplit *w, int order[WG_N])
{
    int g, k, n = 0;

    for (g = 0; g < WG_N; g++) {
        if (!w->g[g].bytes)
            continue;
        for (k = n++; k > 0 && w->g[order[k - 1]].bytes < w->g[g].bytes; k--)
            order[k] = order[k - 1];
        order[k] = g;
    }
    return n;
}

void wsplit__text(const struct wsplit *w, char *buf, size_t cap)
{
    int order[WG_N], n = groups_by_bytes(w, order), i;
    size_t len = 0;

    buf[0] = 0;
    for (i = 0; i < n && len + 1 < cap; i++) {
        const struct wpart *p = &w->g[order[i]];
        struct fmtbuf a, b;
        char time[48] = "";

        if (order[i] != WG_UNMEASURED)
            snprintf(time, sizeof(time), " (%s crypto)", fmt_ns(&b, (double)p->ns));
        else
            snprintf(time, sizeof(time), " (socket bytes in no record seen)");
        len += (size_t)snprintf(buf + len, cap - len, "%s%s for %s%s%s", i ? "; " : "",
                                wgroup__name((enum wgroup)order[i]),
                                fmt_pct(&a, (double)p->bytes / (double)w->bytes),
                                i ? "" : " of the bytes", time);
        if (len + 1 < cap)
            len += copies_text(p, buf + len, cap - len);
    }
}

static json_t *copies_json(const struct wpart *p)
{
    json_t *a = json_array();

    for (int i = 0; i < p->ncopies; i++)
        json_array_append_new(a, json_string(p->copies[i]->path ? p->copies[i]->path : ""));
    return a;
}

static json_t *share(uint64_t part, uint64_t all)
{
    char buf[32];

    snprintf(buf, sizeof(buf), "%.6g", all ? (double)part / (double)all : 0.0);
    return json_real(strtod(buf, NULL));
}

json_t *wsplit__json(const struct wsplit *w)
{
    json_t *o = json_object();
    int g;

    json_object_set_new(o, "class", /* null: no bytes to weigh */
                        w->bytes ? json_string(impl__name(wsplit__class(w))) : json_null());
    json_object_set_new(o, "mixed", json_boolean(wsplit__mixed(w)));
    json_object_set_new(o, "bytes", json_integer((json_int_t)w->bytes));
    json_object_set_new(o, "crypto_ns", json_integer((json_int_t)w->ns));
    for (g = 0; g < WG_N; g++) {
        json_t *e = json_object();

        json_object_set_new(e, "bytes", json_integer((json_int_t)w->g[g].bytes));
        json_object_set_new(e, "share_bytes", share(w->g[g].bytes, w->bytes));
        json_object_set_new(e, "crypto_ns", json_integer((json_int_t)w->g[g].ns));
        json_object_set_new(e, "share_crypto", share(w->g[g].ns, w->ns));
        json_object_set_new(e, "copies", copies_json(&w->g[g]));
        json_object_set_new(o, wgroup__name((enum wgroup)g), e);
    }
    return o;
}

const struct lib *weights__bucket_copy(const struct model *m, const struct bucket *b)
{
    return trace__bucket_lib(&m->traces[b->trace], b, model__name(m, b->path));
}

static bool is_native(const struct model *m, const struct bucket *b)
{
    return !strcmp(model__name(m, b->path), "native");
}

static void add_bucket(const struct model *m, const struct bucket *b, struct wsplit *w)
{
    struct impl_result r;

    impl__classify(m, b, &r);
    wsplit__add(w, r.cls, weights__bucket_copy(m, b), b->st.rec_ct, bucket__crypto_ns(b));
}

/* The app copies' socket bytes that no record covers, by the bytes-unseen rule (more than
 * a handshake sends in clear); only the receiving side has socket reads. */
static uint64_t unseen_of(const struct copy_fig *f)
{
    if (!f->sock || f->unseen <= REACH_UNSEEN_MIN || f->unseen * 100 <= f->sock->bytes)
        return 0;
    return f->unseen;
}

void weights__process(const struct summary *s, struct wsplit *w)
{
    const struct model *m = s->m;
    struct copy_fig f[REACH_MAX_FIGS];
    bool native = false;
    size_t i;
    int k, n;

    memset(w, 0, sizeof(*w));
    for (i = 0; i < m->nbuckets; i++)
        native |= is_native(m, &m->buckets[i]) && m->buckets[i].st.rec_ct;
    for (i = 0; i < m->nbuckets; i++)
        if (!native || is_native(m, &m->buckets[i]))
            add_bucket(m, &m->buckets[i], w);
    if (s->out)
        return;
    n = reach__copies(s, f, REACH_MAX_FIGS, NULL);
    for (k = 0; k < n; k++)
        wsplit__add_unmeasured(w, f[k].l, unseen_of(&f[k]));
}

void weights__row(const struct summary *s, int cipher, int path, struct wsplit *w)
{
    const struct model *m = s->m;
    size_t i;

    memset(w, 0, sizeof(*w));
    for (i = 0; i < m->nbuckets; i++)
        if (m->buckets[i].cipher == cipher && m->buckets[i].path == path)
            add_bucket(m, &m->buckets[i], w);
}

void weights__copy(const struct summary *s, const struct trace *t, const struct lib *l,
                   struct wsplit *w)
{
    const struct model *m = s->m;
    struct copy_fig f[REACH_MAX_FIGS];
    size_t i;
    int k, n;

    memset(w, 0, sizeof(*w));
    for (i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];

        if (&m->traces[b->trace] == t && is_native(m, b) && weights__bucket_copy(m, b) == l)
            add_bucket(m, b, w);
    }
    if (s->out || !t->reach || !t->reach->ncopies)
        return;
    n = reach__copies(s, f, REACH_MAX_FIGS, NULL);
    for (k = 0; k < n; k++)
        if (f[k].t == t && f[k].l == l)
            wsplit__add_unmeasured(w, l, unseen_of(&f[k]));
}

uint64_t weights__socket_bytes(const struct model *m)
{
    uint64_t n = 0;
    size_t i;

    for (i = 0; i < m->ntraces; i++) {
        const struct reach *r = m->traces[i].reach;

        for (int k = 0; r && k < r->ncopies; k++)
            n += r->copies[k].bytes;
    }
    return n;
}

/* "/opt/x/libvendor.so (OpenSSL 3.0.19, build id 1a2b3c4d5e6f)" */
static void copy_name(const char *path, const char *version, const char *build_id, char *buf,
                      size_t cap)
{
    bool v = version && *version, b = build_id && *build_id;

    snprintf(buf, cap, "%s%s%s%s%s%.12s%s", path ? path : "?", v || b ? " (" : "", v ? version : "",
             v && b ? ", " : "", b ? "build id " : "", b ? build_id : "", v || b ? ")" : "");
}

/* A blind spot as a noun phrase: "the TLS of /opt/x/libvendor.so (OpenSSL 3.0.19, ...)". */
static void blind_name(const struct blind *b, char *buf, size_t cap)
{
    char who[400];

    if (!strcmp(b->what, "other_tls")) {
        copy_name(b->path, b->version, b->build_id, who, sizeof(who));
        snprintf(buf, cap, "the TLS of %s %s", b->library ? b->library : "another library", who);
    } else {
        copy_name(b->path, b->version, b->build_id, who, sizeof(who));
        snprintf(buf, cap, "%s%s",
                 !strcmp(b->what, "ktls") ? "the kernel TLS (kTLS) records of " : "the TLS of ",
                 who);
    }
}

int weights__blind(const struct summary *s, const struct trace *t, char *name, size_t cap)
{
    struct copy_fig f[REACH_MAX_FIGS];
    int i, k, nf, n = 0;

    if (name && cap)
        name[0] = 0;
    for (i = 0; i < t->nblind; i++) {
        const struct blind *b = &t->blind[i];

        if (!strcmp(b->what, "calls"))
            continue; /* reads bound past the hooks: their records are still measured */
        if (!n++ && name)
            blind_name(b, name, cap);
    }
    if (!t->reach || !t->reach->ncopies)
        return n; /* no socket reads: nothing unmeasured (and a fleet skips the copies' pass) */
    nf = reach__copies(s, f, REACH_MAX_FIGS, NULL);
    for (k = 0; k < nf; k++) {
        if (f[k].t != t || !unseen_of(&f[k]))
            continue;
        if (!n++ && name) {
            char who[400];

            copy_name(f[k].l->path, f[k].l->version, f[k].l->build_id, who, sizeof(who));
            snprintf(name, cap, "the socket bytes of %s that no record covers", who);
        }
    }
    return n;
}

uint64_t weights__explained_ns(const struct model *m, uint32_t ti, uint64_t *hs_ns)
{
    uint64_t crypto = 0, hs = 0;
    size_t i;

    for (i = 0; i < m->nbuckets; i++)
        if (m->buckets[i].trace == ti)
            crypto += bucket__crypto_ns(&m->buckets[i]);
    for (i = 0; i < m->nconns; i++)
        if (m->conns[i].trace == ti && m->conns[i].hs.have && m->conns[i].hs.ns > 0)
            hs += (uint64_t)m->conns[i].hs.ns;
    if (hs_ns)
        *hs_ns = hs;
    return crypto + hs;
}

/* The copy's entry of --json "copies": who it is, its class and its shares of the process. */
static void copy_json(json_t *o, const struct summary *s, const struct copy_fig *f)
{
    struct wsplit w;

    weights__copy(s, f->t, f->l, &w);
    json_object_set_new(o, "build_id", json_string(f->l->build_id ? f->l->build_id : ""));
    json_object_set_new(o, "class",
                        w.bytes ? json_string(impl__name(wsplit__class(&w))) : json_null());
    json_object_set_new(o, "bytes", json_integer((json_int_t)w.bytes));
    json_object_set_new(o, "crypto_ns", json_integer((json_int_t)w.ns));
    json_object_set_new(o, "share_bytes", share(w.bytes, s->split.bytes));
    json_object_set_new(o, "share_crypto", share(w.ns, s->split.ns));
    json_object_set_new(o, "split", wsplit__json(&w));
}

void weights__copies_json(const struct summary *s, json_t *copies)
{
    struct copy_fig f[REACH_MAX_FIGS];
    int n = reach__copies(s, f, REACH_MAX_FIGS, NULL), k;

    /* The array is report_reach_json's, built from the same list in the same order. */
    for (k = 0; k < n && k < (int)json_array_size(copies); k++) {
        json_t *o = json_array_get(copies, (size_t)k);

        if (json_integer_value(json_object_get(o, "lib")) == f[k].l->id)
            copy_json(o, s, &f[k]);
    }
}

static void copy_line(FILE *out, const struct summary *s, const struct copy_fig *f,
                      const struct wsplit *w)
{
    char name[512], split[640];
    struct fmtbuf a, b;

    copy_name(f->l->path, f->l->version, f->l->build_id, name, sizeof(name));
    fprintf(out, "  copy %s\n    %s: %s of the bytes, %s of the crypto time", name,
            impl__name(wsplit__class(w)), fmt_pct(&a, (double)w->bytes / (double)s->split.bytes),
            fmt_pct(&b, s->split.ns ? (double)w->ns / (double)s->split.ns : 0));
    if (wsplit__mixed(w)) {
        wsplit__text(w, split, sizeof(split));
        fprintf(out, " (%s)", split);
    }
    fputc('\n', out);
}

void weights__copies_text(FILE *out, const struct summary *s)
{
    struct copy_fig f[REACH_MAX_FIGS];
    struct wsplit w[REACH_MAX_FIGS];
    int n = reach__copies(s, f, REACH_MAX_FIGS, NULL), order[REACH_MAX_FIGS], k, i, with = 0;

    if (s->out || !s->split.bytes)
        return;
    for (k = 0; k < n; k++) { /* most bytes first, the copies' own order on a tie */
        weights__copy(s, f[k].t, f[k].l, &w[k]);
        with += w[k].bytes > 0;
        for (i = k; i > 0 && w[order[i - 1]].bytes < w[k].bytes; i--)
            order[i] = order[i - 1];
        order[i] = k;
    }
    if (with < 2 && !s->split.g[WG_UNMEASURED].bytes)
        return; /* one copy: the instances above say it all */
    fprintf(out, "  by copy (share of the bytes decrypted and of the crypto time):\n");
    for (k = 0; k < n; k++)
        if (w[order[k]].bytes)
            copy_line(out, s, &f[order[k]], &w[order[k]]);
}
