/* profile.c: weighted stacks (stacks.c) become named call paths. A frame is named
 * module!function when the module's file (under --sysroot) has the recorded build id and a
 * symbol covers the address, else module+0xoffset: an unknown frame is shown, never dropped.
 * Each path starts with the process and ends with the library that decrypted the record. */
#include "model/profile.h"

#include "base/symbolize.h"
#include "base/utf8.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* Distinct frames looked up in symbol tables (each O(log n), ~1 us); past it frames are shown
 * as module+0xoffset, said once: a hostile trace's 1 M stacks of 64 frames stay minutes. */
#define PROFILE_MAX_SYMBOLIZED (1u << 22)

struct build {
    struct profile *p;
    const struct model *m;
    struct symbolizer *sy; /* NULL: no symbols */
    FILE *warn;
    uint64_t symbolized;
    struct imap mod_handle, mod_name;
    uint32_t *read_stacks; /* indices into m->stacks.stacks of read stacks */
    size_t nread, cap_read;
};

/* Functions through which a program enters the SSL library (what the preload hooks). */
static const char *const entries[] = {
    "SSL_read",   "SSL_read_ex", "SSL_peek",     "SSL_peek_ex",  "SSL_do_handshake", "SSL_connect",
    "SSL_accept", "SSL_write",   "SSL_write_ex", "SSL_sendfile", "SSL_shutdown",
};

