/* stacks_json.c: module and stack lines (nested, rare: one per loaded object and per distinct
 * stack) read through jansson, with the checks every untrusted line gets. */
#include "model/stacks.h"

#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static int bad(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "%s", what);
    return -1;
}

static int hex_value(json_t *v, uint64_t *out)
{
    const char *p = json_string_value(v);
    char *end;

    if (!p || strncmp(p, "0x", 2))
        return -1;
    *out = strtoull(p + 2, &end, 16);
    return end == p + 2 || *end ? -1 : 0;
}

int stacks__module(struct stacks *s, uint32_t ti, json_t *o, char *err, size_t errlen)
{
    json_t *id = json_object_get(o, "id"), *path = json_object_get(o, "path");
    json_t *bid = json_object_get(o, "build_id");
    struct strace *t = stacks__trace(s, ti);
    struct smodule *mod;
    int64_t k;

    if (!json_is_integer(id) || !json_is_string(path))
        return bad(err, errlen, "module without an integer \"id\" and a string \"path\"");
    k = (int64_t)json_integer_value(id);
    if (k < 0 || k >= STACK_MAX_MODULES)
        return bad(err, errlen, "module \"id\" out of range (0..255)");
    if (!t->mods)
        t->mods = xcalloc(STACK_MAX_MODULES, sizeof(*t->mods));
    mod = &t->mods[k];
    if (mod->path)
        return bad(err, errlen, "a second module with this \"id\"");
    mod->path = xstrndup(json_string_value(path), json_string_length(path));
    mod->build_id = json_is_string(bid) ? xstrdup(json_string_value(bid)) : xstrdup("");
    if (hex_value(json_object_get(o, "base"), &mod->base))
        mod->base = 0;
    return 0;
}

/* One [module id, "0xOFFSET"] pair. */
static int frame_parse(json_t *v, struct sframe *f)
{
    json_t *mod = json_array_get(v, 0), *off = json_array_get(v, 1);
    int64_t m;

    if (json_array_size(v) != 2 || !json_is_integer(mod) || hex_value(off, &f->off))
        return -1;
    m = (int64_t)json_integer_value(mod);
    if (m < -1 || m >= STACK_MAX_MODULES)
        return -1;
    f->module = (int32_t)m;
    return 0;
}

static int frames_parse(json_t *arr, struct sframe *f, size_t *n, char *err, size_t errlen)
{
    size_t i;
    json_t *v;

    if (!json_is_array(arr) || !json_array_size(arr))
        return bad(err, errlen, "stack without a non-empty \"frames\" array");
    json_array_foreach(arr, i, v)
    {
        if (i == STACK_MAX_FRAMES)
            break; /* the outermost frames beyond 64 are cut: the report says nothing of them */
        if (frame_parse(v, &f[i]))
            return bad(err, errlen, "stack frame is not [module id (-1..255), \"0xOFFSET\"]");
    }
    *n = i;
    return 0;
}

int stacks__stack(struct stacks *s, uint32_t ti, json_t *o, char *err, size_t errlen)
{
    json_t *id = json_object_get(o, "id");
    struct sframe f[STACK_MAX_FRAMES];
    struct sstack *st;
    size_t n;
    int64_t k;

    if (!json_is_integer(id) || (k = (int64_t)json_integer_value(id)) <= 0 || k > UINT32_MAX)
        return bad(err, errlen, "stack without a positive integer \"id\"");
    if (imap__get(&s->stack_map, ti, (uint64_t)k) >= 0)
        return bad(err, errlen, "a second stack with this \"id\"");
    if (s->nstacks >= STACK_MAX_STACKS)
        return bad(err, errlen, "too many stacks (over 1 M): ignored");
    if (frames_parse(json_object_get(o, "frames"), f, &n, err, errlen))
        return -1;
    grow_array((void **)&s->stacks, &s->cap_stacks, s->nstacks, sizeof(*s->stacks));
    st = &s->stacks[s->nstacks];
    st->trace = ti, st->id = (uint32_t)k, st->n = (uint16_t)n;
    st->f = xmalloc(n * sizeof(*f));
    memcpy(st->f, f, n * sizeof(*f));
    imap__put(&s->stack_map, ti, (uint64_t)k, (uint32_t)s->nstacks++);
    stacks__trace(s, ti)->nstacks++;
    return 0;
}
