/* thread.h: everything the preload keeps per thread, in one struct (initial-exec TLS,
 * so reaching it costs one instruction on the hot path). */
#ifndef TLSM_THREAD_H
#define TLSM_THREAD_H

#include "base/tls.h"
#include "base/fn.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct tlsm_tbuf;
struct tlsm_conn_state;
struct perf_event_mmap_page;
struct rseq;
struct tlsm_rsm_ctx;
struct tlsm_hs;

/* Size of struct tlsm_thread's sum[] (core/summary.h checks its layout fits). */
#define TLSM_THREAD_SUM_N 410

struct tlsm_thread {
    int tid;
    bool started;  /* tid known, exit handler registered */
    bool exiting;  /* past its exit handler: hooks only forward (nothing would flush) */
    int guard;     /* > 0 while tlsmeter itself calls OpenSSL: do not trace that */
    int ssl_depth; /* nesting of SSL_* hooks (SSL_connect -> SSL_do_handshake) */
    int evp_depth; /* nesting of EVP hooks (EVP_CipherUpdate -> EVP_DecryptUpdate) */
    uint32_t conn; /* connection of the innermost SSL_* hook, 0 outside */
    struct tlsm_conn_state *conn_state;
    /* The SSL_read* or SSL_write* call in progress, if any, per direction (enum tlsm_dir: in =
     * reads, out = writes): one tally each, so a record of the other direction inside a call
     * (a key update sent during a read) is never counted for it. */
    struct tlsm_io_tally {
        bool active;
        uint32_t recs;
        uint32_t preempt;   /* of those, records flagged as switched out */
        uint64_t id;        /* the read or write event's id */
        uint64_t crypto_ns; /* sum of the records' crypto_ns */
    } io[2];
    const void *site; /* return address of the outermost SSL_* hook: the call site */
    /* The tracked context whose data call (Update, Final, EVP_Cipher) runs now with a record
     * open: GCM inner calls on this thread belong to that record (hook_gcm.c). Saved and restored
     * around the call, so a nested one on another context does not mix them. */
    struct tlsm_rsm_ctx *rec_cur;
    /* A traced EVP_CipherUpdate/EVP_CipherFinal_ex forwards to the real one, which tail-calls
     * the nested EVP_DecryptUpdate/EVP_DecryptFinal_ex on the same context through its PLT,
     * reaching our hook again: that nested call is forwarded straight to nest_fn, the
     * function the linker bound for the real one (hooks/hook_evp.c), with no second
     * resolution or tracing decision. Set only around the outer call. */
    const void *nest_ctx;
    void *nest_fn;
    /* Keying a copy measured at its provider tables (hooks/hook_table.c): set by the EVP
     * init hook around the real call, tbl_keying when libssl keys (its contexts are record
     * sources), tbl_seen by the table wrapper the call reached (NULL: none did, the cipher
     * is another provider's or an ENGINE's). */
    bool tbl_keying;
    const void *tbl_seen;
    /* Handshake parts (hs.h): the accumulator of the connection whose handshake-driving SSL_*
     * call runs now (NULL outside one), the part in flight (nested hooked calls belong to
     * it), and the EVP_MD_CTX last set up for a MAC key (a PSK binder, not a signature). */
    struct tlsm_hs *hs_cur;
    uint8_t hs_part;
    const void *hs_mac_ctx;
    /* tlsmeter's own work run inside a handshake (the start-up calibration, in ns of the
     * handshake's clock): left out of the handshake's time, which is the program's. */
    uint64_t hs_own_ns;
    /* On-CPU time (cputime.c): the thread's method, set up at its first record (where its
     * clock stood when a record began is the record's, struct tlsm_rsm_mark). */
    uint8_t cpu_kind; /* enum tlsm_cpu_kind */
    const volatile struct perf_event_mmap_page *cpu_page;
    struct rseq *cpu_rseq;
    struct tlsm_tbuf *buf;
    int *errno_p; /* this thread's errno (tlsm_errno), NULL until first asked */
    bool listed;  /* in the live list: its calls and sums are read by other threads */
    uint64_t calls[TLSM_FN_COUNT];
    /* Summary mode's read and write sums and histograms (core/summary.h owns the layout):
     * added by this thread alone with plain stores, no lock prefix on the read path; read by
     * the snapshot through tlsm_thread_sum_all, as calls[] is by the end line. */
    uint64_t sum[TLSM_THREAD_SUM_N];
};

extern __thread struct tlsm_thread tlsm_th TLSM_IE;

/* First use on a thread: learn the tid, register the flush-at-thread-exit handler. */
void tlsm_thread_start(struct tlsm_thread *th);
/* Sum of a hook's calls over live and exited threads. */
uint64_t tlsm_thread_calls(int fn);
/* Every hook's count at once: one pass over the live threads (the end line's hooks). */
void tlsm_thread_calls_all(uint64_t out[TLSM_FN_COUNT]);
/* Every thread's sum[] added up (exited threads' and live ones'), into out. Threads past
 * the live list (more than 1,024 at once) count only when they exit: tlsm_thread_unlisted
 * says how many of them run now. */
void tlsm_thread_sum_all(uint64_t out[TLSM_THREAD_SUM_N]);
unsigned tlsm_thread_unlisted(void);
void tlsm_thread_init(void);
void tlsm_thread_atfork_child(void);
void tlsm_thread_atfork(bool take);

/* An interposed function: exported from libtlsmeter.so, never inlined into another. */
#define TLSM_EXPORT __attribute__((visibility("default"), noinline))

/* Set once the constructor finished and tracing is on; cleared on quiet and at exit. */
extern _Atomic bool tlsm_active;

/* This thread's errno, whose address does not change while the thread lives: a hot hook
 * saves and restores it around its own work with a load, not a __errno_location call. */
static inline int *tlsm_errno(struct tlsm_thread *th)
{
    int *p = th->errno_p;
    if (__builtin_expect(!p, 0))
        p = th->errno_p = &errno;
    return p;
}

/* The first-use set-up of a call tlsm_tracing's checks let through (a hook that made them
 * from loads only, hooks/hook_evp.c). */
static inline void tlsm_traced_start(struct tlsm_thread *th)
{
    if (__builtin_expect(!th->started, 0))
        tlsm_thread_start(th);
}

static inline bool tlsm_tracing(struct tlsm_thread *th)
{
    if (!atomic_load_explicit(&tlsm_active, memory_order_relaxed) || th->guard || th->exiting)
        return false;
    tlsm_traced_start(th);
    return true;
}

#endif
