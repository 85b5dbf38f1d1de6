/* model_impl.c: impl events (what AES and GHASH code an instance's GCM context pointed at)
 * and the rec.impl ids that refer to them, per bucket. */
#include "model/model.h"

#include <stdio.h>
#include <string.h>

static bool name_ok(json_t *v)
{
    const char *s = json_string_value(v);
    size_t i;

    if (!s || !*s || json_string_length(v) >= sizeof(((struct impl_ev *)0)->aes))
        return false;
    for (i = 0; s[i]; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

int model__impl(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    json_t *id = json_object_get(o, "id"), *aes = json_object_get(o, "aes");
    json_t *gh = json_object_get(o, "ghash"), *lib = json_object_get(o, "lib");
    struct impl_ev *e;

    (void)m;
    if (!json_is_integer(id) || json_integer_value(id) < 1 || !name_ok(aes) || !name_ok(gh)) {
        snprintf(err, errlen,
                 "impl needs a positive \"id\" and \"aes\", \"ghash\" names (a-z, 0-9, -; "
                 "under 16 characters)");
        return -1;
    }
    if (trace__impl(t, json_integer_value(id)))
        return 0; /* written again after a fork replay: the same facts */
    if (t->nimpls == MAX_IMPLS)
        return 0;
    e = &t->impls[t->nimpls++];
    e->id = json_integer_value(id);
    e->lib = json_is_integer(lib) ? json_integer_value(lib) : 0;
    snprintf(e->aes, sizeof(e->aes), "%s", json_string_value(aes));
    snprintf(e->ghash, sizeof(e->ghash), "%s", json_string_value(gh));
    e->stitched = json_is_true(json_object_get(o, "stitched"));
    e->block_module = prov__hash(json_string_value(json_object_get(o, "fn_block_module")));
    return 0;
}

const struct impl_ev *trace__impl(const struct trace *t, int64_t id)
{
    int i;

    for (i = 0; i < t->nimpls; i++)
        if (t->impls[i].id == id)
            return &t->impls[i];
    return NULL;
}

void model__bucket_impl(struct bucket *b, const struct event *e, uint64_t ct)
{
    if (!event__has(e, I_IMPL) || e->i[I_IMPL] < 1)
        b->impl_none_ct += ct;
    else if (!b->impl || b->impl == e->i[I_IMPL])
        b->impl = e->i[I_IMPL], b->impl_ct += ct;
    else
        b->impl_other_ct += ct;
}
