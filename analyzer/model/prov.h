/* prov.h: a bucket of records another provider or an engine decrypted (model_prov.c). */
#ifndef TLSM_PROV_H
#define TLSM_PROV_H

#include "model/impl.h"

/* After impl__classify's own rules: for a bucket with rec.prov, the class stays only when its
 * impl event names code in that provider's module; else unknown, saying who decrypted. */
void prov__classify(const struct model *m, const struct bucket *b, struct impl_result *r);

#endif
