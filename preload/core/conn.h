/* conn.h: connections (one per SSL*) and the reads and writes made on them. */
#ifndef TLSM_CONN_H
#define TLSM_CONN_H

#include "core/recsm.h"
#include "forward/obj.h"
#include "trace/thread.h"

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>

struct tlsm_conn_state;

/* Saved and restored around a hook so nested SSL_* calls keep the outer context. */
struct tlsm_conn_scope {
    uint32_t prev_conn;
    struct tlsm_conn_state *prev_cs;
    struct tlsm_conn_state *cs;
    /* A handshake-driving call (the connection is not open yet): its parts go to the
     * connection's hs (thread hs_cur), its on-CPU time from hs_cpu0 to its end. */
    struct tlsm_hs *prev_hs;
    uint64_t hs_cpu0;
    uint64_t hs_parts0; /* the connection's part time when the call began */
    uint64_t hs_own0;   /* the thread's hs_own_ns then */
    bool hs_on;
};

int tlsm_conn_init(void);
/* Set while attached to a running program (preload/hooks/attach.c): a connection met first with its
 * handshake complete is `joined`. tlsm_conn_forget_all: a detach forgets every connection. */
extern _Atomic bool tlsm_conn_joining;
void tlsm_conn_forget_all(void);
/* Enter/leave an SSL_* hook on ssl (sets this thread's current connection). */
void tlsm_conn_enter(struct tlsm_conn_scope *sc, const SSL *ssl, struct tlsm_obj *lib);
void tlsm_conn_leave(struct tlsm_conn_scope *sc);
uint32_t tlsm_conn_current(void);
/* A handshake call returned: time it; on success write the open event. */
void tlsm_conn_handshake_done(struct tlsm_conn_scope *sc, const SSL *ssl, uint64_t t0, uint64_t t1,
                              int ret);
/* An SSL_write/SSL_read call returned before the handshake was seen complete. */
void tlsm_conn_implicit_handshake(struct tlsm_conn_scope *sc, const SSL *ssl, uint64_t t0,
                                  uint64_t t1);
/* Around a read (dir in) or write (dir out) hook: tlsm_conn_enter and the call's tally begun;
 * the call's event and totals, then tlsm_conn_leave. One code for both directions, the event
 * kind and its key names come from the direction (read: want/got, write: asked/written). */
void tlsm_io_enter_in(struct tlsm_conn_scope *sc, const SSL *ssl, struct tlsm_obj *lib);
void tlsm_io_enter_out(struct tlsm_conn_scope *sc, const SSL *ssl, struct tlsm_obj *lib);
/* SSL_sendfile: a write (event, totals, the kTLS send question) that never drives the
 * handshake (OpenSSL refuses it until kTLS sends, after the handshake): none of its time is
 * handshake time; a connection not seen open yet opens with `hs_ns` -1 and no `hs`. */
void tlsm_io_enter_sendfile(struct tlsm_conn_scope *sc, const SSL *ssl, struct tlsm_obj *lib);
void tlsm_io_leave_sendfile(struct tlsm_conn_scope *sc, const SSL *ssl, int64_t want, int ret,
                            int64_t got, uint64_t t0, uint64_t t1);
static inline __attribute__((always_inline)) void
tlsm_io_enter(struct tlsm_conn_scope *sc, const SSL *ssl, struct tlsm_obj *lib, enum tlsm_dir dir)
{
    if (dir == TLSM_DIR_IN)
        tlsm_io_enter_in(sc, ssl, lib);
    else
        tlsm_io_enter_out(sc, ssl, lib);
}
void tlsm_io_leave_in(struct tlsm_conn_scope *sc, const SSL *ssl, const char *fn, int64_t want,
                      int ret, int64_t got, uint64_t t0, uint64_t t1);
void tlsm_io_leave_out(struct tlsm_conn_scope *sc, const SSL *ssl, const char *fn, int64_t want,
                       int ret, int64_t got, uint64_t t0, uint64_t t1);
/* One body per direction (its tallies and counters at fixed places); dir a constant. */
static inline __attribute__((always_inline)) void
tlsm_io_leave(struct tlsm_conn_scope *sc, const SSL *ssl, enum tlsm_dir dir, const char *fn,
              int64_t want, int ret, int64_t got, uint64_t t0, uint64_t t1)
{
    if (dir == TLSM_DIR_IN)
        tlsm_io_leave_in(sc, ssl, fn, want, ret, got, t0, t1);
    else
        tlsm_io_leave_out(sc, ssl, fn, want, ret, got, t0, t1);
}
/* A record of direction dir finished on this thread: count it for the current call of its
 * direction and the connection (crypto_ns as in its rec event; preempted: it carries a
 * `preempt` flag). */
void tlsm_conn_add_record(enum tlsm_dir dir, uint64_t crypto_ns, bool preempted);
/* SSL_free (lib: the instance whose SSL_free it is): ask kTLS of the directions no hooked call
 * showed (blind.h tlsm_blind_ktls), write the close event, forget the connection. */
void tlsm_conn_free(const SSL *ssl, struct tlsm_obj *lib);
/* A connection id for one no hooked call made a state for (a kTLS one found at SSL_free). */
uint32_t tlsm_conn_new_id(void);

#endif
