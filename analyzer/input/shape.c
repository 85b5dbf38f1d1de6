/* shape.c: a trace's hot lines repeat a few shapes (a rec, a read, a rec of the other
 * direction): the same keys in the same order with the same strings, only the integers
 * differ. A line the scanner read is kept as its runs of bytes between integers; a later
 * line equal to those runs, with an integer as lex_int reads it in each gap, is what the
 * scanner would read the same way (same bytes, same tokens, every integer checked), so it
 * fills the event with one word compare per 8 bytes and one parse per integer, without
 * looking at keys. Anything else goes to the scanner, which learns the new shape. */
#include "input/shape.h"

#include "input/lex.h"

#include <string.h>

/* Shapes kept (most recently used first) and the longest line kept as one. A server's trace
 * mixes about ten (records both ways, some preempted or with a stack, reads with an error):
 * eight cost it 4 % more instructions than sixteen, and a random mix of 36 shapes 2 % less. */
#define SHAPES      8
#define SHAPE_BYTES 512

struct shape {
    unsigned nlit; /* runs of bytes: one more than the integers */
    uint16_t lit_off[SHAPE_INTS + 1], lit_len[SHAPE_INTS + 1];
    int8_t slot[SHAPE_INTS]; /* each integer's field, -1 none */
    unsigned nstr;
    struct {
        uint8_t slot, lit;
        uint16_t off, len;
    } str[S_N]; /* string fields: where in which run of bytes */
    uint64_t have_i;
    uint32_t have_s; /* the fields it sets */
    enum ev_kind kind;
    bool have_tag_ok, tag_ok;
    char bytes[SHAPE_BYTES];
};

/* One set: the analyzer reads one trace at a time on one thread. */
static struct shape shapes[SHAPES];
static uint8_t order[SHAPES]; /* indexes into shapes, most recently used first */
static unsigned nshapes;

/* A match that failed after writing the first n integers: their have bits, so that
 * event__clear zeroes them. */
static int failed(const struct shape *s, unsigned n, struct event *e)
{
    unsigned i;

    for (i = 0; i < n; i++)
        if (s->slot[i] >= 0)
            e->have_i |= 1ull << s->slot[i];
    return -1;
}

static int match_one(const struct shape *s, const char *p, const char *last, const char *end,
                     struct event *e)
{
    const char *q = p, *at[SHAPE_INTS + 1];
    unsigned i, k;
    int64_t v;

    if (!s->nlit)
        return -1;
    for (i = 0;; i++) {
        size_t len = s->lit_len[i];

        if ((size_t)(end - q) < len || !same_bytes(q, s->bytes + s->lit_off[i], len))
            return failed(s, i, e);
        at[i] = q;
        q += len;
        if (i + 1 == s->nlit)
            break;
        if (!(q = lex_int(q, end, &v)))
            return failed(s, i, e);
        if (s->slot[i] >= 0)
            e->i[s->slot[i]] = v;
    }
    if (q != last) /* more than white space after the closing '}' */
        return failed(s, i, e);
    for (k = 0; k < s->nstr; k++) {
        e->s[s->str[k].slot].p = at[s->str[k].lit] + s->str[k].off;
        e->s[s->str[k].slot].n = s->str[k].len;
    }
    e->have_i = s->have_i;
    e->have_s = s->have_s;
    e->kind = s->kind;
    e->have_tag_ok = s->have_tag_ok;
    e->tag_ok = s->tag_ok;
    return 0;
}

static void to_front(unsigned k)
{
    uint8_t idx = order[k];

    for (; k; k--)
        order[k] = order[k - 1];
    order[0] = idx;
}

/* The shape that came after each one last time, tried first: lines alternate (a rec, then
 * the read it belongs to), so the most recent shape is rarely the next one. */
static int8_t after[SHAPES] = {[0 ... SHAPES - 1] = -1};
static int prev = -1; /* the shape of the last line */

static void seen(int idx)
{
    if (prev >= 0)
        after[prev] = (int8_t)idx;
    prev = idx;
}

int shape__match(const char *p, const char *last, const char *end, struct event *e)
{
    int guess = prev >= 0 ? after[prev] : -1;
    unsigned k;

    if (guess >= 0) {
        if (!match_one(&shapes[guess], p, last, end, e)) {
            prev = guess;
            return 0;
        }
        event__clear(e);
    }
    for (k = 0; k < nshapes; k++) {
        if (order[k] == guess)
            continue;
        if (!match_one(&shapes[order[k]], p, last, end, e)) {
            seen(order[k]);
            if (k)
                to_front(k);
            return 0;
        }
        event__clear(e);
    }
    return -1;
}

/* The run of bytes holding the n bytes at offset o of the line, or -1. */
static int run_of(const struct shape *s, const uint32_t *start, size_t o, size_t n)
{
    unsigned i;

    for (i = 0; i < s->nlit; i++)
        if (o >= start[i] && o + n <= start[i] + s->lit_len[i])
            return (int)i;
    return -1;
}

static int learn_strings(struct shape *s, const char *p, const struct event *e,
                         const uint32_t *start)
{
    unsigned slot;
    int lit;

    s->nstr = 0;
    for (slot = 0; slot < S_N; slot++) {
        if (!(e->have_s & (1u << slot)))
            continue;
        size_t o = (size_t)(e->s[slot].p - p);
        if ((lit = run_of(s, start, o, e->s[slot].n)) < 0)
            return -1;
        s->str[s->nstr].slot = (uint8_t)slot;
        s->str[s->nstr].lit = (uint8_t)lit;
        s->str[s->nstr].off = (uint16_t)(o - start[lit]);
        s->str[s->nstr].len = (uint16_t)e->s[slot].n;
        s->nstr++;
    }
    return 0;
}

void shape__learn(const char *p, const char *last, const struct event *e,
                  const struct shape_log *lg)
{
    uint32_t start[SHAPE_INTS + 1], from = 0, off = 0;
    unsigned i, k = nshapes < SHAPES ? nshapes : SHAPES - 1;
    struct shape *s;

    if (lg->full || last - p > SHAPE_BYTES)
        return;
    if (nshapes < SHAPES)
        order[nshapes++] = (uint8_t)k;
    s = &shapes[order[k]];
    s->nlit = lg->n + 1;
    for (i = 0; i <= lg->n; i++) {
        uint32_t to = i < lg->n ? lg->v[i].start : (uint32_t)(last - p);

        start[i] = from;
        s->lit_off[i] = (uint16_t)off;
        s->lit_len[i] = (uint16_t)(to - from);
        memcpy(s->bytes + off, p + from, to - from);
        off += to - from;
        if (i < lg->n) {
            s->slot[i] = (int8_t)lg->v[i].slot;
            from = lg->v[i].end;
        }
    }
    s->have_i = e->have_i;
    s->have_s = e->have_s;
    s->kind = e->kind;
    s->have_tag_ok = e->have_tag_ok;
    s->tag_ok = e->tag_ok;
    if (learn_strings(s, p, e, start)) {
        s->nlit = 0; /* cannot happen (strings lie between integers): kept as unusable */
        return;
    }
    seen(order[k]);
    to_front(k);
}
