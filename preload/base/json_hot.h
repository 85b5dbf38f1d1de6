/* json_hot.h: the keys of the hot events (rec, read, write) that trace format 2 stores in
 * fixed records (common/trace2.def) instead of JSON text. json.h maps a literal key to its
 * slot at compile time, so a field of a hot event costs a store, not its digits. */
#ifndef TLSM_JSON_HOT_H
#define TLSM_JSON_HOT_H

#include <stdint.h>

#define TLSM_HOT_INT(X)                                                                            \
    X(t)                                                                                           \
    X(tid) X(conn) X(read) X(write) X(type) X(len) X(pt) X(crypto_ns) X(preempt) X(wall_ns)        \
        X(gcm_ns) X(gcm_bytes) X(lib) X(impl) X(stack) X(id) X(want) X(got) X(err) X(ns) X(recs)   \
            X(asked) X(written)
#define TLSM_HOT_STR(X)  X(dir) X(tls) X(cipher) X(gcm_fn) X(path) X(verify) X(fn)
#define TLSM_HOT_BOOL(X) X(tag_ok)

enum tlsm_hot_slot {
#define TLSM_HOT_ENUM(k) TLSM_HS_##k,
    TLSM_HOT_INT(TLSM_HOT_ENUM) TLSM_HOT_STR(TLSM_HOT_ENUM) TLSM_HOT_BOOL(TLSM_HOT_ENUM)
#undef TLSM_HOT_ENUM
        TLSM_HS_N
};

enum tlsm_hot_type { TLSM_HT_INT, TLSM_HT_STR, TLSM_HT_BOOL };

/* The slot of key text k (as TLSM_KEY pastes it: ,"key":) of the given type, -1 if none.
 * Always inlined: with a literal k every compare folds away and the call is a constant. */
static inline __attribute__((always_inline)) int tlsm_hot_slot(const char *k, unsigned long kn,
                                                               enum tlsm_hot_type ty)
{
#define TLSM_HOT_IS(key)                                                                           \
    (kn == sizeof(",\"" #key "\":") - 1 && !__builtin_memcmp(k, ",\"" #key "\":", kn))
#define TLSM_HOT_I(key)                                                                            \
    if (ty == TLSM_HT_INT && TLSM_HOT_IS(key))                                                     \
        return TLSM_HS_##key;
#define TLSM_HOT_S(key)                                                                            \
    if (ty == TLSM_HT_STR && TLSM_HOT_IS(key))                                                     \
        return TLSM_HS_##key;
#define TLSM_HOT_B(key)                                                                            \
    if (ty == TLSM_HT_BOOL && TLSM_HOT_IS(key))                                                    \
        return TLSM_HS_##key;
    TLSM_HOT_INT(TLSM_HOT_I)
    TLSM_HOT_STR(TLSM_HOT_S)
    TLSM_HOT_BOOL(TLSM_HOT_B)
#undef TLSM_HOT_I
#undef TLSM_HOT_S
#undef TLSM_HOT_B
#undef TLSM_HOT_IS
    return -1;
}

/* The staged form of a hot event in the line buffer (format 2): what tlsm_json_end leaves
 * for the trace writer, which encodes it into the thread's chunk. The buffer's first byte is
 * the kind (1 rec, 2 read, 3 write, common/trace2.def; never the '{' of JSON text), the stage
 * sits at the next 8-aligned address (tlsm_hot_at), the JSON text of keys without a slot
 * (",\"k\":v...") right after it. The slots are filled in place: no copy. */
struct tlsm_hot_stage {
    uint32_t tail_len;
    uint32_t pad;
    uint64_t have;        /* bit per slot */
    int64_t v[TLSM_HS_N]; /* valid where have says so */
};

static inline struct tlsm_hot_stage *tlsm_hot_at(const char *buf)
{
    return (struct tlsm_hot_stage *)(void *)(((uintptr_t)buf + 8) & ~(uintptr_t)7);
}

#endif
