/* read2.c: trace format 2 (docs/trace-format.md, common/trace2.def): chunk by chunk, each
 * decoded on its own (its strings, its time base), JSON entries handed to the line reader
 * (reader.c) and fixed records turned into events directly (or, for --jsonl, into their
 * format-1 JSON text). Bad bytes never crash or stall it: every length is checked against
 * what is there, a damaged chunk is skipped with a warning naming its offset. */
#include "input/read2.h"
#include "input/read2_in.h"

#include "input/reader_int.h"
#include "input/scan.h"
#include "common/trace2.def"
#include "base/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Larger than any chunk the writer makes (256 KiB): a header claiming more is damage. */
#define CHUNK_MAX (16u << 20)

struct strent {
    const char *p;
    uint8_t n;
};

struct cdec {
    struct rd *r;
    uint64_t off; /* the chunk's file offset, for messages */
    uint32_t tid;
    int64_t base;
    struct strent strs[256];
    /* The fast path's event, one per record kind: a kind's records set the same slots
     * record after record, so clearing what the last one set and this one did not
     * (direct()) is next to nothing. Zero at start, like event__clear leaves one. */
    struct event ev[4];
};

/* Little-endian loads: one unaligned load each (the fields are packed), swapped on a
 * big-endian host. */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define LE16(v) __builtin_bswap16(v)
#define LE32(v) __builtin_bswap32(v)
#define LE64(v) __builtin_bswap64(v)
#else
#define LE16(v) (v)
#define LE32(v) (v)
#define LE64(v) (v)
#endif

static inline __attribute__((always_inline)) uint64_t le(const unsigned char *p, unsigned w)
{
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;

    switch (w) {
    case 1:
        return p[0];
    case 2:
        return memcpy(&v16, p, 2), LE16(v16);
    case 4:
        return memcpy(&v32, p, 4), LE32(v32);
    case 8:
        return memcpy(&v64, p, 8), LE64(v64);
    }
    v64 = 0; /* 3 bytes (no field has this width) */
    for (unsigned i = 0; i < w; i++)
        v64 |= (uint64_t)p[i] << (8 * i);
    return v64;
}

static inline __attribute__((always_inline)) int64_t sle(const unsigned char *p, unsigned w)
{
    uint64_t v = le(p, w), sign = 1ull << (8 * w - 1);
    return (int64_t)((v ^ sign) - sign);
}

static void bad(struct cdec *c, const unsigned char *at, const unsigned char *base,
                const char *what)
{
    char why[160];
    snprintf(why, sizeof(why),
             "chunk at offset %" PRIu64 ", entry at +%zu: %s; rest of the chunk skipped", c->off,
             (size_t)(at - base) + 16, what);
    rd_skipped(c->r, why);
}

/* One decoded field value: ints in v, strings as (p, n), booleans in v. */
struct fval {
    bool has;
    int64_t v;
    const char *p;
    size_t n;
};

#define DEC_T(k, i)   (f[i].has = fl >> (i)&1, f[i].v = t)
#define DEC_TID(k, i) (f[i].has = fl >> (i)&1, f[i].v = c->tid)
#define DEC_INT(k, i, w, sgn)                                                                      \
    (f[i].has = fl >> (i)&1, f[i].v = sgn ? sle(q, w) : (int64_t)le(q, w), q += w)
#define DEC_U8(k, i)  DEC_INT(k, i, 1, 0)
#define DEC_U16(k, i) DEC_INT(k, i, 2, 0)
#define DEC_U32(k, i) DEC_INT(k, i, 4, 0)
#define DEC_I8(k, i)  DEC_INT(k, i, 1, 1)
#define DEC_I16(k, i) DEC_INT(k, i, 2, 1)
#define DEC_I32(k, i) DEC_INT(k, i, 4, 1)
#define DEC_B(k, i)   (f[i].has = fl >> (i)&1, f[i].v = *q++ != 0)
#define DEC_S(k, i)                                                                                \
    do {                                                                                           \
        unsigned id_ = *q++;                                                                       \
        f[i].has = fl >> (i)&1;                                                                    \
        if (f[i].has && !c->strs[id_].p)                                                           \
            return "a string id no string entry of the chunk defined";                             \
        f[i].p = c->strs[id_].p, f[i].n = c->strs[id_].n;                                          \
    } while (0)

