/* reader.c: splits a trace into lines and routes each one: the fast paths for the hot kinds
 * (scan.c, and shape.c behind it), jansson for the rest and for every line they decline
 * (jansson's verdict, with its reason and column, is what a malformed line is reported with). */
#include "input/reader.h"

#include "input/read2.h"
#include "input/reader_int.h"
#include "input/scan.h"
#include "base/utf8.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

FILE *reader__jsonl;

void rd_skipped(struct rd *r, const char *why)
{
    r->t->lines_skipped++;
    if (r->warn && r->warned++ < READER_MAX_WARNINGS)
        fprintf(r->warn, "%s:%llu: skipped: %s\n", r->t->file, (unsigned long long)r->lineno, why);
}

static bool blank(const char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return false;
    return true;
}

/* A tlsmeter warning to the traced process (its stderr may have gone elsewhere). */
static int warn_event(struct trace *t, json_t *o)
{
    json_t *msg = json_object_get(o, "msg");

    t->warnings++;
    if (!t->warn_first && json_is_string(msg))
        t->warn_first = xstrdup(json_string_value(msg));
    return 0;
}

/* Every kind of the schema has its case: -Wswitch is an error here, so a kind added to
 * common/schema.def does not build until the reader decides what to do with it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
static int dispatch_json(struct rd *r, json_t *o, enum ev_kind k, char *err, size_t errlen)
{
    switch (k) {
    case EV_HEADER:
        snprintf(err, errlen,
                 "a second header (concatenated traces? pass them as separate "
                 "files)");
        return -1;
    case EV_LIB:
        return model__lib(r->m, r->t, o, err, errlen);
    case EV_END:
        return model__end(r->m, r->t, o, err, errlen);
    case EV_CALIB:
        return model__calib(r->m, r->t, o, err, errlen);
    case EV_STACK:
        return stacks__stack(&r->m->stacks, (uint32_t)(r->t - r->m->traces), o, err, errlen);
    case EV_MODULE:
        return stacks__module(&r->m->stacks, (uint32_t)(r->t - r->m->traces), o, err, errlen);
    case EV_BLIND:
        return model__blind(r->m, r->t, o, err, errlen);
    case EV_IMPL:
        return model__impl(r->m, r->t, o, err, errlen);
    case EV_FWD: /* where calls were forwarded: the report keeps those past the linker */
        return model__fwd(r->m, r->t, o, err, errlen);
    case EV_SOCKREAD: /* socket reads of a copy whose SSL_read is unreachable */
        return model__sockread(r->m, r->t, o, err, errlen);
    case EV_SUMMARY:
        return model__summary(r->m, r->t, o, err, errlen);
    case EV_WARN:
        return warn_event(r->t, o);
    case EV_PROV: /* who decrypted, when not the default provider */
        return model__prov(r->m, r->t, o, err, errlen);
    case EV_REC:
    case EV_READ:
    case EV_WRITE:
    case EV_CONN:
        if (event__from_json(&r->ev, o, err, errlen))
            return -1;
        if (model__event(r->m, r->t, &r->ev, err, errlen))
            return -1;
        return k == EV_CONN ? model__conn_hs(r->m, r->t, o, err, errlen) : 0;
    case EV_OTHER:
    case EV_N:
        break;
    }
    r->t->lines_unknown++; /* a kind from a newer writer: not an error */
    return 0;
}
#pragma GCC diagnostic pop

static json_t *parse(struct rd *r, const char *p, size_t n, bool complete, char *err, size_t errlen)
{
    json_error_t je;
    json_t *o = json_loadb(p, n, 0, &je);

    if (!o) {
        snprintf(err, errlen, "%s (column %d)", je.text, je.column);
        return NULL;
    }
    if (!json_is_object(o)) {
        snprintf(err, errlen, "not a JSON object");
        json_decref(o);
        return NULL;
    }
    return o;
}

static enum ev_kind kind_of(json_t *o)
{
    json_t *ev = json_object_get(o, "ev");

