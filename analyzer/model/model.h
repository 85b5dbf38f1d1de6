/* model.h: what the analyzer keeps while streaming traces: per trace (one file, one
 * process), per OpenSSL instance, per (instance, cipher, path) bucket, per connection and
 * per thread, plus histograms. Memory grows with those, never with the number of events. */
#ifndef TLSM_MODEL_H
#define TLSM_MODEL_H

#include "common/schema.h"
#include "model/event.h"
#include "model/handshake.h"
#include "base/hist.h"
#include "base/imap.h"
#include "model/stacks.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_LIBS          64
#define MAX_CALIBS        32
#define MAX_NAMES         256
#define MAX_UNFIRED       32
#define TLS_RECORD_PT_MAX 16384

/* Capability bits decoded by the preload (lib.caps): the schema's list (common/schema.def). */
enum cap {
#define SCHEMA_CAP(id, name) CAP_##id,
#include "common/schema.def"
    CAP_N
};

struct stats {
    uint64_t reads, reads_ok, reads_fail, want_read, zero_ret, got, want, read_ns;
    uint64_t peeks; /* SSL_peek* calls: their bytes are read again later, never counted */
    /* crypto_ns: the records' crypto_ns as written; oncpu_ns: their on-CPU weights
     * (oncpu__rec), the figure every output counts */
    uint64_t recs, recs_app, recs_other, tag_fail, rec_len, rec_ct, rec_pt, crypto_ns;
    uint64_t oncpu_ns;
    uint64_t gcm_ns, gcm_dec, gcm_ctr, gcm_both; /* bytes per GCM entry */
    uint64_t recs_in_reads;                      /* sum of read.recs */
    uint64_t want_big;                           /* reads asking for more than a record */
};

struct lib {
    int64_t id;
    char *path, *version, *platform, *role, *cpuinfo;
    char *build_id;   /* lib.build_id: names the copy beside its path and version, NULL if absent */
    char *reach;      /* lib.reach: how calls past the linker's binding were reached */
    char *gcm_layout; /* lib.gcm_layout: "unverified" when its GCM context is not read */
    uint32_t caps, caps_known; /* bit per enum cap */
    bool has_crypto, has_ssl;
};

struct calib {
    int cipher; /* name index */
    char impl[16];
    double ns_per_byte;
    int64_t bytes, len; /* calib.records and calib.record */
};

/* Why TLS in a process was not visible to the hooks (blind events and end.blind); bit per
 * reason, names as in the trace. */
enum blind_reason {
#define SCHEMA_BLIND(id, name) BR_##id,
#include "common/schema.def"
    BR_N
};

#define MAX_BLIND 16
#define MAX_IMPLS 32

/* An impl event: the AES and GHASH code an instance's GCM context pointed at (names as the
 * preload wrote them, see docs/trace-format.md). */
struct impl_ev {
    int64_t id, lib;
    char aes[16], ghash[16];
    bool stitched;
    uint64_t block_module; /* hash of fn_block_module (model_prov.c), 0 when absent */
};

/* A provider other than the copy's default one, or an engine, that decrypted records (a prov
 * event: docs/trace-format.md); records name it by rec.prov. */
#define MAX_PROVS 8
struct prov_ev {
    int64_t id, lib;
    bool engine;
    char name[32], full_name[64], version[32], module[256];
    uint64_t module_hash; /* of module, as impl_ev.block_module */
    bool gcm_read;        /* the preload reads its GCM contexts (gcm_layout given) */
};

/* One object holding OpenSSL TLS code tlsmeter could not see (what "tls"), or one
 * instance whose connections received or sent with kernel TLS (what "ktls", one per
 * instance). */
struct blind {
    char *path, *version, *what;
    char *build_id;   /* blind.build_id, NULL if absent */
    char *unknown;    /* first reason name this analyzer does not know, NULL if none */
    unsigned reasons; /* bit per enum blind_reason */
    int64_t record_relocs, got_tlsmeter, got_elsewhere; /* -1: not in the trace */
    int64_t conns;      /* ktls: connections that received with kTLS */
    int64_t send_conns; /* ktls: connections that sent with kTLS */
    /* what "calls": the hooked functions bound past tlsmeter, into which object, how the
     * object was loaded ("deepbind", "namespace") and which object needs it. */
    char *fns, *bound_to, *scope, *needed_by;
    /* what "other_tls": the library's name ("GnuTLS") and hooked calls counted into it */
    char *library;
    int64_t calls;
};

/* The socket reads of copies whose SSL_read tlsmeter cannot reach (sockread
 * events), per copy and socket, and the callers whose GOT slots were rewritten (fwd events
 * with reach), model_reach.c. */
