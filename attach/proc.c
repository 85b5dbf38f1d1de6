/* proc.c: reading /proc/PID for the injector (see proc.h). */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <unistd.h>

const char *path_base(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

static int parse_map_line(const char *line, struct proc_map *m)
{
    unsigned long long start, end, offset, inode;
    char perms[8];
    int n = 0;

    if (sscanf(line, "%llx-%llx %7s %llx %*x:%*x %llu %n", &start, &end, perms, &offset, &inode,
               &n) < 5)
        return -1;
    m->start = start;
    m->end = end;
    m->offset = offset;
    m->inode = inode;
    memcpy(m->perms, perms, 4);
    m->perms[4] = '\0';
    snprintf(m->path, sizeof(m->path), "%s", line + n);
    m->path[strcspn(m->path, "\n")] = '\0';
    return 0;
}

int proc_read_maps(pid_t pid, struct proc_maps *out)
{
    char path[64], line[1024];
    size_t cap = 0;
    FILE *f;

    out->m = NULL;
    out->n = 0;
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        if (out->n == cap) {
            size_t ncap = cap ? cap * 2 : 128;
            struct proc_map *nm = realloc(out->m, ncap * sizeof(*nm));

            if (!nm) {
                fclose(f);
                proc_free_maps(out);
                return -1;
            }
            out->m = nm;
            cap = ncap;
        }
        if (parse_map_line(line, &out->m[out->n]) == 0)
            out->n++;
    }
    fclose(f);
    return 0;
}

void proc_free_maps(struct proc_maps *maps)
{
    free(maps->m);
    maps->m = NULL;
    maps->n = 0;
}

const struct proc_map *proc_find_file(const struct proc_maps *maps, int (*match)(const char *base))
{
    for (size_t i = 0; i < maps->n; i++) {
        const struct proc_map *m = &maps->m[i];

        if (m->path[0] == '/' && m->offset == 0 && match(path_base(m->path)))
            return m;
    }
    return NULL;
}

static uint64_t hex_field(const char *line)
{
    return strtoull(line, NULL, 16);
}

static void parse_ids(const char *s, unsigned ids[4])
{
    sscanf(s, "%u %u %u %u", &ids[0], &ids[1], &ids[2], &ids[3]);
}

static void parse_status_line(const char *line, struct proc_status *st)
{
    const char *v = strchr(line, ':');

    if (!v)
        return;
    v++;
    v += strspn(v, " \t");
    if (!strncmp(line, "Name:", 5)) {
        snprintf(st->name, sizeof(st->name), "%s", v);
        st->name[strcspn(st->name, "\n")] = '\0';
    } else if (!strncmp(line, "State:", 6)) {
        st->state = v[0];
    } else if (!strncmp(line, "Tgid:", 5)) {
        st->tgid = atoi(v);
    } else if (!strncmp(line, "TracerPid:", 10)) {
        st->tracer_pid = atoi(v);
    } else if (!strncmp(line, "Uid:", 4)) {
        parse_ids(v, st->uid);
    } else if (!strncmp(line, "Gid:", 4)) {
        parse_ids(v, st->gid);
    } else if (!strncmp(line, "Seccomp:", 8)) {
        st->seccomp = atoi(v);
    } else if (!strncmp(line, "SigPnd:", 7)) {
        st->sig_pending = hex_field(v);
    } else if (!strncmp(line, "ShdPnd:", 7)) {
        st->shared_pending = hex_field(v);
    } else if (!strncmp(line, "SigBlk:", 7)) {
        st->sig_blocked = hex_field(v);
    } else if (!strncmp(line, "SigIgn:", 7)) {
        st->sig_ignored = hex_field(v);
    } else if (!strncmp(line, "SigCgt:", 7)) {
        st->sig_caught = hex_field(v);
    } else if (!strncmp(line, "CapEff:", 7)) {
        st->cap_effective = hex_field(v);
    }
}

int proc_read_status(pid_t pid, pid_t tid, struct proc_status *st)
{
    char path[96], line[512];
    FILE *f;

    memset(st, 0, sizeof(*st));
    st->seccomp = -1;
    if (tid)
        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
    else
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        parse_status_line(line, st);
    fclose(f);
    return st->state ? 0 : -1;
}

