/* stacks.h: the sampled call stacks of a trace (module and stack events) and the crypto weight
 * of every record, attributed to one stack (docs/analyzer.md, "Call stacks"). Memory grows with
 * stacks, modules, threads and (stack, cipher) pairs, never with the number of records. */
#ifndef TLSM_STACKS_H
#define TLSM_STACKS_H

#include "model/event.h"
#include "base/imap.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define STACK_MAX_FRAMES  64
#define STACK_MAX_MODULES 256
#define STACK_MAX_STACKS  (1u << 20) /* over all traces: a hostile trace stays bounded */

struct smodule {
    char *path, *build_id; /* NULL: no module event with this id */
    uint64_t base;
};

struct sframe {
    int32_t module; /* -1: no module held the address; off is then absolute */
    uint64_t off;   /* relative to the module's load base: a return address */
};

struct sstack {
    uint32_t trace, id;
    uint16_t n;
    struct sframe *f; /* innermost first */
};

/* Crypto weight of records on one stack (stack 0: no stack; conn then names the frame). */
struct sweight {
    uint32_t trace, stack;
    int64_t conn, lib;
    int cipher, path;
    uint64_t ns, bytes;
};

struct spend {
    int64_t conn, lib;
    int cipher, path;
    uint64_t ns, bytes;
};

struct sthread {
    uint32_t trace;
    int64_t tid;
    uint32_t last_rec[2]; /* last sampled rec stack: [0] outside reads, [1] inside */
    uint32_t last_read;   /* last sampled read stack */
    int64_t pending_read; /* read id the records in pend wait for; 0 none */
    struct spend *pend;
    size_t npend, cap_pend;
};

struct strace {
    struct smodule *mods; /* STACK_MAX_MODULES, allocated with the first module */
    uint32_t last_rec[2];
    int64_t sampling; /* header config TLSMETER_STACKS; 0 off or unknown */
    uint64_t nstacks, ns_sampled, ns_inherited, ns_none;
};

struct stacks {
    struct strace *traces;
    size_t ntraces, cap_traces;
    struct sstack *stacks;
    size_t nstacks, cap_stacks;
    struct sweight *w;
    size_t nw, cap_w;
    struct sthread *threads;
    size_t nthreads, cap_threads;
    size_t last_thread; /* index + 1 of the thread thread_get found last (0: none) */
    struct imap stack_map, w_map, synth_map, thread_map, read_map;
};

void stacks__free(struct stacks *s);
struct strace *stacks__trace(struct stacks *s, uint32_t ti);
void stacks__header(struct stacks *s, uint32_t ti, json_t *config);
int stacks__module(struct stacks *s, uint32_t ti, json_t *o, char *err, size_t errlen);
int stacks__stack(struct stacks *s, uint32_t ti, json_t *o, char *err, size_t errlen);
/* A rec (cipher and path interned by the model, ns its on-CPU weight: oncpu__rec) and a read
 * event. */
void stacks__rec(struct stacks *s, uint32_t ti, const struct event *e, int cipher, int path,
                 uint64_t ns);
void stacks__read(struct stacks *s, uint32_t ti, const struct event *e);
/* After reading: records still waiting for their read get their fallback stack. */
void stacks__finish(struct stacks *s);
/* Referred to by a read event: its innermost frame is the caller of SSL_read. */
bool stacks__is_read(const struct stacks *s, uint32_t ti, uint32_t id);
const struct sstack *stacks__get(const struct stacks *s, uint32_t ti, uint32_t id);

#endif