/* Field lists as arrays: names and encodings, per kind. */
enum enc { E_T, E_TID, E_U8, E_U16, E_U32, E_I8, E_I16, E_I32, E_S, E_B };
struct lfield {
    const char *name;
    enum enc enc;
};
#define LF(k, e)    {#k, E_##e},
#define COUNT(k, e) +1
#define SIZE(k, e)  +TLSM_B2_SIZE_##e
#define KIND_TABLES(type, name, LIST, flagw)                                                       \
    static const struct lfield lf_##name[] = {LIST(LF)};                                           \
    enum { N_##name = 0 LIST(COUNT), BODY_##name = 0 LIST(SIZE) };
TLSM_B2_KINDS(KIND_TABLES)

struct kind {
    const char *name;
    const struct lfield *f;
    unsigned n, flagw, body;
    const struct field *af[32]; /* the analyzer's field for each, NULL when it has none */
    uint8_t off[32];            /* each field's offset in the body */
    enum ev_kind ev;
    /* For the fast path (direct() below), from af: fields the event takes (the analyzer
     * has the key with the record's type), fields whose type it does not expect (the
     * record then goes the checked way), and each taken field's slot in the event. */
    uint32_t take, reject;
    uint8_t slot[32];
};
#define KIND_ROW(type, name, LIST, flagw)                                                          \
    [type] = {#name, lf_##name, N_##name, flagw, BODY_##name, {0}},
static struct kind kinds[4] = {TLSM_B2_KINDS(KIND_ROW)};

/* Whether the fast path takes field i of k into the event, or sends the record the
 * checked way (a type the analyzer does not expect), or leaves it (a key it does not use). */
static void plan_field(struct kind *k, unsigned i)
{
    const struct field *af = k->af[i];
    enum enc en = k->f[i].enc;
    enum field_type want = en == E_S ? FT_STR : en == E_B ? FT_BOOL : FT_INT;

    if (!af)
        return;
    if (af->type != want || (en == E_S && af->slot == S_EV))
        k->reject |= 1u << i;
    else
        k->take |= 1u << i, k->slot[i] = (uint8_t)af->slot;
}

static void kinds_init(void)
{
    static bool done;
    if (done)
        return;
    for (unsigned k = 1; k < 4; k++)
        for (unsigned i = 0; i < kinds[k].n; i++)
            kinds[k].af[i] = field__find(kinds[k].f[i].name, strlen(kinds[k].f[i].name));
    static const uint8_t size[] = {[E_T] = 0,  [E_TID] = 0, [E_U8] = 1,  [E_U16] = 2, [E_U32] = 4,
                                   [E_I8] = 1, [E_I16] = 2, [E_I32] = 4, [E_S] = 1,   [E_B] = 1};
    for (unsigned k = 1; k < 4; k++) {
        unsigned o = 0;
        kinds[k].ev = ev_kind__parse(kinds[k].name, strlen(kinds[k].name));
        for (unsigned i = 0; i < kinds[k].n; i++) {
            kinds[k].off[i] = (uint8_t)o, o += size[kinds[k].f[i].enc];
            plan_field(&kinds[k], i);
        }
    }
    done = true;
}

/* Decodes the body at q (bounds checked by the caller) into f[]; NULL or what is wrong. */
#define DEC_FIELD(k, e)                                                                            \
    DEC_##e(k, idx);                                                                               \
    idx++;
#define DECODER(type, name, LIST, flagw)                                                           \
    static const char *dec_##name(struct cdec *c, const unsigned char *q, uint32_t fl, int64_t t,  \
                                  struct fval *f)                                                  \
    {                                                                                              \
        unsigned idx = 0;                                                                          \
        LIST(DEC_FIELD)                                                                            \
        (void)q;                                                                                   \
        return NULL;                                                                               \
    }
#undef DEC_FIELD
#define DEC_FIELD(k, e)                                                                            \
    DEC_##e(k, idx);                                                                               \
    idx++;
TLSM_B2_KINDS(DECODER)

/* JSON text of a string value: quotes, backslashes and control bytes escaped, bytes past
 * ASCII as the text \xHH (as the writer shows bytes that are not UTF-8). */
static size_t esc(char *o, const char *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '"' || ch == '\\') {
            o[w++] = '\\', o[w++] = (char)ch;
        } else if (ch < 0x20) {
            memcpy(o + w, "\\u00", 4), w += 4;
            o[w++] = hex[ch >> 4], o[w++] = hex[ch & 15];
        } else if (ch >= 0x80) {
            memcpy(o + w, "\\\\x", 3), w += 3;
            o[w++] = hex[ch >> 4], o[w++] = hex[ch & 15];
        } else {
            o[w++] = (char)ch;
        }
    }
    return w;
}

