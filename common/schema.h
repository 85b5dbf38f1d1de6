/* schema.h: the trace vocabulary of common/schema.def as C enums and name tables, shared by
 * the preload (writer) and the analyzer (reader) so the two cannot spell a name differently.
 * Lookups are static inline (a header used by both programs, no object file of its own). */
#ifndef TLSM_SCHEMA_H
#define TLSM_SCHEMA_H

#include <stddef.h>
#include <string.h>

/* Event kinds: TLSM_EV_REC, ...; TLSM_EV_N of them. */
enum tlsm_ev {
#define SCHEMA_EV(id, name) TLSM_EV_##id,
#include "schema.def"
    TLSM_EV_N
};

/* Blind reasons: TLSM_BLIND_SYMBOLIC, ...; a set of them is a bit mask (1u << reason). */
enum tlsm_blind {
#define SCHEMA_BLIND(id, name) TLSM_BLIND_##id,
#include "schema.def"
    TLSM_BLIND_N
};

/* Capability bits of an instance (lib.caps keys). */
enum tlsm_cap {
#define SCHEMA_CAP(id, name) TLSM_CAP_##id,
#include "schema.def"
    TLSM_CAP_N
};

/* Implementation classes (calib.impl, the report's class). */
enum tlsm_class {
#define SCHEMA_CLASS(id, name) TLSM_CLASS_##id,
#include "schema.def"
    TLSM_CLASS_N
};

/* The analyzer's verdict ids. */
enum tlsm_verdict {
#define SCHEMA_VERDICT(id, name) TLSM_VERDICT_##id,
#include "schema.def"
    TLSM_VERDICT_N
};

/* The wire name of each value; NULL past the end. */
static inline const char *tlsm_ev_name(enum tlsm_ev k)
{
    static const char *const n[] = {
#define SCHEMA_EV(id, name) name,
#include "schema.def"
    };
    return (unsigned)k < TLSM_EV_N ? n[k] : NULL;
}

static inline const char *tlsm_blind_name(enum tlsm_blind r)
{
    static const char *const n[] = {
#define SCHEMA_BLIND(id, name) name,
#include "schema.def"
    };
    return (unsigned)r < TLSM_BLIND_N ? n[r] : NULL;
}

static inline const char *tlsm_cap_name(enum tlsm_cap c)
{
    static const char *const n[] = {
#define SCHEMA_CAP(id, name) name,
#include "schema.def"
    };
    return (unsigned)c < TLSM_CAP_N ? n[c] : NULL;
}

static inline const char *tlsm_class_name(enum tlsm_class c)
{
    static const char *const n[] = {
#define SCHEMA_CLASS(id, name) name,
#include "schema.def"
    };
    return (unsigned)c < TLSM_CLASS_N ? n[c] : NULL;
}

static inline const char *tlsm_verdict_name(enum tlsm_verdict v)
{
    static const char *const n[] = {
#define SCHEMA_VERDICT(id, name) name,
#include "schema.def"
    };
    return (unsigned)v < TLSM_VERDICT_N ? n[v] : NULL;
}

/* The value whose name is the n bytes at p, or -1: for readers of untrusted traces (p need
 * not be NUL-terminated). */
#define TLSM_SCHEMA_PARSE(fn, name, count)                                                         \
    static inline int fn(const char *p, size_t n)                                                  \
    {                                                                                              \
        for (int i = 0; i < (count); i++) {                                                        \
            const char *s = name(i);                                                               \
            if (strlen(s) == n && !memcmp(s, p, n))                                                \
                return i;                                                                          \
        }                                                                                          \
        return -1;                                                                                 \
    }
TLSM_SCHEMA_PARSE(tlsm_ev_parse, tlsm_ev_name, TLSM_EV_N)
TLSM_SCHEMA_PARSE(tlsm_blind_parse, tlsm_blind_name, TLSM_BLIND_N)
TLSM_SCHEMA_PARSE(tlsm_cap_parse, tlsm_cap_name, TLSM_CAP_N)
TLSM_SCHEMA_PARSE(tlsm_class_parse, tlsm_class_name, TLSM_CLASS_N)
TLSM_SCHEMA_PARSE(tlsm_verdict_parse, tlsm_verdict_name, TLSM_VERDICT_N)

#endif
