/* hs.h: where one connection's handshake CPU goes. The handshake hooks (hook_hs.c) time the
 * libcrypto calls libssl makes inside a handshake-driving SSL_* call as parts; conn.c keeps
 * one struct tlsm_hs per connection and writes it as the open event's `hs` object.
 * Nesting: a part is the outermost hooked call only (X509_verify_cert's signature checks
 * are chain verification, not `verify`), so parts never overlap and add up to at most the
 * handshake's own time (docs/handshake.md). */
#ifndef TLSM_HS_H
#define TLSM_HS_H

#include "base/clock.h"
#include "trace/cputime.h"
#include "trace/thread.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

enum tlsm_hs_part {
    TLSM_HS_NONE,       /* no part in flight on the thread */
    TLSM_HS_CERT_PARSE, /* the peer's certificates, as libssl parses them */
    TLSM_HS_CERT_LOAD,  /* certificates libcrypto parses itself: a trust store loaded */
    TLSM_HS_CHAIN_VERIFY,
    TLSM_HS_SIGN,
    TLSM_HS_VERIFY,
    TLSM_HS_KEY_EXCHANGE,
    TLSM_HS_KEY_SCHEDULE,
    TLSM_HS_RECORDS, /* handshake records decrypted (the record hooks' crypto_ns) */
    TLSM_HS_NPARTS
};

/* A public key, as certificates and signatures name it: "rsa2048", "ec256", "ed25519". */
struct tlsm_hs_key {
    uint16_t bits;
    uint8_t kind; /* enum tlsm_hs_key_kind, 0 unknown */
};

enum tlsm_hs_key_kind {
    TLSM_KEY_NONE,
    TLSM_KEY_RSA,
    TLSM_KEY_RSA_PSS,
    TLSM_KEY_EC,
    TLSM_KEY_ED25519,
    TLSM_KEY_ED448,
    TLSM_KEY_DSA,
    TLSM_KEY_MAC,
    TLSM_KEY_OTHER
};

#define TLSM_HS_CERTS 6 /* certificates listed per connection; more are only counted */

struct tlsm_hs_cert {
    uint32_t bytes; /* DER length parsed */
    struct tlsm_hs_key key;
    uint64_t der_id; /* saved as cert-ID.der under TLSMETER_CERTS (hs_certs.c), 0: not saved */
};

struct tlsm_hs {
    uint64_t ns;      /* on-CPU ns inside the connection's handshake-driving calls */
    uint32_t calls;   /* such calls (a non-blocking handshake takes several) */
    uint32_t preempt; /* parts switched out (or calls whose parts exceeded their CPU time) */
    uint64_t part_ns[TLSM_HS_NPARTS];
    uint32_t part_calls[TLSM_HS_NPARTS];
    uint16_t ncerts;  /* certificates parsed (the first TLSM_HS_CERTS listed) */
    uint16_t tickets; /* session tickets encrypted (server: issued) */
    struct tlsm_hs_cert certs[TLSM_HS_CERTS];
    struct tlsm_hs_key sign_key, verify_key; /* of the last signature made / checked */
};

extern const char *const tlsm_hs_part_names[TLSM_HS_NPARTS];

static inline uint64_t tlsm_hs_parts_ns(const struct tlsm_hs *hs)
{
    uint64_t s = 0;
    for (int p = 1; p < TLSM_HS_NPARTS; p++)
        s += hs->part_ns[p];
    return s;
}

/* TLSMETER_CERTS: save der once as DIR/cert-ID.der; returns ID, 0 when not saved. */
uint64_t tlsm_hs_save_cert(const unsigned char *der, size_t len);
/* The key's trace name into buf ("rsa2048"); "" when unknown. */
void tlsm_hs_key_name(const struct tlsm_hs_key *k, char *buf, size_t cap);
/* The hs object (without its key) into buf: {"ns":..,"parts":{..},"certs":[..],..};
 * resumed: SSL_session_reused (-1 unknown). Returns its length, 0 when it does not fit. */
size_t tlsm_hs_json(const struct tlsm_hs *hs, int resumed, char *buf, size_t cap);

/* The thread's on-CPU ns for a handshake total. A handshake call may block on the network
 * (a blocking server's SSL_accept waits for the client inside it): the per-record methods
 * would only flag that as switched out, so unless the task clock is exact here, read the
 * thread CPU clock (a system call, ~1 us, twice per handshake call: rare next to the
 * handshake's own hundreds of microseconds). */
static inline uint64_t tlsm_hs_cpu_now(struct tlsm_thread *th)
{
    if (__builtin_expect(th->cpu_kind == TLSM_CPU_UNSET, 0))
        tlsm_cpu_thread_setup(th);
    uint64_t ns;
    uint32_t seq;
    if (th->cpu_kind == TLSM_CPU_PERF_CLOCK && tlsm_perf_clock(th->cpu_page, &ns, &seq))
        return ns;
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
        return tlsm_ticks_to_ns(tlsm_now());
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