/* The record as its format-1 JSON line (no '\n'), into o (room: 64 + 24 per field + 6 per
 * string byte + the tail). */
static size_t render(const struct kind *k, const struct fval *f, const char *tail, size_t tn,
                     char *o)
{
    size_t w = (size_t)sprintf(o, "{\"ev\":\"%s\"", k->name);
    for (unsigned i = 0; i < k->n; i++) {
        if (!f[i].has)
            continue;
        w += (size_t)sprintf(o + w, ",\"%s\":", k->f[i].name);
        if (k->f[i].enc == E_S) {
            o[w++] = '"';
            w += esc(o + w, f[i].p, f[i].n);
            o[w++] = '"';
        } else if (k->f[i].enc == E_B) {
            w += (size_t)sprintf(o + w, "%s", f[i].v ? "true" : "false");
        } else {
            w += (size_t)sprintf(o + w, "%" PRId64, f[i].v);
        }
    }
    memcpy(o + w, tail, tn);
    w += tn;
    o[w++] = '}';
    return w;
}

/* A record the fast path cannot take (an unknown kind for this analyzer, a tail it does not
 * scan, a type it rejects) goes through the line reader as text: its checks, its errors. */
static void as_line(struct cdec *c, const struct kind *k, const struct fval *f, const char *tail,
                    size_t tn)
{
    size_t cap = 64 + 24 * 32 + 6 * 255 * 8 + tn;
    char stackbuf[16384], *o = cap <= sizeof(stackbuf) ? stackbuf : xmalloc(cap);
    size_t n = render(k, f, tail, tn, o);
    rd_line(c->r, o, n, true);
    if (o != stackbuf)
        free(o);
}

/* The analysis path's fast way: the fields the event takes straight from the body into
 * their slots (kinds_init worked out which and where), in code generated per kind (no branch
 * on the encoding per field). -1 for anything unusual (a string id not defined, a type the
 * analyzer does not expect, a kind it does not know, a tail its scanner declines): the
 * record then takes the checked way below. */
#define DIR_INT(f_, v)                                                                             \
    if (fl >> (f_)&1) {                                                                            \
        unsigned sl_ = k->slot[f_]; /* loaded once: a store to e->i may alias a byte */            \
        e->i[sl_] = (v);                                                                           \
        hi |= 1ull << sl_;                                                                         \
    }
#define DIR_T(key, i)   DIR_INT(i, t)
#define DIR_TID(key, i) DIR_INT(i, (int64_t)c->tid)
#define DIR_U8(key, i)  DIR_INT(i, (int64_t)q[0]) q += 1;
#define DIR_U16(key, i) DIR_INT(i, (int64_t)le(q, 2)) q += 2;
#define DIR_U32(key, i) DIR_INT(i, (int64_t)le(q, 4)) q += 4;
#define DIR_I8(key, i)  DIR_INT(i, sle(q, 1)) q += 1;
#define DIR_I16(key, i) DIR_INT(i, sle(q, 2)) q += 2;
#define DIR_I32(key, i) DIR_INT(i, sle(q, 4)) q += 4;
#define DIR_B(key, i)                                                                              \
    if (fl >> (i)&1)                                                                               \
        e->have_tag_ok = true, e->tag_ok = q[0] != 0;                                              \
    q += 1;
