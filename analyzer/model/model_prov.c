/* model_prov.c: prov events (a provider other than a copy's default one, or an engine, that
 * decrypted records) and what they change in a bucket's class: a record the FIPS module or a
 * vendor's provider decrypted ran that provider's code, so no default-provider reasoning
 * (the copy's capability bits, its CRYPTO_gcm128_* entries) may name its implementation. Its
 * class comes from an impl event whose code lies in that provider's module, or is unknown. */
#include "model/prov.h"

#include <stdio.h>
#include <string.h>

uint64_t prov__hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a: equal paths, equal hashes; 0 for none */
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

static void str_of(json_t *o, const char *k, char *buf, size_t cap)
{
    const char *s = json_string_value(json_object_get(o, k));
    snprintf(buf, cap, "%s", s ? s : "");
}

int model__prov(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    json_t *id = json_object_get(o, "id"), *name = json_object_get(o, "name");
    struct prov_ev *p;

    (void)m;
    if (!json_is_integer(id) || json_integer_value(id) < 1 || !json_is_string(name)) {
        snprintf(err, errlen, "prov needs a positive \"id\" and a \"name\"");
        return -1;
    }
    if (trace__prov(t, json_integer_value(id)) || t->nprovs == MAX_PROVS)
        return 0; /* written again in a forked child's trace: the same facts */
    p = &t->provs[t->nprovs++];
    memset(p, 0, sizeof(*p));
    p->id = json_integer_value(id);
    p->lib = json_integer_value(json_object_get(o, "lib"));
    str_of(o, "name", p->name, sizeof(p->name));
    str_of(o, "full_name", p->full_name, sizeof(p->full_name));
    str_of(o, "version", p->version, sizeof(p->version));
    str_of(o, "module", p->module, sizeof(p->module));
    p->engine = !strcmp(json_string_value(json_object_get(o, "kind")) ?: "", "engine");
    p->module_hash = prov__hash(p->module);
    p->gcm_read = json_string_length(json_object_get(o, "gcm_layout")) > 0;
    return 0;
}

const struct prov_ev *trace__prov(const struct trace *t, int64_t id)
{
    for (int i = 0; i < t->nprovs; i++)
        if (t->provs[i].id == id)
            return &t->provs[i];
    return NULL;
}

void prov__label(const struct prov_ev *p, char *buf, size_t cap)
{
    const char *what = p->engine ? "engine" : "provider";
    if (p->full_name[0] || p->version[0] || p->module[0])
        snprintf(buf, cap, "%s %s (%s%s%s%s%s)", what, p->name, p->full_name,
                 p->full_name[0] && p->version[0] ? " " : "", p->version,
                 p->module[0] && (p->full_name[0] || p->version[0]) ? ", " : "", p->module);
    else
        snprintf(buf, cap, "%s %s", what, p->name);
}

/* The impl event of the bucket names code inside the provider's own module. */
static bool code_is_providers(const struct trace *t, const struct bucket *b,
                              const struct prov_ev *p)
{
    const struct impl_ev *e = b->impl ? trace__impl(t, b->impl) : NULL;
    return e && p->module_hash && e->block_module == p->module_hash &&
           b->impl_ct >= b->impl_none_ct && !b->impl_other_ct;
}

void prov__classify(const struct model *m, const struct bucket *b, struct impl_result *r)
{
    const struct trace *t = &m->traces[b->trace];
    const struct prov_ev *p = b->prov ? trace__prov(t, b->prov) : NULL;
    char detail[sizeof(r->detail)];

    if (!b->prov)
        return;
    if (!p) {
        r->cls = IMPL_UNKNOWN;
        snprintf(r->detail, sizeof(r->detail),
                 "in provider or engine %lld (its prov event is missing): "
                 "implementation not known",
                 (long long)b->prov);
        return;
    }
    if (r->aes_gcm && code_is_providers(t, b, p)) {
        snprintf(detail, sizeof(detail), "%s", r->detail);
        snprintf(r->detail, sizeof(r->detail), "in %s %s: %.150s",
                 p->engine ? "engine" : "provider", p->name, detail);
        return; /* the class is that provider's own code's */
    }
    r->cls = IMPL_UNKNOWN;
    snprintf(r->detail, sizeof(r->detail), "in %s %s: implementation not identified",
             p->engine ? "engine" : "provider", p->name);
    snprintf(r->evidence, sizeof(r->evidence),
             "%s; the copy's capability bits and CRYPTO_gcm128_* entries tell of the default "
             "provider's code, not of this one's",
             p->engine     ? "an engine's code is its own, not read"
             : !r->aes_gcm ? "only AES-GCM contexts are read"
             : p->gcm_read ? "its GCM context showed no code inside its module"
                           : "its GCM context is not read (only OpenSSL's 3.0.x FIPS module "
                             "under a 3.0 or 3.1 copy is)");
}
