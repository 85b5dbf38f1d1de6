/* tlsmeter-attach: load libtlsmeter.so into a running process with ptrace and start tracing
 * (tlsmeter_attach), wait, then stop tracing (tlsmeter_detach). Between the two the process
 * runs untraced by ptrace. `tlsmeter attach PID` runs this program. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "inject.h"
#include "libpath.h"
#include "proc.h"

#define EXIT_USAGE   2
#define MAX_SETTINGS 128

extern char **environ;

struct options {
    const char *lib, *out;
    double for_seconds; /* < 0: until a signal or the process's exit */
    int detach, check;
    pid_t pid;
    const char *sets[MAX_SETTINGS];
    int nsets;
};

/* NAME=VALUE lines for tlsmeter_attach, one per name (the last given wins). */
struct settings {
    char *line[MAX_SETTINGS];
    int n;
};

static volatile sig_atomic_t stop_signal;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tlsmeter-attach [--lib PATH] [-o FILE] [--for SECONDS] "
            "[--set NAME=VALUE]... PID\n"
            "       tlsmeter-attach --detach [--lib PATH] PID\n"
            "       tlsmeter-attach --check PID\n"
            "Loads libtlsmeter-attach.so (libtlsmeter.so built for a dlopen after start) into\n"
            "the running process PID with ptrace and traces its OpenSSL use until --for\n"
            "SECONDS pass, SIGINT/SIGTERM/SIGHUP, or the process exits; then puts back what it\n"
            "changed. -o FILE: the trace (default tlsmeter.%%p.%%t.trace here; %%p pid, %%t the\n"
            "attach's start time). TLSMETER_* variables of this environment and --set are the\n"
            "settings. --lib: the library (default: beside this program, or ../lib). --check:\n"
            "only say whether PID can be attached. Exit: 0 done, 1 the process or the library\n"
            "refused or failed, 2 usage or refused before touching the process. docs/attach.md\n");
}

static int bad_usage(const char *what)
{
    fprintf(stderr, "tlsmeter-attach: %s\n", what);
    usage(stderr);
    return EXIT_USAGE;
}