#define DIR_S(key, i)                                                                              \
    if (fl >> (i)&1) {                                                                             \
        const struct strent *s_ = &c->strs[q[0]];                                                  \
        if (!s_->p) {                                                                              \
            rc = -1;                                                                               \
            goto out;                                                                              \
        }                                                                                          \
        unsigned sl_ = k->slot[i];                                                                 \
        e->s[sl_].p = s_->p, e->s[sl_].n = s_->n;                                                  \
        hs |= 1u << sl_;                                                                           \
    }                                                                                              \
    q += 1;
#define DIR_FIELD(key, enc) DIR_##enc(key, idx) idx++;
/* fl: the present fields the event takes (k->take). The have bits gather in registers; out
 * of line, so the kind, body, flags and event stay in registers too. */
#define DIRECT(type, name, LIST, flagw)                                                            \
    static __attribute__((noinline)) int direct_##name(struct cdec *c, const struct kind *k,       \
                                                       const unsigned char *q, uint32_t fl,        \
                                                       int64_t t, struct event *e)                 \
    {                                                                                              \
        unsigned idx = 0;                                                                          \
        uint64_t hi = 0;                                                                           \
        uint32_t hs = 0;                                                                           \
        int rc = 0;                                                                                \
        LIST(DIR_FIELD)                                                                            \
        (void)q;                                                                                   \
    out:                                                                                           \
        __attribute__((unused));                                                                   \
        e->have_i = hi, e->have_s = hs;                                                            \
        return rc;                                                                                 \
    }
TLSM_B2_KINDS(DIRECT)

static int direct(struct cdec *c, const struct kind *k, const unsigned char *q, uint32_t fl,
                  int64_t t, const char *tail, size_t tn, struct event *e)
{
    int rc = -1;
    uint64_t old_i = e->have_i;
    uint32_t old_s = e->have_s;
    if (k->ev == EV_OTHER || (fl & k->reject)) {
        event__clear(e);
        return -1;
    }
    /* The event is cleared after the record is in: only the slots the last event set and
     * this one did not (every slot outside the have bits is 0, as event__clear leaves it). */
    e->kind = k->ev;
    e->have_i = e->have_s = 0;
    e->have_tag_ok = e->tag_ok = false;
    switch (k - kinds) {
#define CASE(type, name, LIST, flagw)                                                              \
    case type:                                                                                     \
        rc = direct_##name(c, k, q, fl & k->take, t, e);                                           \
        break;
        TLSM_B2_KINDS(CASE)
#undef CASE
    }
    event__zero(e, old_i & ~e->have_i, old_s & ~e->have_s);
    return rc || (tn && scan__tail(tail, tn, e)) ? -1 : 0;
}

/* One fixed record at p (type byte included); returns its length, 0 when damaged. */
static size_t fixed(struct cdec *c, const unsigned char *p, const unsigned char *end,
                    const unsigned char *base)
{
    const struct kind *k = &kinds[p[0]];
    size_t head = 1 + k->flagw + 4, n = head + k->body, tn = 0;
    struct fval f[32];
    if ((size_t)(end - p) < n)
        return bad(c, p, base, "record cut short"), 0;
    uint32_t fl = (uint32_t)le(p + 1, k->flagw);
    if (fl >> (k->n + 1))
        return bad(c, p, base, "record flags name fields it does not have"), 0;
    if (fl >> k->n & 1) {
        if ((size_t)(end - p) < n + 2 || (size_t)(end - p) < n + 2 + le(p + n, 2))
            return bad(c, p, base, "record tail cut short"), 0;
        tn = (size_t)le(p + n, 2);
        if (!tn || p[n + 2] != ',')
            return bad(c, p, base, "record tail is not JSON members"), 0;
    }
    int64_t t = c->base + sle(p + 1 + k->flagw, 4);
    c->base = t;
    const char *tail = (const char *)p + n + (tn ? 2 : 0);
    struct rd *r = c->r;
    struct event *e = &c->ev[p[0]];
    if (!reader__jsonl && r->header_seen && !direct(c, k, p + head, fl, t, tail, tn, e)) {
        char err[200];
        r->lineno++;
        r->t->lines++;
        if (model__event(r->m, r->t, e, err, sizeof(err)))
            rd_skipped(r, err);
        else
            r->t->events++;
        return n + (tn ? 2 + tn : 0);
    }
    const char *why = NULL;
    switch (p[0]) {
#define CASE(type, name, LIST, flagw)                                                              \
    case type:                                                                                     \
        why = dec_##name(c, p + head, fl, t, f);                                                   \
        break;
        TLSM_B2_KINDS(CASE)
#undef CASE
    }
    if (why)
        return bad(c, p, base, why), 0;
    /* Not for the fast path (--jsonl, no header yet, or one of its reasons): as text, through
     * the line reader's checks and errors. */
    as_line(c, k, f, tail, tn);
    return n + (tn ? 2 + tn : 0);
}

