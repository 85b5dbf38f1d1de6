/* trace2.c: the encoder of trace format 2 (docs/trace-format.md, common/trace2.def). A hot
 * event arrives staged (json.h: its values in slots, keys without a slot as JSON text) and
 * leaves as one fixed little-endian record, preceded by the string entries (cipher and
 * function names, written once per chunk) and the time entry it needs; a value that does
 * not fit its field sends the whole event to a JSON entry instead, so nothing is cut. */
#include "trace/trace2.h"
#include "trace/trace2_fixed.h"
#include "base/json.h"

#include <limits.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>

void tlsm_b2_file_header(char *out)
{
    memset(out, 0, TLSM_B2_FILE_HDR);
    memcpy(out, TLSM_B2_MAGIC, 8);
    tlsm_b2_put_le(out + 8, TLSM_B2_VERSION, 2);
    tlsm_b2_put_le(out + 10, TLSM_B2_FILE_HDR, 2);
}

size_t tlsm_b2_chunk_start(struct tlsm_b2_stream *s, char *p, size_t size, uint32_t tid)
{
    tlsm_b2_put_le(p, TLSM_B2_CHUNK_MAGIC, 4);
    tlsm_b2_put_le(p + 4, size, 4);
    tlsm_b2_put_le(p + 8, 0, 4);
    tlsm_b2_put_le(p + 12, tid, 4);
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
    tlsm_b2_put_le(chunk + 4, size, 4);
}

/* A string's cache slot: its first slot while that one is free, else its second, so two
 * strings that share a first slot both stay cached (trace2_fixed.h). */
static unsigned cache_slot(const struct tlsm_b2_stream *s, const char *p)
{
    unsigned h = tlsm_b2_slot1(p);
    return s->cache[h] ? tlsm_b2_slot2(p) : h;
}

uint8_t tlsm_b2_intern_slow(struct tlsm_b2_stream *s, const char *p, char **d, const char *dend)
{
    unsigned h = cache_slot(s, p);
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

#define HAS(k)         (st->have >> TLSM_HS_##k & 1)
#define VAL(k)         (HAS(k) ? st->v[TLSM_HS_##k] : 0) /* a select, no branch */
#define MASK_BIT(k, e) | (1ull << TLSM_HS_##k)

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

/* A staged event's slots as the typed values of its kind (trace2_fixed.h), encoded by the
 * same encoder the direct writers use. */
#define FROM_STAGE_T(k)   v.k = VAL(k);
#define FROM_STAGE_TID(k) v.k = VAL(k);
#define FROM_STAGE_U8(k)  v.k = VAL(k);
#define FROM_STAGE_U16(k) v.k = VAL(k);
#define FROM_STAGE_U32(k) v.k = VAL(k);
#define FROM_STAGE_I8(k)  v.k = VAL(k);
#define FROM_STAGE_I16(k) v.k = VAL(k);
#define FROM_STAGE_I32(k) v.k = VAL(k);
#define FROM_STAGE_S(k)   v.k = (const char *)(intptr_t)VAL(k);
#define FROM_STAGE_B(k)   v.k = VAL(k) != 0;
#define FROM_STAGE(k, e)                                                                           \
    FROM_STAGE_##e(k);                                                                             \
    v.have |= (uint32_t)HAS(k) << bit++;
#define ENCODER(type, name, LIST, flagw)                                                           \
    static size_t enc_##name(struct tlsm_b2_stream *s, const struct tlsm_hot_stage *st,            \
                             const char *tail, char *out, const char *dend)                        \
    {                                                                                              \
        char both[TLSM_B2_TAIL_MAX];                                                               \
        uint64_t extra = st->have & ~(0ull LIST(MASK_BIT));                                        \
        size_t tail_n = st->tail_len;                                                              \
        if (extra) { /* slot keys this kind has no field for (read.stack): into the tail */        \
            tail_n = slots_text(st, extra, tail, tail_n, both, sizeof(both));                      \
            if (!tail_n)                                                                           \
                return 0;                                                                          \
            tail = both;                                                                           \
        }                                                                                          \
        struct tlsm_b2_##name v = {0};                                                             \
        unsigned bit = 0;                                                                          \
        LIST(FROM_STAGE)                                                                           \
        return tlsm_b2_fixed_##name(s, out, dend, &v, tail, tail_n);                               \
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
    tlsm_b2_put_le(out + 1, n, 4);
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
    tlsm_b2_undo(s, nstr, base); /* the JSON form replaces what the record wrote */
    return as_json(kind, stp, tail, out, cap);
}

void tlsm_b2_undo(struct tlsm_b2_stream *s, uint8_t nstr, int64_t base)
{
    for (unsigned i = nstr + 1u; i <= s->nstr; i++)
        for (unsigned h = 0; h < 64; h++)
            if (s->cache[h] == s->strs[i])
                s->cache[h] = NULL;
    s->nstr = nstr, s->base_t = base;
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