    return json_is_string(ev) ? ev_kind__parse(json_string_value(ev), json_string_length(ev))
                              : EV_OTHER;
}

static void slow_line(struct rd *r, const char *p, size_t n, bool complete, bool after_nul)
{
    char err[200];
    json_t *o = parse(r, p, n, complete, err, sizeof(err));

    if (!o && after_nul) {
        r->t->lines_cut++; /* a copy into the mapped file the process's death interrupted */
        return;
    }
    if (!o && !complete) {
        /* The writer emits whole lines, so only a killed process leaves half a line. */
        r->t->partial_last = true;
        if (r->warn)
            fprintf(r->warn, "%s:%llu: last line is incomplete: trace cut short\n", r->t->file,
                    (unsigned long long)r->lineno);
        return;
    }
    if (!o) {
        rd_skipped(r, err);
        return;
    }
    if (!json_is_string(json_object_get(o, "ev")))
        rd_skipped(r, "no string \"ev\"");
    else if (dispatch_json(r, o, kind_of(o), err, sizeof(err)))
        rd_skipped(r, err);
    else
        r->t->events++;
    json_decref(o);
}

/* The header as JSON. A header an older writer wrote with raw bytes that are not UTF-8 (a
 * setting, a path) is read with them replaced by U+FFFD, said once: one bad field must not
 * lose the whole trace. */
static json_t *parse_header(struct rd *r, const char *p, size_t n, bool complete, char *err,
                            size_t errlen)
{
    json_t *o = parse(r, p, n, complete, err, errlen);
    size_t fixed_n;
    char *fixed;

    if (o || !(fixed = utf8_repair(p, n, &fixed_n)))
        return o;
    o = parse(r, fixed, fixed_n, complete, err, errlen);
    free(fixed);
    if (o && r->warn)
        fprintf(r->warn, "%s:%llu: header holds bytes that are not UTF-8: read as U+FFFD\n",
                r->t->file, (unsigned long long)r->lineno);
    return o;
}

static void first_line(struct rd *r, const char *p, size_t n, bool complete)
{
    char err[200];
    json_t *o = parse_header(r, p, n, complete, err, sizeof(err));
    int rc;

    if (!o && !complete) {
        r->t->partial_last = true;
        r->status = RD_EMPTY;
        if (r->warn)
            fprintf(r->warn, "%s: cut short inside its header line\n", r->t->file);
        return;
    }
    if (!o || kind_of(o) != EV_HEADER) {
        if (r->warn)
            fprintf(r->warn, "%s:%llu: not a tlsmeter trace: the first line is %s\n", r->t->file,
                    (unsigned long long)r->lineno, o ? "not a header" : "not JSON");
        r->status = RD_NOT_TRACE;
        json_decref(o);
        return;
    }
    rc = model__header(r->m, r->t, o, err, sizeof(err));
    if (!rc && reader__jsonl)
        rd_print_header(p, n);
    if (rc && r->warn)
        fprintf(r->warn, "%s:%llu: %s\n", r->t->file, (unsigned long long)r->lineno, err);
    r->status = rc == -3 ? RD_NEWER : rc ? RD_NOT_TRACE : RD_OK;
    r->header_seen = !rc;
    json_decref(o);
}

static void rd_piece(struct rd *r, const char *p, size_t n, bool complete, bool after_nul);

/* --jsonl: the header as format 1 says it (a format-2 header names format 2). */
void rd_print_header(const char *p, size_t n)
{
    static const char f2[] = ",\"format\":2,";
    const char *f = memmem(p, n, f2, sizeof(f2) - 1);
    if (!f) {
        fwrite(p, 1, n, reader__jsonl);
    } else {
        fwrite(p, 1, (size_t)(f - p), reader__jsonl);
        fputs(",\"format\":1,", reader__jsonl);
        fwrite(f + sizeof(f2) - 1, 1, n - (size_t)(f - p) - (sizeof(f2) - 1), reader__jsonl);
    }
    fputc('\n', reader__jsonl);
}

/* A character cut short by the end of s: a lead byte and fewer continuation bytes than it
 * announces. */