/* Passes over the entry at p, fed before (reader__resume): its length, 0 when it does not
 * fit before end. A fixed record's time still moves the chunk's time base. */
static size_t skip_entry(struct cdec *c, const unsigned char *p, const unsigned char *end)
{
    if (p[0] == TLSM_B2_E_JSON)
        return end - p >= 5 && (uint64_t)(end - p) - 5 >= le(p + 1, 4) ? 5 + (size_t)le(p + 1, 4)
                                                                       : 0;
    if (p[0] < 1 || p[0] > 3)
        return 0;
    const struct kind *k = &kinds[p[0]];
    size_t n = 1 + k->flagw + 4 + k->body;
    if ((size_t)(end - p) < n)
        return 0;
    if (le(p + 1, k->flagw) >> k->n & 1) {
        if ((size_t)(end - p) < n + 2 || (size_t)(end - p) < n + 2 + le(p + n, 2))
            return 0;
        n += 2 + (size_t)le(p + n, 2);
    }
    c->base += sle(p + 1 + k->flagw, 4);
    return n;
}

/* The entries of one chunk: p[0..n); those before `done` were fed before (reader__resume):
 * only their strings and time base are taken again, for the entries after them. */
static void entries(struct cdec *c, const unsigned char *p, size_t n, size_t done)
{
    if (!n)
        return; /* an empty chunk (p may be NULL: nothing allocated yet) */
    const unsigned char *base = p, *end = p + n;
    memset(c->strs, 0, sizeof(c->strs));
    c->base = 0;
    while (p < end && !rd_fatal(c->r)) {
        size_t len;
        if (p < base + done && p[0] != TLSM_B2_E_STR && p[0] != TLSM_B2_E_TIME) {
            if (!(len = skip_entry(c, p, end)))
                return bad(c, p, base, "entry cut short");
            p += len;
            continue;
        }
        switch (p[0]) {
        case TLSM_B2_E_STR:
            if (end - p < 3 || (size_t)(end - p) < 3u + p[2] || !p[1])
                return bad(c, p, base, "string entry cut short");
            c->strs[p[1]].p = (const char *)p + 3, c->strs[p[1]].n = p[2];
            len = 3u + p[2];
            break;
        case TLSM_B2_E_TIME:
            if (end - p < 9)
                return bad(c, p, base, "time entry cut short");
            c->base = (int64_t)le(p + 1, 8);
            len = 9;
            break;
        case TLSM_B2_E_JSON:
            if (end - p < 5 || (uint64_t)(end - p) - 5 < le(p + 1, 4))
                return bad(c, p, base, "JSON entry longer than its chunk");
            len = 5 + (size_t)le(p + 1, 4);
            rd_line(c->r, (const char *)p + 5, len - 5, true);
            break;
        case 1:
        case 2:
        case 3:
            if (!(len = fixed(c, p, end, base)))
                return;
            break;
        default:
            return bad(c, p, base, "unknown entry type");
        }
        p += len;
    }
}

/* The next chunk header: past zero space between chunks (alignment, space a writer gave
 * back) and, with one warning per damaged stretch, past bytes that are not one. Headers are
 * 8-aligned, so the search steps 8 bytes. False at the end of the input. */
