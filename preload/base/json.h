/* json.h: append-only builder for one JSON Lines object in a caller-owned buffer, with
 * nested objects and arrays. Keys must be string literals: the macros below paste `,"key":`
 * together at compile time, so adding a field is one memcpy of a constant plus the value
 * (this is the per-record hot path: a rec and a read line per 16 KiB of TLS data).
 *
 * Nesting costs the flat fields nothing: every member and every array item is written with
 * a leading comma, and closing an object or array turns the comma of its first member into
 * its `{` or `[` (an empty one gets `{}` or `[]`). So the writers below need no "first
 * member?" test, and an array item is a member whose key is the bare comma. */
#ifndef TLSM_JSON_H
#define TLSM_JSON_H

#include "common/schema.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/json_hot.h"

#define TLSM_JSON_DEPTH 6 /* nested objects and arrays open at once */

struct tlsm_json {
    char *p, *end;
    bool full;                   /* ran out of room: the line is dropped, never written half */
    unsigned char depth;         /* open nested objects and arrays */
    uint8_t hot;                 /* format 2, a rec/read/write event: slot keys go to v[] */
    char *open[TLSM_JSON_DEPTH]; /* where each one's first separator is (its `{` or `[`) */
    uint64_t have;               /* slots set (json_hot.h) */
    int64_t *v;                  /* the stage's slots, in the caller's buffer */
};

/* Set by the trace writer when it writes format 2: tlsm_json_begin then stages the hot
 * events (rec, read, write) for fixed records instead of formatting their text. */
extern bool tlsm_json_stage_hot;

static inline void tlsm_json_put(struct tlsm_json *j, const char *s, size_t n)
{
    if (j->full || (size_t)(j->end - j->p) < n) {
        j->full = true;
        return;
    }
    memcpy(j->p, s, n);
    j->p += n;
}

#define TLSM_KEY(key) ",\"" key "\":", sizeof(",\"" key "\":") - 1

/* Start a line of kind ev: TLSM_EV(REC) and the like, the schema's names (common/schema.def),
 * so a kind the schema does not list does not build. */
void tlsm_json_begin(struct tlsm_json *j, char *buf, size_t cap, const char *ev);
/* Writes the decimal digits of u at dst; returns how many (1..20). */
size_t tlsm_json_digits(char *dst, uint64_t u);

