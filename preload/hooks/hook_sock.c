/* hook_sock.c: A copy whose SSL_read nothing can reach (hidden or
 * stripped: no symbol to patch) still reads its socket through libc, and those calls cross its
 * PLT: its GOT slots for read, recv, recvfrom and recvmsg are pointed here (forward/got.c,
 * tlsm_got_rewrite), and each call on a socket that returns is a `sockread` event: ciphertext
 * bytes per socket read, when they arrived, and (by order on the thread) how many records were
 * decrypted between two of them. Calls on anything but a socket only forward.
 *
 * When the copy is linked into the executable, its PLT is the program's: every read of a file
 * passes here too. Whether a descriptor is a socket is asked of the kernel (fstat) once per
 * descriptor, not once per read: a "not a socket" answer is kept per descriptor number until
 * that number is closed or reused, which the same object's close, close_range, closefrom,
 * dup, dup2, dup3, socket, accept, accept4, socketpair and received SCM_RIGHTS tell (their GOT
 * slots are pointed here too). Descriptors closed past those (a raw system call, another
 * object's close, fcntl F_DUPFD) can leave a stale "not a socket": a socket reusing the number
 * is then not traced; it is never the other way round, since a socket is never kept as one
 * but checked at every read. The answer only decides what is traced: every call is forwarded
 * as it came, with its result and errno. recv, recvfrom and recvmsg need no check at all: on
 * anything but a socket they fail with ENOTSOCK. */
#include "base/clock.h"
#include "base/json.h"
#include "core/summary.h"
#include "forward/got.h"
#include "forward/obj.h"
#include "forward/tables.h"
#include "hooks/hook.h"
#include "hooks/reach.h"
#include "trace/config.h"
#include "trace/trace.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum { S_READ, S_RECV, S_RECVFROM, S_RECVMSG, S_N };
static const char *const names[S_N] = {"read", "recv", "recvfrom", "recvmsg"};
static void *orig[S_N];

/* The copies reached so: their version text, for a lib line written at their first read. */
#define MAX_SOCK_COPIES 8
static struct {
    const struct link_map *lm;
    char version[64];
} copies[MAX_SOCK_COPIES];
static int ncopies;

/* Per descriptor number below FD_KNOWN: bit 0 set when it is known not to be a socket, bits
 * 1-7 a count of the times the number was closed or reused. fstat's answer is stored only if
 * the count did not move while it was asked, so a close racing with a read never leaves the
 * old file's answer on the new descriptor. Numbers from FD_KNOWN up are asked at every read,
 * as are sockets. 64 KiB of zero pages, of which a program touches the first. */
#define FD_KNOWN 65536
#define NOT_SOCK 1
static _Atomic unsigned char fd_state[FD_KNOWN];
static _Atomic int fd_top = -1; /* the highest number ever marked: close_range's sweep ends there */

static void fd_forget(int fd)
{
    if (fd < 0 || fd >= FD_KNOWN)
        return;
    unsigned char s = atomic_load_explicit(&fd_state[fd], memory_order_relaxed);
    while (!atomic_compare_exchange_weak(&fd_state[fd], &s, (unsigned char)((s | NOT_SOCK) + 1)))
        ;
}

static void fd_forget_from(unsigned lo, unsigned hi)
{
    int top = atomic_load_explicit(&fd_top, memory_order_acquire);
    for (unsigned fd = lo; top >= 0 && fd <= hi && fd <= (unsigned)top; fd++)
        fd_forget((int)fd);
}

static bool is_socket(int fd)
{
    struct stat st;
    if (fd < 0)
        return false;
    if (fd >= FD_KNOWN)
        return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
    unsigned char s = atomic_load_explicit(&fd_state[fd], memory_order_acquire);
    if (s & NOT_SOCK)
        return false;
    if (fstat(fd, &st) != 0) /* closed meanwhile: no answer to keep */
        return false;
    if (S_ISSOCK(st.st_mode))
        return true;
    /* The sweep bound first, so a close_range from here on reaches the number. */
    int top = atomic_load_explicit(&fd_top, memory_order_relaxed);
    while (top < fd && !atomic_compare_exchange_weak(&fd_top, &top, fd))
        ;
    atomic_compare_exchange_strong(&fd_state[fd], &s, (unsigned char)(s | NOT_SOCK));
    return false;
}

