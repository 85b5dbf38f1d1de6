/* metrics.c: the series a trace adds to the --openmetrics counters, and the sets they are
 * summed in. A trace is one process: every figure is the one the text report and --json give
 * for it (the on-CPU weights, the class of each (instance, cipher, path) bucket, the blind
 * spots, what the trace lost), cut by the labels docs/fleet.md lists. */
#include "output/metrics.h"

#include "model/impl.h"
#include "verdicts/weights.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define REC_LABELS                                                                                 \
    {                                                                                              \
        "program", "dir", "cipher", "path", "class", "copy", "version"                             \
    }

const struct metric_fam_def metric_fams[MF_N] = {
    [MF_CRYPTO_SECONDS] = {"tlsmeter_crypto_seconds_total",
                           "On-CPU time spent decrypting (dir in) or encrypting (dir out) TLS "
                           "records; switched-out records estimated, never more than measured.",
                           REC_LABELS, true},
    [MF_RECORDS] = {"tlsmeter_records_total", "TLS records decrypted or encrypted.", REC_LABELS,
                    false},
    [MF_PLAINTEXT_BYTES] = {"tlsmeter_plaintext_bytes_total", "Plaintext bytes of the TLS records.",
                            REC_LABELS, false},
    [MF_RECORD_BYTES] = {"tlsmeter_record_bytes_total",
                         "Ciphertext bytes of the TLS records (the bytes the class split weighs).",
                         REC_LABELS, false},
    [MF_SSL_CALLS] = {"tlsmeter_ssl_calls_total",
                      "SSL_read* calls (dir in) and SSL_write* calls (dir out).",
                      {"program", "dir"},
                      false},
    [MF_SSL_BYTES] = {"tlsmeter_ssl_bytes_total",
                      "Bytes SSL_read* returned (dir in) and SSL_write* wrote (dir out).",
                      {"program", "dir"},
                      false},
    [MF_HANDSHAKES] = {"tlsmeter_handshakes_total",
                       "TLS handshakes by role, kind (full, resumed, unknown) and suite.",
                       {"program", "role", "kind", "suite"},
                       false},
    [MF_HANDSHAKE_SECONDS] = {"tlsmeter_handshake_seconds_total",
                              "On-CPU time inside TLS handshakes.",
                              {"program", "role"},
                              true},
    [MF_HANDSHAKE_PART_SECONDS] = {"tlsmeter_handshake_part_seconds_total",
                                   "On-CPU handshake time by part (certificate parsing, "
                                   "signatures, key exchange, ...; other: outside every part).",
                                   {"program", "role", "part"},
                                   true},
    [MF_TRACES] = {"tlsmeter_traces_total", "Traced processes.", {"program"}, false},
    [MF_BLIND_TRACES] = {"tlsmeter_blind_traces_total",
                         "Traced processes in which TLS of this object could not be measured "
                         "(what: tls, ktls, calls, other_tls); their figures are missing.",
                         {"program", "copy", "what"},
                         false},
    [MF_UNMEASURED_BYTES] = {"tlsmeter_unmeasured_bytes_total",
                             "Bytes that arrived on the sockets of a copy in no record tlsmeter "
                             "saw (decrypted where it could not measure).",
                             {"program", "copy"},
                             false},
    [MF_LOST] = {"tlsmeter_lost_total",
                 "What traces say they lost (what: records, socket_reads, events, threads).",
                 {"program", "what"},
                 false},
};

int metric_fam__nlabels(enum metric_fam f)
{
    int n = 0;

    while (n < METRIC_LABELS && metric_fams[f].labels[n])
        n++;
    return n;
}

int metric_fam__find(const char *s)
{
    for (int f = 0; f < MF_N; f++)
        if (!strcmp(metric_fams[f].name, s))
            return f;
    return -1;
}

void mset__free(struct mset *ms)
{
    for (size_t i = 0; i < ms->n; i++)
        for (int k = 0; k < METRIC_LABELS; k++)
            free(ms->s[i].val[k]);
    free(ms->s);
    memset(ms, 0, sizeof(*ms));
}

int mset__add(struct mset *ms, int fam, const char *const *val, uint64_t v)
{
    struct series *s;
    int n = metric_fam__nlabels(fam);

    if (ms->n == ms->cap) {
        size_t cap = ms->cap ? ms->cap * 2 : 64;
        struct series *p = realloc(ms->s, cap * sizeof(*p));

        if (!p)
            return -1;
        ms->s = p;
        ms->cap = cap;
    }
    s = &ms->s[ms->n];
    memset(s, 0, sizeof(*s));
    s->fam = fam;
    s->v = v;
    for (int k = 0; k < n; k++)
        if (!(s->val[k] = strdup(val[k] ? val[k] : ""))) {
            while (k--)
                free(s->val[k]);
            errno = ENOMEM;
            return -1;
        }
    ms->n++;
    return 0;
}