static bool cut_char(const char *s, size_t n)
{
    unsigned char c = (unsigned char)s[0];
    size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2, i;

    if (c < 0xc2 || c > 0xf4 || n >= want)
        return false;
    for (i = 1; i < n; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80)
            return false;
    return true;
}

/* Bytes a JSON line holds: the writer escapes every control character and writes UTF-8
 * (docs/trace-format.md, "Strings"). A piece of a cut line may begin or end inside a
 * character. */
static bool json_text(const char *p, size_t n)
{
    size_t i = 0, k;
    uint32_t cp;

    while (i < n && i < 3 && ((unsigned char)p[i] & 0xc0) == 0x80)
        i++; /* the rest of a character the cut began in */
    for (; i < n; i += k) {
        if ((unsigned char)p[i] < 0x20 && p[i] != '\t' && p[i] != '\r')
            return false;
        if (!(k = utf8_char(p + i, n - i, &cp)))
            return cut_char(p + i, n - i);
    }
    return true;
}

/* The pieces between the NUL runs of a line are what the death of a process leaves of its
 * lines only when each is JSON text, a line's first piece starts with '{' and a whole line's
 * last piece ends with '}'. Anything else beside NUL bytes is damage, not zeroed space. */
static bool cut_pieces(const char *p, size_t n, bool complete)
{
    const char *end = p + n, *q = p, *z;

    while (q < end) {
        if (!(z = memchr(q, 0, (size_t)(end - q))))
            z = end;
        if (z > q && !blank(q, (size_t)(z - q)) &&
            (!json_text(q, (size_t)(z - q)) || (q == p && *q != '{') ||
             (z == end && complete && end[-1] != '}')))
            return false;
        for (q = z; q < end && !*q;)
            q++;
    }
    return true;
}

/* Zeroed space from the mapped writer (the unused end of a thread's chunk; all of it in a
 * killed process): NUL runs are skipped. Text before a run is a line the process's death
 * cut (counted as such); text after the last run is a line of its own, or the tail of a
 * cut one. Other bytes beside a run (garbage after a NUL) are a malformed line. */
static void nul_line(struct rd *r, const char *p, size_t n, bool complete, const char *z)
{
    const char *end = p + n;

    if (r->header_seen && !cut_pieces(p, n, complete)) {
        r->t->lines++;
        rd_skipped(r, "NUL bytes beside bytes that are no part of a JSON line (not the zeroed "
                      "space a killed process leaves)");
        return;
    }
    while (z) {
        if (z > p && !blank(p, (size_t)(z - p)))
            r->t->lines_cut++;
        while (z < end && !*z)
            z++;
        p = z;
        z = memchr(p, 0, (size_t)(end - p));
    }
    if (p < end)
        rd_piece(r, p, (size_t)(end - p), complete, true);
}

/* Before the header: a line that is binary data, neither format's start (an executable, a
 * compressed file). Runs of NUL before it are the mapped writer's zeroed space, and a line
 * starting with '{' is JSON text even when a NUL cuts it (a header the process's death cut):
 * those go the usual way. */
