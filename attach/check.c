/* check.c: the refusal checks of tlsmeter-attach, from /proc only: no such process, ourselves,
 * a thread id, a zombie, already traced, another user, non-dumpable, Yama, 32-bit, a kernel
 * thread, a static executable, seccomp, and no OpenSSL (the TLS library it has instead). */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"
#include "proc.h"

#define CAP_SYS_PTRACE_BIT 19
#define SCAN_MAX_BYTES     (256ULL << 20) /* a mapped file bigger than this is not scanned */

const char *user_name(unsigned uid, char *buf, size_t cap)
{
    struct passwd *pw = getpwuid(uid);

    if (pw)
        snprintf(buf, cap, "%s", pw->pw_name);
    else
        snprintf(buf, cap, "uid %u", uid);
    return buf;
}

static int have_cap_sys_ptrace(void)
{
    struct proc_status self;

    return proc_read_status(getpid(), 0, &self) == 0 &&
           (self.cap_effective >> CAP_SYS_PTRACE_BIT & 1);
}

static int same_ids(const unsigned ids[4], unsigned mine)
{
    return ids[0] == mine && ids[1] == mine && ids[2] == mine;
}

/* -1 when Yama is not in this kernel. */
static int yama_scope(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    int v = -1;

    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

static int is_our_descendant(pid_t pid)
{
    struct proc_status st;
    char path[64], line[256];

    for (int depth = 0; pid > 1 && depth < 4096; depth++) {
        FILE *f;
        pid_t ppid = 0;

        if (pid == getpid())
            return 1;
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        if (!(f = fopen(path, "re")))
            return 0;
        while (fgets(line, sizeof(line), f))
            if (!strncmp(line, "PPid:", 5))
                ppid = atoi(line + 5);
        fclose(f);
        pid = ppid;
    }
    (void)st;
    return 0;
}

/* Who may ptrace whom: the kernel's rules without CAP_SYS_PTRACE, then Yama's. */
static int check_permission(pid_t pid, const char *comm, const struct proc_status *st, char *why,
                            size_t whycap)
{
    int cap = have_cap_sys_ptrace(), scope = yama_scope();
    char them[64], me[64];
    struct stat dir;
    char path[64];

    if (!cap && (!same_ids(st->uid, getuid()) || !same_ids(st->gid, getgid()))) {
        snprintf(why, whycap,
                 "%d (%s) runs as %s and you are %s: only root (CAP_SYS_PTRACE) may attach to "
                 "another user's process",
                 (int)pid, comm, user_name(st->uid[1], them, sizeof(them)),
                 user_name(getuid(), me, sizeof(me)));
        return -1;
    }
    /* A non-dumpable process's /proc files (not its directory) belong to root whoever it
     * runs as. */
    snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
    if (!cap && stat(path, &dir) == 0 && dir.st_uid == 0 && st->uid[1] != 0) {
        snprintf(why, whycap,
                 "%d (%s) is not dumpable (it called prctl(PR_SET_DUMPABLE, 0), or changed its "
                 "credentials): only root (CAP_SYS_PTRACE) may attach to it",
                 (int)pid, comm);
        return -1;
    }
    if (scope == 3 || (scope == 2 && !cap) || (scope == 1 && !cap && !is_our_descendant(pid))) {
        snprintf(why, whycap,
                 "the Yama security module forbids it (/proc/sys/kernel/yama/ptrace_scope is "
                 "%d: %s)",
                 scope,
                 scope == 3   ? "ptrace is disabled until reboot"
                 : scope == 2 ? "only root (CAP_SYS_PTRACE) may attach"
                              : "only a parent process or root may attach; run as root");
        return -1;
    }
    return 0;
}

static int is_loader(const char *base)
{
    return !strncmp(base, "ld-linux", 8) || !strncmp(base, "ld-musl", 7) ||
           (!strncmp(base, "ld-", 3) && strstr(base, ".so"));
}

static int is_openssl(const char *base)
{
    return !strncmp(base, "libssl.so", 9) || !strncmp(base, "libcrypto.so", 12);
}

/* A copy of OpenSSL linked into a program or a vendor library carries its version string. */
static int file_has_openssl(pid_t pid, const char *path)
{
    static const char *const marks[] = {"OpenSSL 1.1.", "OpenSSL 3."};
    char host[600];
    struct stat st;
    void *data;
    int fd, found = 0;

    snprintf(host, sizeof(host), "/proc/%d/root%s", (int)pid, path);
    fd = open(host, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0 ||
        (unsigned long long)st.st_size > SCAN_MAX_BYTES) {
        close(fd);
        return 0;
    }
    data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED)
        return 0;
    for (size_t i = 0; i < 2 && !found; i++)
        found = memmem(data, (size_t)st.st_size, marks[i], strlen(marks[i])) != NULL;
    munmap(data, (size_t)st.st_size);
    return found;
}

/* Each distinct file mapped executable, scanned once. */
static const char *hidden_openssl(pid_t pid, const struct proc_maps *maps)
{
    for (size_t i = 0; i < maps->n; i++) {
        const struct proc_map *m = &maps->m[i];
        int seen = 0;

        if (m->path[0] != '/' || m->perms[2] != 'x' || strstr(m->path, " (deleted)"))
            continue;
        for (size_t j = 0; j < i && !seen; j++)
            seen = maps->m[j].perms[2] == 'x' && !strcmp(maps->m[j].path, m->path);
        if (!seen && file_has_openssl(pid, m->path))
            return m->path;
    }
    return NULL;
}

