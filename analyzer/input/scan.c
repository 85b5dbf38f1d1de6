/* scan.c: jansson costs ~4 us per line (an allocated hash table per object), too slow for
 * the 1 M events/s budget. This scanner accepts only a strict subset of JSON (flat object,
 * ASCII strings without escapes, integers, true/false/null) and hands everything else to
 * jansson, so it can never accept a line jansson would reject. The fuzz target checks the
 * two agree. */
#include "input/scan.h"

#include <string.h>

struct cur {
    const char *p, *end;
};

static void skip_ws(struct cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int eat(struct cur *c, char ch)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p != ch)
        return -1;
    c->p++;
    return 0;
}

/* Bytes a string may hold on the fast path: printable ASCII but the quote and the backslash. */
static const unsigned char plain[256] = {
    [0x20] = 1,
    [0x21] = 1,
    [0x23 ... 0x5b] = 1,
    [0x5d ... 0x7f] = 1,
};

/* A string of printable ASCII without escapes; c->p is on the opening quote. One table
 * lookup per byte (keys and values are most of every line). */
static int scan_str(struct cur *c, struct strv *out)
{
    const char *s = ++c->p, *p = s;

    while (p < c->end && plain[(unsigned char)*p])
        p++;
    if (p >= c->end || *p != '"')
        return -1; /* end of line, a control or non-ASCII byte, an escape */
    out->p = s;
    out->n = (size_t)(p - s);
    c->p = p + 1;
    return 0;
}

/* An integer as JSON writes it; reals and anything past 18 digits go to jansson. */
static int scan_int(struct cur *c, int64_t *out)
{
    bool neg = false;
    int64_t v = 0;
    int digits = 0;

    if (*c->p == '-') {
        neg = true;
        c->p++;
    }
    if (c->p < c->end && *c->p == '0') {
        c->p++;
        digits = 1;
    } else {
        /* 18 digits always fit in int64_t; a 19th sends the line to jansson. */
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9' && digits < 18) {
            v = v * 10 + (*c->p++ - '0');
            digits++;
        }
    }
    if (!digits || digits > 18)
        return -1;
    if (c->p < c->end &&
        ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' || *c->p == 'e' || *c->p == 'E'))
        return -1;
    *out = neg ? -v : v;
    return 0;
}

static int scan_lit(struct cur *c, const char *lit)
{
    size_t n = strlen(lit);

    if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n))
        return -1;
    c->p += n;
    return 0;
}

static int scan_value(struct cur *c, struct event *e, const struct field *f)
{
    char err[8];
    struct strv s;
    int64_t v;

    skip_ws(c);
    if (c->p >= c->end)
        return -1;
    switch (*c->p) {
    case '"':
        if (scan_str(c, &s))
            return -1;
        return f ? event__set_str(e, f, s.p, s.n, err, sizeof(err)) : 0;
    case 't':
        if (scan_lit(c, "true"))
            return -1;
        return f ? event__set_bool(e, f, true, err, sizeof(err)) : 0;
    case 'f':
        if (scan_lit(c, "false"))
            return -1;
        return f ? event__set_bool(e, f, false, err, sizeof(err)) : 0;
    case 'n':
        return scan_lit(c, "null") || f ? -1 : 0;
    default:
        if (*c->p != '-' && (*c->p < '0' || *c->p > '9'))
            return -1;
        if (scan_int(c, &v))
            return -1;
        return f ? event__set_int(e, f, v, err, sizeof(err)) : 0;
    }
}

static int scan_members(struct cur *c, struct event *e)
{
    struct strv key;

    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        skip_ws(c);
        if (c->p >= c->end || *c->p != '"' || scan_str(c, &key) || eat(c, ':'))
            return -1;
        if (scan_value(c, e, key.n ? field__find(key.p, key.n) : NULL))
            return -1;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        return eat(c, '}');
    }
}

int scan__line(const char *p, size_t n, struct event *e)
{
    struct cur c = {p, p + n};

    event__clear(e);
    if (eat(&c, '{') || scan_members(&c, e))
        return -1;
    skip_ws(&c);
    if (c.p != c.end)
        return -1;
    return e->kind == EV_REC || e->kind == EV_READ || e->kind == EV_CONN ? 0 : -1;
}

int scan__tail(const char *p, size_t n, struct event *e)
{
    struct cur c = {p, p + n};
    struct strv key;

    while (c.p < c.end) {
        if (*c.p != ',')
            return -1;
        c.p++;
        skip_ws(&c);
        if (c.p >= c.end || *c.p != '"' || scan_str(&c, &key) || eat(&c, ':'))
            return -1;
        if (scan_value(&c, e, key.n ? field__find(key.p, key.n) : NULL))
            return -1;
        skip_ws(&c);
    }
    return 0;
}
