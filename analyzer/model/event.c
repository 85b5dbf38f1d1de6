/* event.c: the table of keys the hot event kinds use, and typed setters shared by the fast
 * scanner and the jansson fallback. */
#include "model/event.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const struct field fields[] = {
    {"t", FT_INT, I_T},
    {"tid", FT_INT, I_TID},
    {"conn", FT_INT, I_CONN},
    {"lib", FT_INT, I_LIB},
    {"id", FT_INT, I_ID},
    {"len", FT_INT, I_LEN},
    {"pt", FT_INT, I_PT},
    {"type", FT_INT, I_TYPE},
    {"crypto_ns", FT_INT, I_CRYPTO_NS},
    {"gcm_ns", FT_INT, I_GCM_NS},
    {"gcm_bytes", FT_INT, I_GCM_BYTES},
    {"read", FT_INT, I_READ},
    {"stack", FT_INT, I_STACK},
    {"want", FT_INT, I_WANT},
    {"got", FT_INT, I_GOT},
    {"err", FT_INT, I_ERR},
    {"ns", FT_INT, I_NS},
    {"recs", FT_INT, I_RECS},
    {"reads", FT_INT, I_READS},
    {"hs_ns", FT_INT, I_HS_NS},
    {"hs_call_ns", FT_INT, I_HS_CALL_NS},
    {"preempt", FT_INT, I_PREEMPT},
    {"wall_ns", FT_INT, I_WALL_NS},
    {"impl", FT_INT, I_IMPL},
    {"write", FT_INT, I_WRITE},
    {"asked", FT_INT, I_ASKED},
    {"written", FT_INT, I_WRITTEN},
    {"writes", FT_INT, I_WRITES},
    {"wbytes", FT_INT, I_WBYTES},
    {"wrecs", FT_INT, I_WRECS},
    {"wcrypto_ns", FT_INT, I_WCRYPTO_NS},
    {"prov", FT_INT, I_PROV},
    {"stall", FT_INT, I_STALL},
    {"ev", FT_STR, S_EV},
    {"cipher", FT_STR, S_CIPHER},
    {"path", FT_STR, S_PATH},
    {"gcm_fn", FT_STR, S_GCM_FN},
    {"fn", FT_STR, S_FN},
    {"tls", FT_STR, S_TLS},
    {"phase", FT_STR, S_PHASE},
    {"role", FT_STR, S_ROLE},
    {"proto", FT_STR, S_PROTO},
    {"suite", FT_STR, S_SUITE},
    {"dir", FT_STR, S_DIR},
    {"tag_ok", FT_BOOL, 0},
};

/* Every key of every hot line is looked up here (the JSON Lines reader's busiest function
 * once was a walk of the table): an open-addressed table by length and end bytes, built on
 * first use. */
#define FIND_SLOTS 128
static const struct field *by_hash[FIND_SLOTS];
static unsigned char name_len[sizeof(fields) / sizeof(fields[0])];

/* No two keys of the table as it is share a slot with these factors (searched for): a known
 * key is found at the first probe (one added later may take a second). */
static unsigned key_hash(const char *k, size_t n)
{
    return (unsigned)(n + (unsigned char)k[0] * 4u + (unsigned char)k[n - 1] * 16u +
                      (n > 1 ? (unsigned char)k[1] : 0)) &
           (FIND_SLOTS - 1);
}

static void find_init(void)
{
    size_t i;
    unsigned h;

    for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        name_len[i] = (unsigned char)strlen(fields[i].name);
        for (h = key_hash(fields[i].name, name_len[i]); by_hash[h]; h = (h + 1) & (FIND_SLOTS - 1))
            ;
        by_hash[h] = &fields[i];
    }
}

/* Keys are a few bytes: a byte loop beats a call into libc's memcmp. */
static inline bool same(const char *a, const char *b, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

const struct field *field__find(const char *k, size_t n)
{
    const struct field *f;
    unsigned h;

    if (!n)
        return NULL;
    if (!name_len[0])
        find_init();
    for (h = key_hash(k, n); (f = by_hash[h]); h = (h + 1) & (FIND_SLOTS - 1))
        if (name_len[f - fields] == n && same(f->name, k, n))
            return f;
    return NULL;
}

/* The schema's kinds follow EV_OTHER in the same order: EV_x = TLSM_EV_x + 1. */
_Static_assert(EV_HEADER == TLSM_EV_HEADER + 1 && EV_N == TLSM_EV_N + 1,
               "ev_kind follows the schema");

enum ev_kind ev_kind__parse(const char *p, size_t n)
{
    return (enum ev_kind)(tlsm_ev_parse(p, n) + 1); /* -1 (unknown) is EV_OTHER */
}

const char *ev_kind__name(enum ev_kind k)
{
    return k == EV_OTHER ? "other" : tlsm_ev_name((enum tlsm_ev)(k - 1));
}

void event__reset(struct event *e)
{
    e->kind = EV_OTHER;
    e->have_i = e->have_s = 0;
    e->have_tag_ok = e->tag_ok = false;
    memset(e->i, 0, sizeof(e->i));
    memset(e->s, 0, sizeof(e->s)); /* a missing string must not point into an old line */
}

void event__clear(struct event *e)
{
    event__zero(e, e->have_i, e->have_s);
    e->kind = EV_OTHER;
    e->have_i = e->have_s = 0;
    e->have_tag_ok = e->tag_ok = false;
}

static const char *type_name(enum field_type t)
{
    return t == FT_INT ? "an integer" : t == FT_STR ? "a string" : "true or false";
}

int event__bad_type(const struct field *f, const char *got, char *err, size_t errlen)
{
    snprintf(err, errlen, "key \"%s\" must be %s, not %s", f->name, type_name(f->type), got);
    return -1;
}

int event__set_int(struct event *e, const struct field *f, int64_t v, char *err, size_t errlen)
{
    if (f->type != FT_INT)
        return event__bad_type(f, "an integer", err, errlen);
    e->i[f->slot] = v;
    e->have_i |= 1ull << f->slot;
    return 0;
}

int event__set_str(struct event *e, const struct field *f, const char *p, size_t n, char *err,
                   size_t errlen)
{
    if (f->type != FT_STR)
        return event__bad_type(f, "a string", err, errlen);
    e->s[f->slot].p = p;
    e->s[f->slot].n = n;
    e->have_s |= 1u << f->slot;
    if (f->slot == S_EV)
        e->kind = ev_kind__parse(p, n);
    return 0;
}

int event__set_bool(struct event *e, const struct field *f, bool v, char *err, size_t errlen)
{
    if (f->type != FT_BOOL)
        return event__bad_type(f, "true or false", err, errlen);
    e->have_tag_ok = true;
    e->tag_ok = v;
    return 0;
}

int event__from_json(struct event *e, json_t *o, char *err, size_t errlen)
{
    const char *key;
    json_t *v;

    event__reset(e);
    json_object_foreach(o, key, v)
    {
        const struct field *f = field__find(key, strlen(key));
        int rc = 0;

        if (!f)
            continue;
        if (json_is_integer(v))
            rc = event__set_int(e, f, (int64_t)json_integer_value(v), err, errlen);
        else if (json_is_string(v))
            rc = event__set_str(e, f, json_string_value(v), json_string_length(v), err, errlen);
        else if (json_is_boolean(v))
            rc = event__set_bool(e, f, json_is_true(v), err, errlen);
        else
            rc = event__bad_type(f,
                                 json_is_real(v)   ? "a real number"
                                 : json_is_null(v) ? "null"
                                                   : "an object or array",
                                 err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}
