/* json.c: a tiny JSON writer for the hot path: no allocation, no locale, no printf. */
#include "json.h"

#include <stdio.h>
#include <string.h>

static void put(struct tlsm_json *j, const char *s, size_t n)
{
    if (j->full || (size_t)(j->end - j->p) < n) {
        j->full = true;
        return;
    }
    memcpy(j->p, s, n);
    j->p += n;
}

static void put_key(struct tlsm_json *j, const char *key)
{
    put(j, ",\"", 2);
    put(j, key, strlen(key));
    put(j, "\":", 2);
}

void tlsm_json_begin(struct tlsm_json *j, char *buf, size_t cap, const char *ev)
{
    j->p = buf;
    j->end = buf + cap - 2; /* room for "}\n" */
    j->full = false;
    put(j, "{\"ev\":\"", 7);
    put(j, ev, strlen(ev));
    put(j, "\"", 1);
}

void tlsm_json_int(struct tlsm_json *j, const char *key, int64_t v)
{
    char tmp[24], *q = tmp + sizeof(tmp);
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--q = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--q = '-';
    put_key(j, key);
    put(j, q, (size_t)(tmp + sizeof(tmp) - q));
}

/* Escapes what JSON requires; bytes >= 0x80 pass through (paths are UTF-8 in practice;
 * invalid UTF-8 is replaced so every line stays valid JSON for strict readers). */
static void put_escaped(struct tlsm_json *j, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') {
            char e[2] = {'\\', (char)*c};
            put(j, e, 2);
        } else if (*c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[*c >> 4], hex[*c & 15]};
            put(j, e, 6);
        } else if (*c >= 0x80) {
            put(j, "?", 1);
        } else {
            put(j, (const char *)c, 1);
        }
    }
}

void tlsm_json_str(struct tlsm_json *j, const char *key, const char *s)
{
    put_key(j, key);
    put(j, "\"", 1);
    put_escaped(j, s ? s : "");
    put(j, "\"", 1);
}

void tlsm_json_bool(struct tlsm_json *j, const char *key, bool v)
{
    put_key(j, key);
    put(j, v ? "true" : "false", v ? 4 : 5);
}

void tlsm_json_raw(struct tlsm_json *j, const char *key, const char *v)
{
    put_key(j, key);
    put(j, v, strlen(v));
}

size_t tlsm_json_end(struct tlsm_json *j, char *buf)
{
    if (j->full)
        return 0;
    j->p[0] = '}';
    j->p[1] = '\n';
    return (size_t)(j->p + 2 - buf);
}

void tlsm_json_num(struct tlsm_json *j, const char *key, double v)
{
    char tmp[40];
    int n = snprintf(tmp, sizeof(tmp), "%.4f", v >= 0 && v < 1e15 ? v : 0.0);
    put_key(j, key);
    put(j, tmp, (size_t)n);
}
