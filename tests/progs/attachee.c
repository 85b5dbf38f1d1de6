/* attachee: a target for tlsmeter-attach's tests (tests/cases/attach-inject.sh). Its threads
 * each block in one call for good, the main thread reads stdin until it closes, counting the
 * SIGUSR1s it gets (SA_RESTART handler); at EOF it prints how many times each call returned
 * EINTR (a stop by the injector must not cause one) and the SIGUSR1 count, and exits with the
 * code given by -x.
 *
 *   attachee [-t epoll,read,nanosleep,poll,cond,sigwait] [-x CODE] [-D] [-S] [-b]
 *   -D  prctl(PR_SET_DUMPABLE, 0)       -S  install a seccomp filter that allows everything
 *   -b  no reading: the main thread spins (no thread waits in a system call) until SIGTERM
 * It prints "ready" once its threads are started. It initialises libssl (the linker would
 * drop an unused one), so OpenSSL is mapped, though it speaks no TLS. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

enum { K_EPOLL, K_READ, K_NANOSLEEP, K_POLL, K_COND, K_SIGWAIT, K_MAIN, K_N };
static const char *const kind_names[K_N] = {"epoll", "read",    "nanosleep", "poll",
                                            "cond",  "sigwait", "main"};
static volatile long eintr_count[K_N];
static volatile sig_atomic_t usr1_count, term_seen;
static int idle_pipe[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

static void count_eintr(int kind, long rc)
{
    if (rc < 0 && errno == EINTR)
        eintr_count[kind]++;
}

static void wait_cond(void)
{
    pthread_mutex_lock(&lock);
    for (;;) {
        pthread_cond_wait(&never, &lock);
        eintr_count[K_COND]++; /* nobody signals it: any wake-up is spurious */
    }
}

static void *blocker(void *arg)
{
    int kind = (int)(long)arg, ep = epoll_create1(0);
    struct pollfd p = {idle_pipe[0], POLLIN, 0};
    struct timespec ts = {1000, 0}, rem;
    struct epoll_event ev;
    sigset_t usr2;
    char c;

    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    for (;;) {
        switch (kind) {
        case K_EPOLL:
            count_eintr(kind, epoll_wait(ep, &ev, 1, 1000000));
            break;
        case K_READ:
            count_eintr(kind, read(idle_pipe[0], &c, 1));
            break;
        case K_NANOSLEEP:
            count_eintr(kind, nanosleep(&ts, &rem));
            break;
        case K_POLL:
            count_eintr(kind, poll(&p, 1, 1000000));
            break;
        case K_COND:
            wait_cond();
            break;
        case K_SIGWAIT:
            count_eintr(kind, sigtimedwait(&usr2, NULL, &ts));
            break;
        }
    }
    return NULL;
}

static void on_usr1(int sig)
{
    usr1_count++;
}

static void on_term(int sig)
{
    term_seen = 1;
}

static int kind_of(const char *name)
{
    for (int k = 0; k < K_MAIN; k++)
        if (!strcmp(name, kind_names[k]))
            return k;
    return -1;
}

static void start_threads(char *list)
{
    for (char *name = strtok(list, ","); name; name = strtok(NULL, ",")) {
        int kind = kind_of(name);
        pthread_t t;

        if (kind < 0) {
            fprintf(stderr, "attachee: no thread kind %s\n", name);
            exit(2);
        }
        pthread_create(&t, NULL, blocker, (void *)(long)kind);
    }
}

static void allow_all_seccomp(void)
{
    struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {1, &allow};

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("attachee: seccomp");
        exit(2);
    }
}

static void read_until_eof(void)
{
    char buf[256];
    ssize_t n;

    while ((n = read(0, buf, sizeof(buf))) != 0)
        count_eintr(K_MAIN, n);
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    sigset_t usr;
    int opt, code = 0, busy = 0;

    OPENSSL_init_ssl(0, NULL);
    memset(&sa, 0, sizeof(sa));
    sa.sa_flags = SA_RESTART;
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    /* Only the main thread takes SIGUSR1: a handler would make the others' calls return EINTR
     * for real. */
    sigemptyset(&usr);
    sigaddset(&usr, SIGUSR1);
    sigaddset(&usr, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr, NULL);
    if (pipe(idle_pipe) != 0)
        return 2;
    while ((opt = getopt(argc, argv, "t:x:DSb")) != -1) {
        switch (opt) {
        case 't':
            start_threads(optarg);
            break;
        case 'x':
            code = atoi(optarg);
            break;
        case 'D':
            prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
            break;
        case 'S':
            allow_all_seccomp();
            break;
        case 'b':
            busy = 1;
            break;
        default:
            return 2;
        }
    }
    sigdelset(&usr, SIGUSR2);
    pthread_sigmask(SIG_UNBLOCK, &usr, NULL);
    printf("ready\n");
    fflush(stdout);
    if (busy)
        while (!term_seen)
            ;
    else
        read_until_eof();
    printf("eintr");
    for (int k = 0; k < K_N; k++)
        printf(" %s=%ld", kind_names[k], eintr_count[k]);
    printf("\nsigusr1=%d\n", (int)usr1_count);
    return code;
}
