/* schema.h: the trace vocabulary of common/schema.def as C enums and name tables, shared by
 * the preload (writer) and the analyzer (reader) so the two cannot spell a name differently.
 * Everything is static inline or static const (a header used by both programs, no object
 * file of its own). For each list L: enum tlsm_L, TLSM_L_N, tlsm_L_name(value) (NULL past
 * the end) and tlsm_L_parse(p, n) (the value named by the n bytes at p, not necessarily
 * NUL-terminated, or -1: for readers of untrusted traces). */
#ifndef TLSM_SCHEMA_H
#define TLSM_SCHEMA_H

#include <stddef.h>
#include <string.h>

/* The wire name of event kind ID as a constant: TLSM_EV(REC) is "rec". */
#define TLSM_EV(id) (tlsm_ev_names[TLSM_EV_##id])

#define TLSM_SCHEMA_LOOKUP(l, count)                                                               \
    static inline const char *l##_name(enum l v)                                                   \
    {                                                                                              \
        return (unsigned)v < (count) ? l##_names[v] : NULL;                                        \
    }                                                                                              \
    static inline int l##_parse(const char *p, size_t n)                                           \
    {                                                                                              \
        for (int i = 0; i < (count); i++)                                                          \
            if (strlen(l##_names[i]) == n && !memcmp(l##_names[i], p, n))                          \
                return i;                                                                          \
        return -1;                                                                                 \
    }

/* Event kinds: TLSM_EV_REC, ...; TLSM_EV_N of them. */
enum tlsm_ev {
#define SCHEMA_EV(id, name) TLSM_EV_##id,
#include "schema.def"
    TLSM_EV_N
};
static const char *const tlsm_ev_names[TLSM_EV_N] __attribute__((unused)) = {
#define SCHEMA_EV(id, name) name,
#include "schema.def"
};
TLSM_SCHEMA_LOOKUP(tlsm_ev, TLSM_EV_N)

/* Blind reasons: TLSM_BLIND_SYMBOLIC, ...; a set of them is a bit mask (1u << reason). */
enum tlsm_blind {
#define SCHEMA_BLIND(id, name) TLSM_BLIND_##id,
#include "schema.def"
    TLSM_BLIND_N
};
static const char *const tlsm_blind_names[TLSM_BLIND_N] __attribute__((unused)) = {
#define SCHEMA_BLIND(id, name) name,
#include "schema.def"
};
TLSM_SCHEMA_LOOKUP(tlsm_blind, TLSM_BLIND_N)

/* Capability bits of an instance (lib.caps keys). */
enum tlsm_cap {
#define SCHEMA_CAP(id, name) TLSM_CAP_##id,
#include "schema.def"
    TLSM_CAP_N
};
static const char *const tlsm_cap_names[TLSM_CAP_N] __attribute__((unused)) = {
#define SCHEMA_CAP(id, name) name,
#include "schema.def"
};
TLSM_SCHEMA_LOOKUP(tlsm_cap, TLSM_CAP_N)

/* Implementation classes (calib.impl, the report's class). */
enum tlsm_class {
#define SCHEMA_CLASS(id, name) TLSM_CLASS_##id,
#include "schema.def"
    TLSM_CLASS_N
};
static const char *const tlsm_class_names[TLSM_CLASS_N] __attribute__((unused)) = {
#define SCHEMA_CLASS(id, name) name,
#include "schema.def"
};
TLSM_SCHEMA_LOOKUP(tlsm_class, TLSM_CLASS_N)

/* The AES code of an impl event (impl.aes). */
enum tlsm_aes {
#define SCHEMA_AES(id, name) TLSM_AES_##id,
#include "schema.def"
    TLSM_AES_N
};
static const char *const tlsm_aes_names[TLSM_AES_N] __attribute__((unused)) = {
#define SCHEMA_AES(id, name) name,
#include "schema.def"
};
TLSM_SCHEMA_LOOKUP(tlsm_aes, TLSM_AES_N)

/* The GHASH code of an impl event (impl.ghash). */
enum tlsm_ghash {
#define SCHEMA_GHASH(id, name) TLSM_GHASH_##id,
#include "schema.def"
    TLSM_GHASH_N
};
static const char *const tlsm_ghash_names[TLSM_GHASH_N] __attribute__((unused)) = {
#define SCHEMA_GHASH(id, name) name,
#include "schema.def"
};
TLSM_SCHEMA_LOOKUP(tlsm_ghash, TLSM_GHASH_N)

/* The analyzer's verdict ids. */
enum tlsm_verdict {
#define SCHEMA_VERDICT(id, name) TLSM_VERDICT_##id,
#include "schema.def"
    TLSM_VERDICT_N
};
static const char *const tlsm_verdict_names[TLSM_VERDICT_N] __attribute__((unused)) = {
#define SCHEMA_VERDICT(id, name) name,
#include "schema.def"
};
TLSM_SCHEMA_LOOKUP(tlsm_verdict, TLSM_VERDICT_N)

#endif
