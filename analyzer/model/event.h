/* event.h: one parsed trace line of the hot kinds (rec, read, conn), as flat typed fields.
 * Both the fast scanner and the jansson path fill this struct through event__set_*, so the
 * two agree on names, types and errors. */
#ifndef TLSM_EVENT_H
#define TLSM_EVENT_H

#include "common/schema.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* EV_OTHER (a kind this reader does not know: from a newer writer), then the schema's kinds
 * (common/schema.def) in its order: EV_HEADER, EV_LIB, ... */
enum ev_kind {
    EV_OTHER,
#define SCHEMA_EV(id, name) EV_##id,
#include "common/schema.def"
    EV_N
};

enum ev_int {
    I_T,
    I_TID,
    I_CONN,
    I_LIB,
    I_ID,
    I_LEN,
    I_PT,
    I_TYPE,
    I_CRYPTO_NS,
    I_GCM_NS,
    I_GCM_BYTES,
    I_READ,
    I_STACK,
    I_WANT,
    I_GOT,
    I_ERR,
    I_NS,
    I_RECS,
    I_READS,
    I_HS_NS,
    I_HS_CALL_NS,
    I_PREEMPT, /* rec: context switches seen during the record (docs/trace-format.md) */
    I_WALL_NS, /* rec: wall time when it differs from the on-CPU crypto_ns */
    I_IMPL,
    I_WRITE,   /* rec dir out: the enclosing write's id (rec dir in: I_READ) */
    I_ASKED,   /* write: bytes asked to write (read: I_WANT) */
    I_WRITTEN, /* write: bytes written (read: I_GOT) */
    /* conn close: the sending side's totals (I_READS, I_GOT, I_RECS, I_CRYPTO_NS: receiving) */
    I_WRITES,
    I_WBYTES,
    I_WRECS,
    I_WCRYPTO_NS,
    I_PROV,  /* rec: the prov event of who decrypted (absent: the default provider) */
    I_STALL, /* rec: 1 when too slow for its context's pace with no switch seen */
    I_N
};

enum ev_str {
    S_EV,
    S_CIPHER,
    S_PATH,
    S_GCM_FN,
    S_FN,
    S_TLS,
    S_PHASE,
    S_ROLE,
    S_PROTO,
    S_SUITE,
    S_DIR, /* rec: "in" (decrypted, also when absent) or "out" (encrypted) */
    S_N
};

struct strv {
    const char *p;
    size_t n;
};

struct event {
    enum ev_kind kind;
    uint64_t have_i; /* bit per enum ev_int */
    uint32_t have_s; /* bit per enum ev_str */
    bool have_tag_ok, tag_ok;
    int64_t i[I_N];
    struct strv s[S_N];
};

enum field_type { FT_INT, FT_STR, FT_BOOL };

struct field {
    const char *name;
    enum field_type type;
    int slot;
};

/* The field named k (n bytes), or NULL for a key the hot kinds do not use. */
const struct field *field__find(const char *k, size_t n);
enum ev_kind ev_kind__parse(const char *p, size_t n);
const char *ev_kind__name(enum ev_kind k);

void event__reset(struct event *e);
/* The same for an event that was reset once before: only the fields it holds are cleared
 * (the fast paths' per-line reset). */
void event__clear(struct event *e);
/* Zeroes the int slots of bit mask mi and the string slots of ms (not the have bits): the
 * fast paths clear only what an earlier event set (a memset of every slot compiles to a
 * slow string store here). */
static inline void event__zero(struct event *e, uint64_t mi, uint32_t ms)
{
    _Static_assert(I_N < 64, "have_i holds a bit per integer field");
    for (mi &= (1ull << I_N) - 1; mi; mi &= mi - 1)
        e->i[__builtin_ctzll(mi)] = 0;
    for (ms &= (1u << S_N) - 1; ms; ms &= ms - 1)
        e->s[__builtin_ctz(ms)] = (struct strv){NULL, 0};
}
/* Typed setters; they fail (returning -1 and a reason in err) when the key is known and
 * the JSON type is not the one the trace format gives it. */
int event__set_int(struct event *e, const struct field *f, int64_t v, char *err, size_t errlen);
int event__set_str(struct event *e, const struct field *f, const char *p, size_t n, char *err,
                   size_t errlen);
int event__set_bool(struct event *e, const struct field *f, bool v, char *err, size_t errlen);
/* Fill e from a parsed object through the same setters (the slow path and its checks). */
struct json_t;
int event__from_json(struct event *e, struct json_t *o, char *err, size_t errlen);
/* A known key carrying a real, null, object or array. */
int event__bad_type(const struct field *f, const char *got, char *err, size_t errlen);

static inline bool event__has(const struct event *e, enum ev_int f)
{
    return e->have_i & (1ull << f);
}

/* With a literal, the length folds and the compare is a load or two (hot path). */
static inline bool strv_eq(struct strv s, const char *lit)
{
    size_t n = __builtin_strlen(lit);

    return s.n == n && (!n || !memcmp(s.p, lit, n));
}

/* A rec of direction out (encrypted); absent or "in": decrypted (older traces). */
static inline bool event__is_out(const struct event *e)
{
    return (e->have_s & (1u << S_DIR)) && strv_eq(e->s[S_DIR], "out");
}

#endif
