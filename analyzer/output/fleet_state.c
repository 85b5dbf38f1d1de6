/* fleet_state.c: the --openmetrics counters' state file, its label-value limits, and the
 * atomic writes of it and of the exposition.
 *
 * The file is text, one item per line, every value a token "=" + the value with '%', space,
 * control and non-ASCII bytes as %XX:
 *   tlsmeter-metrics-state 1
 *   created UNIX_TIME
 *   program =VALUE | copy =VALUE            (label values kept, in order)
 *   retired FAMILY COUNT =LABEL...          (what traces no longer on disk added)
 *   trace DEV INO SIZE MTIME_NS PID START_NS ENDED =PATH
 *   s FAMILY COUNT =LABEL...                (a series the trace above adds)
 * Its size is bounded by the label limits and the traces on disk. */
#include "output/fleet.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char other[] = "(other)";

void fleet_state__free(struct fleet_state *st)
{
    for (int i = 0; i < st->nprograms; i++)
        free(st->programs[i]);
    for (int i = 0; i < st->ncopies; i++)
        free(st->copies[i]);
    free(st->programs);
    free(st->copies);
    mset__free(&st->retired);
    for (size_t i = 0; i < st->ntraces; i++) {
        free(st->traces[i].path);
        mset__free(&st->traces[i].ms);
    }
    free(st->traces);
    memset(st, 0, sizeof(*st));
}

static void put_token(FILE *f, const char *s)
{
    fputs(" =", f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p <= ' ' || *p >= 0x7f || *p == '%')
            fprintf(f, "%%%02X", *p);
        else
            fputc(*p, f);
    }
}