static bool binary_line(const char *p, size_t n)
{
    size_t i = 0;

    while (i < n && (!p[i] || p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
        i++;
    if (i == n || p[i] == '{')
        return false;
    for (; i < n; i++) {
        unsigned char c = (unsigned char)p[i];

        if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
            return true;
    }
    return false;
}

/* Said without a line number: a binary file has no lines, and its first "line" may lie
 * kilobytes in (the NUL runs before it read as padding). */
static void not_a_trace_binary(struct rd *r)
{
    size_t i;

    r->status = RD_NOT_TRACE;
    if (!r->warn)
        return;
    fprintf(r->warn,
            "%s: not a tlsmeter trace (neither the binary trace format nor JSON Lines: it "
            "starts with bytes",
            r->t->file);
    for (i = 0; i < r->nhead; i++)
        fprintf(r->warn, " %02x", r->head[i]);
    fputs(r->nhead == sizeof(r->head) ? " ...)\n" : ")\n", r->warn);
}

/* The event the scanner read into r->ev. */
static void model_line(struct rd *r)
{
    char err[200];

    if (model__event(r->m, r->t, &r->ev, err, sizeof(err)))
        rd_skipped(r, err);
    else
        r->t->events++;
}

/* One line without its '\n'; complete is false for a last line that had none. */
void rd_line(struct rd *r, const char *p, size_t n, bool complete)
{
    const char *z;

    r->lineno++;
    /* Almost every line: an event the scanner takes, which holds no NUL and is not blank, so
     * rd_piece would come to the same scan; the scan first spares it a pass over the line. */
    if (r->header_seen && !reader__jsonl && !scan__line(p, n, &r->ev)) {
        r->t->lines++;
        model_line(r);
        return;
    }
    if (!r->header_seen && binary_line(p, n)) {
        not_a_trace_binary(r);
        return;
    }
    z = memchr(p, 0, n);
    if (z)
        nul_line(r, p, n, complete, z);
    else
        rd_piece(r, p, n, complete, false);
}

static void rd_piece(struct rd *r, const char *p, size_t n, bool complete, bool after_nul)
{
    if (blank(p, n))
        return;
    if (after_nul && (p[0] != '{' || !complete)) {
        r->t->lines_cut++; /* the tail of a line whose start was never written */
        return;
    }
    if (!r->header_seen) {
        first_line(r, p, n, complete);
        return;
    }
    r->t->lines++;
    if (reader__jsonl) {
        if (complete) { /* as written; a cut last line is not a line */
            fwrite(p, 1, n, reader__jsonl);
            fputc('\n', reader__jsonl);
            r->t->events++;
        } else {
            r->t->partial_last = true;
        }
        return;
    }
    if (scan__line(p, n, &r->ev)) {
        slow_line(r, p, n, complete, after_nul);
        return;
    }
    model_line(r);
}

bool rd_fatal(const struct rd *r)
{
    return r->status != RD_OK;
}

void rd_finish(struct rd *r)
{
    if (r->warn && r->warned > READER_MAX_WARNINGS)
        fprintf(r->warn, "%s: %llu more malformed lines not shown\n", r->t->file,
                (unsigned long long)(r->warned - READER_MAX_WARNINGS));
    if (r->status == RD_OK && !r->header_seen)
        r->status = RD_EMPTY;
}

enum read_status reader__buffer(struct model *m, const char *name, const char *buf, size_t len,
                                FILE *warn)
{
    struct rd r = {.m = m, .t = model__new_trace(m, name), .warn = warn, .status = RD_OK};
    const char *p = buf, *end = buf + len;

    r.nhead = len < sizeof(r.head) ? len : sizeof(r.head);
    memcpy(r.head, buf, r.nhead);

    if (read2__magic((const unsigned char *)buf, len)) {
        r.status = read2__run(&r, NULL, buf + 8, len - 8, (const unsigned char *)buf, 8);
        rd_finish(&r);
        return r.status;
    }
    while (p < end && !rd_fatal(&r)) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));

        rd_line(&r, p, (size_t)((nl ? nl : end) - p), nl != NULL);
        p = nl ? nl + 1 : end;
    }
    rd_finish(&r);
    return r.status;
}

/* Complete lines in buf[0..have) go to rd_line; returns how many bytes were consumed. */
static size_t rd_lines(struct rd *r, const char *buf, size_t have)
{
    const char *p = buf, *end = buf + have, *nl;

    while (p < end && !rd_fatal(r) && (nl = memchr(p, '\n', (size_t)(end - p)))) {
        rd_line(r, p, (size_t)(nl - p), true);
        p = nl + 1;
    }
    return (size_t)(p - buf);
}