static const char *other_tls_library(const struct proc_maps *maps)
{
    static const struct {
        const char *prefix, *name;
    } libs[] = {{"libgnutls", "GnuTLS"},   {"libnss3", "NSS"},
                {"libssl3.so", "NSS"},     {"libmbedtls", "Mbed TLS"},
                {"libwolfssl", "wolfSSL"}, {"libboringssl", "BoringSSL"}};

    for (size_t i = 0; i < maps->n; i++)
        for (size_t k = 0; k < sizeof(libs) / sizeof(libs[0]); k++)
            if (maps->m[i].path[0] == '/' &&
                !strncmp(path_base(maps->m[i].path), libs[k].prefix, strlen(libs[k].prefix)))
                return libs[k].name;
    return NULL;
}

static int check_openssl(pid_t pid, const char *comm, const struct proc_maps *maps, char *ossl,
                         size_t osslcap, char *why, size_t whycap)
{
    const struct proc_map *lib = proc_find_file(maps, is_openssl);
    const char *copy, *other;

    if (lib) {
        snprintf(ossl, osslcap, "%s", path_base(lib->path));
        return 0;
    }
    if ((copy = hidden_openssl(pid, maps))) {
        snprintf(ossl, osslcap, "a copy inside %s", copy);
        return 0;
    }
    other = other_tls_library(maps);
    snprintf(why, whycap,
             "%d (%s) has no OpenSSL (no libssl or libcrypto mapped, no copy linked into its "
             "files): %s%s",
             (int)pid, comm, other ? "it uses " : "no TLS library is loaded", other ? other : "");
    if (other)
        snprintf(why + strlen(why), whycap - strlen(why), ", which tlsmeter does not measure");
    return -1;
}

static int check_maps(pid_t pid, const char *comm, const struct proc_status *st, char *ossl,
                      size_t osslcap, char *why, size_t whycap)
{
    struct proc_maps maps;
    int rc = -1;

    if (proc_read_maps(pid, &maps) != 0) {
        snprintf(why, whycap, "cannot read /proc/%d/maps: %s", (int)pid, strerror(errno));
        return -1;
    }
    if (maps.n == 0)
        snprintf(why, whycap, "%d (%s) is a kernel thread", (int)pid, comm);
    else if (!proc_find_file(&maps, is_loader))
        snprintf(why, whycap,
                 "%d (%s) is a static executable (no dynamic loader is mapped): there is no "
                 "dlopen to load tlsmeter with",
                 (int)pid, comm);
    else if (st->seccomp == 1 || st->seccomp == 2)
        snprintf(why, whycap,
                 "%d (%s) runs under seccomp (%s): loading a library makes system calls "
                 "(openat, mmap, mprotect) its filter may refuse or kill it for",
                 (int)pid, comm, st->seccomp == 1 ? "strict mode" : "a filter, mode 2");
    else
        rc = check_openssl(pid, comm, &maps, ossl, osslcap, why, whycap);
    proc_free_maps(&maps);
    return rc;
}

static int check_state(pid_t pid, const struct proc_status *st, char *why, size_t whycap)
{
    struct proc_status tracer;

    if (st->tgid != pid) {
        snprintf(why, whycap, "%d is a thread of process %d: give the process id", (int)pid,
                 (int)st->tgid);
    } else if (st->state == 'Z' || st->state == 'X') {
        snprintf(why, whycap, "%d (%s) has exited (%s)", (int)pid, st->name,
                 st->state == 'Z' ? "a zombie waiting for its parent" : "dead");
    } else if (st->tracer_pid) {
        if (proc_read_status(st->tracer_pid, 0, &tracer) != 0)
            snprintf(tracer.name, sizeof(tracer.name), "?");
        snprintf(why, whycap,
                 "%d (%s) is already traced by %d (%s): a process has one tracer at a time",
                 (int)pid, st->name, (int)st->tracer_pid, tracer.name);
    } else {
        return 0;
    }
    return -1;
}

int check_target(pid_t pid, char *comm, size_t commcap, char *ossl, size_t osslcap, char *why,
                 size_t whycap)
{
    struct proc_status st;
    char exe[64];

    snprintf(comm, commcap, "?");
    if (pid == getpid()) {
        snprintf(why, whycap, "%d is tlsmeter-attach itself", (int)pid);
        return -1;
    }
    if (pid <= 0 || proc_read_status(pid, 0, &st) != 0) {
        snprintf(why, whycap, "there is no process %d", (int)pid);
        return -1;
    }
    snprintf(comm, commcap, "%s", st.name);
    if (check_state(pid, &st, why, whycap) != 0 ||
        check_permission(pid, st.name, &st, why, whycap) != 0)
        return -1;
    snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
    if (elf_bits(exe) == 32) {
        snprintf(why, whycap, "%d (%s) is a 32-bit program: tlsmeter attaches to 64-bit ones",
                 (int)pid, st.name);
        return -1;
    }
    return check_maps(pid, st.name, &st, ossl, osslcap, why, whycap);
}

void explain_ptrace_eperm(pid_t pid, char *why, size_t whycap)
{
    char comm[64], ossl[8];

    if (check_target(pid, comm, sizeof(comm), ossl, sizeof(ossl), why, whycap) == 0)
        snprintf(why, whycap,
                 "the kernel refused to let tlsmeter trace %d (%s) (EPERM): a security module "
                 "(AppArmor, SELinux, Yama) or a container's settings forbid ptrace here",
                 (int)pid, comm);
}