/* Decodes token tok ("=..." ) in place; NULL when it is not one. */
static char *get_token(char *tok)
{
    char *r, *w;

    if (!tok || tok[0] != '=')
        return NULL;
    for (r = w = tok + 1; *r; r++) {
        unsigned v;

        if (*r == '%') {
            if (sscanf(r + 1, "%2x", &v) != 1 || !v)
                return NULL;
            *w++ = (char)v;
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = 0;
    return tok + 1;
}

static void put_set(FILE *f, const char *kind, const struct mset *ms)
{
    for (size_t i = 0; i < ms->n; i++) {
        const struct series *s = &ms->s[i];

        fprintf(f, "%s %s %" PRIu64, kind, metric_fams[s->fam].name, s->v);
        for (int k = 0; k < metric_fam__nlabels(s->fam); k++)
            put_token(f, s->val[k]);
        fputc('\n', f);
    }
}

int fleet_state__save(const struct fleet_state *st, const char *path)
{
    char tmp[4096];
    FILE *f = atomic_open(path, 0600, tmp, sizeof(tmp));

    if (!f)
        return -1;
    fprintf(f, "%s\ncreated %.3f\n", FLEET_STATE_MAGIC, st->created);
    for (int i = 0; i < st->nprograms; i++) {
        fputs("program", f);
        put_token(f, st->programs[i]);
        fputc('\n', f);
    }
    for (int i = 0; i < st->ncopies; i++) {
        fputs("copy", f);
        put_token(f, st->copies[i]);
        fputc('\n', f);
    }
    put_set(f, "retired", &st->retired);
    for (size_t i = 0; i < st->ntraces; i++) {
        const struct fleet_trace *t = &st->traces[i];

        fprintf(f,
                "trace %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 " %" PRId64 " %d",
                t->dev, t->ino, t->size, t->mtime_ns, t->pid, t->start_ns, t->ended);
        put_token(f, t->path);
        fputc('\n', f);
        put_set(f, "s", &t->ms);
    }
    return atomic_commit(f, tmp, path);
}

static int push_value(char ***arr, int *n, const char *v)
{
    char **p = realloc(*arr, (size_t)(*n + 1) * sizeof(*p));

    if (!p)
        return -1;
    *arr = p;
    if (!(p[*n] = strdup(v)))
        return -1;
    (*n)++;
    return 0;
}

/* "FAMILY COUNT =LABEL..." after the kind word, into ms. */
static const char *parse_series(struct mset *ms, char **save)
{
    const char *val[METRIC_LABELS] = {0};
    char *fam = strtok_r(NULL, " ", save), *cnt = strtok_r(NULL, " ", save), *end;
    int f = fam ? metric_fam__find(fam) : -1;
    uint64_t v;

    if (f < 0)
        return fam ? "an unknown metric family" : "no metric family";
    errno = 0;
    v = cnt ? strtoull(cnt, &end, 10) : 0;
    if (!cnt || *end || errno)
        return "a count that is not a number";
    for (int k = 0; k < metric_fam__nlabels(f); k++)
        if (!(val[k] = get_token(strtok_r(NULL, " ", save))))
            return "a missing or malformed label value";
    if (strtok_r(NULL, " ", save))
        return "more label values than the family has";
    return mset__add(ms, f, val, v) ? "out of memory" : NULL;
}

static const char *parse_trace(struct fleet_state *st, char **save)
{
    uint64_t u[3];
    int64_t s[3];
    int ended;
    char *tok, *path;
    struct fleet_trace *t;

    for (int i = 0; i < 7; i++) {
        if (!(tok = strtok_r(NULL, " ", save)))
            return "a trace line with fewer than 8 fields";
        if (i < 3 && sscanf(tok, "%" SCNu64, &u[i]) != 1)
            return "a trace field that is not a number";
        if (i >= 3 && i < 6 && sscanf(tok, "%" SCNd64, &s[i - 3]) != 1)
            return "a trace field that is not a number";
        if (i == 6 && sscanf(tok, "%d", &ended) != 1)
            return "a trace field that is not a number";
    }
    if (!(path = get_token(strtok_r(NULL, " ", save))))
        return "a trace line without its path";
    if (!(t = fleet_state__new_trace(st, path)))
        return "out of memory";
    t->dev = u[0], t->ino = u[1], t->size = u[2];
    t->mtime_ns = s[0], t->pid = s[1], t->start_ns = s[2];
    t->ended = ended != 0;
    return NULL;
}

static const char *parse_line(struct fleet_state *st, char *line)
{
    char *save, *kind = strtok_r(line, " ", &save), *v;
    const char *why;

    if (!kind)
        return "an empty line";
    if (!strcmp(kind, "retired"))
        return parse_series(&st->retired, &save);
    if (!strcmp(kind, "s"))
        return st->ntraces ? parse_series(&st->traces[st->ntraces - 1].ms, &save)
                           : "a series line before any trace line";
    if (!strcmp(kind, "created"))
        why = (v = strtok_r(NULL, " ", &save)) && sscanf(v, "%lf", &st->created) == 1
                  ? NULL
                  : "a created line without a time";
    else if (!strcmp(kind, "program") || !strcmp(kind, "copy")) {
        bool p = kind[0] == 'p';
        if (!(v = get_token(strtok_r(NULL, " ", &save))))
            why = "a label value line without its value";
        else
            why = push_value(p ? &st->programs : &st->copies, p ? &st->nprograms : &st->ncopies, v)
                      ? "out of memory"
                      : NULL;
    } else if (!strcmp(kind, "trace"))
        why = parse_trace(st, &save);
    else
        return "an unknown line kind";
    if (!why && strtok_r(NULL, " ", &save))
        why = "more fields than such a line has";
    return why;
}

int fleet_state__load(struct fleet_state *st, const char *path, double now)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t n;
    const char *why = NULL;

    memset(st, 0, sizeof(*st));
    st->created = now;
    if (!f && errno == ENOENT)
        return 0;
    if (!f) {
        fprintf(stderr, "tlsmeter-analyze: --state %s: %s\n", path, strerror(errno));
        return -1;
    }
    while (!why && (n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (n && line[n - 1] == '\n')
            line[--n] = 0;
        if (lineno == 1)
            why = strcmp(line, FLEET_STATE_MAGIC) ? "not a tlsmeter metrics state file (first "
                                                    "line is not '" FLEET_STATE_MAGIC "')"
                                                  : NULL;
        else
            why = parse_line(st, line);
    }
    if (!why && ferror(f))
        why = strerror(errno);
    free(line);
    fclose(f);
    if (!why && !lineno)
        why = "empty";
    if (!why) {
        mset__merge(&st->retired);
        for (size_t i = 0; i < st->ntraces; i++)
            mset__merge(&st->traces[i].ms);
        return 0;
    }
    fprintf(stderr,
            "tlsmeter-analyze: --state %s:%zu: %s; the counters cannot go on from it (move it "
            "away to start them from zero)\n",
            path, lineno, why);
    fleet_state__free(st);
    return -1;
}

struct fleet_trace *fleet_state__trace(struct fleet_state *st, uint64_t dev, uint64_t ino)
{
    for (size_t i = 0; i < st->ntraces; i++)
        if (st->traces[i].dev == dev && st->traces[i].ino == ino)
            return &st->traces[i];
    return NULL;
}

struct fleet_trace *fleet_state__process(struct fleet_state *st, int64_t pid, int64_t start_ns)
{
    for (size_t i = 0; i < st->ntraces; i++)
        if (st->traces[i].pid == pid && st->traces[i].start_ns == start_ns)
            return &st->traces[i];
    return NULL;
}

int fleet_state__rename(struct fleet_trace *t, const char *path)
{
    char *p = strdup(path);

    if (!p)
        return -1;
    free(t->path);
    t->path = p;
    return 0;
}

struct fleet_trace *fleet_state__new_trace(struct fleet_state *st, const char *path)
{
    struct fleet_trace *t;

    if (st->ntraces == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        struct fleet_trace *p = realloc(st->traces, cap * sizeof(*p));

        if (!p)
            return NULL;
        st->traces = p;
        st->cap = cap;
    }
    t = &st->traces[st->ntraces];
    memset(t, 0, sizeof(*t));
    if (!(t->path = strdup(path)))
        return NULL;
    st->ntraces++;
    return t;
}

/* v as kept: itself when kept already or while there is room, else "(other)". */
static const char *limited(char ***arr, int *n, int max, const char *v)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp((*arr)[i], v))
            return v;
    if (*n >= max || push_value(arr, n, v))
        return other;
    return v;
}