static void too_long(struct rd *r, FILE *f)
{
    int c;

    r->lineno++;
    if (!r->header_seen) {
        /* The header is the first line: one too long is no header (the next line is not
         * taken instead), the same error as any other first line that is not one. */
        if (r->warn)
            fprintf(r->warn, "%s:%llu: not a tlsmeter trace: the first line is %s\n", r->t->file,
                    (unsigned long long)r->lineno, "longer than 1 MiB");
        r->status = RD_NOT_TRACE;
        return;
    }
    rd_skipped(r, "line longer than 1 MiB");
    while ((c = getc(f)) != EOF && c != '\n')
        ;
}

static void rd_stream(struct rd *r, FILE *f, char *buf, size_t cap, size_t have)
{
    size_t used, n;

    while (!rd_fatal(r)) {
        n = fread(buf + have, 1, cap - have, f);
        have += n;
        used = rd_lines(r, buf, have);
        memmove(buf, buf + used, have - used);
        have -= used;
        if (rd_fatal(r))
            return;
        if (have == cap) {
            too_long(r, f);
            have = 0;
        } else if (!n) {
            break;
        }
    }
    if (have)
        rd_line(r, buf, have, false);
}

/* A trace piped in (a fleet's collector, zstdcat) arrives through a 64 KiB pipe by default:
 * 10 M JSON Lines events cost 85 k sleeps and wake-ups and 1.1 s of system time against 2.6 s
 * of parsing. A 1 MiB pipe (the unprivileged limit) lets a read take up to a whole buffer
 * (2 k sleeps, 0.6 s); refused, it is left as it is. */
static void grow_pipe(FILE *f)
{
    struct stat st;
    int fd = fileno(f);

    if (!fstat(fd, &st) && S_ISFIFO(st.st_mode))
        (void)fcntl(fd, F_SETPIPE_SZ, (int)READER_MAX_LINE);
}

static bool is_directory(FILE *f)
{
    struct stat st;

    return !fstat(fileno(f), &st) && S_ISDIR(st.st_mode);
}

static enum read_status read_file(struct model *m, const char *path, FILE *warn,
                                  struct reader_resume *rs)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    struct rd r = {.m = m, .warn = warn, .status = RD_OK, .rs = rs};
    char *buf;

    if (!f) {
        fprintf(warn ? warn : stderr, "%s: %s\n", path, strerror(errno));
        return RD_IO;
    }
    /* A directory opens for reading; only its read fails, which would say "read error". */
    if (is_directory(f)) {
        fprintf(warn ? warn : stderr, "%s: is a directory, not a trace file\n", path);
        fclose(f);
        return RD_IO;
    }
    if (rs && rs->started && m->ntraces == 1) { /* going on: the trace is there already */
        r.t = &m->traces[0];
        r.header_seen = true;
        r.lineno = rs->lineno, r.warned = rs->warned;
    } else {
        r.t = model__new_trace(m, path);
    }
    grow_pipe(f);
    buf = xmalloc(READER_MAX_LINE);
    /* The first bytes say the format: format 2's magic, or JSON text. */
    size_t head = fread(buf, 1, 8, f);
    r.nhead = head;
    memcpy(r.head, buf, head);
    if (read2__magic((unsigned char *)buf, head))
        r.status = read2__run(&r, f, NULL, 0, (unsigned char *)buf, head);
    else if (rs && rs->started) /* format 1 is read whole each time */
        rs->restart = true;
    else
        rd_stream(&r, f, buf, READER_MAX_LINE, head);
    if (ferror(f)) {
        fprintf(warn ? warn : stderr, "%s: read error\n", path);
        r.status = RD_IO;
    }
    free(buf);
    if (f != stdin)
        fclose(f);
    rd_finish(&r);
    if (rs) {
        rs->started = !rs->restart && r.status == RD_OK && read2__magic(r.head, r.nhead);
        rs->lineno = r.lineno, rs->warned = r.warned;
    }
    return r.status;
}

enum read_status reader__file(struct model *m, const char *path, FILE *warn)
{
    return read_file(m, path, warn, NULL);
}

enum read_status reader__resume(struct model *m, const char *path, struct reader_resume *rs,
                                FILE *warn)
{
    rs->restart = false;
    return read_file(m, path, warn, rs);
}
