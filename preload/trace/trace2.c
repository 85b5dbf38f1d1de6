/* trace2.c: the encoder of trace format 2 (docs/trace-format.md, common/trace2.def). A hot
 * event arrives staged (json.h: its values in slots, keys without a slot as JSON text) and
 * leaves as one fixed little-endian record, preceded by the string entries (cipher and
 * function names, written once per chunk) and the time entry it needs; a value that does
 * not fit its field sends the whole event to a JSON entry instead, so nothing is cut. */
#include "trace/trace2.h"
#include "base/json.h"

#include <limits.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "trace format 2 is written with the host's byte order, which must be little-endian"
#endif

/* w bytes of v, little-endian (the host's order): one store. */
static inline __attribute__((always_inline)) void put_le(char *q, uint64_t v, unsigned w)
{
    uint8_t b = (uint8_t)v;
    uint16_t h = (uint16_t)v;
    uint32_t l = (uint32_t)v;
    switch (w) {
    case 1:
        memcpy(q, &b, 1);
        break;
    case 2:
        memcpy(q, &h, 2);
        break;
    case 4:
        memcpy(q, &l, 4);
        break;
    default:
        memcpy(q, &v, 8);
        break;
    }
}

void tlsm_b2_file_header(char *out)
{
    memset(out, 0, TLSM_B2_FILE_HDR);
    memcpy(out, TLSM_B2_MAGIC, 8);
    put_le(out + 8, TLSM_B2_VERSION, 2);
    put_le(out + 10, TLSM_B2_FILE_HDR, 2);
}

size_t tlsm_b2_chunk_start(struct tlsm_b2_stream *s, char *p, size_t size, uint32_t tid)
{
    put_le(p, TLSM_B2_CHUNK_MAGIC, 4);
    put_le(p + 4, size, 4);
    put_le(p + 8, 0, 4);
    put_le(p + 12, tid, 4);
    s->tid = tid;
    s->nstr = 0;
    s->base_t = 0;
    memset(s->cache, 0, sizeof(s->cache));
    return TLSM_B2_CHUNK_HDR;
}

void tlsm_b2_commit(char *chunk, size_t used)
{
    /* After the entry's bytes: a reader (or the page cache after a SIGKILL) never sees a
     * count that covers bytes not yet copied. */
    atomic_store_explicit((_Atomic uint32_t *)(void *)(chunk + 8), (uint32_t)used,
                          memory_order_release);
}

void tlsm_b2_set_size(char *chunk, size_t size)
{
    put_le(chunk + 4, size, 4);
}

static uint8_t intern_slow(struct tlsm_b2_stream *s, const char *p, char **d, const char *dend);

/* The id of string p in this chunk; a new one gets its string entry at *d. 0: no room
 * (255 strings in one chunk, or longer than 255 bytes): the event goes out as JSON. */
static inline __attribute__((always_inline)) uint8_t intern(struct tlsm_b2_stream *s, const char *p,
                                                            char **d, const char *dend)
{
    unsigned h = (unsigned)((uintptr_t)p >> 3) & 63;
    if (__builtin_expect(s->cache[h] == p, 1))
        return s->cache_id[h];
    return intern_slow(s, p, d, dend);
}

static uint8_t intern_slow(struct tlsm_b2_stream *s, const char *p, char **d, const char *dend)
{
    unsigned h = (unsigned)((uintptr_t)p >> 3) & 63;
    for (unsigned i = 1; i <= s->nstr; i++)
        if (s->strs[i] == p) {
            s->cache[h] = p, s->cache_id[h] = (uint8_t)i;
            return (uint8_t)i;
        }
    size_t n = strlen(p);
    if (s->nstr == 255 || n > 255 || *d + 3 + n > dend)
        return 0;
    uint8_t id = ++s->nstr;
    s->strs[id] = p;
    s->cache[h] = p, s->cache_id[h] = id;
    (*d)[0] = TLSM_B2_E_STR;
    (*d)[1] = (char)id;
    (*d)[2] = (char)n;
    memcpy(*d + 3, p, n);
    *d += 3 + n;
    return id;
}

#define HAS(k)  (st->have >> TLSM_HS_##k & 1)
#define VAL(k)  (HAS(k) ? st->v[TLSM_HS_##k] : 0) /* a select, no branch */
#define LIM_U8  0, UINT8_MAX
#define LIM_U16 0, UINT16_MAX
#define LIM_U32 0, UINT32_MAX
#define LIM_I8  INT8_MIN, INT8_MAX
#define LIM_I16 INT16_MIN, INT16_MAX
#define LIM_I32 INT32_MIN, INT32_MAX
#define ENC_INT(k, w, lo, hi)                                                                      \
    do {                                                                                           \
        int64_t x_ = VAL(k);                                                                       \
        if ((uint64_t)x_ - (uint64_t)(int64_t)(lo) > (uint64_t)((int64_t)(hi) - (int64_t)(lo)))    \
            return 0;                                                                              \
        put_le(q, (uint64_t)x_, w);                                                                \
        q += w;                                                                                    \
    } while (0)
