/* report_reach.c: the "copies and reach" section of the text report and the "copies" array
 * of --json: each OpenSSL copy of each trace, how tlsmeter reached it (lib.reach), its
 * records, the bytes that arrived through its socket reads past the hooks (per
 * socket) and the callers whose GOT slots were rewritten (fwd reach). */
#include "output/report.h"

#include "base/fmt.h"
#include "verdicts/reach.h"

#include <string.h>

#define U(x) ((unsigned long long)(x))

static void callers_text(FILE *out, const struct trace *t)
{
    for (int i = 0; t->reach && i < t->reach->ncallers; i++) {
        const struct reach_caller *c = &t->reach->callers[i];
        fprintf(out, "  caller %s -> %s (%s: %s)\n", c->from, c->to, c->reach, c->fns);
    }
}

/* The copy's records, its own and those rerouted to tlsmeter's backend together: the
 * rerouted ones were its records (their lib names the backend that decrypted them). */
static void records_text(FILE *out, const struct copy_fig *f)
{
    struct fmtbuf a, b;
    char routed[96] = "";

    if (!f->recs && !f->routed_recs)
        return;
    if (f->routed_recs && !f->recs)
        snprintf(routed, sizeof(routed), ", all rerouted to tlsmeter's backend");
    else if (f->routed_recs)
        snprintf(routed, sizeof(routed),
                 "; %llu of them (%s plaintext) rerouted to tlsmeter's backend", U(f->routed_recs),
                 fmt_bytes(&a, f->routed_pt));
    fprintf(out, "    records  %llu (%llu application data), %s plaintext, %s on the wire%s\n",
            U(f->recs + f->routed_recs), U(f->recs_app + f->routed_app),
            fmt_bytes(&a, f->pt + f->routed_pt), fmt_bytes(&b, f->wire + f->routed_wire), routed);
}

static void copy_text(FILE *out, const struct copy_fig *f)
{
    char words[320];
    struct fmtbuf a, c;

    reach__words(f->l->reach, words, sizeof(words));
    fprintf(out, "  lib %lld %s%s%s%s\n", U(f->l->id), f->l->path ? f->l->path : "?",
            f->l->version ? " (" : "", f->l->version ? f->l->version : "",
            f->l->version ? ")" : "");
    fprintf(out, "    reach    %s%s%s\n", f->l->reach && *f->l->reach ? f->l->reach : "linker",
            ": ", words);
    records_text(out, f);
    if (!f->sock)
        return;
    const struct reach_copy *s = f->sock;
    char on[48];
    if (s->nsockets || !s->summed)
        snprintf(on, sizeof(on), "on %d socket%s", s->nsockets, s->nsockets == 1 ? "" : "s");
    else
        snprintf(on, sizeof(on), "(summary trace: per copy)");
    fprintf(out,
            "    sockets  %llu reads past the hooks %s: %s (%llu at end of stream, "
            "%llu would block, %llu failed); %s in no record tlsmeter saw\n",
            U(s->calls), on, fmt_bytes(&a, s->bytes), U(s->eof), U(s->would_block), U(s->errors),
            fmt_bytes(&c, f->unseen));
    for (int i = 0; i < s->nsockets && i < 10; i++)
        fprintf(out, "      fd %lld: %llu reads, %s\n", (long long)s->sockets[i].fd,
                U(s->sockets[i].calls), fmt_bytes(&a, s->sockets[i].bytes));
}

void report_reach(FILE *out, const struct summary *s)
{
    struct copy_fig f[REACH_MAX_FIGS];
    const struct trace *last = NULL;

    if (s->out || !reach__any(s))
        return; /* every copy bound by the linker: nothing to add to the instances above */
    int more, n = reach__copies(s, f, REACH_MAX_FIGS, &more);
    fprintf(out, "copies and reach (how tlsmeter reached each OpenSSL copy)\n");
    for (int k = 0; k < n; k++) {
        if (s->m->ntraces > 1 && f[k].t != last)
            fprintf(out, " %s\n", f[k].t->file);
        last = f[k].t;
        copy_text(out, &f[k]);
        if (k + 1 == n || f[k + 1].t != f[k].t)
            callers_text(out, f[k].t);
    }
    if (more)
        fprintf(out, "  (%d more copies in the input, not listed)\n", more);
}