#define REACH_MAX_COPIES  16
#define REACH_MAX_SOCKETS 16
#define REACH_MAX_CALLERS 16
struct reach_copy {
    int64_t lib;
    uint64_t calls, bytes, eof, errors, would_block;
    uint64_t sockets_more; /* sockets beyond REACH_MAX_SOCKETS (their bytes are in bytes) */
    bool summed;           /* from a summary trace: no per-socket figures */
    int nsockets;
    struct {
        int64_t fd;
        uint64_t calls, bytes;
    } sockets[REACH_MAX_SOCKETS];
};
struct reach_caller {
    char *from, *to, *reach, *fns;
    int64_t lib;
};
struct reach {
    struct reach_copy copies[REACH_MAX_COPIES];
    int ncopies;
    uint64_t copies_more; /* socket reads of copies beyond REACH_MAX_COPIES */
    struct reach_caller callers[REACH_MAX_CALLERS];
    int ncallers;
};

struct trace {
    char *file, *comm, *exe, *arch, *cpu, *clock, *mode, *version;
    int64_t pid, format, start_unix_ns;
    bool binary; /* read from trace format 2 (read2.c), whose header says format 2 */
    bool has_end, partial_last, emulated, cpu_known, hooks_known;
    bool summary;      /* summary events (TLSMETER_EVENTS=summary): totals, no rec/read events */
    bool summary_copy; /* TLSMETER_EVENTS=both: summary events repeat the rec/read events */
    /* Summary mode's own losses: records of more buckets than the writer keeps (lost_recs),
     * socket reads of more copies (lost_sockreads), threads whose reads no snapshot holds
     * (threads_unlisted, the final one's). */
    uint64_t sum_lost_recs, sum_lost_sockreads;
    int64_t sum_threads_unlisted;
    bool cpu_crypto_known, cpu_aes; /* header.cpu_crypto, and whether it lists aes */
    int64_t max_t, wall_ns, user_ns, sys_ns, events_declared, dropped;
    int64_t start_cpu_ns; /* header: the process's CPU before the trace opened; -1: unknown */
    bool attached;        /* header.attached: `tlsmeter attach` (the trace is a window) */
    int64_t joined;       /* attached: connections open before the attach (no handshake seen) */
    int64_t reroute_routed, reroute_fallback;
    char *quiet, *reroute_reason;
    char *io, *io_error;         /* end.io ("mmap", "write"), end.io_error: why the file stopped */
    int64_t dropped_bytes;       /* end.dropped_bytes, -1 when absent */
    char *cputime, *cputime_why; /* header: how crypto_ns was measured ("wall" if absent) */
    bool cputime_exact;          /* perf-clock: crypto_ns is on-CPU time, preempt or not */
    int64_t preempted;           /* end.preempted, -1 when absent */
    uint64_t recs_flagged;       /* records with rec.preempt > 0 */
    uint64_t recs_left_out;      /* of those, left out of ns/B (cputime not exact) */
    uint64_t recs_stalled;       /* rec.stall: too slow with no switch seen, left out */
    uint64_t offcpu_ns;          /* perf-clock: sum of wall_ns - crypto_ns where given */
    char *exec; /* the end line was written before exec*() of this (the trace stops there) */
    /* end.user_ns + end.sys_ns does not fit 64 bits: CPU time unknown */
    bool cpu_overflow;
    char *unfired[MAX_UNFIRED];
    int nunfired;
    uint64_t lines, lines_skipped, lines_unknown, events;
    uint64_t lines_cut; /* lines a death cut short (NUL-separated pieces, see reader.c) */
    uint64_t warnings;  /* warn events: tlsmeter's warnings to this process */
    char *warn_first;   /* the first one's text */
    struct lib libs[MAX_LIBS];
    int nlibs;
    struct calib calibs[MAX_CALIBS];
    int ncalibs;
    struct blind blind[MAX_BLIND];
    int nblind;
    uint64_t recs_outside_reads; /* application-data records with rec.read 0 */
    struct impl_ev impls[MAX_IMPLS];
    int nimpls;
    struct prov_ev provs[MAX_PROVS];
    int nprovs;
    uint64_t nconns, nthreads;
    struct stats st;
    struct reach *reach; /* NULL until a sockread or a fwd event with reach */
};

/* Size classes by rec.pt (plaintext bytes): fixed per-record work dominates tiny records, bulk
 * records show the cipher's throughput; their ns/B are never mixed. */
enum size_class { SC_TINY, SC_SMALL, SC_BULK, SC_N };
#define SC_SMALL_MIN 256
#define SC_BULK_MIN  2048
/* Fewer bulk records than this: no bulk median, so no gain figure and no ns/B cross-check
 * (a handful of records is one burst, not a throughput). */
#define BULK_MIN_RECORDS 16

/* What a record's on-CPU weight is estimated from (oncpu__rec): the records of its size
 * class and bucket seen before it whose crypto_ns is on-CPU time, their crypto_ns and pt. */
