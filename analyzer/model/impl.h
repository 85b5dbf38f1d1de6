/* impl.h: which implementation class decrypted a bucket of records (docs/design.md section 8,
 * "Which AES and GHASH ran"). */
#ifndef TLSM_IMPL_H
#define TLSM_IMPL_H

#include "model/model.h"

enum impl_class {
#define SCHEMA_CLASS(id, name) IMPL_##id,
#include "common/schema.def"
    IMPL_N
};

struct impl_result {
    enum impl_class cls;
    char detail[192];   /* what ran, per half: "AES: AES-NI; GHASH: 4-bit table in software" */
    char evidence[256]; /* why we say so */
    char check[256];    /* the ns/byte cross-check, or why there is none */
    bool mismatch;      /* ns/byte disagrees with the class */
    bool aes_gcm;
};

const char *impl__name(enum impl_class c);
void impl__classify(const struct model *m, const struct bucket *b, struct impl_result *out);
/* The class that decrypted most bytes of the program's own (native) records; all records
 * when none are native. */
enum impl_class impl__overall(const struct model *m);
bool impl__is_aes_gcm(const char *cipher);
bool impl__is_chacha(const char *cipher);
bool trace__unfired(const struct trace *t, const char *fn);

#endif
