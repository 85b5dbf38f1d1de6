/* reach.c: the copies of each trace and how they were reached (reach.h), and the verdicts on
 * bytes that flowed where tlsmeter's hooks could not see them: socket-reads (a copy whose
 * SSL_read is past the hooks: its bytes arrived through socket reads, no read events),
 * bytes-unseen (more arrived on those sockets than the records tlsmeter saw account for) and,
 * on the sending side, writes-bypassed (records sealed with no SSL_write seen). */
#include "verdicts/reach.h"

#include "base/fmt.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *way, *words;
} ways[] = {
    {"got", "callers' GOT slots rewritten to the hooks"},
    {"table", "provider cipher tables rewritten (records, class, reroute)"},
    {"entry", "SSL_* entry points patched (reads, connections)"},
    {"plt", "SSL_read unreachable: its socket reads traced instead"},
};

void reach__words(const char *reach, char *buf, size_t cap)
{
    size_t n = 0;

    buf[0] = 0;
    if (!reach || !*reach) {
        snprintf(buf, cap, "the dynamic linker's binding (LD_PRELOAD interposition)");
        return;
    }
    for (const char *p = reach; *p && n < cap;) {
        size_t len = strcspn(p, "+");
        const char *w = NULL;
        for (size_t i = 0; i < sizeof(ways) / sizeof(ways[0]); i++)
            if (strlen(ways[i].way) == len && !strncmp(p, ways[i].way, len))
                w = ways[i].words;
        n += (size_t)snprintf(buf + n, cap - n, "%s%s%.*s%s", n ? "; " : "", w ? w : "",
                              w ? 0 : (int)len, p, w ? "" : " (a way this analyzer does not know)");
        p += len + (p[len] == '+');
    }
}

static bool is_app(const struct lib *l)
{
    return !l->role || strcmp(l->role, "backend");
}

static const struct reach_copy *sock_of(const struct trace *t, int64_t lib)
{
    for (int i = 0; t->reach && i < t->reach->ncopies; i++)
        if (t->reach->copies[i].lib == lib)
            return &t->reach->copies[i];
    return NULL;
}

/* Whose records a trace's rerouted ones are. A rerouted record names the backend (its lib),
 * not the copy whose record it was: the trace's copy with socket reads when it has exactly
 * one (its SSL_read is past the hooks: those records came from its sockets), else its only
 * copy holding crypto code (a program with one OpenSSL). With several, the trace does not
 * say: NULL. */
static struct copy_fig *routed_owner(struct copy_fig *f, int n, const struct trace *t)
{
    struct copy_fig *sock = NULL, *crypto = NULL;
    int socks = 0, cryptos = 0;

    for (int k = 0; k < n; k++) {
        if (f[k].t != t)
            continue;
        if (f[k].sock)
            socks++, sock = &f[k];
        if (f[k].l->has_crypto)
            cryptos++, crypto = &f[k];
    }
    return socks == 1 ? sock : !socks && cryptos == 1 ? crypto : NULL;
}

/* Records per copy from the buckets: its own (lib: the copy), and rerouted ones (lib: the
 * backend) credited to routed_owner's copy. */
static void records_of(const struct summary *s, struct copy_fig *f, int n)
{
    const struct model *m = s->m;

    for (size_t i = 0; i < m->nbuckets; i++) {
        const struct bucket *b = &m->buckets[i];
        const struct trace *t = &m->traces[b->trace];
        struct copy_fig *c = NULL;

        if (strcmp(model__name(m, b->path), "native")) {
            if ((c = routed_owner(f, n, t))) {
                c->routed_recs += b->st.recs, c->routed_app += b->st.recs_app;
                c->routed_pt += b->st.rec_pt, c->routed_wire += b->st.rec_len + 5 * b->st.recs;
            }
            continue;
        }
        for (int k = 0; k < n && !c; k++)
            if (f[k].t == t && f[k].l->id == b->lib)
                c = &f[k];
        if (c) {
            c->recs += b->st.recs, c->recs_app += b->st.recs_app, c->pt += b->st.rec_pt;
            c->wire += b->st.rec_len + 5 * b->st.recs;
        }
    }
}

int reach__copies(const struct summary *s, struct copy_fig *out, int max, int *more)
{
    const struct model *m = s->m;
    int n = 0, over = 0;

    for (size_t i = 0; i < m->ntraces; i++) {
        const struct trace *t = &m->traces[i];
        for (int k = 0; k < t->nlibs; k++)
            if (is_app(&t->libs[k]) && n == max)
                over++;
            else if (is_app(&t->libs[k]))
                out[n++] =
                    (struct copy_fig){.t = t, .l = &t->libs[k], .sock = sock_of(t, t->libs[k].id)};
    }
    if (more)
        *more = over;
    records_of(s, out, n);
    for (int k = 0; k < n; k++) {
        uint64_t seen = out[k].wire + out[k].routed_wire;
        if (out[k].sock && out[k].sock->bytes > seen)
            out[k].unseen = out[k].sock->bytes - seen;
    }
    return n;
}

