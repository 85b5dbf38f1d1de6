/* json.c: a tiny JSON writer for the hot path: no allocation, no locale, no printf. */
#include "base/json.h"

bool tlsm_json_stage_hot;

/* The fixed-record kind of ev in format 2 (common/trace2.def), 0 for every other event. */
static uint8_t hot_kind(const char *ev)
{
    if (ev[0] == 'r' && ev[1] == 'e' && ev[2] == 'c' && !ev[3])
        return 1;
    if (ev[0] == 'r' && ev[1] == 'e' && ev[2] == 'a' && ev[3] == 'd' && !ev[4])
        return 2;
    return strcmp(ev, "write") ? 0 : 3;
}

/* One room check for the whole `{"ev":"kind"` prefix: this runs for every line. */
void tlsm_json_begin(struct tlsm_json *j, char *buf, size_t cap, const char *ev)
{
    j->hot = tlsm_json_stage_hot && cap > sizeof(struct tlsm_hot_stage) + 72 ? hot_kind(ev) : 0;
    if (j->hot) { /* the keys without a slot become the tail text, after the stage */
        struct tlsm_hot_stage *st = tlsm_hot_at(buf);
        buf[0] = (char)j->hot; /* slots not set stay as they are: have says which are */
        j->have = 0;
        j->v = st->v;
        j->p = (char *)(st + 1);
        j->end = buf + cap - 2;
        j->full = false;
        j->depth = 0;
        return;
    }
    size_t n = strlen(ev);
    j->p = buf;
    j->end = buf + cap - 2; /* room for "}\n" */
    j->depth = 0;
    j->full = cap < n + 10;
    if (j->full)
        return;
    memcpy(j->p, "{\"ev\":\"", 7);
    memcpy(j->p + 7, ev, n);
    j->p[7 + n] = '"';
    j->p += n + 8;
}

/* The member's key (or the item's comma) now; its `{` or `[` when it closes (json.h). */
void tlsm_json_nest_k(struct tlsm_json *j, const char *k, size_t kn)
{
    tlsm_json_put(j, k, kn);
    if (j->depth == TLSM_JSON_DEPTH) {
        j->full = true; /* deeper than any event goes: a bug, so the line is dropped */
        return;
    }
    j->open[j->depth++] = j->p;
}

void tlsm_json_close(struct tlsm_json *j, char open, char close)
{
    if (!j->depth) {
        j->full = true; /* closed more than was opened */
        return;
    }
    char *first = j->open[--j->depth];
    if (j->full)
        return;
    if (j->p == first) { /* empty */
        char e[2] = {open, close};
        tlsm_json_put(j, e, 2);
        return;
    }
    *first = open; /* the first member's comma */
    tlsm_json_put(j, &close, 1);
}

void tlsm_json_key(struct tlsm_json *j, const char *k)
{
    tlsm_json_put(j, ",\"", 2);
    tlsm_json_escaped(j, k);
    tlsm_json_put(j, "\":", 2);
}

/* Digits written in place, two per step from a table, after counting them: integers are
 * most of a rec line, so no temporary buffer and no copy. */
size_t tlsm_json_digits(char *dst, uint64_t u)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
                                "31323334353637383940414243444546474849505152535455565758596061"
                                "62636465666768697071727374757677787980818283848586878889909192"
                                "93949596979899";
    static const uint64_t pow10[20] = {1,
                                       10,
                                       100,
                                       1000,
                                       10000,
                                       100000,
                                       1000000,
                                       10000000,
                                       100000000,
                                       1000000000,
                                       10000000000ULL,
                                       100000000000ULL,
                                       1000000000000ULL,
                                       10000000000000ULL,
                                       100000000000000ULL,
                                       1000000000000000ULL,
                                       10000000000000000ULL,
                                       100000000000000000ULL,
                                       1000000000000000000ULL,
                                       10000000000000000000ULL};
    /* Digit count from the bit length (log10(2) ~ 1233/4096), one compare to correct it:
     * no loop over the powers of ten (nanosecond times have 10 digits or more). */
    size_t n = 1;
    if (u) {
        unsigned t = ((64u - (unsigned)__builtin_clzll(u)) * 1233u) >> 12;
        n = t + 1 - (u < pow10[t]);
    }
    char *q = dst + n;
    while (u >= 100) {
        unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        *--q = pairs[d + 1];
        *--q = pairs[d];
    }
    if (u >= 10) {
        *--q = pairs[u * 2 + 1];
        *--q = pairs[u * 2];
    } else {
        *--q = (char)('0' + u);
    }
    return n;
}