int fleet_state__add_limited(struct fleet_state *st, struct mset *dst, const struct mset *ms,
                             int max_programs, int max_copies)
{
    for (size_t i = 0; i < ms->n; i++) {
        const struct series *s = &ms->s[i];
        const char *val[METRIC_LABELS];

        for (int k = 0; k < metric_fam__nlabels(s->fam); k++) {
            const char *name = metric_fams[s->fam].labels[k];

            val[k] = s->val[k];
            if (!strcmp(name, "program"))
                val[k] = limited(&st->programs, &st->nprograms, max_programs, s->val[k]);
            else if (!strcmp(name, "copy"))
                val[k] = limited(&st->copies, &st->ncopies, max_copies, s->val[k]);
        }
        if (mset__add(dst, s->fam, val, s->v))
            return -1;
    }
    return 0;
}

int fleet_state__retire(struct fleet_state *st, size_t i, int max_programs, int max_copies)
{
    struct fleet_trace *t = &st->traces[i];

    if (fleet_state__add_limited(st, &st->retired, &t->ms, max_programs, max_copies))
        return -1;
    mset__merge(&st->retired);
    free(t->path);
    mset__free(&t->ms);
    st->traces[i] = st->traces[--st->ntraces];
    return 0;
}

FILE *atomic_open(const char *path, int mode, char *tmp, size_t cap)
{
    const char *slash = strrchr(path, '/');
    int dlen = slash ? (int)(slash - path + 1) : 0, fd;
    FILE *f;

    if ((size_t)snprintf(tmp, cap, "%.*s.%s.XXXXXX", dlen, path, slash ? slash + 1 : path) >= cap) {
        fprintf(stderr, "tlsmeter-analyze: %s: path too long\n", path);
        return NULL;
    }
    if ((fd = mkstemp(tmp)) < 0) { /* O_EXCL: never through an existing name */
        fprintf(stderr, "tlsmeter-analyze: cannot write beside %s: %s\n", path, strerror(errno));
        return NULL;
    }
    if (fchmod(fd, (mode_t)mode) || !(f = fdopen(fd, "w"))) {
        fprintf(stderr, "tlsmeter-analyze: %s: %s\n", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return NULL;
    }
    return f;
}

int atomic_commit(FILE *f, const char *tmp, const char *path)
{
    int bad = fflush(f) || ferror(f) || fsync(fileno(f));

    if (fclose(f) || bad || rename(tmp, path)) {
        fprintf(stderr, "tlsmeter-analyze: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
