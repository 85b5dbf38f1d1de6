/* trace2_fixed.h: the fixed records of trace format 2 (docs/trace-format.md) written straight
 * from typed values: one struct per kind (common/trace2.def: a member per field, named by its
 * key, `have` a bit per field in list order, which is the record's flags), and an inline
 * encoder that writes the string and time entries the record needs, then the record itself,
 * at out. A hot event's writer (core/record.c, core/conn.c) fills the struct and encodes it
 * into the chunk it got from tlsm_trace_room_take (trace.h): with everything inlined the
 * compiler drops the checks a value's type already passes. trace2.c encodes staged events
 * (json.h) through the same encoder, so both give the same bytes. */
#ifndef TLSM_TRACE2_FIXED_H
#define TLSM_TRACE2_FIXED_H

#include "base/json.h"
#include "trace/trace2.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "trace format 2 is written with the host's byte order, which must be little-endian"
#endif

/* w bytes of v, little-endian (the host's order): one store. */
static inline __attribute__((always_inline)) void tlsm_b2_put_le(char *q, uint64_t v, unsigned w)
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

/* trace2.c: a string not in the chunk's cache: its id, its string entry written at *d when
 * new; 0 when there is no room (255 strings in the chunk, longer than 255 bytes, past dend). */
uint8_t tlsm_b2_intern_slow(struct tlsm_b2_stream *s, const char *p, char **d, const char *dend);
/* A record given up (a value does not fit its field, no room): the stream as it was before
 * (nstr strings, time base base), so its string entries are written again by the next one. */
void tlsm_b2_undo(struct tlsm_b2_stream *s, uint8_t nstr, int64_t base);

/* The two cache slots string p may sit in: its address bits, and a multiplicative hash of
 * the address. Two slots, because the few strings every record writes (cipher, path, ...)
 * are static strings whose addresses move with every build: with one slot, two of them
 * sharing it sent every record through the slow search (~80 instructions a record). */
static inline unsigned tlsm_b2_slot1(const char *p)
{
    return (unsigned)((uintptr_t)p >> 3) & 63;
}
static inline unsigned tlsm_b2_slot2(const char *p)
{
    return (unsigned)(((uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull) >> 58);
}

/* The id of string p in this chunk (a static string: known by its address). */
static inline __attribute__((always_inline)) uint8_t
tlsm_b2_intern(struct tlsm_b2_stream *s, const char *p, char **d, const char *dend)
{
    unsigned h = tlsm_b2_slot1(p);
    if (__builtin_expect(s->cache[h] == p, 1))
        return s->cache_id[h];
    h = tlsm_b2_slot2(p);
    if (__builtin_expect(s->cache[h] == p, 1))
        return s->cache_id[h];
    return tlsm_b2_intern_slow(s, p, d, dend);
}

/* The C type of each encoding's member: integers as int64_t (the encoder checks the range),
 * strings as static strings (NULL: absent), bools. */
#define TLSM_B2_CT_T   int64_t
#define TLSM_B2_CT_TID int64_t
#define TLSM_B2_CT_U8  int64_t
#define TLSM_B2_CT_U16 int64_t
#define TLSM_B2_CT_U32 int64_t
#define TLSM_B2_CT_I8  int64_t
#define TLSM_B2_CT_I16 int64_t
#define TLSM_B2_CT_I32 int64_t
#define TLSM_B2_CT_S   const char *
#define TLSM_B2_CT_B   bool

#define TLSM_B2_MEMBER(k, e) TLSM_B2_CT_##e k;
#define TLSM_B2_STRUCT(type, name, LIST, flagw)                                                    \
    struct tlsm_b2_##name {                                                                        \
        uint32_t have; /* bit i: field i of the list is present (absent members are 0) */          \
        LIST(TLSM_B2_MEMBER)                                                                       \
    };
