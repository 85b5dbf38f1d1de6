/* model_reach.c: the reach events into the model: the socket reads of copies whose SSL_read
 * tlsmeter cannot reach (sockread: the TLS stream as it arrived, per copy and socket), and the
 * callers whose GOT slots were rewritten to the hooks (fwd with reach). The report's "copies
 * and reach" section and its verdicts read them (verdicts/reach.c). Memory is bounded per
 * trace; what does not fit is counted. */
#include "model/model.h"

#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static struct reach *reach_of(struct trace *t)
{
    if (!t->reach)
        t->reach = xcalloc(1, sizeof(*t->reach));
    return t->reach;
}

static struct reach_copy *copy_of(struct reach *r, int64_t lib)
{
    for (int i = 0; i < r->ncopies; i++)
        if (r->copies[i].lib == lib)
            return &r->copies[i];
    if (r->ncopies == REACH_MAX_COPIES)
        return NULL;
    r->copies[r->ncopies].lib = lib;
    return &r->copies[r->ncopies++];
}

static void socket_add(struct reach_copy *c, int64_t fd, uint64_t got)
{
    for (int i = 0; i < c->nsockets; i++)
        if (c->sockets[i].fd == fd) {
            c->sockets[i].calls++;
            c->sockets[i].bytes += got;
            return;
        }
    if (c->nsockets == REACH_MAX_SOCKETS) {
        c->sockets_more++;
        return;
    }
    c->sockets[c->nsockets].fd = fd;
    c->sockets[c->nsockets].calls = 1;
    c->sockets[c->nsockets++].bytes = got;
}

int model__sockread(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    json_t *lib = json_object_get(o, "lib"), *fd = json_object_get(o, "fd");
    json_t *got = json_object_get(o, "got"), *at = json_object_get(o, "t");
    (void)m;

    if (!json_is_integer(lib) || !json_is_integer(fd) || !json_is_integer(got)) {
        snprintf(err, errlen, "sockread without integer \"lib\", \"fd\" and \"got\"");
        return -1;
    }
    struct reach *r = reach_of(t);
    struct reach_copy *c = copy_of(r, json_integer_value(lib));
    int64_t n = json_integer_value(got);
    if (!c) {
        r->copies_more++;
        return 0;
    }
    c->calls++;
    if (n > 0)
        c->bytes += (uint64_t)n;
    else if (n == 0)
        c->eof++;
    else if (json_integer_value(json_object_get(o, "err")) == 11) /* EAGAIN */
        c->would_block++;
    else
        c->errors++;
    socket_add(c, json_integer_value(fd), n > 0 ? (uint64_t)n : 0);
    if (json_is_integer(at) && json_integer_value(at) > t->max_t)
        t->max_t = json_integer_value(at);
    return 0;
}

/* A summary trace's "sockets" part (TLSMETER_EVENTS=summary): a copy's socket reads since
 * the last snapshot, summed (no per-socket figures: nsockets stays 0). */
int model__summary_sockets(struct trace *t, json_t *o, char *err, size_t errlen)
{
    static const char *const keys[] = {"reads", "bytes", "eof", "would_block", "errors"};
    json_t *lib = json_object_get(o, "lib");
    uint64_t v[5];

    if (!json_is_integer(lib)) {
        snprintf(err, errlen, "summary sockets without an integer \"lib\"");
        return -1;
    }
    for (size_t k = 0; k < 5; k++) {
        json_t *x = json_object_get(o, keys[k]);
        v[k] =
            json_is_integer(x) && json_integer_value(x) > 0 ? (uint64_t)json_integer_value(x) : 0;
    }
    struct reach *r = reach_of(t);
    struct reach_copy *c = copy_of(r, json_integer_value(lib));
    if (!c) {
        r->copies_more += v[0];
        return 0;
    }
    c->calls += v[0], c->bytes += v[1], c->eof += v[2], c->would_block += v[3], c->errors += v[4];
    c->summed = true;
    return 0;
}

static char *str_of(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);

    return xstrdup(json_is_string(v) ? json_string_value(v) : "");
}

/* "SSL_read, SSL_write, ..." from the fns array. */
static char *fns_of(json_t *arr)
{
    size_t i, n = 0, cap = 256;
    char *s = xcalloc(1, cap);
    json_t *v;

    json_array_foreach(arr, i, v)
    {
        const char *f = json_string_value(v);
        if (f && n + strlen(f) + 3 < cap)
            n += (size_t)snprintf(s + n, cap - n, "%s%s", n ? ", " : "", f);
    }
    return s;
}

int model__fwd(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    json_t *reach = json_object_get(o, "reach");
    (void)m, (void)err, (void)errlen;

    if (!json_is_string(reach) || !*json_string_value(reach))
        return 0; /* the linker's own binding: nothing past it */
    struct reach *r = reach_of(t);
    if (r->ncallers == REACH_MAX_CALLERS)
        return 0;
    struct reach_caller *c = &r->callers[r->ncallers++];
    c->from = str_of(o, "from");
    c->to = str_of(o, "to");
    c->reach = str_of(o, "reach");
    c->fns = fns_of(json_object_get(o, "fns"));
    c->lib = json_integer_value(json_object_get(o, "lib"));
    return 0;
}

void model__reach_free(struct trace *t)
{
    if (!t->reach)
        return;
    for (int i = 0; i < t->reach->ncallers; i++) {
        struct reach_caller *c = &t->reach->callers[i];
        free(c->from), free(c->to), free(c->reach), free(c->fns);
    }
    free(t->reach);
    t->reach = NULL;
}
