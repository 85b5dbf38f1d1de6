/* scan.c: jansson costs ~4 us per line (an allocated hash table per object), too slow for
 * the fleet budget (>= 2 M events/s). This scanner accepts only a strict subset of JSON (flat
 * object, ASCII strings without escapes, integers, true/false/null) and hands everything else
 * to jansson, so it can never accept a line jansson would reject. The fuzz target checks the
 * two agree. Lines of one kind repeat the writer's key order, so most members are recognised
 * by comparing their bytes with those the same member of the last such line had (memo). */
#include "input/scan.h"

#include "input/lex.h"
#include "input/shape.h"

#include <string.h>

struct cur {
    const char *p, *end;
    const char *line;     /* where the line starts (for the log) */
    struct shape_log *lg; /* the line's integers, for shape.c (NULL: not logged) */
};

/* An integer that ended at c->p after starting at start, setting field slot (-1: none). */
static void log_int(struct cur *c, int slot, const char *start)
{
    struct shape_log *lg = c->lg;

    if (!lg)
        return;
    if (lg->n == SHAPE_INTS) {
        lg->full = true;
        return;
    }
    lg->v[lg->n].slot = slot;
    lg->v[lg->n].start = (uint32_t)(start - c->line);
    lg->v[lg->n].end = (uint32_t)(c->p - c->line);
    lg->n++;
}

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
    const char *start;
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
        start = c->p;
        if (scan_int(c, &v))
            return -1;
        log_int(c, f ? f->slot : -1, start);
        return f ? event__set_int(e, f, v, err, sizeof(err)) : 0;
    }
}

/* Members the memo covers per kind; keys and string values it can hold. Lines of a hot kind
 * have at most 20 members, keys at most 13 bytes as `"name":`, strings (cipher, suite, fn)
 * fewer than 32 quoted. */
#define MEMO_MEMBERS 31
#define MEMO_KEY     16
#define MEMO_VAL     32

/* What member j of the last line of a kind held: the key's bytes `"name":` and its field,
 * and the last string value there as `"value"`. Only bytes the scanner checked once are
 * kept, so bytes equal to them scan the same way again. (One table: the analyzer reads one
 * trace at a time on one thread.) */
struct memo {
    const struct field *f;
    uint8_t klen, vlen;
    char key[MEMO_KEY];
    char val[MEMO_VAL];
};
static struct memo memos[EV_N][MEMO_MEMBERS + 1]; /* the last: every member past them */

/* The last kinds "ev" named (rec, read, write, conn alternate): name bytes and kind. */
#define EV_MEMO 4
static struct {
    uint8_t n;
    char s[MEMO_KEY];
    enum ev_kind k;
} ev_memo[EV_MEMO];
static unsigned ev_memo_next;

/* In the member loop the line's last byte that is not white space is its '}' and the cursor
 * never passes it, so runs of white space and of digits stop without a bound check. */
static inline void skip_ws_fast(struct cur *c)
{
    while (lex_ws[(unsigned char)*c->p])
        c->p++;
}

/* An integer as scan_int reads it, without bound checks (see lex_int). */
static inline int fast_int(struct cur *c, int64_t *out)
{
    const char *q = lex_int(c->p, c->end, out);

    if (!q)
        return -1;
    c->p = q;
    return 0;
}

static enum ev_kind ev_kind_memo(struct strv s)
{
    unsigned i;

    for (i = 0; i < EV_MEMO; i++)
        if (ev_memo[i].n == s.n && s.n && same_bytes(s.p, ev_memo[i].s, s.n))
            return ev_memo[i].k;
    enum ev_kind k = ev_kind__parse(s.p, s.n);
    if (s.n && s.n <= MEMO_KEY) {
        i = ev_memo_next++ % EV_MEMO;
        ev_memo[i].n = (uint8_t)s.n;
        memcpy(ev_memo[i].s, s.p, s.n);
        ev_memo[i].k = k;
    }
    return k;
}