static bool next_header(struct rd *r, struct in2 *in, unsigned char *h)
{
    bool damaged = false;
    size_t k;
    while ((k = in_read(in, h, 8)) == 8) {
        if (le(h, 4) == TLSM_B2_CHUNK_MAGIC) {
            if (in_read(in, h + 8, 8) < 8)
                break;
            uint32_t size = (uint32_t)le(h + 4, 4), used = (uint32_t)le(h + 8, 4);
            if (size >= 16 && size % 8 == 0 && size <= CHUNK_MAX && used <= size - 16)
                return true;
        } else if (!le(h, 8)) {
            continue;
        }
        if (!damaged) {
            char why[120];
            snprintf(why, sizeof(why),
                     "offset %" PRIu64 ": not a chunk header; skipped to the next one",
                     in->off - (le(h, 4) == TLSM_B2_CHUNK_MAGIC ? 16 : 8));
            rd_skipped(r, why);
        }
        damaged = true;
    }
    if (k && le(h, k < 4 ? k : 4))
        r->t->partial_last = true; /* a chunk header cut short */
    return false;
}

static void chunks(struct rd *r, struct in2 *in)
{
    static struct cdec c;
    unsigned char h[16];
    unsigned char *buf = NULL;
    size_t cap = 0;
    c.r = r;
    while (!rd_fatal(r) && next_header(r, in, h)) {
        uint32_t size = (uint32_t)le(h + 4, 4), used = (uint32_t)le(h + 8, 4);
        if (used > cap)
            buf = xrealloc(buf, cap = used);
        c.off = in->off - 16;
        c.tid = (uint32_t)le(h + 12, 4);
        uint32_t done = r->rs ? reader_resume__done(r->rs, c.off) : 0;
        if (done > used) { /* chunks only grow: this is another file now */
            r->rs->restart = true;
            break;
        }
        if (done == used && done) { /* nothing new in it */
            if (!in_skip(in, size - 16))
                break;
            continue;
        }
        size_t got = in_read(in, buf, used);
        entries(&c, buf, got, done);
        if (r->rs)
            reader_resume__set(r->rs, c.off, (uint32_t)got);
        if (got < used) {
            r->t->partial_last = true; /* the file ends inside the chunk's entries */
            break;
        }
        if (!in_skip(in, size - 16 - used))
            break; /* a killed process's last chunk may end before its reserved size */
    }
    free(buf);
}

bool read2__magic(const unsigned char *p, size_t n)
{
    return n >= 8 && !memcmp(p, TLSM_B2_MAGIC, 8);
}

enum read_status read2__run(struct rd *r, FILE *f, const char *mem, size_t len,
                            const unsigned char *head, size_t headlen)
{
    struct in2 in = {.f = f, .mem = (const unsigned char *)mem, .memlen = len};
    unsigned char fh[TLSM_B2_FILE_HDR];
    kinds_init();
    memcpy(fh, head, headlen);
    in.off = headlen;
    if (in_read(&in, fh + headlen, sizeof(fh) - headlen) < sizeof(fh) - headlen) {
        if (r->warn)
            fprintf(r->warn, "%s: cut short inside its file header\n", r->t->file);
        return RD_EMPTY;
    }
    uint64_t version = le(fh + 8, 2), hsize = le(fh + 10, 2);
    if (version != TLSM_B2_VERSION) {
        if (r->warn)
            fprintf(r->warn,
                    "%s: trace format %llu; this analyzer reads format 1 (JSON Lines) and 2 "
                    "(binary)%s\n",
                    r->t->file, (unsigned long long)version,
                    version > 2 ? " (update tlsmeter-analyze)" : "");
        return version > 2 ? RD_NEWER : RD_NOT_TRACE;
    }
    if (hsize < TLSM_B2_FILE_HDR || hsize % 8 || !in_skip(&in, hsize - TLSM_B2_FILE_HDR)) {
        if (r->warn)
            fprintf(r->warn, "%s: file header size %llu is not one this analyzer knows\n",
                    r->t->file, (unsigned long long)hsize);
        return RD_NOT_TRACE;
    }
    r->t->binary = true;
    chunks(r, &in);
    return r->status;
}