/* Inline, so the key's memcpy has a constant size and compiles to a few moves. */
static inline void tlsm_json_int_k(struct tlsm_json *j, const char *k, size_t kn, int64_t v)
{
    int s = tlsm_hot_slot(k, kn, TLSM_HT_INT);
    if (s >= 0 && j->hot) {
        j->v[s] = v;
        j->have |= 1ull << s;
        return;
    }
    if (j->full || (size_t)(j->end - j->p) < kn + 21) {
        j->full = true;
        return;
    }
    memcpy(j->p, k, kn);
    j->p += kn;
    if (v < 0)
        *j->p++ = '-';
    j->p += tlsm_json_digits(j->p, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* A string known to need no escaping (our own constant names): no per-byte checks. In a hot
 * event it must be a static string: format 2 writes it once per chunk, known by its address. */
static inline void tlsm_json_safe_k(struct tlsm_json *j, const char *k, size_t kn, const char *s)
{
    int slot = tlsm_hot_slot(k, kn, TLSM_HT_STR);
    if (slot >= 0 && j->hot) {
        j->v[slot] = (int64_t)(intptr_t)s;
        j->have |= 1ull << slot;
        return;
    }
    size_t n = strlen(s);
    if (j->full || (size_t)(j->end - j->p) < kn + n + 2) {
        j->full = true;
        return;
    }
    memcpy(j->p, k, kn);
    j->p += kn;
    *j->p++ = '"';
    memcpy(j->p, s, n);
    j->p += n;
    *j->p++ = '"';
}
/* The bytes of s as the inside of a JSON string (no quotes): valid UTF-8 kept, other bytes
 * as the text \xHH. */
void tlsm_json_escaped(struct tlsm_json *j, const char *s);
void tlsm_json_str_k(struct tlsm_json *j, const char *k, size_t kn, const char *s);
/* A finite non-negative measurement, 4 decimals. */
void tlsm_json_num_k(struct tlsm_json *j, const char *k, size_t kn, double v);
/* Close the object and add '\n'; returns the line length, 0 if it did not fit (or a nested
 * value was left open). A staged hot event (format 2) is a struct tlsm_hot_stage and its
 * tail instead, for tlsm_trace_line. */
size_t tlsm_json_end(struct tlsm_json *j, char *buf);

#define tlsm_json_int(j, key, v)  tlsm_json_int_k((j), TLSM_KEY(key), (v))
#define tlsm_json_str(j, key, s)  tlsm_json_str_k((j), TLSM_KEY(key), (s))
#define tlsm_json_safe(j, key, s) tlsm_json_safe_k((j), TLSM_KEY(key), (s))
#define tlsm_json_num(j, key, v)  tlsm_json_num_k((j), TLSM_KEY(key), (v))

/* Nested values. tlsm_json_obj(j, "key") / tlsm_json_arr(j, "key") open a member;
 * tlsm_json_obj_item(j) / tlsm_json_arr_item(j) open one as an array item;
 * tlsm_json_obj_end / tlsm_json_arr_end close the innermost. */
void tlsm_json_nest_k(struct tlsm_json *j, const char *k, size_t kn);
void tlsm_json_close(struct tlsm_json *j, char open, char close);
#define tlsm_json_obj(j, key) tlsm_json_nest_k((j), TLSM_KEY(key))
#define tlsm_json_arr(j, key) tlsm_json_nest_k((j), TLSM_KEY(key))
#define tlsm_json_obj_item(j) tlsm_json_nest_k((j), ",", 1)
#define tlsm_json_arr_item(j) tlsm_json_nest_k((j), ",", 1)
#define tlsm_json_obj_end(j)  tlsm_json_close((j), '{', '}')
#define tlsm_json_arr_end(j)  tlsm_json_close((j), '[', ']')
/* Array items: the member writers with the comma as their key. */
#define tlsm_json_item_int(j, v)  tlsm_json_int_k((j), ",", 1, (v))
#define tlsm_json_item_str(j, s)  tlsm_json_str_k((j), ",", 1, (s))
#define tlsm_json_item_safe(j, s) tlsm_json_safe_k((j), ",", 1, (s))
#define tlsm_json_item_bool(j, v)                                                                  \
    ((v) ? tlsm_json_put((j), ",true", 5) : tlsm_json_put((j), ",false", 6))
/* A member whose key is made at run time (impl's fn_F_*, lib.caps' names): tlsm_json_key
 * writes `,"k":` (escaped), then a _k writer with the key TLSM_AFTER_KEY writes the value. */
void tlsm_json_key(struct tlsm_json *j, const char *k);
#define TLSM_AFTER_KEY "", 0
/* A bool; in a staged hot event (format 2) tag_ok goes to its slot. */
static inline void tlsm_json_bool_k(struct tlsm_json *j, const char *k, size_t kn, bool v)
{
    int s = tlsm_hot_slot(k, kn, TLSM_HT_BOOL);
    if (s >= 0 && j->hot) {
        j->v[s] = v;
        j->have |= 1ull << s;
        return;
    }
    tlsm_json_put(j, k, kn);
    if (v)
        tlsm_json_put(j, "true", 4);
    else
        tlsm_json_put(j, "false", 5);
}

/* Take back what was written since mark (j->p, taken while the line was not full), room
 * included: for an optional part that did not fit, or past its own budget. */
static inline void tlsm_json_rewind(struct tlsm_json *j, char *mark)
{
    j->p = mark;
    j->full = false;
}

/* After an optional entry written since mark: true when it fit; else it is taken back
 * whole (the line goes on without it) and false. */
static inline bool tlsm_json_entry_kept(struct tlsm_json *j, char *mark)
{
    if (!j->full)
        return true;
    tlsm_json_rewind(j, mark);
    return false;
}

/* v is already JSON (an object or array built by the caller). */
#define tlsm_json_raw(j, key, v)                                                                   \
    do {                                                                                           \
        const char *raw_ = (v);                                                                    \
        tlsm_json_put((j), TLSM_KEY(key));                                                         \
        tlsm_json_put((j), raw_, strlen(raw_));                                                    \
    } while (0)
#define tlsm_json_bool(j, key, v) tlsm_json_bool_k((j), TLSM_KEY(key), (v))

#endif
