/* stacks.c: which stack each record's crypto time goes to. A rec carrying a stack gets it. With
 * sampling (TLSMETER_STACKS=N) most records carry none: such a record stands for the call site
 * of the last sampled record on the same thread (in or outside a read), else for its read's
 * stack, else for the thread's last read stack, else the trace's last sampled record stack;
 * only with none of those is it left without a stack (one frame per connection). Every
 * record's on-CPU weight (oncpu__rec) lands exactly once, so the weights sum to the trace's
 * crypto time as the report gives it. */
#include "model/stacks.h"

#include "base/util.h"

#include <stdlib.h>
#include <string.h>

void stacks__free(struct stacks *s)
{
    size_t i;
    int k;

    for (i = 0; i < s->ntraces; i++) {
        for (k = 0; s->traces[i].mods && k < STACK_MAX_MODULES; k++)
            free(s->traces[i].mods[k].path), free(s->traces[i].mods[k].build_id);
        free(s->traces[i].mods);
    }
    for (i = 0; i < s->nstacks; i++)
        free(s->stacks[i].f);
    for (i = 0; i < s->nthreads; i++)
        free(s->threads[i].pend);
    free(s->traces), free(s->stacks), free(s->w), free(s->threads);
    imap__free(&s->stack_map), imap__free(&s->w_map);
    imap__free(&s->synth_map), imap__free(&s->thread_map), imap__free(&s->read_map);
    memset(s, 0, sizeof(*s));
}

struct strace *stacks__trace(struct stacks *s, uint32_t ti)
{
    grow_array((void **)&s->traces, &s->cap_traces, ti, sizeof(*s->traces));
    if (ti >= s->ntraces)
        s->ntraces = ti + 1;
    return &s->traces[ti];
}

/* stacks__trace for the per-event path: the trace is there after its first event. */
static inline struct strace *trace_at(struct stacks *s, uint32_t ti)
{
    return ti < s->ntraces ? &s->traces[ti] : stacks__trace(s, ti);
}