bool reach__any(const struct summary *s)
{
    const struct model *m = s->m;

    for (size_t i = 0; i < m->ntraces; i++) {
        const struct trace *t = &m->traces[i];
        if (t->reach && (t->reach->ncopies || t->reach->ncallers))
            return true;
        for (int k = 0; k < t->nlibs; k++)
            if (t->libs[k].reach && *t->libs[k].reach)
                return true;
    }
    return false;
}

static void socket_verdicts(struct summary *s, const struct copy_fig *f)
{
    const struct reach_copy *c = f->sock;
    struct fmtbuf a, b, u;
    uint64_t seen = f->wire + f->routed_wire;
    char routed[96] = "";

    if (f->routed_recs)
        snprintf(routed, sizeof(routed), ", %llu of them rerouted to tlsmeter's backend",
                 (unsigned long long)f->routed_recs);
    char on[64];
    if (c->nsockets || !c->summed)
        snprintf(on, sizeof(on), "on %d socket%s (sockread events)", c->nsockets,
                 c->nsockets == 1 ? "" : "s");
    else
        snprintf(on, sizeof(on), "(a summary trace: sockets not counted)");
    struct verdict *v = summary__verdict(
        s, V_SOCKET_READS, "blind",
        "%s: the SSL_read of %s%s%s%s is past the hooks, so its reads are not in the read "
        "figures: %s arrived through %llu socket reads %s, %s of it in the %llu records "
        "tlsmeter saw it decrypt%s; the rest (%s) is what the handshake sent in clear%s",
        f->t->file, f->l->path ? f->l->path : "?", f->l->version ? " (" : "",
        f->l->version ? f->l->version : "", f->l->version ? ")" : "", fmt_bytes(&a, c->bytes),
        (unsigned long long)c->calls, on, fmt_bytes(&b, seen < c->bytes ? seen : c->bytes),
        (unsigned long long)(f->recs + f->routed_recs), routed, fmt_bytes(&u, f->unseen),
        f->unseen > REACH_UNSEEN_MIN ? " and records tlsmeter did not see (bytes-unseen)" : "");
    verdict__evidence(v, "socket_bytes", (double)c->bytes);
    verdict__evidence(v, "socket_reads", (double)c->calls);
    verdict__evidence(v, "sockets", (double)c->nsockets);
    verdict__evidence(v, "record_wire_bytes", (double)seen);
    verdict__evidence(v, "unseen_bytes", (double)f->unseen);
    if (f->unseen <= REACH_UNSEEN_MIN || f->unseen * 100 <= c->bytes)
        return;
    v = summary__verdict(s, V_BYTES_UNSEEN, "blind",
                         "%s: %s of the %s that arrived on %s's sockets are in no record tlsmeter "
                         "saw decrypted (more than a handshake sends in clear): the record, byte "
                         "and crypto figures of this copy miss them",
                         f->t->file, fmt_bytes(&u, f->unseen), fmt_bytes(&a, c->bytes),
                         f->l->path ? f->l->path : "?");
    verdict__evidence(v, "unseen_bytes", (double)f->unseen);
    verdict__evidence(v, "socket_bytes", (double)c->bytes);
}

/* The sending side's twin of reads-bypassed: application records sealed with no SSL_write*
 * seen at all. libssl wrote them for itself: an SSL BIO (BIO_f_ssl, as `openssl s_server
 * -WWW` serves) calls SSL_write inside libssl, past the PLT, or the caller's SSL_write binds
 * past the hooks. Records and their crypto are measured; writes and connections are not. */
static void writes_bypassed(struct summary *s, const struct trace *t)
{
    uint64_t n = t->recs_outside_reads; /* the encrypting model: outside writes */

    if (n < 4 || t->st.reads)
        return;
    struct verdict *v = summary__verdict(
        s, V_WRITES_BYPASSED, "blind",
        "%s: records without writes: %llu application-data records were encrypted outside any "
        "SSL_write tlsmeter saw, and it saw none (libssl wrote them itself: an SSL BIO, "
        "BIO_f_ssl, as openssl s_server -WWW uses, calls SSL_write inside libssl; or the "
        "caller's SSL_write binds past the hooks): write sizes, connections and their totals "
        "are missing; crypto time per record is still measured",
        t->file, (unsigned long long)n);
    verdict__evidence(v, "records_outside_writes", (double)n);
}

void verdicts_reach(struct summary *s)
{
    struct copy_fig f[REACH_MAX_FIGS];

    if (s->out) { /* socket reads are the receiving side's: said once, with the decrypt figures */
        for (size_t i = 0; i < s->m->ntraces; i++)
            writes_bypassed(s, &s->m->traces[i]);
        return;
    }
    int n = reach__copies(s, f, REACH_MAX_FIGS, NULL); /* a fleet's first 64, as listed */
    for (int k = 0; k < n; k++)
        if (f[k].sock && f[k].sock->calls)
            socket_verdicts(s, &f[k]);
}
