/* hook_ssl.c: libssl entry points: reads (SSL_read*, SSL_peek*), writes (SSL_write*,
 * SSL_sendfile), handshakes, SSL_free. */
#include "base/clock.h"
#include "core/conn.h"
#include "hooks/hook.h"

#include <openssl/ssl.h>

/* One body for the four read calls and the two write calls (dir in / out), inlined into each
 * hook (its id a constant: the switch below folds away, no call with eight arguments); `ex`
 * variants report bytes through *nb. buf is the program's (const for writes: passed through
 * as is). */
static inline __attribute__((always_inline)) int traced_io(enum tlsm_fn id, struct tlsm_fwd f,
                                                           SSL *s, void *buf, size_t num,
                                                           int64_t want, size_t *nb,
                                                           const void *site)
{
    struct tlsm_thread *th = &tlsm_th;
    enum tlsm_dir dir =
        id == TLSM_FN_SSL_write || id == TLSM_FN_SSL_write_ex ? TLSM_DIR_OUT : TLSM_DIR_IN;
    th->site = site;
    struct tlsm_conn_scope sc;
    int ret;
    th->ssl_depth++;
    tlsm_io_enter(&sc, s, f.target, dir);
    uint64_t t0 = tlsm_now();
    switch (id) {
    case TLSM_FN_SSL_read:
        ret = TLSM_REAL(SSL_read, f)(s, buf, (int)num);
        break;
    case TLSM_FN_SSL_peek:
        ret = TLSM_REAL(SSL_peek, f)(s, buf, (int)num);
        break;
    case TLSM_FN_SSL_read_ex:
        ret = TLSM_REAL(SSL_read_ex, f)(s, buf, num, nb);
        break;
    case TLSM_FN_SSL_write:
        ret = TLSM_REAL(SSL_write, f)(s, buf, (int)num);
        break;
    case TLSM_FN_SSL_write_ex:
        ret = TLSM_REAL(SSL_write_ex, f)(s, buf, num, nb);
        break;
    default:
        ret = TLSM_REAL(SSL_peek_ex, f)(s, buf, num, nb);
        break;
    }
    uint64_t t1 = tlsm_now();
    int *ep = tlsm_errno(&tlsm_th), saved = *ep;
    int64_t got = ret;
    if (id == TLSM_FN_SSL_read_ex || id == TLSM_FN_SSL_peek_ex || id == TLSM_FN_SSL_write_ex)
        got = ret == 1 && nb ? (int64_t)*nb : 0;
    tlsm_io_leave(&sc, s, dir, tlsm_hooks[id].name, want, ret, got, t0, t1);
    th->site = NULL;
    th->ssl_depth--;
    *ep = saved;
    return ret;
}

/* Forwarded untraced: set-up not finished, our own call, nested in another SSL_* hook, or
 * a copy whose ABI tlsmeter does not speak (abi.h: OpenSSL 1.0, forks). */
static inline __attribute__((always_inline)) bool untraced_ssl(struct tlsm_fwd f)
{
    return !tlsm_tracing(&tlsm_th) || tlsm_th.ssl_depth ||
           (f.target && tlsm_abi_left_alone(&f.target->abi));
}

/* The data calls: SSL_read/peek/write (int num, -1 on failure) and their _ex forms (size_t
 * num, bytes done through a pointer, 0 on failure). The int-sized calls pass num through
 * size_t and back unchanged: the program's exact arguments are forwarded, even a negative
 * num. A write's buffer is const to the program; traced_io only passes it through. */
#define IO_HOOK(name, cbuf)                                                                        \
    TLSM_EXPORT int name(SSL *s, cbuf void *buf, int num)                                          \
    {                                                                                              \
        TLSM_HOOK_ENTER(name, f);                                                                  \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, -1;                                                             \
        if (untraced_ssl(f))                                                                       \
            return TLSM_REAL(name, f)(s, buf, num);                                                \
        return traced_io(TLSM_FN_##name, f, s, (void *)buf, (size_t)num, num, NULL,                \
                         __builtin_return_address(0));                                             \
    }
#define IO_HOOK_EX(name, cbuf)                                                                     \
    TLSM_EXPORT int name(SSL *s, cbuf void *buf, size_t num, size_t *done)                         \
    {                                                                                              \
        TLSM_HOOK_ENTER(name, f);                                                                  \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, 0;                                                              \
        if (untraced_ssl(f))                                                                       \
            return TLSM_REAL(name, f)(s, buf, num, done);                                          \
        return traced_io(TLSM_FN_##name, f, s, (void *)buf, num, (int64_t)num, done,               \
                         __builtin_return_address(0));                                             \
    }