int proc_list_tasks(pid_t pid, pid_t **tids, size_t *n)
{
    char path[64];
    size_t cap = 0;
    struct dirent *e;
    DIR *d;

    *tids = NULL;
    *n = 0;
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    d = opendir(path);
    if (!d)
        return -1;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        if (*n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            pid_t *nt = realloc(*tids, ncap * sizeof(*nt));

            if (!nt) {
                closedir(d);
                return -1;
            }
            *tids = nt;
            cap = ncap;
        }
        (*tids)[(*n)++] = atoi(e->d_name);
    }
    closedir(d);
    return 0;
}

int proc_read_syscall(pid_t pid, pid_t tid, struct proc_syscall *sc)
{
    char path[96], buf[256];
    unsigned long long v[8];
    ssize_t len;
    int fd, k;

    memset(sc, 0, sizeof(*sc));
    sc->state = PROC_SC_RUNNING;
    snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (len <= 0)
        return -1;
    buf[len] = '\0';
    if (!strncmp(buf, "running", 7))
        return 0;
    k = sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &sc->nr, &v[0], &v[1], &v[2],
               &v[3], &v[4], &v[5], &v[6], &v[7]);
    if (k == 3 && sc->nr == -1) { /* blocked, not in a system call: "-1 sp pc" */
        sc->state = PROC_SC_NONE;
        sc->sp = v[0];
        sc->pc = v[1];
        return 0;
    }
    if (k != 9)
        return -1;
    sc->state = PROC_SC_IN;
    for (int i = 0; i < 6; i++)
        sc->args[i] = v[i];
    sc->sp = v[6];
    sc->pc = v[7];
    return 0;
}

int proc_same_mount_ns(pid_t pid)
{
    char path[64];
    struct stat self, other;

    snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
    if (stat("/proc/self/ns/mnt", &self) != 0 || stat(path, &other) != 0)
        return -1;
    return self.st_dev == other.st_dev && self.st_ino == other.st_ino;
}

static int mem_fd = -1;
static pid_t mem_tid;

static int mem_open(pid_t tid)
{
    char path[64];

    if (mem_fd >= 0 && mem_tid == tid)
        return mem_fd;
    proc_mem_close();
    snprintf(path, sizeof(path), "/proc/%d/mem", (int)tid);
    mem_fd = open(path, O_RDWR | O_CLOEXEC);
    if (mem_fd < 0)
        mem_fd = open(path, O_RDONLY | O_CLOEXEC);
    mem_tid = tid;
    return mem_fd;
}

void proc_mem_close(void)
{
    if (mem_fd >= 0)
        close(mem_fd);
    mem_fd = -1;
}

int proc_mem_read(pid_t tid, uint64_t addr, void *buf, size_t len)
{
    int fd = mem_open(tid);

    if (fd < 0)
        return -1;
    return pread(fd, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -1;
}

/* PTRACE_POKEDATA word by word; a partial last word is read first so its other bytes stay. */
static int poke_words(pid_t tid, uint64_t addr, const unsigned char *src, size_t len)
{
    while (len > 0) {
        size_t n = len < sizeof(long) ? len : sizeof(long);
        long word;

        if (n < sizeof(long)) {
            errno = 0;
            word = ptrace(PTRACE_PEEKDATA, tid, (void *)(uintptr_t)addr, NULL);
            if (errno)
                return -1;
        }
        memcpy(&word, src, n);
        if (ptrace(PTRACE_POKEDATA, tid, (void *)(uintptr_t)addr, (void *)word) != 0)
            return -1;
        addr += n;
        src += n;
        len -= n;
    }
    return 0;
}

int proc_mem_write(pid_t tid, uint64_t addr, const void *buf, size_t len)
{
    int fd = mem_open(tid);

    if (fd >= 0 && pwrite(fd, buf, len, (off_t)addr) == (ssize_t)len)
        return 0;
    return poke_words(tid, addr, buf, len);
}
