/* fleet.c: tlsmeter-analyze --openmetrics: the Prometheus counters of a host's traces.
 *
 * Without --textfile it prints the counters the given traces add up to (a desk run). With
 * --textfile DIR it is the companion of summary mode on a host: it reads every trace in the
 * directories given (TLSMETER_OUT=DIR/ of the traced programs), keeps the counters monotonic
 * across processes that exit, start again or have their traces deleted (fleet.h), and writes
 * DIR/tlsmeter.prom atomically for node_exporter's textfile collector, once or every
 * --every seconds. The preload does not write the metrics itself: a host's counters sum
 * many processes, which takes one writer with state across them, and the class of each
 * bucket is the analyzer's to decide (docs/fleet.md, "Why a companion"). */
#include "output/fleet.h"
#include "output/openmetrics.h"

#include "input/reader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROGRAMS_DEFAULT 64
#define MAX_COPIES_DEFAULT   32

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
    (void)sig;
    stop = 1;
}

static int positive(const char *opt, const char *arg, double max, double *out)
{
    char *end;

    errno = 0;
    *out = strtod(arg, &end);
    if (*arg && !*end && !errno && *out > 0 && *out <= max)
        return 0;
    fprintf(stderr, "tlsmeter-analyze: %s %s: a number above 0 and at most %g\n", opt, arg, max);
    return -2;
}

int fleet__opt(struct fleet_opts *o, int c, const char *arg)
{
    double v;
    int rc = 0;

    switch (c) {
    case 'T':
        o->textfile = arg;
        break;
    case 'S':
        o->state = arg;
        break;
    case 'E':
        rc = positive("--every", arg, 86400, &o->every);
        break;
    case 'W':
        rc = positive("--prune", arg, 1e9, &o->prune);
        break;
    case 'M':
    case 'N':
        if (!(rc = positive(c == 'M' ? "--max-programs" : "--max-copies", arg, 100000, &v)) &&
            v != (int)v) {
            fprintf(stderr, "tlsmeter-analyze: %s %s: a whole number\n",
                    c == 'M' ? "--max-programs" : "--max-copies", arg);
            rc = -2;
        }
        if (!rc)
            *(c == 'M' ? &o->max_programs : &o->max_copies) = (int)v;
        break;
    }
    return rc;
}

int fleet__usage(const struct fleet_opts *f, bool metrics, bool other_outputs)
{
    const char *why = NULL;

    if (!metrics &&
        (f->textfile || f->state || f->every || f->prune || f->max_programs || f->max_copies))
        why = "--textfile, --state, --every, --prune, --max-programs and --max-copies go with "
              "--openmetrics";
    else if (metrics && !f->textfile && (f->state || f->every || f->prune))
        why = "--state, --every and --prune go with --textfile DIR";
    else if (metrics && other_outputs)
        why = "--openmetrics writes counters only: no --compare, --flamegraph, --perfetto or "
              "--require-hw beside it";
    if (why)
        fprintf(stderr, "tlsmeter-analyze: %s\n", why);
    return why ? -2 : 0;
}

static double unix_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A run's files: the operands, and in each directory operand its traces. */
struct run {
    const struct fleet_opts *o;
    struct fleet_state st;
    bool fleet;       /* --textfile: state, limits, directories re-read each update */
    struct mset desk; /* without --textfile: the given traces' series */
    struct om_info info;
    struct live **lives; /* --every: the models of live traces (fleet.c, "struct live") */
    size_t nlives, cap_lives;
    /* Files already given the reader's warnings (once each while they stay), and whether
     * this update read them: one no update read is forgotten. */
    struct warned {
        char *path;
        bool seen;
    } * warned;
    size_t nwarned, cap_warned;
    FILE *warn;
    int rc;
};

/* The trace's name is one the preload writes: *.trace, *.jsonl, and what an exec adds. */
static bool trace_name_ok(const char *n)
{
    return n[0] != '.' && (strstr(n, ".trace") || strstr(n, ".jsonl"));
}

static FILE *warn_once(struct run *r, const char *path)
{
    char *p;

    if (!r->warn)
        return NULL;
    for (size_t i = 0; i < r->nwarned; i++)
        if (!strcmp(r->warned[i].path, path)) {
            r->warned[i].seen = true;
            return NULL;
        }
    if (r->nwarned == r->cap_warned) {
        size_t cap = r->cap_warned ? r->cap_warned * 2 : 64;
        struct warned *w = realloc(r->warned, cap * sizeof(*w));

        if (!w)
            return NULL; /* quiet rather than said twice */
        r->warned = w, r->cap_warned = cap;
    }
    if (!(p = strdup(path)))
        return NULL;
    r->warned[r->nwarned++] = (struct warned){p, true};
    return r->warn;
}