/* sock: the call's result already says it was a socket (recv*); else fstat, once per number. */
static void note(int fn, int fd, size_t asked, ssize_t got, int err, const void *ra, bool sock)
{
    if (!tlsm_tracing(&tlsm_th) || (got < 0 && (err == EBADF || err == ENOTSOCK)) ||
        (!sock && !is_socket(fd)))
        return;
    struct tlsm_obj *o = tlsm_obj_of(ra);
    if (!o)
        return;
    if (!o->lib_id)
        for (int i = 0; i < ncopies; i++)
            if (copies[i].lm == o->lm)
                tlsm_obj_describe_reached(o, 0, copies[i].version);
    if (tlsm_summary_on()) /* summary mode: per copy totals, no line per read */
        tlsm_summary_sockread(o->lib_id, (int64_t)got, err);
    if (!tlsm_event_lines_on() || !tlsm_trace_ready())
        return;
    char line[256];
    struct tlsm_json j;
    tlsm_th.guard++;
    tlsm_json_begin(&j, line, sizeof(line), TLSM_EV(SOCKREAD));
    tlsm_json_int(&j, "t", (int64_t)tlsm_ticks_to_ns(tlsm_now() - tlsm_trace_t0));
    tlsm_json_int(&j, "tid", tlsm_th.tid);
    tlsm_json_int(&j, "lib", o->lib_id);
    tlsm_json_int(&j, "fd", fd);
    tlsm_json_safe(&j, "fn", names[fn]);
    tlsm_json_int(&j, "asked", (int64_t)asked);
    tlsm_json_int(&j, "got", (int64_t)got);
    if (got < 0)
        tlsm_json_int(&j, "err", err);
    size_t n = tlsm_json_end(&j, line);
    if (n)
        tlsm_trace_line(line, n);
    tlsm_th.guard--;
}

#define NOTE(fn, fd, asked, ret, sock)                                                             \
    do {                                                                                           \
        int saved = errno;                                                                         \
        note(fn, fd, asked, ret, saved, __builtin_return_address(0), sock);                        \
        errno = saved;                                                                             \
    } while (0)

static ssize_t sock_read(int fd, void *buf, size_t n)
{
    ssize_t r = ((__typeof__(&read))orig[S_READ])(fd, buf, n);
    NOTE(S_READ, fd, n, r, false);
    return r;
}

static ssize_t sock_recv(int fd, void *buf, size_t n, int flags)
{
    ssize_t r = ((__typeof__(&recv))orig[S_RECV])(fd, buf, n, flags);
    if (!(flags & MSG_PEEK))
        NOTE(S_RECV, fd, n, r, true);
    return r;
}

static ssize_t sock_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a,
                             socklen_t *al)
{
    ssize_t r = ((__typeof__(&recvfrom))orig[S_RECVFROM])(fd, buf, n, flags, a, al);
    if (!(flags & MSG_PEEK))
        NOTE(S_RECVFROM, fd, n, r, true);
    return r;
}

/* Descriptors passed in SCM_RIGHTS take free numbers, which may be ones kept as "not a
 * socket" after a close nothing here saw. */
static void forget_passed(const struct msghdr *m)
{
    if (!m || !m->msg_control || m->msg_controllen < sizeof(struct cmsghdr))
        return;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR((struct msghdr *)m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
            fd_forget(fd);
        }
    }
}

static ssize_t sock_recvmsg(int fd, struct msghdr *m, int flags)
{
    ssize_t r = ((__typeof__(&recvmsg))orig[S_RECVMSG])(fd, m, flags);
    size_t asked = 0;
    if (r >= 0)
        forget_passed(m);
    for (size_t i = 0; m && i < m->msg_iovlen; i++)
        asked += m->msg_iov[i].iov_len;
    if (!(flags & MSG_PEEK))
        NOTE(S_RECVMSG, fd, asked, r, true);
    return r;
}

static void *const repl[S_N] = {(void *)sock_read, (void *)sock_recv, (void *)sock_recvfrom,
                                (void *)sock_recvmsg};