static json_t *jstr(const char *v)
{
    return json_string(v ? v : "");
}

static json_t *sockets_json(const struct reach_copy *c)
{
    json_t *o = json_object(), *a = json_array();

    json_object_set_new(o, "reads", json_integer((json_int_t)c->calls));
    json_object_set_new(o, "bytes", json_integer((json_int_t)c->bytes));
    json_object_set_new(o, "eof", json_integer((json_int_t)c->eof));
    json_object_set_new(o, "would_block", json_integer((json_int_t)c->would_block));
    json_object_set_new(o, "errors", json_integer((json_int_t)c->errors));
    for (int i = 0; i < c->nsockets; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "fd", json_integer(c->sockets[i].fd));
        json_object_set_new(e, "reads", json_integer((json_int_t)c->sockets[i].calls));
        json_object_set_new(e, "bytes", json_integer((json_int_t)c->sockets[i].bytes));
        json_array_append_new(a, e);
    }
    json_object_set_new(o, "sockets", a);
    json_object_set_new(o, "sockets_more", json_integer((json_int_t)c->sockets_more));
    json_object_set_new(o, "summed", json_boolean(c->summed)); /* summary trace: no sockets */
    return o;
}

static json_t *callers_json(const struct trace *t, int64_t lib)
{
    json_t *a = json_array();

    for (int i = 0; t->reach && i < t->reach->ncallers; i++) {
        const struct reach_caller *c = &t->reach->callers[i];
        if (c->lib != lib)
            continue;
        json_t *e = json_object();
        json_object_set_new(e, "from", jstr(c->from));
        json_object_set_new(e, "reach", jstr(c->reach));
        json_object_set_new(e, "fns", jstr(c->fns));
        json_array_append_new(a, e);
    }
    return a;
}

json_t *report_reach_json(const struct summary *s, int *more)
{
    struct copy_fig f[REACH_MAX_FIGS];
    json_t *a = json_array();
    char words[320];
    int n = reach__copies(s, f, REACH_MAX_FIGS, more);

    for (int k = 0; k < n; k++) {
        json_t *o = json_object();
        reach__words(f[k].l->reach, words, sizeof(words));
        json_object_set_new(o, "file", jstr(f[k].t->file));
        json_object_set_new(o, "lib", json_integer(f[k].l->id));
        json_object_set_new(o, "path", jstr(f[k].l->path));
        json_object_set_new(o, "version", jstr(f[k].l->version));
        json_object_set_new(o, "reach", jstr(f[k].l->reach));
        json_object_set_new(o, "reach_text", jstr(words));
        json_object_set_new(o, "records", json_integer((json_int_t)f[k].recs));
        json_object_set_new(o, "records_app", json_integer((json_int_t)f[k].recs_app));
        json_object_set_new(o, "plaintext_bytes", json_integer((json_int_t)f[k].pt));
        json_object_set_new(o, "record_wire_bytes", json_integer((json_int_t)f[k].wire));
        json_object_set_new(o, "records_rerouted", json_integer((json_int_t)f[k].routed_recs));
        json_object_set_new(o, "records_rerouted_app", json_integer((json_int_t)f[k].routed_app));
        json_object_set_new(o, "plaintext_bytes_rerouted",
                            json_integer((json_int_t)f[k].routed_pt));
        json_object_set_new(o, "records_rerouted_wire_bytes",
                            json_integer((json_int_t)f[k].routed_wire));
        json_object_set_new(o, "socket_reads", f[k].sock ? sockets_json(f[k].sock) : json_null());
        json_object_set_new(o, "unseen_bytes", json_integer((json_int_t)f[k].unseen));
        json_object_set_new(o, "callers", callers_json(f[k].t, f[k].l->id));
        json_array_append_new(a, o);
    }
    return a;
}