/* The files this update did not read leave the warned list (kept as long as the directory). */
static void warned_forget(struct run *r)
{
    size_t w = 0;

    for (size_t i = 0; i < r->nwarned; i++) {
        if (r->warned[i].seen)
            r->warned[i].seen = false, r->warned[w++] = r->warned[i];
        else
            free(r->warned[i].path);
    }
    r->nwarned = w;
}

/* A live trace's models, kept between the updates of --every: each update feeds them only
 * what the trace added since (reader__resume), so a long-running process's trace costs its
 * new snapshots, not its whole length. Dropped when the trace ends or goes. */
struct live {
    uint64_t dev, ino;
    struct model in, out; /* decrypting and encrypting side */
    struct reader_resume rin, rout;
    bool seen;
};

static struct live *live_of(struct run *r, const struct stat *sb)
{
    struct live *l;

    for (size_t i = 0; i < r->nlives; i++)
        if (r->lives[i]->dev == sb->st_dev && r->lives[i]->ino == sb->st_ino)
            return r->lives[i];
    if (!(l = calloc(1, sizeof(*l))))
        return NULL;
    if (r->nlives == r->cap_lives) {
        size_t cap = r->cap_lives ? r->cap_lives * 2 : 16;
        struct live **p = realloc(r->lives, cap * sizeof(*p));

        if (!p) {
            free(l);
            return NULL;
        }
        r->lives = p, r->cap_lives = cap;
    }
    l->dev = sb->st_dev, l->ino = sb->st_ino;
    model__init(&l->in);
    model__init(&l->out);
    l->out.out = true;
    r->lives[r->nlives++] = l;
    return l;
}

static void live_reset(struct model *m, struct reader_resume *rs, bool out)
{
    model__free(m);
    model__init(m);
    m->out = out;
    reader_resume__free(rs);
}

static void live_drop(struct run *r, struct live *l)
{
    for (size_t i = 0; i < r->nlives; i++)
        if (r->lives[i] == l) {
            r->lives[i] = r->lives[--r->nlives];
            break;
        }
    model__free(&l->in);
    model__free(&l->out);
    reader_resume__free(&l->rin);
    reader_resume__free(&l->rout);
    free(l);
}

/* One side of a trace, going on where the last update left it (from the start when the file
 * is not what was read). */
static enum read_status feed(struct model *m, struct reader_resume *rs, const char *path, FILE *w)
{
    enum read_status st;

    if (!rs->started && m->ntraces) /* format 1 (or a failed read) is read whole each time */
        live_reset(m, rs, m->out);
    st = reader__resume(m, path, rs, w);

    if (rs->restart) {
        live_reset(m, rs, m->out);
        st = reader__resume(m, path, rs, w);
    }
    return st;
}

/* Reads one trace (both directions) into its series; the read's status. */
static enum read_status read_trace(struct run *r, const char *path, const struct stat *sb,
                                   struct mset *ms, int64_t *pid, int64_t *start, bool *ended)
{
    static struct summary s;
    FILE *w = r->fleet ? warn_once(r, path) : r->warn;
    struct live *l = live_of(r, sb);
    enum read_status rs;
    bool two = false;

    if (!l)
        return RD_IO;
    l->seen = true;
    rs = feed(&l->in, &l->rin, path, w);
    if (rs == RD_OK && l->in.ntraces == 1) {
        if (l->in.other_dir || l->out.ntraces)
            two = feed(&l->out, &l->rout, path, NULL) == RD_OK && l->out.ntraces == 1;
        /* What metrics__trace asks of a summary (the copies' socket bytes no record covers,
         * weights__copy) needs only the model: the whole build (verdicts, percentiles) was
         * a third of an update. */
        memset(&s, 0, sizeof(s));
        s.m = &l->in;
        *pid = l->in.traces[0].pid;
        *start = l->in.traces[0].start_unix_ns;
        *ended = l->in.traces[0].has_end;
        if (metrics__trace(ms, &l->in, two ? &l->out : NULL, &s))
            rs = RD_IO;
    } else if (rs == RD_OK) {
        rs = RD_EMPTY;
    }
    if (rs != RD_OK || *ended || r->o->every <= 0)
        live_drop(r, l);
    return rs;
}