IO_HOOK(SSL_read, )
IO_HOOK(SSL_peek, )
IO_HOOK_EX(SSL_read_ex, )
IO_HOOK_EX(SSL_peek_ex, )

static int traced_handshake(enum tlsm_fn id, struct tlsm_fwd f, SSL *s, const void *site)
{
    struct tlsm_thread *th = &tlsm_th;
    th->site = site;
    struct tlsm_conn_scope sc;
    int ret;
    th->ssl_depth++;
    tlsm_conn_enter(&sc, s, f.target);
    uint64_t t0 = tlsm_now();
    switch (id) {
    case TLSM_FN_SSL_connect:
        ret = TLSM_REAL(SSL_connect, f)(s);
        break;
    case TLSM_FN_SSL_accept:
        ret = TLSM_REAL(SSL_accept, f)(s);
        break;
    default:
        ret = TLSM_REAL(SSL_do_handshake, f)(s);
        break;
    }
    uint64_t t1 = tlsm_now();
    int saved = errno;
    tlsm_conn_handshake_done(&sc, s, t0, t1, ret);
    tlsm_conn_leave(&sc);
    th->site = NULL;
    th->ssl_depth--;
    errno = saved;
    return ret;
}

#define HANDSHAKE_HOOK(name)                                                                       \
    TLSM_EXPORT int name(SSL *s)                                                                   \
    {                                                                                              \
        TLSM_HOOK_ENTER(name, f);                                                                  \
        if (!f.fn)                                                                                 \
            return errno = ENOSYS, -1;                                                             \
        if (untraced_ssl(f))                                                                       \
            return TLSM_REAL(name, f)(s);                                                          \
        return traced_handshake(TLSM_FN_##name, f, s, __builtin_return_address(0));                \
    }

HANDSHAKE_HOOK(SSL_do_handshake)
HANDSHAKE_HOOK(SSL_connect)
HANDSHAKE_HOOK(SSL_accept)

TLSM_EXPORT void SSL_free(SSL *s)
{
    TLSM_HOOK_ENTER(SSL_free, f);
    if (!f.fn)
        return;
    if (tlsm_tracing(&tlsm_th)) {
        int saved = errno;
        tlsm_conn_free(s, f.target);
        errno = saved;
    }
    TLSM_REAL(SSL_free, f)(s);
}

IO_HOOK(SSL_write, const)
IO_HOOK_EX(SSL_write_ex, const)

/* SSL_sendfile (OpenSSL 3.0 and later; 1.1.1 has none, so only a 3.x copy is ever its
 * target): the kernel sends size bytes of fd from offset. OpenSSL makes it work over kTLS
 * send only, so the kernel encrypts every byte and libssl seals no record: a write event
 * (fn SSL_sendfile, asked size, written its return), whose bytes without a record ask once
 * per connection whether the kernel sends, as a write's do (conn.c, forward/blind.c). */
static ossl_ssize_t traced_sendfile(struct tlsm_fwd f, SSL *s, int fd, off_t offset, size_t size,
                                    int flags, const void *site)
{
    struct tlsm_thread *th = &tlsm_th;
    th->site = site;
    struct tlsm_conn_scope sc;
    th->ssl_depth++;
    tlsm_io_enter_sendfile(&sc, s, f.target);
    uint64_t t0 = tlsm_now();
    ossl_ssize_t ret = TLSM_REAL(SSL_sendfile, f)(s, fd, offset, size, flags);
    uint64_t t1 = tlsm_now();
    int *ep = tlsm_errno(th), saved = *ep;
    /* The int return io_end keeps only feeds SSL_get_error, for a failed call (ret <= 0). */
    tlsm_io_leave_sendfile(&sc, s, (int64_t)size, ret > 0 ? 1 : (int)ret, (int64_t)ret, t0, t1);
    th->site = NULL;
    th->ssl_depth--;
    *ep = saved;
    return ret;
}

TLSM_EXPORT ossl_ssize_t SSL_sendfile(SSL *s, int fd, off_t offset, size_t size, int flags)
{
    TLSM_HOOK_ENTER(SSL_sendfile, f);
    if (!f.fn)
        return errno = ENOSYS, -1;
    if (untraced_ssl(f))
        return TLSM_REAL(SSL_sendfile, f)(s, fd, offset, size, flags);
    return traced_sendfile(f, s, fd, offset, size, flags, __builtin_return_address(0));
}
