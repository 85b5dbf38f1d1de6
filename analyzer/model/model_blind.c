/* model_blind.c: blind spots a trace declares (blind events, end.blind): objects holding
 * OpenSSL TLS code the hooks never saw, connections whose records the kernel decrypted or
 * encrypted (kTLS), objects whose SSL_* calls bind past the hooks (RTLD_DEEPBIND) and other TLS
 * libraries in use (GnuTLS, NSS, ...). Kept per trace, merged by (what, path), so the report can
 * say why a zero is not "no TLS here". */
#include "model/model.h"

#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The analyzer's own words, so a report reads the same whatever `why` the writer gave. */
static const char *const reason_text[BR_N] = {
    [BR_SYMBOLIC] = "linked -Bsymbolic (DT_SYMBOLIC/DF_SYMBOLIC): its calls into its own "
                    "OpenSSL are bound at link time and bypass the PLT",
    [BR_NO_EXPORTS] = "exports no OpenSSL symbol (hidden visibility or a version script): "
                      "nothing to interpose",
    [BR_NO_RELOCS] = "has no JUMP_SLOT/GLOB_DAT relocation for EVP_CipherUpdate, "
                     "EVP_DecryptUpdate or EVP_Cipher: record decryption never crosses a PLT",
    [BR_GOT_ELSEWHERE] = "its GOT slots for the record functions are bound past tlsmeter "
                         "(loaded RTLD_DEEPBIND, or in another link-map namespace)",
    [BR_OPENSSL_1] =
        "OpenSSL 1.0 or older: tlsmeter supports OpenSSL 3 and 1.1.1 only and left its calls alone",
    [BR_KTLS] = "kernel TLS receive (kTLS): the kernel decrypts the records, no EVP call is made",
    [BR_CALLS_ELSEWHERE] = "its GOT slots for libssl's SSL_read/SSL_write/handshake functions "
                           "point past tlsmeter's hooks (loaded RTLD_DEEPBIND, or in another "
                           "link-map namespace)",
    [BR_OTHER_LIBRARY] = "another TLS library (not OpenSSL 3 or 1.1.1) does TLS in this process: "
                         "tlsmeter measures OpenSSL only",
    [BR_KTLS_SEND] = "kernel TLS send (kTLS): the kernel encrypts the records, no EVP call is made",
};

const char *blind_reason__name(enum blind_reason r)
{
    return tlsm_blind_name((enum tlsm_blind)r);
}

const char *blind_reason__text(enum blind_reason r)
{
    return reason_text[r];
}

static char *dup_str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);

    return json_is_string(v) ? xstrndup(json_string_value(v), json_string_length(v)) : NULL;
}

static int64_t get_int(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);

    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* An array of strings as "a, b, c" (NULL when absent or empty). */
static char *join_strs(json_t *arr)
{
    char buf[512];
    size_t i, n = 0;
    json_t *v;

    if (!json_is_array(arr))
        return NULL;
    buf[0] = 0;
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && n < sizeof(buf))
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? ", " : "",
                                  json_string_value(v));
    }
    return n ? xstrdup(buf) : NULL;
}

/* Keys of the "calls" and "other_tls" entries, from an event or an end.blind entry. */
static void add_detail(struct blind *b, json_t *o)
{
    if (!b->fns)
        b->fns = join_strs(json_object_get(o, "fns"));
    if (!b->bound_to)
        b->bound_to = dup_str(o, "bound_to");
    if (!b->scope)
        b->scope = dup_str(o, "scope");
    if (!b->needed_by)
        b->needed_by = dup_str(o, "needed_by");
    if (!b->library)
        b->library = dup_str(o, "library");
    if (!b->version)
        b->version = dup_str(o, "version");
    if (!b->build_id)
        b->build_id = dup_str(o, "build_id");
    if (json_is_integer(json_object_get(o, "calls")))
        b->calls = get_int(o, "calls");
}