/* One trace file of a fleet update: read unless it ended and is unchanged. A process is
 * counted once by its (pid, start time), whatever file holds its trace: a trace moved or
 * copied within the directories is the same process. */
static void fleet_file(struct run *r, const char *path, const struct stat *sb)
{
    struct fleet_trace *t = fleet_state__trace(&r->st, sb->st_dev, sb->st_ino);
    int64_t mt = (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec, pid, start;
    struct mset ms = {0};
    bool ended;

    if (t && t->ended && t->size == (uint64_t)sb->st_size && t->mtime_ns == mt) {
        /* --prune: counted whole, unchanged for long enough: the file goes, its counts are
         * retired at the end of this update (unlink takes the name, never a symlink's target) */
        if (r->o->prune > 0 && r->info.now - (double)mt / 1e9 >= r->o->prune && !unlink(path))
            return;
        t->seen = true;
        r->info.ended++;
        return;
    }
    if (read_trace(r, path, sb, &ms, &pid, &start, &ended) != RD_OK) {
        r->info.unreadable++;
        if (t) /* keep what it gave; it is retired when it goes */
            t->seen = true;
        mset__free(&ms);
        return;
    }
    if (t && (t->pid != pid || t->start_ns != start) && !t->seen && /* another process's now */
        fleet_state__retire(&r->st, (size_t)(t - r->st.traces), r->o->max_programs,
                            r->o->max_copies))
        r->rc = 1;
    t = fleet_state__process(&r->st, pid, start);
    if (!t && !(t = fleet_state__new_trace(&r->st, path))) {
        r->rc = 1;
        mset__free(&ms);
        return;
    }
    if (mset__max_with(&ms, &t->ms) || (strcmp(t->path, path) && fleet_state__rename(t, path)))
        r->rc = 1;
    mset__free(&t->ms);
    t->ms = ms;
    t->dev = sb->st_dev, t->ino = sb->st_ino, t->size = (uint64_t)sb->st_size;
    t->mtime_ns = mt, t->pid = pid, t->start_ns = start, t->ended = ended;
    if (!t->seen)
        ended ? r->info.ended++ : r->info.live++;
    t->seen = true;
}

/* A desk run's trace: an unreadable one is an error, as in every other output. */
static void desk_file(struct run *r, const char *path, const struct stat *sb)
{
    int64_t pid, start;
    bool ended;

    switch (read_trace(r, path, sb, &r->desk, &pid, &start, &ended)) {
    case RD_OK:
        ended ? r->info.ended++ : r->info.live++;
        break;
    case RD_EMPTY:
        fprintf(stderr, "%s: no trace content (empty, or cut short before its header)\n", path);
        break;
    case RD_IO:
        r->rc = r->rc ? r->rc : 1;
        break;
    default:
        r->rc = 4;
    }
}

static void one_path(struct run *r, const char *path, bool from_dir)
{
    struct stat sb;

    if ((from_dir ? lstat(path, &sb) : stat(path, &sb)) || !S_ISREG(sb.st_mode)) {
        if (!from_dir) {
            fprintf(stderr, "%s: %s\n", path, errno ? strerror(errno) : "not a regular file");
            r->rc = r->fleet ? r->rc : 1;
        }
        return;
    }
    if (r->fleet)
        fleet_file(r, path, &sb);
    else
        desk_file(r, path, &sb);
}

static void one_dir(struct run *r, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    int len = (int)strlen(dir);

    if (!d) {
        fprintf(stderr, "%s: %s\n", dir, strerror(errno));
        r->rc = 1;
        return;
    }
    while (len > 1 && dir[len - 1] == '/')
        len--;
    while ((e = readdir(d)))
        if (trace_name_ok(e->d_name) &&
            (size_t)snprintf(path, sizeof(path), "%.*s/%s", len, dir, e->d_name) < sizeof(path)) {
            errno = 0;
            one_path(r, path, true);
        }
    closedir(d);
}

static int write_prom(struct run *r, const struct mset *agg)
{
    char path[4096], tmp[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/tlsmeter.prom", r->o->textfile);
    /* 0644: node_exporter's user reads it; the exposition holds no secrets */
    if (!(f = atomic_open(path, 0644, tmp, sizeof(tmp))))
        return -1;
    openmetrics__write(f, agg, &r->info);
    return atomic_commit(f, tmp, path);
}

/* One update: read, retire what went, add up, write. */
static int update(struct run *r, char **paths, int n, const char *state)
{
    struct mset agg = {0};
    struct stat sb;
    int rc = 0;

    memset(&r->info, 0, sizeof(r->info));
    r->info.now = unix_now();
    for (size_t i = 0; i < r->st.ntraces; i++)
        r->st.traces[i].seen = false;
    for (size_t i = 0; i < r->nlives; i++)
        r->lives[i]->seen = false;
    for (int i = 0; i < n; i++) {
        errno = 0;
        if (!stat(paths[i], &sb) && S_ISDIR(sb.st_mode))
            one_dir(r, paths[i]);
        else
            one_path(r, paths[i], false);
    }
    for (size_t i = r->nlives; i-- > 0;)
        if (!r->lives[i]->seen) /* its file went */
            live_drop(r, r->lives[i]);
    warned_forget(r);
    if (!r->fleet) {
        mset__merge(&r->desk);
        return 0;
    }
    for (size_t i = r->st.ntraces; i-- > 0;)
        if (!r->st.traces[i].seen)
            rc |= fleet_state__retire(&r->st, i, r->o->max_programs, r->o->max_copies);
    rc |= mset__add_all(&agg, &r->st.retired);
    for (size_t i = 0; i < r->st.ntraces; i++)
        rc |= fleet_state__add_limited(&r->st, &agg, &r->st.traces[i].ms, r->o->max_programs,
                                       r->o->max_copies);
    mset__merge(&agg);
    r->info.start = r->st.created;
    r->info.programs = r->st.nprograms, r->info.copies = r->st.ncopies;
    r->info.max_programs = r->o->max_programs, r->info.max_copies = r->o->max_copies;
    rc |= write_prom(r, &agg);
    rc |= fleet_state__save(&r->st, state);
    mset__free(&agg);
    return rc ? -1 : 0;
}

/* One companion per state file: a second one would count the same traces twice. */
static int lock_state(const char *state)
{
    char path[4096 + 8];
    int fd;

    snprintf(path, sizeof(path), "%s.lock", state);
    fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB)) {
        fprintf(stderr, "tlsmeter-analyze: --state %s: %s\n", state,
                fd < 0 ? strerror(errno) : "another tlsmeter-analyze --openmetrics uses it");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void sleep_interval(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

    while (!stop && nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

static int run_fleet(struct run *r, char **paths, int n)
{
    const struct fleet_opts *o = r->o;
    char state[4096];
    struct sigaction sa = {.sa_handler = on_stop};
    int lock, rc = 0;

    if (o->state)
        snprintf(state, sizeof(state), "%s", o->state);
    else
        snprintf(state, sizeof(state), "%s/.tlsmeter-metrics.state", o->textfile);
    if ((lock = lock_state(state)) < 0)
        return 1;
    if (fleet_state__load(&r->st, state, unix_now())) {
        close(lock);
        return 4;
    }
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    do {
        r->rc = 0;
        rc = update(r, paths, n, state) ? 1 : r->rc;
        if (o->every > 0)
            sleep_interval(o->every);
    } while (o->every > 0 && !stop);
    while (r->nlives)
        live_drop(r, r->lives[0]);
    free(r->lives);
    fleet_state__free(&r->st);
    close(lock);
    return rc;
}

int fleet__run(const struct fleet_opts *o, char **paths, int n, FILE *out, FILE *warn)
{
    static struct run r;
    struct fleet_opts opts = *o;
    int rc;

    if (!opts.max_programs)
        opts.max_programs = MAX_PROGRAMS_DEFAULT;
    if (!opts.max_copies)
        opts.max_copies = MAX_COPIES_DEFAULT;
    r.o = &opts;
    r.fleet = o->textfile != NULL;
    r.warn = warn;
    if (r.fleet) {
        rc = run_fleet(&r, paths, n);
    } else {
        update(&r, paths, n, NULL);
        rc = r.rc; /* an input that could not be read: nothing written, as for --json */
        if (!rc && openmetrics__write(out, &r.desk, &r.info))
            rc = 1;
        mset__free(&r.desk);
    }
    for (size_t i = 0; i < r.nwarned; i++)
        free(r.warned[i].path);
    free(r.warned);
    return rc;
}