void stacks__header(struct stacks *s, uint32_t ti, json_t *config)
{
    json_t *v = json_object_get(config, "TLSMETER_STACKS");

    stacks__trace(s, ti)->sampling = json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* A stack id as the trace gives it, or 0 when absent or out of range. */
static uint32_t stack_id(const struct event *e)
{
    int64_t v = e->i[I_STACK];

    return event__has(e, I_STACK) && v > 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
}

const struct sstack *stacks__get(const struct stacks *s, uint32_t ti, uint32_t id)
{
    long i = imap__get(&s->stack_map, ti, id);

    return i >= 0 ? &s->stacks[i] : NULL;
}

static void add_stacked(struct stacks *s, uint32_t ti, uint32_t id, const struct spend *p)
{
    uint64_t b = (uint64_t)(uint32_t)p->lib << 32 | (uint64_t)p->cipher << 16 | (uint64_t)p->path;
    long i = imap__get(&s->w_map, (uint64_t)ti << 32 | id, b);

    if (i < 0) {
        grow_array((void **)&s->w, &s->cap_w, s->nw, sizeof(*s->w));
        s->w[s->nw] = (struct sweight){
            .trace = ti, .stack = id, .lib = p->lib, .cipher = p->cipher, .path = p->path};
        imap__put(&s->w_map, (uint64_t)ti << 32 | id, b, (uint32_t)s->nw);
        i = (long)s->nw++;
    }
    s->w[i].ns += p->ns;
    s->w[i].bytes += p->bytes;
}

/* Records with no stack at all: one frame per connection, cipher and path. */
static void add_synthetic(struct stacks *s, uint32_t ti, const struct spend *p)
{
    uint64_t a = (uint64_t)ti << 32 | (uint64_t)p->cipher << 16 | (uint64_t)p->path;
    long i = imap__get(&s->synth_map, a, (uint64_t)p->conn);

    if (i < 0) {
        grow_array((void **)&s->w, &s->cap_w, s->nw, sizeof(*s->w));
        s->w[s->nw] = (struct sweight){
            .trace = ti, .conn = p->conn, .lib = p->lib, .cipher = p->cipher, .path = p->path};
        imap__put(&s->synth_map, a, (uint64_t)p->conn, (uint32_t)s->nw);
        i = (long)s->nw++;
    }
    s->w[i].ns += p->ns;
    s->w[i].bytes += p->bytes;
}

/* id 0: no stack to stand for the record. */
static void attribute(struct stacks *s, uint32_t ti, uint32_t id, const struct spend *p,
                      bool sampled)
{
    struct strace *t = trace_at(s, ti);

    if (!id) {
        t->ns_none += p->ns;
        add_synthetic(s, ti, p);
        return;
    }
    if (sampled)
        t->ns_sampled += p->ns;
    else
        t->ns_inherited += p->ns;
    add_stacked(s, ti, id, p);
}

static struct sthread *thread_get(struct stacks *s, uint32_t ti, int64_t tid)
{
    long i;
    struct sthread *th;

    if (s->last_thread && (th = &s->threads[s->last_thread - 1])->trace == ti && th->tid == tid)
        return th; /* a thread's rec and read come in a row */
    i = imap__get(&s->thread_map, ti, (uint64_t)tid);
    if (i >= 0) {
        s->last_thread = (size_t)i + 1;
        return &s->threads[i];
    }
    grow_array((void **)&s->threads, &s->cap_threads, s->nthreads, sizeof(*s->threads));
    th = &s->threads[s->nthreads];
    th->trace = ti, th->tid = tid;
    imap__put(&s->thread_map, ti, (uint64_t)tid, (uint32_t)s->nthreads++);
    s->last_thread = s->nthreads;
    return th;
}

/* The records of a read that ended: read_stack is the read's own stack (0 none or unknown). */
static void resolve_pending(struct stacks *s, struct sthread *th, uint32_t read_stack)
{
    uint32_t id = read_stack      ? read_stack
                  : th->last_read ? th->last_read
                                  : trace_at(s, th->trace)->last_rec[1];
    size_t i;

    for (i = 0; i < th->npend; i++)
        attribute(s, th->trace, id, &th->pend[i], false);
    th->npend = 0;
    th->pending_read = 0;
}

static void pend(struct stacks *s, struct sthread *th, int64_t read, const struct spend *p)
{
    size_t i;

    if (th->pending_read && th->pending_read != read)
        resolve_pending(s, th, 0); /* that read's event never came */
    th->pending_read = read;
    for (i = 0; i < th->npend; i++) {
        struct spend *q = &th->pend[i];

        if (q->conn == p->conn && q->lib == p->lib && q->cipher == p->cipher &&
            q->path == p->path) {
            q->ns += p->ns;
            q->bytes += p->bytes;
            return;
        }
    }
    grow_array((void **)&th->pend, &th->cap_pend, th->npend, sizeof(*th->pend));
    th->pend[th->npend++] = *p;
}

/* The bytes the cipher processed, as model.c counts them. */
static uint64_t rec_bytes(const struct event *e)
{
    int64_t over = 16 + (strv_eq(e->s[S_TLS], "1.2") ? 8 : 0);

    return e->i[I_LEN] > over ? (uint64_t)(e->i[I_LEN] - over) : 0;
}

void stacks__rec(struct stacks *s, uint32_t ti, const struct event *e, int cipher, int path,
                 uint64_t ns)
{
    struct spend p = {.conn = e->i[I_CONN],
                      .lib = e->i[I_LIB],
                      .cipher = cipher,
                      .path = path,
                      .ns = ns,
                      .bytes = rec_bytes(e)};
    struct sthread *th = thread_get(s, ti, e->i[I_TID]);
    struct strace *t = trace_at(s, ti);
    int k = e->i[I_READ] > 0;
    uint32_t id = stack_id(e);

    if (id) {
        th->last_rec[k] = t->last_rec[k] = id;
        attribute(s, ti, id, &p, true);
    } else if (th->last_rec[k]) {
        attribute(s, ti, th->last_rec[k], &p, false);
    } else if (k) {
        pend(s, th, e->i[I_READ], &p); /* the read's line comes after its records */
    } else {
        attribute(s, ti, t->last_rec[0], &p, false);
    }
}

void stacks__read(struct stacks *s, uint32_t ti, const struct event *e)
{
    struct sthread *th = thread_get(s, ti, e->i[I_TID]);
    uint32_t id = stack_id(e);

    if (id) {
        th->last_read = id;
        /* The stack line may come later (another thread wrote it): remember the id only. */
        if (imap__get(&s->read_map, ti, id) < 0)
            imap__put(&s->read_map, ti, id, 0);
    }
    if (th->npend)
        resolve_pending(s, th, th->pending_read == e->i[I_ID] ? id : 0);
}

bool stacks__is_read(const struct stacks *s, uint32_t ti, uint32_t id)
{
    return imap__get(&s->read_map, ti, id) >= 0;
}

void stacks__finish(struct stacks *s)
{
    size_t i;

    for (i = 0; i < s->nthreads; i++)
        if (s->threads[i].npend)
            resolve_pending(s, &s->threads[i], 0);
}