void model__blind_free(struct blind *b)
{
    free(b->path), free(b->version), free(b->what), free(b->unknown), free(b->build_id);
    free(b->fns), free(b->bound_to), free(b->scope), free(b->needed_by), free(b->library);
}

static bool same(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

static void add_reasons(struct blind *b, json_t *arr)
{
    size_t i;
    json_t *v;

    json_array_foreach(arr, i, v)
    {
        const char *s = json_string_value(v);
        int r;

        if (!s)
            continue;
        r = tlsm_blind_parse(s, json_string_length(v));
        if (r >= 0)
            b->reasons |= 1u << r;
        else if (!b->unknown)
            b->unknown = xstrdup(s);
    }
}

/* The entry for (what, path); a new one when there is room. NULL when the trace names more
 * blind objects than any real process has. */
static struct blind *find_or_add(struct trace *t, json_t *o, bool *fresh)
{
    const char *what = json_string_value(json_object_get(o, "what"));
    const char *path = json_string_value(json_object_get(o, "path"));
    struct blind *b;
    int i;

    if (!what)
        what = "tls"; /* the preload names "ktls" entries explicitly */
    *fresh = false;
    for (i = 0; i < t->nblind; i++)
        if (same(t->blind[i].what, what) && same(t->blind[i].path, path))
            return &t->blind[i];
    if (t->nblind == MAX_BLIND)
        return NULL;
    b = &t->blind[t->nblind++];
    memset(b, 0, sizeof(*b));
    b->what = xstrdup(what);
    b->path = path ? xstrdup(path) : NULL;
    b->record_relocs = b->got_tlsmeter = b->got_elsewhere = b->calls = -1;
    *fresh = true;
    return b;
}

int model__blind(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    json_t *reasons = json_object_get(o, "reasons");
    struct blind *b;
    bool fresh;

    (void)m;
    if (!json_is_array(reasons) || !json_is_string(json_object_get(o, "path"))) {
        snprintf(err, errlen, "blind needs a string \"path\" and a \"reasons\" array");
        return -1;
    }
    b = find_or_add(t, o, &fresh);
    if (!b)
        return 0;
    add_reasons(b, reasons);
    add_detail(b, o);
    if (!strcmp(b->what, "ktls")) {
        const char *dir = json_string_value(json_object_get(o, "dir"));

        /* one event per connection and direction; "in" when older traces say none */
        if (dir && !strcmp(dir, "out"))
            b->send_conns += 1;
        else
            b->conns += 1;
        return 0;
    }
    b->record_relocs = get_int(o, "record_relocs");
    b->got_tlsmeter = get_int(o, "got_tlsmeter");
    b->got_elsewhere = get_int(o, "got_elsewhere");
    return 0;
}

void model__end_blind(struct trace *t, json_t *arr)
{
    size_t i;
    json_t *o;

    json_array_foreach(arr, i, o)
    {
        struct blind *b;
        bool fresh;

        if (!json_is_object(o) || !json_is_string(json_object_get(o, "path")))
            continue;
        b = find_or_add(t, o, &fresh);
        if (b && json_is_integer(json_object_get(o, "calls")))
            b->calls = get_int(o, "calls"); /* totals only the end line knows */
        if (!b || !fresh)
            continue; /* its blind event(s) said it all */
        add_reasons(b, json_object_get(o, "reasons"));
        add_detail(b, o);
        if (!strcmp(b->what, "ktls")) {
            b->conns = get_int(o, "conns");
            b->send_conns = get_int(o, "send_conns") > 0 ? get_int(o, "send_conns") : 0;
        }
    }
}

int model__blind_count(const struct model *m, const char *what)
{
    size_t i;
    int k, n = 0;

    for (i = 0; i < m->ntraces; i++)
        for (k = 0; k < m->traces[i].nblind; k++)
            n += !what || !strcmp(m->traces[i].blind[k].what, what);
    return n;
}
