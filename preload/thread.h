/* thread.h: everything the preload keeps per thread, in one struct (initial-exec TLS,
 * so reaching it costs one instruction on the hot path). */
#ifndef TLSM_THREAD_H
#define TLSM_THREAD_H

#include "resolve.h"

#include <stdbool.h>
#include <stdint.h>

struct tlsm_tbuf;
struct tlsm_conn_state;
struct perf_event_mmap_page;
struct rseq;

struct tlsm_thread {
    int tid;
    bool started;  /* tid known, exit handler registered */
    bool exiting;  /* past its exit handler: hooks only forward (nothing would flush) */
    int guard;     /* > 0 while tlsmeter itself calls OpenSSL: do not trace that */
    int ssl_depth; /* nesting of SSL_* hooks (SSL_connect -> SSL_do_handshake) */
    int evp_depth; /* nesting of EVP hooks (EVP_CipherUpdate -> EVP_DecryptUpdate) */
    uint32_t conn; /* connection of the innermost SSL_* hook, 0 outside */
    struct tlsm_conn_state *conn_state;
    /* The SSL_read* call in progress, if any. */
    bool in_read;
    const void *site; /* return address of the outermost SSL_* hook: the call site */
    uint64_t read_id;
    uint32_t read_recs;
    uint32_t read_preempt;   /* of those, records flagged as switched out */
    uint64_t read_crypto_ns; /* sum of the records' crypto_ns */
    /* GCM-level accounting of the record in flight on this thread. */
    bool rec_open;
    uint64_t gcm_ticks;
    uint64_t gcm_bytes;
    uint8_t gcm_fns; /* bit 0: CRYPTO_gcm128_decrypt, bit 1: _ctr32 */
    /* On-CPU time (cputime.c): the thread's method, set up at its first record, and where
     * its clock and switch detector stood when the record in flight began. */
    uint8_t cpu_kind;  /* enum tlsm_cpu_kind */
    bool cpu_clock_ok; /* cpu_t0 is valid (perf-clock) */
    uint32_t cpu_seq0;
    uint64_t cpu_t0;
    const volatile struct perf_event_mmap_page *cpu_page;
    struct rseq *cpu_rseq;
    struct tlsm_tbuf *buf;
    uint64_t calls[TLSM_FN_COUNT];
};

extern __thread struct tlsm_thread tlsm_th __attribute__((tls_model("initial-exec")));

/* First use on a thread: learn the tid, register the flush-at-thread-exit handler. */
void tlsm_thread_start(struct tlsm_thread *th);
/* Sum of a hook's calls over live and exited threads. */
uint64_t tlsm_thread_calls(int fn);
void tlsm_thread_init(void);
void tlsm_thread_atfork_child(void);
void tlsm_thread_atfork(bool take);

#endif
