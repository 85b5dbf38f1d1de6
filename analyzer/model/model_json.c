/* model_json.c: the rare, nested event kinds (header, lib, end, calib) read through jansson,
 * and figures derived from a trace. */
#include "model/model.h"

#include "base/util.h"

#include <string.h>

const char *cap__name(enum cap c)
{
    return tlsm_cap_name((enum tlsm_cap)c);
}

static char *str_dup(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);

    return json_is_string(v) ? xstrndup(json_string_value(v), json_string_length(v)) : NULL;
}

static int64_t int_get(json_t *o, const char *key, int64_t dflt)
{
    json_t *v = json_object_get(o, key);

    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static bool contains(const char *s, const char *sub)
{
    return s && strstr(s, sub);
}

/* qemu-user shows the host's /proc/cpuinfo, so an aarch64 trace naming an x86 CPU ran
 * emulated; there ns/byte says nothing about the target (docs/aarch64.md, "Time lies"). */
static bool looks_emulated(const struct trace *t, json_t *o)
{
    if (json_is_true(json_object_get(o, "emulated")))
        return true;
    if (contains(t->cpu, "QEMU"))
        return true;
    return contains(t->arch, "aarch64") &&
           (contains(t->cpu, "Intel") || contains(t->cpu, "AMD") || contains(t->cpu, "x86"));
}

static void cpu_crypto(struct trace *t, json_t *arr)
{
    size_t i;
    json_t *v;

    if (!json_is_array(arr))
        return;
    t->cpu_crypto_known = true;
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && !strcmp(json_string_value(v), "aes"))
            t->cpu_aes = true;
    }
}

int model__header(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    json_t *tool = json_object_get(o, "tool");
    json_t *fmt = json_object_get(o, "format");

    if (tool && (!json_is_string(tool) || strcmp(json_string_value(tool), "tlsmeter"))) {
        snprintf(err, errlen, "header names tool other than \"tlsmeter\"");
        return -2;
    }
    if (!json_is_integer(fmt)) {
        snprintf(err, errlen, "header without an integer \"format\"");
        return -2;
    }
    t->format = (int64_t)json_integer_value(fmt);
    if (t->format != (t->binary ? 2 : 1)) {
        snprintf(err, errlen,
                 "trace format %lld in a %s file; this analyzer reads format 1 (JSON Lines) and 2 "
                 "(binary)%s",
                 (long long)t->format, t->binary ? "binary" : "JSON Lines",
                 t->format > 2 ? " (update tlsmeter-analyze)" : "");
        return t->format > 2 ? -3 : -2;
    }
    t->pid = int_get(o, "pid", -1);
    t->start_unix_ns = int_get(o, "start_unix_ns", 0);
    t->start_cpu_ns = int_get(o, "start_cpu_ns", -1); /* older traces: the whole process */
    t->attached = json_is_true(json_object_get(o, "attached"));
    t->comm = str_dup(o, "comm");
    t->exe = str_dup(o, "exe");
    t->arch = str_dup(o, "arch");
    t->cpu = str_dup(o, "cpu");
    t->clock = str_dup(o, "clock");
    t->mode = str_dup(o, "crypto_mode");
    t->version = str_dup(o, "version");
    t->emulated = looks_emulated(t, o);
    /* How crypto_ns was measured (docs/trace-format.md); older traces: wall time. */
    t->cputime = str_dup(o, "cputime");
    t->cputime_why = str_dup(o, "cputime_why");
    t->cputime_exact = t->cputime && !strcmp(t->cputime, "perf-clock");
    cpu_crypto(t, json_object_get(o, "cpu_crypto"));
    stacks__header(&m->stacks, (uint32_t)(t - m->traces), json_object_get(o, "config"));
    /* TLSMETER_EVENTS=summary: totals in summary events (model_summary.c), no rec/read;
     * both: the events are complete, the summary events a copy to check them against. */
    json_t *ev = json_object_get(json_object_get(o, "config"), "TLSMETER_EVENTS");
    t->summary = json_is_string(ev) && !strcmp(json_string_value(ev), "summary");
    t->summary_copy = json_is_string(ev) && !strcmp(json_string_value(ev), "both");
    return 0;
}

static void lib_caps(struct lib *l, json_t *caps)
{
    int c;

    for (c = 0; c < CAP_N; c++) {
        json_t *v = json_object_get(caps, cap__name((enum cap)c));

        if (!json_is_boolean(v))
            continue;
        l->caps_known |= 1u << c;
        if (json_is_true(v))
            l->caps |= 1u << c;
    }
}

int model__lib(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    json_t *id = json_object_get(o, "id");
    struct lib *l;

    if (!json_is_integer(id)) {
        snprintf(err, errlen, "lib without an integer \"id\"");
        return -1;
    }
    if (trace__lib(t, (int64_t)json_integer_value(id)) || t->nlibs == MAX_LIBS)
        return 0; /* seen already, or more instances than any real process has */
    l = &t->libs[t->nlibs++];
    l->id = (int64_t)json_integer_value(id);
    l->path = str_dup(o, "path");
    l->version = str_dup(o, "version");
    l->platform = str_dup(o, "platform");
    l->role = str_dup(o, "role");
    l->cpuinfo = str_dup(o, "cpuinfo");
    l->build_id = str_dup(o, "build_id");
    l->reach = str_dup(o, "reach");
    l->gcm_layout = str_dup(o, "gcm_layout");
    l->has_crypto = json_is_true(json_object_get(o, "has_crypto"));
    l->has_ssl = json_is_true(json_object_get(o, "has_ssl"));
    lib_caps(l, json_object_get(o, "caps"));
    return 0;
}

