/* hook_sock.c: issue 15, technique 4. A copy whose SSL_read nothing can reach (hidden or
 * stripped: no symbol to patch) still reads its socket through libc, and those calls cross its
 * PLT: its GOT slots for read, recv, recvfrom and recvmsg are pointed here (forward/got.c,
 * tlsm_got_rewrite), and each call on a socket that returns is a `sockread` event: ciphertext
 * bytes per socket read, when they arrived, and (by order on the thread) how many records were
 * decrypted between two of them. Calls on anything but a socket only forward. */
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

static void note(int fn, int fd, size_t asked, ssize_t got, int err, const void *ra)
{
    struct stat st;
    if (!tlsm_tracing(&tlsm_th) || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
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

#define NOTE(fn, fd, asked, ret)                                                                   \
    do {                                                                                           \
        int saved = errno;                                                                         \
        note(fn, fd, asked, ret, saved, __builtin_return_address(0));                              \
        errno = saved;                                                                             \
    } while (0)

static ssize_t sock_read(int fd, void *buf, size_t n)
{
    ssize_t r = ((__typeof__(&read))orig[S_READ])(fd, buf, n);
    NOTE(S_READ, fd, n, r);
    return r;
}

static ssize_t sock_recv(int fd, void *buf, size_t n, int flags)
{
    ssize_t r = ((__typeof__(&recv))orig[S_RECV])(fd, buf, n, flags);
    if (!(flags & MSG_PEEK))
        NOTE(S_RECV, fd, n, r);
    return r;
}

static ssize_t sock_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a,
                             socklen_t *al)
{
    ssize_t r = ((__typeof__(&recvfrom))orig[S_RECVFROM])(fd, buf, n, flags, a, al);
    if (!(flags & MSG_PEEK))
        NOTE(S_RECVFROM, fd, n, r);
    return r;
}

static ssize_t sock_recvmsg(int fd, struct msghdr *m, int flags)
{
    ssize_t r = ((__typeof__(&recvmsg))orig[S_RECVMSG])(fd, m, flags);
    size_t asked = 0;
    for (size_t i = 0; m && i < m->msg_iovlen; i++)
        asked += m->msg_iov[i].iov_len;
    if (!(flags & MSG_PEEK))
        NOTE(S_RECVMSG, fd, asked, r);
    return r;
}

static void *const repl[S_N] = {(void *)sock_read, (void *)sock_recv, (void *)sock_recvfrom,
                                (void *)sock_recvmsg};

/* From the constructor (hooks/hook_entry.c): c's SSL_read could not be reached. */
void tlsm_sock_reach(const struct tlsm_table_copy *c)
{
    if (ncopies >= MAX_SOCK_COPIES)
        return;
    int n = tlsm_got_rewrite(c->lm, c->phdr, c->phnum, names, S_N, repl, orig);
    if (!n)
        return;
    copies[ncopies].lm = c->lm;
    snprintf(copies[ncopies].version, sizeof(copies[0].version), "%s", c->version);
    ncopies++;
    struct tlsm_obj *o = tlsm_obj_of((const void *)c->lm->l_ld);
    if (o)
        atomic_fetch_or(&o->reach, TLSM_REACH_PLT);
}