/* A string value of field f (its type checked by the caller); m: the member's memo. */
static int fast_str(struct cur *c, struct event *e, const struct field *f, struct memo *m)
{
    size_t avail = (size_t)(c->end - c->p);
    const char *q = c->p;
    struct strv s;

    if (*q != '"')
        return -1;
    if (m && m->vlen && m->vlen <= avail && same_bytes(q, m->val, m->vlen)) {
        s.p = q + 1;
        s.n = m->vlen - 2u;
        c->p = q + m->vlen;
    } else {
        if (scan_str(c, &s))
            return -1;
        if (m && (size_t)(c->p - q) <= MEMO_VAL) {
            m->vlen = (uint8_t)(c->p - q);
            memcpy(m->val, q, m->vlen);
        }
    }
    e->s[f->slot] = s;
    e->have_s |= 1u << f->slot;
    if (f->slot == S_EV)
        e->kind = ev_kind_memo(s);
    return 0;
}

/* The value of known field f, set as event__set_* would; a value of another JSON type is
 * declined (jansson's path then names the key and the type). */
static int fast_value(struct cur *c, struct event *e, const struct field *f, struct memo *m)
{
    const char *start;
    int64_t v;
    bool t;

    skip_ws_fast(c);
    switch (f->type) {
    case FT_INT:
        start = c->p;
        if (fast_int(c, &v))
            return -1;
        log_int(c, f->slot, start);
        e->i[f->slot] = v;
        e->have_i |= 1ull << f->slot;
        return 0;
    case FT_STR:
        return fast_str(c, e, f, f->slot == S_EV ? NULL : m);
    case FT_BOOL:
        t = *c->p == 't';
        if (scan_lit(c, t ? "true" : "false"))
            return -1;
        e->have_tag_ok = true;
        e->tag_ok = t;
        return 0;
    }
    return -1;
}

/* A key the memo did not predict: scanned, looked up, and remembered when written plainly. */
static int scan_key(struct cur *c, const struct field **f, struct memo *m)
{
    const char *q = c->p;
    struct strv key;

    if (*q != '"' || scan_str(c, &key) || eat(c, ':'))
        return -1;
    *f = key.n ? field__find(key.p, key.n) : NULL;
    if ((size_t)(c->p - q) == key.n + 3 && key.n + 3 <= MEMO_KEY) {
        m->klen = (uint8_t)(key.n + 3);
        memcpy(m->key, q, m->klen);
        m->f = *f;
    }
    return 0;
}

static int scan_members(struct cur *c, struct event *e)
{
    struct memo *row = memos[e->kind], *m;
    const struct field *f;
    unsigned j;

    skip_ws_fast(c);
    if (*c->p == '}') {
        c->p++;
        return 0;
    }
    for (j = 0;; j++) {
        skip_ws_fast(c);
        m = &row[j < MEMO_MEMBERS ? j : MEMO_MEMBERS];
        if (m->klen && m->klen <= (size_t)(c->end - c->p) && same_bytes(c->p, m->key, m->klen)) {
            f = m->f;
            c->p += m->klen;
        } else if (scan_key(c, &f, m)) {
            return -1;
        }
        if (!f) {
            if (scan_value(c, e, NULL))
                return -1;
        } else if (fast_value(c, e, f, m)) {
            return -1;
        } else if (f->slot == S_EV && f->type == FT_STR) {
            row = memos[e->kind]; /* the members after "ev" follow that kind's order */
        }
        skip_ws_fast(c);
        if (*c->p == ',') {
            c->p++;
            continue;
        }
        return eat(c, '}');
    }
}

int scan__line(const char *p, size_t n, struct event *e)
{
    struct shape_log lg;
    struct cur c = {p, p + n, p, &lg};
    const char *last = p + n;

    event__clear(e);
    while (last > p && lex_ws[(unsigned char)last[-1]])
        last--;
    if (last == p || last[-1] != '}') /* the sentinel the fast paths rely on */
        return -1;
    if (!shape__match(p, last, c.end, e))
        return 0;
    lg.n = 0;
    lg.full = false;
    if (eat(&c, '{') || scan_members(&c, e))
        return -1;
    skip_ws(&c);
    if (c.p != c.end)
        return -1;
    if (e->kind != EV_REC && e->kind != EV_READ && e->kind != EV_WRITE && e->kind != EV_CONN)
        return -1;
    shape__learn(p, last, e, &lg);
    return 0;
}

int scan__tail(const char *p, size_t n, struct event *e)
{
    struct cur c = {p, p + n, p, NULL};
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