#define ENC_INT_(...) ENC_INT(__VA_ARGS__)
#define ENC_T(k)      (t = VAL(k))
#define ENC_TID(k)                                                                                 \
    do {                                                                                           \
        if (HAS(k) && VAL(k) != s->tid)                                                            \
            return 0; /* not the chunk's thread */                                                 \
    } while (0)
#define ENC_U8(k)  ENC_INT_(k, 1, LIM_U8)
#define ENC_U16(k) ENC_INT_(k, 2, LIM_U16)
#define ENC_U32(k) ENC_INT_(k, 4, LIM_U32)
#define ENC_I8(k)  ENC_INT_(k, 1, LIM_I8)
#define ENC_I16(k) ENC_INT_(k, 2, LIM_I16)
#define ENC_I32(k) ENC_INT_(k, 4, LIM_I32)
#define ENC_B(k)   (*q++ = (char)(VAL(k) != 0))
#define ENC_S(k)                                                                                   \
    do {                                                                                           \
        uint8_t id_ = 0;                                                                           \
        if (HAS(k) && !(id_ = intern(s, (const char *)(intptr_t)st->v[TLSM_HS_##k], &d, dend)))    \
            return 0;                                                                              \
        *q++ = (char)id_;                                                                          \
    } while (0)
#define ENC_FIELD(k, e)                                                                            \
    ENC_##e(k);                                                                                    \
    fl |= (uint32_t)HAS(k) << bit++;
#define MASK_BIT(k, e) | (1ull << TLSM_HS_##k)

/* The time entry when t is too far from the chunk's base for the record's i32 delta. */
static char *time_base(struct tlsm_b2_stream *s, int64_t t, char *d)
{
    if (t - s->base_t >= INT32_MIN && t - s->base_t <= INT32_MAX)
        return d;
    d[0] = TLSM_B2_E_TIME;
    put_le(d + 1, (uint64_t)t, 8);
    s->base_t = t;
    return d + 9;
}

/* Slot names and types, for the JSON form of slots. */
static const char *const slot_names[TLSM_HS_N] = {
#define NAME(k) [TLSM_HS_##k] = #k,
    TLSM_HOT_INT(NAME) TLSM_HOT_STR(NAME) TLSM_HOT_BOOL(NAME)
#undef NAME
};

/* The slots of mask as JSON members (",\"key\":value..."), then tail[0..tail_n), into out:
 * its length, 0 when it does not fit. */
static size_t slots_text(const struct tlsm_hot_stage *st, uint64_t mask, const char *tail,
                         size_t tail_n, char *out, size_t cap)
{
    struct tlsm_json j = {.p = out, .end = out + cap};
    for (int i = 0; i < TLSM_HS_N; i++) {
        if (!(mask >> i & 1))
            continue;
        char key[24];
        size_t kn = (size_t)snprintf(key, sizeof(key), ",\"%s\":", slot_names[i]);
        tlsm_json_put(&j, key, kn);
        if (i >= TLSM_HS_dir && i < TLSM_HS_tag_ok) {
            const char *v = (const char *)(intptr_t)st->v[i];
            tlsm_json_put(&j, "\"", 1);
            tlsm_json_escaped(&j, v ? v : "");
            tlsm_json_put(&j, "\"", 1);
        } else if (i == TLSM_HS_tag_ok) {
            tlsm_json_put(&j, st->v[i] ? "true" : "false", st->v[i] ? 4 : 5);
        } else {
            char num[24];
            int64_t v = st->v[i];
            size_t nn = 0;
            if (v < 0)
                num[nn++] = '-';
            nn += tlsm_json_digits(num + nn, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
            tlsm_json_put(&j, num, nn);
        }
    }
    tlsm_json_put(&j, tail, tail_n);
    return j.full ? 0 : (size_t)(j.p - out);
}

/* One encoder per kind, generated from its field list: the record body in field order,
 * every field at its fixed width (absent ones zero, their flag bit clear). */
#define ENCODER(type, name, LIST, flagw)                                                           \
    static size_t enc_##name(struct tlsm_b2_stream *s, const struct tlsm_hot_stage *st,            \
                             const char *tail, char *out, const char *dend)                        \
    {                                                                                              \
        char body[128], *q = body, *d = out;                                                       \
        uint32_t fl = 0;                                                                           \
        unsigned bit = 0;                                                                          \
        int64_t t = 0;                                                                             \
        char both[TLSM_B2_TAIL_MAX];                                                               \
        uint64_t extra = st->have & ~(0ull LIST(MASK_BIT));                                        \
        size_t tail_n = st->tail_len;                                                              \
        if (extra) { /* slot keys this kind has no field for (read.stack): into the tail */        \
            tail_n = slots_text(st, extra, tail, tail_n, both, sizeof(both));                      \
            if (!tail_n)                                                                           \
                return 0;                                                                          \
            tail = both;                                                                           \
        }                                                                                          \
        LIST(ENC_FIELD)                                                                            \
        if (tail_n)                                                                                \
            fl |= 1u << bit;                                                                       \
        d = time_base(s, t, d);                                                                    \
        size_t body_n = (size_t)(q - body);                                                        \
        if (d + 1 + (flagw) + 4 + body_n + (tail_n ? 2 + tail_n : 0) > dend ||                     \
            tail_n > UINT16_MAX)                                                                   \
            return 0;                                                                              \
        *d++ = (char)(type);                                                                       \
        put_le(d, fl, flagw);                                                                      \
        put_le(d + (flagw), (uint64_t)(t - s->base_t), 4);                                         \
        s->base_t = t;                                                                             \
        memcpy(d + (flagw) + 4, body, body_n);                                                     \
        d += (flagw) + 4 + body_n;                                                                 \
        if (tail_n) {                                                                              \
            put_le(d, tail_n, 2);                                                                  \
            memcpy(d + 2, tail, tail_n);                                                           \
            d += 2 + tail_n;                                                                       \
        }                                                                                          \
        return (size_t)(d - out);                                                                  \
    }
TLSM_B2_KINDS(ENCODER)
#undef ENCODER

static const char *const kind_names[] = {"", "rec", "read", "write"};

static size_t json_entry(char *out, size_t cap, const char *text, size_t n)
{
    if (n && text[n - 1] == '\n')
        n--;
    if (n + 5 > cap)
        return 0;
    out[0] = TLSM_B2_E_JSON;
    put_le(out + 1, n, 4);
    memcpy(out + 5, text, n);
    return n + 5;
}

/* A staged event that has no fixed record as its JSON text: every slot it set, then its
 * tail (the keys without a slot, as written). */
static size_t as_json(unsigned kind, const struct tlsm_hot_stage *st, const char *tail, char *out,
                      size_t cap)
{
    char line[TLSM_B2_ENTRY_MAX];
    int n = snprintf(line, sizeof(line), "{\"ev\":\"%s\"", kind_names[kind]);
    size_t m = slots_text(st, st->have, tail, st->tail_len, line + n, sizeof(line) - (size_t)n - 1);
    if (!m)
        return 0;
    line[n + m] = '}';
    return json_entry(out, cap, line, (size_t)n + m + 1);
}

size_t tlsm_b2_encode(struct tlsm_b2_stream *s, const char *line, size_t n, char *out, size_t cap)
{
    if (!tlsm_b2_staged(line, n))
        return json_entry(out, cap, line, n);
    const struct tlsm_hot_stage *stp = tlsm_hot_at(line);
    const char *tail = (const char *)(stp + 1), *dend = out + cap;
    unsigned kind = (unsigned char)line[0];
    if ((size_t)(tail - line) + stp->tail_len > n)
        return 0;
    uint8_t nstr = s->nstr; /* a record given up for JSON leaves no string entries behind */
    int64_t base = s->base_t;
    size_t r = 0;
    switch (kind) {
#define CASE(type, name, LIST, flagw)                                                              \
    case type:                                                                                     \
        r = enc_##name(s, stp, tail, out, dend);                                                   \
        break;
        TLSM_B2_KINDS(CASE)
#undef CASE
    }
    if (r)
        return r;
    for (unsigned i = nstr + 1u; i <= s->nstr; i++) /* forget what the JSON form replaces */
        for (unsigned h = 0; h < 64; h++)
            if (s->cache[h] == s->strs[i])
                s->cache[h] = NULL;
    s->nstr = nstr, s->base_t = base;
    return as_json(kind, stp, tail, out, cap);
}

size_t tlsm_b2_mini_chunk(char *out, size_t cap, const char *line, size_t n, uint32_t tid)
{
    struct tlsm_b2_stream s;
    if (cap < TLSM_B2_CHUNK_HDR + 8)
        return 0;
    size_t h = tlsm_b2_chunk_start(&s, out, 0, tid);
    size_t e = json_entry(out + h, cap - h, line, n);
    size_t size = (h + e + 7) / 8 * 8;
    if (!e || size > cap)
        return 0;
    memset(out + h + e, 0, size - h - e);
    tlsm_b2_set_size(out, size);
    tlsm_b2_commit(out, e);
    return size;
}