static int parse_pid(const char *s, pid_t *pid)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || end == s || v <= 0 || v > INT_MAX)
        return -1;
    *pid = (pid_t)v;
    return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    static const struct option longs[] = {{"lib", required_argument, NULL, 'l'},
                                          {"for", required_argument, NULL, 'f'},
                                          {"set", required_argument, NULL, 's'},
                                          {"detach", no_argument, NULL, 'd'},
                                          {"check", no_argument, NULL, 'c'},
                                          {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    char *end;
    int c;

    memset(o, 0, sizeof(*o));
    o->for_seconds = -1;
    while ((c = getopt_long(argc, argv, "+o:h", longs, NULL)) != -1) {
        switch (c) {
        case 'l':
            o->lib = optarg;
            break;
        case 'o':
            o->out = optarg;
            break;
        case 'd':
            o->detach = 1;
            break;
        case 'c':
            o->check = 1;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        case 'f':
            o->for_seconds = strtod(optarg, &end);
            if (*end || end == optarg || o->for_seconds < 0)
                return bad_usage("--for takes a number of seconds");
            break;
        case 's':
            if (o->nsets == MAX_SETTINGS)
                return bad_usage("too many --set");
            o->sets[o->nsets++] = optarg;
            break;
        default:
            return bad_usage("unknown option");
        }
    }
    if (optind != argc - 1 || parse_pid(argv[optind], &o->pid) != 0)
        return bad_usage("give one process id");
    if (o->detach + o->check > 1)
        return bad_usage("--detach and --check exclude each other");
    return 0;
}

/* Adds NAME=VALUE, replacing an earlier line of the same name. */
static int settings_put(struct settings *s, const char *name, size_t namelen, const char *value)
{
    char *line;

    if (strchr(value, '\n'))
        return -1;
    if (asprintf(&line, "%.*s=%s", (int)namelen, name, value) < 0)
        return -1;
    for (int i = 0; i < s->n; i++)
        if (!strncmp(s->line[i], line, namelen + 1)) {
            free(s->line[i]);
            s->line[i] = line;
            return 0;
        }
    if (s->n == MAX_SETTINGS) {
        free(line);
        return -1;
    }
    s->line[s->n++] = line;
    return 0;
}

static int valid_name(const char *s, size_t len)
{
    if (len <= 9 || strncmp(s, "TLSMETER_", 9) != 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')))
            return 0;
    return 1;
}

static int put_assignment(struct settings *s, const char *nv)
{
    const char *eq = strchr(nv, '=');

    if (!eq || !valid_name(nv, (size_t)(eq - nv)))
        return -1;
    return settings_put(s, nv, (size_t)(eq - nv), eq + 1);
}

static const char *setting(const struct settings *s, const char *name)
{
    size_t len = strlen(name);

    for (int i = 0; i < s->n; i++)
        if (!strncmp(s->line[i], name, len) && s->line[i][len] == '=')
            return s->line[i] + len + 1;
    return NULL;
}

/* The trace's file: -o, else TLSMETER_OUT from the environment, else tlsmeter.%p.%t.trace here
 * (or in the target's /tmp when it has another mount namespace); relative paths are made
 * absolute from here when the target sees the same files. %t, the attach's start time, gives
 * a process attached again and again a file each (the library adds .1 to .9 to a name taken
 * within the same second). */
static int put_trace_file(struct settings *s, const struct options *o, int same_ns)
{
    const char *out = o->out ? o->out : setting(s, "TLSMETER_OUT");
    char cwd[PATH_MAX], *abs = NULL;
    int rc;

    if (!out)
        out = same_ns ? "tlsmeter.%p.%t.trace" : "/tmp/tlsmeter.%p.%t.trace";
    if (out[0] != '/' && same_ns && getcwd(cwd, sizeof(cwd)) &&
        asprintf(&abs, "%s/%s", cwd, out) < 0)
        return -1;
    rc = settings_put(s, "TLSMETER_OUT", 12, abs ? abs : out);
    free(abs);
    return rc;
}

static char *build_settings(const struct options *o, int same_ns)
{
    struct settings s = {{0}, 0};
    size_t len = 1;
    char *text;

    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "TLSMETER_", 9))
            put_assignment(&s, *e); /* a variable that is not a setting is skipped */
    if (put_trace_file(&s, o, same_ns) != 0)
        return NULL;
    for (int i = 0; i < o->nsets; i++)
        if (put_assignment(&s, o->sets[i]) != 0) {
            fprintf(stderr, "tlsmeter-attach: --set %s: want TLSMETER_NAME=VALUE on one line\n",
                    o->sets[i]);
            return NULL;
        }
    for (int i = 0; i < s.n; i++)
        len += strlen(s.line[i]) + 1;
    text = calloc(1, len);
    for (int i = 0; text && i < s.n; i++) {
        strcat(text, s.line[i]);
        strcat(text, "\n");
    }
    for (int i = 0; i < s.n; i++)
        free(s.line[i]);
    return text;
}

/* The trace's name as seen from here: %p is the target's pid; through /proc/PID/root when the
 * target lives in another mount namespace. */
static void trace_name(const char *settings, pid_t pid, int same_ns, char *buf, size_t cap)
{
    const char *v = strstr(settings, "TLSMETER_OUT=") + 13;
    size_t len = strcspn(v, "\n"), k = 0;

    if (!same_ns)
        k = (size_t)snprintf(buf, cap, "/proc/%d/root", (int)pid);
    for (size_t i = 0; i < len && k + 12 < cap; i++) {
        if (v[i] == '%' && v[i + 1] == 'p') {
            k += (size_t)snprintf(buf + k, cap - k, "%d", (int)pid);
            i++;
        } else {
            buf[k++] = v[i];
        }
    }
    buf[k] = '\0';
}

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

/* Blocked all along (a signal must not end us while the target is stopped); ppoll lets them
 * in only while we wait. */
static void block_stop_signals(sigset_t *old)
{
    struct sigaction sa;
    sigset_t set;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, old);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static int process_gone(pid_t pid, int pidfd)
{
    struct pollfd p = {pidfd, POLLIN, 0};

    if (pidfd >= 0)
        return poll(&p, 1, 0) == 1;
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/* Until --for passes, a stop signal comes, or the process exits (1 then). */
static int wait_while_attached(pid_t pid, double seconds, const sigset_t *open_mask)
{
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    struct timespec t0, now, step;
    int gone = 0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!stop_signal && !(gone = process_gone(pid, pidfd))) {
        double left = 1.0;
        struct pollfd p = {pidfd, POLLIN, 0};

        clock_gettime(CLOCK_MONOTONIC, &now);
        if (seconds >= 0) {
            left = seconds -
                   ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9);
            if (left <= 0)
                break;
        }
        left = left > 1.0 ? 1.0 : pidfd >= 0 ? left : (left > 0.1 ? 0.1 : left);
        step.tv_sec = (time_t)left;
        step.tv_nsec = (long)((left - (double)step.tv_sec) * 1e9);
        ppoll(&p, pidfd >= 0, &step, open_mask);
    }
    if (pidfd >= 0)
        close(pidfd);
    return gone;
}