TLSM_B2_KINDS(TLSM_B2_STRUCT)
#undef TLSM_B2_STRUCT
#undef TLSM_B2_MEMBER

/* Field bits: TLSM_B2_HAS(rec, conn) is the `have` bit of rec.conn. */
#define TLSM_B2_BIT_REC(k, e)   TLSM_B2_BIT_rec_##k,
#define TLSM_B2_BIT_READ(k, e)  TLSM_B2_BIT_read_##k,
#define TLSM_B2_BIT_WRITE(k, e) TLSM_B2_BIT_write_##k,
enum { TLSM_B2_REC(TLSM_B2_BIT_REC) TLSM_B2_BIT_rec_N };
enum { TLSM_B2_READ(TLSM_B2_BIT_READ) TLSM_B2_BIT_read_N };
enum { TLSM_B2_WRITE(TLSM_B2_BIT_WRITE) TLSM_B2_BIT_write_N };
#undef TLSM_B2_BIT_REC
#undef TLSM_B2_BIT_READ
#undef TLSM_B2_BIT_WRITE
#define TLSM_B2_HAS(kind, k) (1u << TLSM_B2_BIT_##kind##_##k)

/* Pass 1, before the record: a string field's id (its string entry first when new). */
#define TLSM_B2_PRE_T(k)
#define TLSM_B2_PRE_TID(k)
#define TLSM_B2_PRE_U8(k)
#define TLSM_B2_PRE_U16(k)
#define TLSM_B2_PRE_U32(k)
#define TLSM_B2_PRE_I8(k)
#define TLSM_B2_PRE_I16(k)
#define TLSM_B2_PRE_I32(k)
#define TLSM_B2_PRE_B(k)
#define TLSM_B2_PRE_S(k)                                                                           \
    uint8_t id_##k = 0;                                                                            \
    if (v->k && !(id_##k = tlsm_b2_intern(s, v->k, &d, dend)))                                     \
        return 0;
#define TLSM_B2_PRE(k, e) TLSM_B2_PRE_##e(k)

/* Pass 2: the body, each field at its width; a value that does not fit gives the record up. */
#define TLSM_B2_INT(k, w, lo, hi)                                                                  \
    do {                                                                                           \
        int64_t x_ = v->k;                                                                         \
        if ((uint64_t)x_ - (uint64_t)(int64_t)(lo) > (uint64_t)((int64_t)(hi) - (int64_t)(lo)))    \
            return 0;                                                                              \
        tlsm_b2_put_le(q, (uint64_t)x_, w);                                                        \
        q += w;                                                                                    \
    } while (0)
#define TLSM_B2_BODY_T(k)
#define TLSM_B2_BODY_TID(k)                                                                        \
    if ((v->have >> bit & 1) && v->k != s->tid)                                                    \
        return 0; /* not the chunk's thread */
#define TLSM_B2_BODY_U8(k)  TLSM_B2_INT(k, 1, 0, UINT8_MAX);
#define TLSM_B2_BODY_U16(k) TLSM_B2_INT(k, 2, 0, UINT16_MAX);
#define TLSM_B2_BODY_U32(k) TLSM_B2_INT(k, 4, 0, UINT32_MAX);
#define TLSM_B2_BODY_I8(k)  TLSM_B2_INT(k, 1, INT8_MIN, INT8_MAX);
#define TLSM_B2_BODY_I16(k) TLSM_B2_INT(k, 2, INT16_MIN, INT16_MAX);
#define TLSM_B2_BODY_I32(k) TLSM_B2_INT(k, 4, INT32_MIN, INT32_MAX);
#define TLSM_B2_BODY_S(k)   *q++ = (char)id_##k;
#define TLSM_B2_BODY_B(k)   *q++ = (char)(v->k != 0);
#define TLSM_B2_BODY(k, e)                                                                         \
    TLSM_B2_BODY_##e(k);                                                                           \
    bit++;
#define TLSM_B2_BODY_SIZE(k, e) +TLSM_B2_SIZE_##e
#define TLSM_B2_NFIELDS(k, e)   +1

/* One encoder per kind: tlsm_b2_fixed_rec(s, out, dend, v, tail, tail_n) writes at out the
 * entries for v (string entries, a time entry when the delta does not fit, the record, then
 * the tail: tail_n bytes of JSON members, 0 for none); returns the bytes, 0 when a value does
 * not fit its field or dend is too near (the stream may then be changed: tlsm_b2_undo). */
#define TLSM_B2_ENCODER(type, name, LIST, flagw)                                                   \
    static inline __attribute__((always_inline))                                                   \
    size_t tlsm_b2_fixed_##name(struct tlsm_b2_stream *s, char *out, const char *dend,             \
                                const struct tlsm_b2_##name *v, const char *tail, size_t tail_n)   \
    {                                                                                              \
        char *d = out, *q;                                                                         \
        unsigned bit = 0;                                                                          \
        (void)bit;                                                                                 \
        LIST(TLSM_B2_PRE)                                                                          \
        int64_t t = v->t;                                                                          \
        if (t - s->base_t < INT32_MIN || t - s->base_t > INT32_MAX) {                              \
            if (d + 9 > dend)                                                                      \
                return 0;                                                                          \
            d[0] = TLSM_B2_E_TIME;                                                                 \
            tlsm_b2_put_le(d + 1, (uint64_t)t, 8);                                                 \
            s->base_t = t;                                                                         \
            d += 9;                                                                                \
        }                                                                                          \
        if (d + 1 + (flagw) + 4 + (0 LIST(TLSM_B2_BODY_SIZE)) + (tail_n ? 2 + tail_n : 0) >        \
                dend ||                                                                            \
            tail_n > UINT16_MAX)                                                                   \
            return 0;                                                                              \
        q = d + 1 + (flagw) + 4;                                                                   \
        LIST(TLSM_B2_BODY)                                                                         \
        d[0] = (char)(type);                                                                       \
        tlsm_b2_put_le(d + 1, v->have | (tail_n ? 1u << (0 LIST(TLSM_B2_NFIELDS)) : 0), flagw);    \
        tlsm_b2_put_le(d + 1 + (flagw), (uint64_t)(t - s->base_t), 4);                             \
        s->base_t = t;                                                                             \
        if (tail_n) {                                                                              \
            tlsm_b2_put_le(q, tail_n, 2);                                                          \
            memcpy(q + 2, tail, tail_n);                                                           \
            q += 2 + tail_n;                                                                       \
        }                                                                                          \
        return (size_t)(q - out);                                                                  \
    }
TLSM_B2_KINDS(TLSM_B2_ENCODER)
#undef TLSM_B2_ENCODER

/* A write record as the staged path encodes the write event (trace2.c): the write kind has no
 * field for its fn and ns keys, so they are the record's tail, in slot order (ns, then fn)
 * and JSON form: ,"ns":N,"fn":"NAME". fn is a hook's name (nothing to escape, at most 32
 * bytes). 0 as tlsm_b2_fixed_write. tests/unit/trace2.c checks the bytes against the staged
 * path's. */
static inline size_t tlsm_b2_write_io(struct tlsm_b2_stream *s, char *out, const char *dend,
                                      const struct tlsm_b2_write *v, uint64_t ns, const char *fn)
{
    char tail[80];
    size_t fl = strlen(fn), n;
    if (fl > 32)
        return 0;
    memcpy(tail, ",\"ns\":", 6);
    n = 6 + tlsm_json_digits(tail + 6, ns);
    memcpy(tail + n, ",\"fn\":\"", 7);
    memcpy(tail + n + 7, fn, fl);
    n += 7 + fl;
    tail[n++] = '"';
    return tlsm_b2_fixed_write(s, out, dend, v, tail, n);
}

#endif