/* The same object's calls that close a descriptor number or hand one out: each forgets what
 * was kept for the number, after the call (a read racing with it finds the count moved).
 * They only add that to the call; errno is left as the call set it. */
enum {
    L_CLOSE,
    L_CLOSE_RANGE,
    L_CLOSEFROM,
    L_DUP,
    L_DUP2,
    L_DUP3,
    L_SOCKET,
    L_ACCEPT,
    L_ACCEPT4,
    L_SOCKETPAIR,
    L_N
};
static const char *const life_names[L_N] = {"close",   "close_range", "closefrom", "dup",
                                            "dup2",    "dup3",        "socket",    "accept",
                                            "accept4", "socketpair"};
static void *life_orig[L_N];

static int fd_close(int fd)
{
    int r = ((int (*)(int))life_orig[L_CLOSE])(fd);
    fd_forget(fd);
    return r;
}

static int fd_close_range(unsigned lo, unsigned hi, int flags)
{
    int r = ((int (*)(unsigned, unsigned, int))life_orig[L_CLOSE_RANGE])(lo, hi, flags);
    fd_forget_from(lo, hi);
    return r;
}

static void fd_closefrom(int lo)
{
    ((void (*)(int))life_orig[L_CLOSEFROM])(lo);
    fd_forget_from(lo < 0 ? 0 : (unsigned)lo, ~0u);
}

static int fd_dup(int old)
{
    int r = ((int (*)(int))life_orig[L_DUP])(old);
    fd_forget(r);
    return r;
}

static int fd_dup2(int old, int fd)
{
    int r = ((int (*)(int, int))life_orig[L_DUP2])(old, fd);
    fd_forget(fd);
    return r;
}

static int fd_dup3(int old, int fd, int flags)
{
    int r = ((int (*)(int, int, int))life_orig[L_DUP3])(old, fd, flags);
    fd_forget(fd);
    return r;
}

static int fd_socket(int domain, int type, int proto)
{
    int r = ((int (*)(int, int, int))life_orig[L_SOCKET])(domain, type, proto);
    fd_forget(r);
    return r;
}

static int fd_accept(int s, struct sockaddr *a, socklen_t *al)
{
    int r = ((__typeof__(&accept))life_orig[L_ACCEPT])(s, a, al);
    fd_forget(r);
    return r;
}

static int fd_accept4(int s, struct sockaddr *a, socklen_t *al, int flags)
{
    int r =
        ((int (*)(int, struct sockaddr *, socklen_t *, int))life_orig[L_ACCEPT4])(s, a, al, flags);
    fd_forget(r);
    return r;
}

static int fd_socketpair(int domain, int type, int proto, int sv[2])
{
    int r = ((int (*)(int, int, int, int *))life_orig[L_SOCKETPAIR])(domain, type, proto, sv);
    if (r == 0) {
        fd_forget(sv[0]);
        fd_forget(sv[1]);
    }
    return r;
}

static void *const life_repl[L_N] = {
    (void *)fd_close,   (void *)fd_close_range, (void *)fd_closefrom, (void *)fd_dup,
    (void *)fd_dup2,    (void *)fd_dup3,        (void *)fd_socket,    (void *)fd_accept,
    (void *)fd_accept4, (void *)fd_socketpair};

/* From the constructor (hooks/hook_entry.c): c's SSL_read could not be reached. */
void tlsm_sock_reach(const struct tlsm_table_copy *c)
{
    if (ncopies >= MAX_SOCK_COPIES)
        return;
    int n = tlsm_got_rewrite(c->lm, c->phdr, c->phnum, names, S_N, repl, orig);
    if (!n)
        return;
    /* Best effort: an import missing here only leaves its closes unseen (see the top). */
    tlsm_got_rewrite(c->lm, c->phdr, c->phnum, life_names, L_N, life_repl, life_orig);
    copies[ncopies].lm = c->lm;
    snprintf(copies[ncopies].version, sizeof(copies[0].version), "%s", c->version);
    ncopies++;
    struct tlsm_obj *o = tlsm_obj_of((const void *)c->lm->l_ld);
    if (o)
        atomic_fetch_or(&o->reach, TLSM_REACH_PLT);
}