static void end_unfired(struct trace *t, json_t *arr)
{
    size_t i;
    json_t *v;

    /* A later end line (exit after a failed exec) supersedes an earlier one. */
    for (int k = 0; k < t->nunfired; k++)
        free(t->unfired[k]);
    t->nunfired = 0;
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && t->nunfired < MAX_UNFIRED)
            t->unfired[t->nunfired++] = xstrdup(json_string_value(v));
    }
}

int model__end(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    json_t *rr = json_object_get(o, "reroute");

    t->has_end = true;
    /* wall_ns when the writer gives it, else the end line's own time (ns since start). */
    t->wall_ns = int_get(o, "wall_ns", int_get(o, "t", -1));
    t->user_ns = int_get(o, "user_ns", -1);
    t->sys_ns = int_get(o, "sys_ns", -1);
    t->cpu_known = t->user_ns >= 0 && t->sys_ns >= 0;
    {
        int64_t sum;

        /* Checked: a hostile or corrupt end line must not overflow (undefined behaviour). */
        t->cpu_overflow = t->cpu_known && __builtin_add_overflow(t->user_ns, t->sys_ns, &sum);
        t->cpu_known &= !t->cpu_overflow;
    }
    t->events_declared = int_get(o, "events", -1);
    t->dropped = int_get(o, "dropped", 0);
    t->dropped_bytes = int_get(o, "dropped_bytes", -1);
    free(t->io), free(t->io_error);
    t->io = str_dup(o, "io");
    t->io_error = str_dup(o, "io_error");
    t->preempted = int_get(o, "preempted", -1);
    t->hooks_known =
        json_is_object(json_object_get(o, "hooks")) || json_is_array(json_object_get(o, "unfired"));
    end_unfired(t, json_object_get(o, "unfired"));
    model__end_blind(t, json_object_get(o, "blind"));
    free(t->quiet);
    t->quiet = str_dup(o, "quiet");
    free(t->exec);
    t->exec = str_dup(o, "exec");
    if (json_is_object(rr)) {
        t->reroute_routed = int_get(rr, "routed", 0);
        t->reroute_fallback = int_get(rr, "fallback", 0);
        free(t->reroute_reason);
        t->reroute_reason = str_dup(rr, "off_reason"); /* "" when the backend is on */
        if (t->reroute_reason && !*t->reroute_reason) {
            free(t->reroute_reason);
            t->reroute_reason = NULL;
        }
    }
    return 0;
}

int model__calib(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen)
{
    json_t *cipher = json_object_get(o, "cipher"), *impl = json_object_get(o, "impl");
    json_t *nspb = json_object_get(o, "ns_per_byte");
    struct calib *c;

    if (!json_is_string(cipher) || !json_is_string(impl) || !json_is_number(nspb) ||
        json_number_value(nspb) <= 0) {
        snprintf(err, errlen, "calib needs \"cipher\", \"impl\" and a positive \"ns_per_byte\"");
        return -1;
    }
    if (t->ncalibs == MAX_CALIBS)
        return 0;
    c = &t->calibs[t->ncalibs++];
    c->cipher = model__intern(m, json_string_value(cipher), json_string_length(cipher));
    snprintf(c->impl, sizeof(c->impl), "%s", json_string_value(impl));
    c->ns_per_byte = json_number_value(nspb);
    c->bytes = int_get(o, "records", 0);
    c->len = int_get(o, "record", 0);
    return 0;
}

int64_t trace__duration(const struct trace *t)
{
    return t->wall_ns > 0 ? t->wall_ns : t->max_t;
}

int64_t trace__cpu_ns(const struct trace *t)
{
    int64_t sum;

    /* The CPU of the span the trace covers: the end line's minus what ran before the header. */
    if (!t->cpu_known || __builtin_add_overflow(t->user_ns, t->sys_ns, &sum))
        return -1;
    return t->start_cpu_ns >= 0 && t->start_cpu_ns <= sum ? sum - t->start_cpu_ns : sum;
}

const struct lib *trace__lib(const struct trace *t, int64_t id)
{
    int i;

    for (i = 0; i < t->nlibs; i++)
        if (t->libs[i].id == id)
            return &t->libs[i];
    return NULL;
}

/* The instance that decrypted a bucket's records: rec.lib when the trace gives it,
 * otherwise the only crypto instance of the right role (app for native, backend for the
 * reroute paths); NULL when that is ambiguous. */
const struct lib *trace__bucket_lib(const struct trace *t, const struct bucket *b,
                                    const char *path_name)
{
    const char *role = strcmp(path_name, "native") && *path_name ? "backend" : "app";
    const struct lib *found = NULL;
    int i;

    if (b->lib)
        return trace__lib(t, b->lib);
    for (i = 0; i < t->nlibs; i++) {
        const struct lib *l = &t->libs[i];

        if (!l->has_crypto || (l->role && strcmp(l->role, role)))
            continue;
        if (found)
            return NULL;
        found = l;
    }
    return found;
}

void stats__add(struct stats *d, const struct stats *s)
{
    uint64_t *dv = (uint64_t *)d;
    const uint64_t *sv = (const uint64_t *)s;
    size_t i;

    /* struct stats is only uint64_t counters. */
    for (i = 0; i < sizeof(*d) / sizeof(uint64_t); i++)
        dv[i] += sv[i];
}

double stats__ns_per_byte(const struct stats *s)
{
    return s->rec_ct ? (double)s->crypto_ns / (double)s->rec_ct : 0.0;
}