struct oncpu_sums {
    uint64_t ns, pt;
};

/* Per-record ns/B (crypto_ns / pt) of one size class. Records switched out during the
 * decryption (rec.preempt, where the header's cputime cannot give on-CPU time) are left out
 * of nspb and counted; their on-CPU weight is estimated as they arrive (oncpu__rec). */
struct class_stats {
    uint64_t recs;          /* every record of the class, pt 0 included */
    uint64_t crypto_ns;     /* their crypto_ns as written */
    uint64_t oncpu_ns;      /* their on-CPU weights (oncpu__rec), summed */
    struct oncpu_sums sums; /* what the next switched-out record is estimated from */
    uint64_t left_out;      /* switched out or stalled, not in nspb */
    uint64_t left_pt;       /* their plaintext bytes (pt > 0 ones) */
    uint64_t left_ns;       /* their crypto_ns (pt > 0 ones): wall time */
    uint64_t left_nopt_ns;  /* crypto_ns of switched-out records with pt 0: kept as is */
    uint64_t flagged;       /* rec.preempt > 0, whatever the cputime method */
    struct rhist nspb;      /* records with pt > 0 not left out */
};

/* Records by (trace, instance, cipher, path): the unit the implementation class is decided
 * for. */
struct bucket {
    uint32_t trace;
    int64_t lib; /* rec.lib, 0 when the trace does not say */
    int cipher, path;
    int64_t prov; /* rec.prov: a provider other than the default one, or an engine; 0 none */
    struct stats st;
    struct class_stats cls[SC_N];
    /* rec.impl: the first id seen with the bytes (ciphertext) of its records, the bytes
     * of records naming another id, and of records naming none. */
    int64_t impl;
    uint64_t impl_ct, impl_other_ct, impl_none_ct;
};

struct conn {
    uint32_t trace;
    int64_t id;
    int suite, proto, role;
    int64_t hs_ns, hs_call_ns;
    bool opened, closed;
    struct stats st;
    struct conn_hs hs; /* the handshake's parts (hs.have: the trace has them) */
};

struct thread {
    uint32_t trace;
    int64_t tid;
    struct stats st;
};

struct model;
/* oncpu_ns: a rec's on-CPU weight (oncpu__rec), 0 for other events. */
typedef void (*event_hook)(void *ctx, const struct model *m, const struct trace *t,
                           const struct event *e, uint64_t oncpu_ns);

struct model {
    struct trace *traces;
    size_t ntraces, cap_traces;
    struct bucket *buckets;
    size_t nbuckets, cap_buckets;
    struct conn *conns;
    size_t nconns, cap_conns;
    struct thread *threads;
    size_t nthreads, cap_threads;
    struct imap bucket_map, conn_map, thread_map;
    /* Recent lookups of conn_map and thread_map (model.c): trace index, id, array index + 1
     * (0: empty), direct-mapped by id. Most events hit. */
    struct id_cache {
        uint32_t ti, idx1;
        int64_t id;
    } conn_cache[16], thread_cache[16];
    char *names[MAX_NAMES];     /* interned strings: ciphers, paths, suites, ... */
    size_t name_len[MAX_NAMES]; /* strlen of each */
    int nnames;
    int name_hint[16]; /* recent model__intern results, by length and end bytes (model.c) */
    struct hist read_got, read_want, rec_len, recs_per_read;
    struct stats st;
    struct stacks stacks; /* call stacks and the crypto weight per stack */
    event_hook hook;      /* called for every rec/read event (chrome output) */
    void *hook_ctx;
    /* With a hook: the other direction's records get their on-CPU weight from sums of their
     * own, per (trace, instance, cipher, path) and size class, as this direction's buckets. */
    struct imap other_map;
    struct oncpu_sums (*other)[SC_N];
    size_t nother, cap_other;
    /* The direction this model holds: false = decryption (rec dir in, read events), true =
     * encryption (rec dir out, write events read as reads: asked = want, written = got).
     * The analyzer reads the input once per direction the input has (main.c), so every
     * figure, table and verdict comes from the same code for both, never mixed. */
    bool out;
    uint64_t other_dir; /* rec and read/write events of the other direction, skipped */
};

void model__init(struct model *m);
void model__free(struct model *m);
struct trace *model__new_trace(struct model *m, const char *file);
int model__intern(struct model *m, const char *p, size_t n);
const char *model__name(const struct model *m, int idx);

/* Feeding: hot kinds arrive as struct event, the rest as jansson objects. Each returns 0,
 * or -1 with a reason in err when the line is not usable. */