static int do_detach(pid_t pid)
{
    struct inject_report rep;
    int rc = inject_detach(pid, &rep);

    if (rc == INJECT_OK) {
        fprintf(stderr,
                "tlsmeter: detached from %d; stopped for %.1f ms (tlsmeter_detach took "
                "%.1f ms)\n",
                (int)pid, rep.stopped_ms, rep.lib_ms);
    } else if (process_gone(pid, -1)) {
        fprintf(stderr, "tlsmeter: %d exited before tlsmeter detached\n", (int)pid);
        rc = INJECT_OK;
    } else {
        fprintf(stderr, "tlsmeter: cannot detach from %d: %s\n", (int)pid, rep.msg);
    }
    return rc;
}

static int do_attach(const struct options *o, const char *comm, const sigset_t *open_mask)
{
    char lib[PATH_MAX], target_lib[PATH_MAX], why[512] = "", trace[PATH_MAX + 64];
    int same_ns = proc_same_mount_ns(o->pid) != 0;
    struct proc_status st;
    struct inject_report rep;
    char *settings;
    int rc;

    if (libpath_find(o->lib, lib, sizeof(lib), why, sizeof(why)) != 0)
        return bad_usage(why);
    if (!(settings = build_settings(o, same_ns)))
        return EXIT_USAGE;
    snprintf(target_lib, sizeof(target_lib), "%s", lib);
    if (proc_read_status(o->pid, 0, &st) != 0 ||
        (inject_lib_mapped(o->pid) != 1 &&
         libpath_in_target(o->pid, st.uid[1], lib, target_lib, sizeof(target_lib), why,
                           sizeof(why)) != 0)) {
        fprintf(stderr, "tlsmeter: cannot attach to %d: %s\n", (int)o->pid,
                why[0] ? why : "it exited");
        free(settings);
        return INJECT_REFUSED;
    }
    rc = inject_attach(o->pid, target_lib, lib, settings, &rep);
    trace_name(settings, o->pid, same_ns, trace, sizeof(trace));
    /* The library answers with the file it opened (%t and a .N suffix are its to choose). */
    if (rc == INJECT_OK && rep.msg[0] == '/' && !same_ns)
        snprintf(trace, sizeof(trace), "/proc/%d/root%s", (int)o->pid, rep.msg);
    else if (rc == INJECT_OK && rep.msg[0] == '/')
        snprintf(trace, sizeof(trace), "%s", rep.msg);
    free(settings);
    if (rc != INJECT_OK) {
        fprintf(stderr, "tlsmeter: cannot attach to %d: %s\n", (int)o->pid, rep.msg);
        return rc;
    }
    fprintf(stderr,
            "tlsmeter: attached to %d (%s), trace %s; the process was stopped for "
            "%.1f ms (tlsmeter_attach took %.1f ms)\n",
            (int)o->pid, comm, trace, rep.stopped_ms, rep.lib_ms);
    if (wait_while_attached(o->pid, o->for_seconds, open_mask)) {
        fprintf(stderr, "tlsmeter: %d exited; trace %s\n", (int)o->pid, trace);
        return INJECT_OK;
    }
    return do_detach(o->pid);
}

int main(int argc, char **argv)
{
    char comm[64], ossl[600], why[1024];
    struct options o;
    sigset_t open_mask;
    int rc = parse_options(argc, argv, &o);

    if (rc)
        return rc;
    block_stop_signals(&open_mask);
    if (check_target(o.pid, comm, sizeof(comm), ossl, sizeof(ossl), why, sizeof(why)) != 0) {
        fprintf(stderr, "tlsmeter: cannot attach to %d: %s\n", (int)o.pid, why);
        return INJECT_REFUSED;
    }
    if (o.check) {
        fprintf(stderr, "tlsmeter: %d (%s) can be attached (OpenSSL: %s)\n", (int)o.pid, comm,
                ossl);
        return 0;
    }
    if (o.detach)
        return do_detach(o.pid);
    return do_attach(&o, comm, &open_mask);
}