static int series_cmp(const void *pa, const void *pb)
{
    const struct series *a = pa, *b = pb;
    int c;

    if (a->fam != b->fam)
        return a->fam < b->fam ? -1 : 1;
    for (int k = 0; k < METRIC_LABELS && a->val[k]; k++)
        if ((c = strcmp(a->val[k], b->val[k])))
            return c;
    return 0;
}

void mset__merge(struct mset *ms)
{
    size_t w = 0;

    if (ms->n > 1)
        qsort(ms->s, ms->n, sizeof(ms->s[0]), series_cmp);
    for (size_t i = 0; i < ms->n; i++) {
        if (w && !series_cmp(&ms->s[w - 1], &ms->s[i])) {
            ms->s[w - 1].v += ms->s[i].v;
            for (int k = 0; k < METRIC_LABELS; k++)
                free(ms->s[i].val[k]);
            continue;
        }
        ms->s[w++] = ms->s[i];
    }
    ms->n = w;
}

/* The label "class" of a family, or -1. */
static int class_label(int fam)
{
    for (int k = 0; k < METRIC_LABELS && metric_fams[fam].labels[k]; k++)
        if (!strcmp(metric_fams[fam].labels[k], "class"))
            return k;
    return -1;
}

/* The series of now (the first n) that is s but for its class, or NULL. */
static struct series *sibling(struct series *now, size_t n, const struct series *s, int ck)
{
    for (size_t i = 0; i < n; i++) {
        int k = 0;

        if (now[i].fam != s->fam)
            continue;
        while (k < METRIC_LABELS && s->val[k] && (k == ck || !strcmp(now[i].val[k], s->val[k])))
            k++;
        if (k == METRIC_LABELS || !s->val[k])
            return &now[i];
    }
    return NULL;
}

int mset__max_with(struct mset *now, const struct mset *before)
{
    size_t n0 = now->n;

    /* A bucket whose class changed between two readings (a copy of an unverified version is
     * "unknown" until its speed band has enough bulk records): what was counted under the
     * old class stays there, and the new class counts the rest, so the total is the
     * trace's and no series goes back. */
    for (size_t j = 0; j < before->n; j++) {
        const struct series *b = &before->s[j];
        int ck = class_label(b->fam);
        struct series *sib;

        if (ck < 0 || (n0 && bsearch(b, now->s, n0, sizeof(*b), series_cmp)) ||
            !(sib = sibling(now->s, n0, b, ck)))
            continue;
        sib->v = sib->v > b->v ? sib->v - b->v : 0;
        if (mset__add(now, b->fam, (const char *const *)b->val, b->v))
            return -1;
    }
    mset__merge(now);
    n0 = now->n;
    for (size_t j = 0; j < before->n; j++) {
        const struct series *b = &before->s[j];
        struct series *a = n0 ? bsearch(b, now->s, n0, sizeof(*b), series_cmp) : NULL;

        if (a) {
            if (a->v < b->v)
                a->v = b->v;
        } else if (mset__add(now, b->fam, (const char *const *)b->val, b->v)) {
            return -1;
        }
    }
    mset__merge(now);
    return 0;
}

int mset__add_all(struct mset *dst, const struct mset *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (mset__add(dst, src->s[i].fam, (const char *const *)src->s[i].val, src->s[i].v))
            return -1;
    return 0;
}

/* "OpenSSL 3.0.19 27 Jan 2026" -> "3.0.19"; another library's string as it is, shortened. */
static void short_version(const char *v, char *buf, size_t cap)
{
    size_t n;

    if (!v) {
        buf[0] = 0;
        return;
    }
    if (!strncmp(v, "OpenSSL ", 8))
        v += 8;
    n = strcspn(v, " ");
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, v, n);
    buf[n] = 0;
}

static int add_buckets(struct mset *ms, const struct model *m, const char *prog)
{
    const char *dir = m->out ? "out" : "in";
    char ver[48];
    int rc = 0;

    for (size_t i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];
        const struct lib *l = weights__bucket_copy(m, b);
        struct impl_result r;

        if (!b->st.recs)
            continue;
        impl__classify(m, b, &r);
        short_version(l ? l->version : NULL, ver, sizeof(ver));
        const char *v[] = {prog,
                           dir,
                           model__name(m, b->cipher),
                           model__name(m, b->path),
                           impl__name(r.cls),
                           l && l->path ? l->path : "(unknown)",
                           ver};
        rc |= mset__add(ms, MF_CRYPTO_SECONDS, v, bucket__crypto_ns(b));
        rc |= mset__add(ms, MF_RECORDS, v, b->st.recs);
        rc |= mset__add(ms, MF_PLAINTEXT_BYTES, v, b->st.rec_pt);
        rc |= mset__add(ms, MF_RECORD_BYTES, v, b->st.rec_ct);
    }
    return rc;
}