int model__event(struct model *m, struct trace *t, const struct event *e, char *err, size_t errlen);
int model__header(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen);
int model__lib(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen);
int model__end(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen);
int model__blind(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen);
/* end.blind: objects the end line names that no blind event did (lost or cut). */
void model__end_blind(struct trace *t, json_t *arr);
/* Blind spots over all traces whose what is `what` ("tls", "ktls"; NULL: all). */
int model__blind_count(const struct model *m, const char *what);
void model__blind_free(struct blind *b);
const char *blind_reason__name(enum blind_reason r);
/* The reason in words, for the report. */
const char *blind_reason__text(enum blind_reason r);
int model__calib(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen);
/* sockread and fwd events (model_reach.c). */
int model__sockread(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen);
int model__fwd(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen);
void model__reach_free(struct trace *t);
/* A summary trace's per-copy socket reads (what "sockets"). */
int model__summary_sockets(struct trace *t, json_t *o, char *err, size_t errlen);
int model__impl(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen);
/* A summary event (model_summary.c): totals and histograms added as their events would be. */
int model__summary(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen);
/* Whether any trace of m is a summary trace (per-event outputs are not available). */
bool model__has_summary(const struct model *m);
struct bucket *model__bucket(struct model *m, struct trace *t, int64_t lib, int cipher, int path);
/* A rec's impl id into its bucket (ct: its ciphertext bytes). */
void model__bucket_impl(struct bucket *b, const struct event *e, uint64_t ct);
const struct impl_ev *trace__impl(const struct trace *t, int64_t id);
/* prov events (model_prov.c). */
int model__prov(struct model *m, struct trace *t, json_t *o, char *err, size_t errlen);
const struct prov_ev *trace__prov(const struct trace *t, int64_t id);
uint64_t prov__hash(const char *s);
/* "provider fips (OpenSSL FIPS Provider 3.0.22, /path/fips.so)" */
void prov__label(const struct prov_ev *p, char *buf, size_t cap);

/* The connection id of trace t (created on first mention). */
struct conn *model__conn(struct model *m, struct trace *t, int64_t id);

/* Derived figures. */
int64_t trace__duration(const struct trace *t);
int64_t trace__cpu_ns(const struct trace *t);
const struct lib *trace__lib(const struct trace *t, int64_t id);
const struct lib *trace__bucket_lib(const struct trace *t, const struct bucket *b,
                                    const char *path_name);
void stats__add(struct stats *dst, const struct stats *src);
double stats__ns_per_byte(const struct stats *s);
enum size_class size_class__of(int64_t pt);
const char *size_class__name(enum size_class c);
/* A record's on-CPU crypto ns: the one weight every output gives it (the report's crypto time,
 * rows, tables and shares, --folded, --flamegraph, callers, --chrome, --perfetto, --compare,
 * summary mode). Its crypto_ns when that is on-CPU time (not switched out, or a perf-clock
 * trace: exact); a switched-out record with pt > 0 counts pt x the ns/B of the records of its
 * bucket and size class before it that were not switched out (their crypto_ns over their pt),
 * never more than its own crypto_ns, and its own crypto_ns when there are none yet or its pt
 * is 0. It depends on the record and the records before it only, so a total of weights only
 * ever grows as records arrive. s is updated with the record. */
uint64_t oncpu__rec(struct oncpu_sums *s, bool exact, uint64_t pt, uint64_t ns, bool flagged);
/* The same rule for the records of one summary-mode snapshot of a class, added at once: pt and
 * ns of all of them, fl_pt, fl_ns and fl_nopt_ns of the switched-out ones (docs/trace-format.md,
 * "summary"); the switched-out bytes are estimated from the sums including this snapshot's. */
uint64_t oncpu__batch(struct oncpu_sums *s, bool exact, uint64_t pt, uint64_t ns, uint64_t fl_pt,
                      uint64_t fl_ns, uint64_t fl_nopt_ns);
/* The rule of oncpu__rec in words, for the outputs that say it. */
#define ONCPU_RULE                                                                                 \
    "a switched-out record weighs its plaintext x the ns/B of the earlier records of its "         \
    "instance, cipher and size class, at most its own time, in every output"
/* The class's on-CPU crypto time: its records' on-CPU weights summed. */
uint64_t class_stats__crypto_ns(const struct class_stats *c);
/* Median ns/B of the bucket's bulk records (not switched out), or -1 with fewer than
 * BULK_MIN_RECORDS of them: the figure a class cross-check may use. */
double bucket__bulk_median(const struct bucket *b);
/* The bucket's crypto time: class_stats__crypto_ns over its classes. */
uint64_t bucket__crypto_ns(const struct bucket *b);
/* Feeds one rec event into its bucket's size class (classes.c); returns its on-CPU weight. */
uint64_t classes__rec(struct trace *t, struct bucket *b, const struct event *e);
void class_stats__merge(struct class_stats *dst, const struct class_stats *src);
void class_stats__free(struct class_stats *c);
const char *cap__name(enum cap c);

/* The program a trace is of, for labels: its comm, else its executable. */
const char *trace_name(const struct trace *t);

#endif
