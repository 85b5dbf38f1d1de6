/* json.h: append-only builder for one JSON Lines object in a caller-owned buffer.
 * Keys must be string literals: the macros below paste `,"key":` together at compile time,
 * so adding a field is one memcpy of a constant plus the value (this is the per-record
 * hot path: a rec and a read line per 16 KiB of TLS data). */
#ifndef TLSM_JSON_H
#define TLSM_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct tlsm_json {
    char *p, *end;
    bool full; /* ran out of room: the line is dropped, never written half */
};

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

void tlsm_json_begin(struct tlsm_json *j, char *buf, size_t cap, const char *ev);
/* Writes the decimal digits of u at dst; returns how many (1..20). */
size_t tlsm_json_digits(char *dst, uint64_t u);

/* Inline, so the key's memcpy has a constant size and compiles to a few moves. */
static inline void tlsm_json_int_k(struct tlsm_json *j, const char *k, size_t kn, int64_t v)
{
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

/* A string known to need no escaping (our own constant names): no per-byte checks. */
static inline void tlsm_json_safe_k(struct tlsm_json *j, const char *k, size_t kn, const char *s)
{
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
/* Close the object and add '\n'; returns the line length, 0 if it did not fit. */
size_t tlsm_json_end(struct tlsm_json *j, char *buf);

#define tlsm_json_int(j, key, v)  tlsm_json_int_k((j), TLSM_KEY(key), (v))
#define tlsm_json_str(j, key, s)  tlsm_json_str_k((j), TLSM_KEY(key), (s))
#define tlsm_json_safe(j, key, s) tlsm_json_safe_k((j), TLSM_KEY(key), (s))
#define tlsm_json_num(j, key, v)  tlsm_json_num_k((j), TLSM_KEY(key), (v))
/* v is already JSON (an object or array built by the caller). */
#define tlsm_json_raw(j, key, v)                                                                   \
    do {                                                                                           \
        const char *raw_ = (v);                                                                    \
        tlsm_json_put((j), TLSM_KEY(key));                                                         \
        tlsm_json_put((j), raw_, strlen(raw_));                                                    \
    } while (0)
#define tlsm_json_bool(j, key, v)                                                                  \
    ((v) ? tlsm_json_put((j), ",\"" key "\":true", sizeof(",\"" key "\":true") - 1)                \
         : tlsm_json_put((j), ",\"" key "\":false", sizeof(",\"" key "\":false") - 1))

#endif