/* Length of the valid UTF-8 sequence at c (2..4), or 0: overlong forms, surrogates and
 * code points past U+10FFFF are not valid (strict readers reject them). */
static size_t utf8_len(const unsigned char *c)
{
    if (c[0] >= 0xc2 && c[0] <= 0xdf)
        return (c[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c[0] >= 0xe0 && c[0] <= 0xef) {
        unsigned lo = c[0] == 0xe0 ? 0xa0 : 0x80, hi = c[0] == 0xed ? 0x9f : 0xbf;
        return c[1] >= lo && c[1] <= hi && (c[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (c[0] >= 0xf0 && c[0] <= 0xf4) {
        unsigned lo = c[0] == 0xf0 ? 0x90 : 0x80, hi = c[0] == 0xf4 ? 0x8f : 0xbf;
        return c[1] >= lo && c[1] <= hi && (c[2] & 0xc0) == 0x80 && (c[3] & 0xc0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* Escapes what JSON requires. Valid UTF-8 is kept as it is (a name is the user's, in their
 * script); a byte that is not part of valid UTF-8 becomes the text \xHH (JSON "\\xHH"), so
 * every line stays valid UTF-8 JSON for strict readers whatever bytes a path or setting
 * holds, and the byte can still be told. (A NUL ends the C string, so c[1..3] of a cut
 * sequence are read at most up to it.) */
void tlsm_json_escaped(struct tlsm_json *j, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const char *run = s;
    for (const unsigned char *c = (const unsigned char *)s; *c;) {
        size_t u = *c >= 0x80 ? utf8_len(c) : 0;
        if (u || (*c >= 0x20 && *c < 0x80 && *c != '"' && *c != '\\')) {
            c += u ? u : 1;
            continue;
        }
        tlsm_json_put(j, run, (size_t)((const char *)c - run));
        run = (const char *)c + 1;
        if (*c == '"' || *c == '\\') {
            char e[2] = {'\\', (char)*c};
            tlsm_json_put(j, e, 2);
        } else if (*c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[*c >> 4], hex[*c & 15]};
            tlsm_json_put(j, e, 6);
        } else {
            char e[5] = {'\\', '\\', 'x', hex[*c >> 4], hex[*c & 15]};
            tlsm_json_put(j, e, 5);
        }
        c++;
    }
    tlsm_json_put(j, run, strlen(run));
}

void tlsm_json_str_k(struct tlsm_json *j, const char *k, size_t kn, const char *s)
{
    tlsm_json_put(j, k, kn);
    tlsm_json_put(j, "\"", 1);
    tlsm_json_escaped(j, s ? s : "");
    tlsm_json_put(j, "\"", 1);
}

/* Fixed point by hand: snprintf's %f follows the program's locale (de_DE writes "0,2240",
 * which is not JSON). */
void tlsm_json_num_k(struct tlsm_json *j, const char *k, size_t kn, double v)
{
    char tmp[48];
    uint64_t units = v >= 0 && v < 1e15 ? (uint64_t)(v * 10000.0 + 0.5) : 0;
    size_t n = tlsm_json_digits(tmp, units / 10000);
    uint64_t frac = units % 10000;
    tmp[n++] = '.';
    for (int d = 1000; d; d /= 10)
        tmp[n++] = (char)('0' + (frac / (uint64_t)d) % 10);
    tlsm_json_put(j, k, kn);
    tlsm_json_put(j, tmp, n);
}

size_t tlsm_json_end(struct tlsm_json *j, char *buf)
{
    if (j->full || j->depth) /* a nested value left open would not be JSON */
        return 0;
    if (j->hot) {
        struct tlsm_hot_stage *st = tlsm_hot_at(buf);
        st->tail_len = (uint32_t)(j->p - (char *)(st + 1));
        st->have = j->have;
        return (size_t)(j->p - buf);
    }
    j->p[0] = '}';
    j->p[1] = '\n';
    return (size_t)(j->p + 2 - buf);
}