static uint64_t fnv(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int profile__intern(struct profile *p, const char *s)
{
    uint64_t a = fnv(s, 1469598103934665603ull), b = fnv(s, 0x84222325cbf29ce4ull);
    long i = imap__get(&p->name_map, a, b);

    if (i >= 0)
        return (int)i;
    grow_array((void **)&p->names, &p->cap_names, p->nnames, sizeof(*p->names));
    p->names[p->nnames] = xstrdup(s);
    imap__put(&p->name_map, a, b, (uint32_t)p->nnames);
    return (int)p->nnames++;
}

const char *profile__name(const struct profile *p, int idx)
{
    return idx >= 0 && (size_t)idx < p->nnames ? p->names[idx] : "?";
}

void profile__free(struct profile *p)
{
    size_t i;

    for (i = 0; i < p->nnames; i++)
        free(p->names[i]);
    free(p->names), free(p->frames), free(p->e);
    imap__free(&p->name_map), imap__free(&p->frame_cache);
    memset(p, 0, sizeof(*p));
}

static const char *base_name(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;

    return s ? s + 1 : path ? path : "?";
}

/* '\n' and ';' would break the folded format; the name is what every output shows. Names
 * are built in fixed buffers: a character the buffer cut is dropped whole. */
static int intern_clean(struct profile *p, char *s)
{
    char *c;

    utf8_trim_tail(s);
    for (c = s; *c; c++)
        if (*c == ';' || *c == '\n' || *c == '\r')
            *c = *c == ';' ? ':' : ' ';
    return profile__intern(p, s);
}

static int root_frame(struct build *b, uint32_t ti)
{
    const struct trace *t = &b->m->traces[ti];
    char s[256];

    if (b->m->ntraces > 1)
        snprintf(s, sizeof(s), "%s %lld", trace_name(t), (long long)t->pid);
    else
        snprintf(s, sizeof(s), "%s", trace_name(t));
    return intern_clean(b->p, s);
}

static void add_entry(struct build *b, const struct sweight *w, const int *f, size_t n,
                      struct pentry *tmpl)
{
    struct profile *p = b->p;
    size_t i;

    grow_array((void **)&p->frames, &p->cap_frames, p->nframes + n, sizeof(*p->frames));
    grow_array((void **)&p->e, &p->cap_e, p->ne, sizeof(*p->e));
    tmpl->trace = w->trace, tmpl->ns = w->ns, tmpl->bytes = w->bytes;
    tmpl->first = (uint32_t)p->nframes, tmpl->n = (uint32_t)n;
    for (i = 0; i < n; i++)
        p->frames[p->nframes++] = (uint32_t)f[i];
    p->e[p->ne++] = *tmpl;
}

static int intern_fmt(struct profile *p, const char *a, const char *b)
{
    char s[512];

    snprintf(s, sizeof(s), "%s%s", a, b);
    return intern_clean(p, s);
}

/* No stack: process, connection, cipher, path (the format before stacks existed). */
static void synthetic(struct build *b, const struct sweight *w)
{
    const char *c = model__name(b->m, w->cipher), *pa = model__name(b->m, w->path);
    struct pentry e = {.caller = -1, .caller_mod = -1, .crypto_mod = -1};
    char s[64];
    int f[4];

    f[0] = root_frame(b, w->trace);
    snprintf(s, sizeof(s), "conn %lld", (long long)w->conn);
    f[1] = intern_clean(b->p, s);
    f[2] = intern_fmt(b->p, *c ? c : "?", "");
    f[3] = intern_fmt(b->p, *pa ? pa : "?", "");
    add_entry(b, w, f, 4, &e);
}

struct finfo {
    int name, module; /* name indices */
    bool entry;       /* the function is one of entries[] */
};

static bool is_entry(const char *fn)
{
    size_t i;

    for (i = 0; fn && i < ARRAY_SIZE(entries); i++)
        if (!strcmp(fn, entries[i]))
            return true;
    return false;
}

/* Module name index and symbolizer handle (-1 none) of module id mod in trace ti. */
static int module_of(struct build *b, uint32_t ti, int32_t mod, int *handle)
{
    const struct strace *t = &b->m->stacks.traces[ti];
    const struct smodule *sm = mod >= 0 && t->mods ? &t->mods[mod] : NULL;
    long i = imap__get(&b->mod_name, ti, (uint64_t)(int64_t)mod);
    char s[64];

    if (i >= 0) {
        *handle = (int)imap__get(&b->mod_handle, ti, (uint64_t)(int64_t)mod);
        return (int)i;
    }
    *handle = b->sy && sm && sm->path ? symbolizer__module(b->sy, sm->path, sm->build_id) : -1;
    snprintf(s, sizeof(s), "[module %d]", (int)mod);
    i = mod < 0 ? profile__intern(b->p, "?")
                : intern_fmt(b->p, sm && sm->path ? base_name(sm->path) : s, "");
    imap__put(&b->mod_name, ti, (uint64_t)(int64_t)mod, (uint32_t)i);
    if (*handle >= 0)
        imap__put(&b->mod_handle, ti, (uint64_t)(int64_t)mod, (uint32_t)*handle);
    return (int)i;
}

static void frame_info(struct build *b, uint32_t ti, const struct sframe *f, struct finfo *out)
{
    uint64_t a = (uint64_t)ti << 32 | (uint32_t)(f->module + 1);
    long i = imap__get(&b->p->frame_cache, a, f->off);
    const char *fn, *mod;
    char s[512];
    int h;

    out->module = module_of(b, ti, f->module, &h);
    if (i >= 0) {
        out->name = (int)(i >> 1), out->entry = i & 1;
        return;
    }
    fn = NULL;
    if (h >= 0 && b->symbolized++ < PROFILE_MAX_SYMBOLIZED)
        fn = symbolizer__func(b->sy, h, f->off);
    else if (h >= 0 && b->symbolized == PROFILE_MAX_SYMBOLIZED + 1 && b->warn)
        fprintf(b->warn,
                "tlsmeter-analyze: over %u distinct stack frames: the rest are shown as "
                "module+0xoffset (a limit of the analyzer)\n",
                PROFILE_MAX_SYMBOLIZED);
    mod = profile__name(b->p, out->module);
    if (fn) /* .dynsym names carry their version ("__libc_start_main@@GLIBC_2.34") */
        snprintf(s, sizeof(s), "%s!%.*s", mod, (int)strcspn(fn, "@"), fn);
    else
        snprintf(s, sizeof(s), "%s+0x%llx", mod, (unsigned long long)f->off);
    out->name = intern_clean(b->p, s);
    out->entry = is_entry(fn);
    imap__put(&b->p->frame_cache, a, f->off, (uint32_t)out->name << 1 | out->entry);
}

static bool suffix(const struct sstack *st, const struct sstack *r)
{
    uint16_t k, d = (uint16_t)(st->n - r->n);

    for (k = 0; k < r->n; k++)
        if (st->f[d + k].module != r->f[k].module || st->f[d + k].off != r->f[k].off)
            return false;
    return true;
}

/* Index (innermost first) of the frame that called into the SSL library, or -1: the frame
 * outside the outermost SSL_read-like function; else, for a stack ending in a read's stack,
 * the read's innermost frame (a read stack starts at the caller of SSL_read); else the first
 * frame in another module than the innermost one (stripped libraries). */
static int caller_index(struct build *b, const struct sstack *st, const struct finfo *fi, bool read)
{
    size_t k;
    int i;

    for (i = st->n - 1; i >= 0; i--)
        if (fi[i].entry)
            return i + 1 < st->n ? i + 1 : -1;
    if (read)
        return 0;
    for (k = 0; k < b->nread && k < 1024; k++) {
        const struct sstack *r = &b->m->stacks.stacks[b->read_stacks[k]];

        if (r->trace == st->trace && r->n < st->n && suffix(st, r))
            return st->n - r->n;
    }
    for (i = 1; i < st->n; i++)
        if (fi[i].module != fi[0].module)
            return i;
    return -1;
}

/* The leaf: which library decrypted, and how (rerouted records name their path). */
static int crypto_frame(struct build *b, const struct sweight *w, int *leaf)
{
    const struct lib *l = trace__lib(&b->m->traces[w->trace], w->lib);
    const char *path = model__name(b->m, w->path), *lib = base_name(l ? l->path : NULL);
    bool native = !*path || !strcmp(path, "native");
    char s[512];

    snprintf(s, sizeof(s), "%s!decrypt %s%s%s%s", lib, model__name(b->m, w->cipher),
             native ? "" : " (", native ? "" : path, native ? "" : ")");
    *leaf = intern_clean(b->p, s);
    snprintf(s, sizeof(s), "%s%s%s%s", lib, native ? "" : " (", native ? "" : path,
             native ? "" : " backend)");
    return intern_clean(b->p, s);
}

static void stacked(struct build *b, const struct sweight *w)
{
    const struct sstack *st = stacks__get(&b->m->stacks, w->trace, w->stack);
    struct pentry e = {.stacked = true, .caller = -1, .caller_mod = -1};
    struct finfo fi[STACK_MAX_FRAMES];
    int f[STACK_MAX_FRAMES + 2], n = 0, i, c;
    char s[64];

    f[n++] = root_frame(b, w->trace);
    if (!st) {
        snprintf(s, sizeof(s), "[stack %u not in the trace]", w->stack);
        f[n++] = profile__intern(b->p, s);
    } else {
        for (i = 0; i < st->n; i++)
            frame_info(b, w->trace, &st->f[i], &fi[i]);
        for (i = st->n - 1; i >= 0; i--)
            f[n++] = fi[i].name;
        c = caller_index(b, st, fi, stacks__is_read(&b->m->stacks, w->trace, w->stack));
        if (c >= 0)
            e.caller = fi[c].name, e.caller_mod = fi[c].module;
    }
    e.crypto_mod = crypto_frame(b, w, &f[n++]);
    add_entry(b, w, f, (size_t)n, &e);
}

static void collect_reads(struct build *b)
{
    const struct stacks *s = &b->m->stacks;
    size_t i;

    for (i = 0; i < s->nstacks; i++) {
        if (!stacks__is_read(s, s->stacks[i].trace, s->stacks[i].id))
            continue;
        grow_array((void **)&b->read_stacks, &b->cap_read, b->nread, sizeof(*b->read_stacks));
        b->read_stacks[b->nread++] = (uint32_t)i;
    }
}

static void totals(struct profile *p, const struct model *m)
{
    size_t i;

    p->crypto_ns = m->st.oncpu_ns; /* what the weights of the paths sum to */
    for (i = 0; i < m->stacks.ntraces; i++) {
        const struct strace *t = &m->stacks.traces[i];

        p->nstacks += t->nstacks;
        p->ns_sampled += t->ns_sampled;
        p->ns_inherited += t->ns_inherited;
        p->ns_none += t->ns_none;
        if (t->nstacks && t->sampling > p->sampling)
            p->sampling = t->sampling;
    }
    p->any_stacks = p->nstacks > 0;
}

void profile__build(struct profile *p, const struct model *m, const char *sysroot, bool symbols,
                    FILE *warn)
{
    struct build b = {.p = p, .m = m, .warn = warn};
    size_t i;

    memset(p, 0, sizeof(*p));
    b.sy = symbols ? symbolizer__new(sysroot, warn) : NULL;
    collect_reads(&b);
    for (i = 0; i < m->stacks.nw; i++) {
        const struct sweight *w = &m->stacks.w[i];

        if (!w->ns && !w->bytes)
            continue;
        if (w->stack)
            stacked(&b, w);
        else
            synthetic(&b, w);
    }
    totals(p, m);
    profile__callers(p);
    symbolizer__free(b.sy);
    imap__free(&b.mod_handle), imap__free(&b.mod_name);
    free(b.read_stacks);
}
