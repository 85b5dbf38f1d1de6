/* json.h: append-only builder for one JSON Lines object in a caller-owned buffer. */
#ifndef TLSM_JSON_H
#define TLSM_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tlsm_json {
    char *p, *end;
    bool full; /* ran out of room: the line is dropped, never written half */
};

void tlsm_json_begin(struct tlsm_json *j, char *buf, size_t cap, const char *ev);
void tlsm_json_int(struct tlsm_json *j, const char *key, int64_t v);
void tlsm_json_str(struct tlsm_json *j, const char *key, const char *s);
/* A finite non-negative measurement, 4 decimals. */
void tlsm_json_num(struct tlsm_json *j, const char *key, double v);
void tlsm_json_bool(struct tlsm_json *j, const char *key, bool v);
/* v is already JSON (an object or array built by the caller). */
void tlsm_json_raw(struct tlsm_json *j, const char *key, const char *v);
/* Close the object and add '\n'; returns the line length, 0 if it did not fit. */
size_t tlsm_json_end(struct tlsm_json *j, char *buf);

#endif