static int add_calls(struct mset *ms, const struct trace *t, const char *prog, bool out)
{
    const char *v[] = {prog, out ? "out" : "in"};
    int rc = 0;

    if (!t->st.reads)
        return 0;
    rc |= mset__add(ms, MF_SSL_CALLS, v, t->st.reads);
    rc |= mset__add(ms, MF_SSL_BYTES, v, t->st.got);
    return rc;
}

static int add_handshakes(struct mset *ms, const struct model *m, const char *prog)
{
    int rc = 0;

    for (size_t i = 0; i < m->nconns; i++) {
        const struct conn *c = &m->conns[i];
        const struct conn_hs *h = &c->hs;
        const char *role = model__name(m, c->role);
        int64_t parts = 0;

        if (!h->have)
            continue;
        if (!role || !*role)
            role = "unknown";
        const char *suite = model__name(m, c->suite);
        const char *v[] = {prog, role,
                           h->resumed == 1   ? "resumed"
                           : h->resumed == 0 ? "full"
                                             : "unknown",
                           suite && *suite ? suite : "unknown"};
        rc |= mset__add(ms, MF_HANDSHAKES, v, 1);
        rc |= mset__add(ms, MF_HANDSHAKE_SECONDS, v, h->ns > 0 ? (uint64_t)h->ns : 0);
        for (int p = 0; p < HP_N; p++) {
            const char *pv[] = {prog, role, hs_part_names[p]};

            if (h->part_ns[p] <= 0)
                continue;
            parts += h->part_ns[p];
            rc |= mset__add(ms, MF_HANDSHAKE_PART_SECONDS, pv, (uint64_t)h->part_ns[p]);
        }
        if (h->ns > parts) {
            const char *pv[] = {prog, role, hs_part_names[HP_OTHER]};
            rc |= mset__add(ms, MF_HANDSHAKE_PART_SECONDS, pv, (uint64_t)(h->ns - parts));
        }
    }
    return rc;
}

/* Blind spots, unmeasured socket bytes and what the trace lost: never read as "fine". */
static int add_unseen(struct mset *ms, const struct summary *s, const struct trace *t,
                      const char *prog)
{
    struct wsplit w;
    int rc = 0;

    for (int i = 0; i < t->nblind; i++) {
        const struct blind *b = &t->blind[i];
        const char *v[] = {prog, b->path ? b->path : "(unknown)", b->what ? b->what : "tls"};

        rc |= mset__add(ms, MF_BLIND_TRACES, v, 1);
    }
    for (int i = 0; i < t->nlibs; i++) {
        weights__copy(s, t, &t->libs[i], &w);
        if (w.g[WG_UNMEASURED].bytes) {
            const char *v[] = {prog, t->libs[i].path ? t->libs[i].path : "(unknown)"};
            rc |= mset__add(ms, MF_UNMEASURED_BYTES, v, w.g[WG_UNMEASURED].bytes);
        }
    }
    const struct {
        const char *what;
        uint64_t n;
    } lost[] = {
        {"records", t->sum_lost_recs},
        {"socket_reads", t->sum_lost_sockreads},
        {"events", t->dropped > 0 ? (uint64_t)t->dropped : 0},
        {"threads", t->sum_threads_unlisted > 0 ? (uint64_t)t->sum_threads_unlisted : 0},
    };
    for (size_t i = 0; i < sizeof(lost) / sizeof(lost[0]); i++) {
        const char *v[] = {prog, lost[i].what};
        if (lost[i].n)
            rc |= mset__add(ms, MF_LOST, v, lost[i].n);
    }
    return rc;
}

int metrics__trace(struct mset *ms, const struct model *in, const struct model *out,
                   const struct summary *s)
{
    const struct trace *t = &in->traces[0];
    const char *prog = trace_name(t);
    const char *v[] = {prog};
    int rc;

    if (in->ntraces != 1)
        return -1;
    rc = mset__add(ms, MF_TRACES, v, 1);
    rc |= add_buckets(ms, in, prog);
    rc |= add_calls(ms, t, prog, false);
    if (out && out->ntraces == 1) {
        rc |= add_buckets(ms, out, prog);
        rc |= add_calls(ms, &out->traces[0], prog, true);
    }
    rc |= add_handshakes(ms, in, prog);
    rc |= add_unseen(ms, s, t, prog);
    mset__merge(ms);
    return rc ? -1 : 0;
}
