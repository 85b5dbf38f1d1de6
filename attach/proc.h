/* proc.h: what /proc says about a process: its memory map, status, threads, the system call a
 * thread waits in, its mount namespace, and its memory. */
#ifndef TLSM_ATTACH_PROC_H
#define TLSM_ATTACH_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_map {
    uint64_t start, end, offset;
    char perms[5];
    unsigned long long inode;
    char path[512]; /* "" for anonymous mappings; "[stack]" and such for special ones */
};

struct proc_maps {
    struct proc_map *m;
    size_t n;
};

int proc_read_maps(pid_t pid, struct proc_maps *out);
void proc_free_maps(struct proc_maps *maps);
/* The mapping of file offset 0 of the first mapped file whose base name satisfies match. */
const struct proc_map *proc_find_file(const struct proc_maps *maps, int (*match)(const char *base));
const char *path_base(const char *path);

struct proc_status {
    char name[64];
    char state;
    pid_t tgid, tracer_pid;
    unsigned uid[4], gid[4]; /* real, effective, saved, filesystem */
    int seccomp;             /* -1 when the kernel does not say */
    uint64_t sig_pending, shared_pending, sig_blocked, sig_ignored, sig_caught;
    uint64_t cap_effective;
};

/* tid 0: the process (/proc/PID/status); else the thread's (/proc/PID/task/TID/status). */
int proc_read_status(pid_t pid, pid_t tid, struct proc_status *st);
/* The thread ids in /proc/PID/task, malloc'ed. */
int proc_list_tasks(pid_t pid, pid_t **tids, size_t *n);

/* /proc/PID/task/TID/syscall: the system call a blocked thread waits in. */
enum { PROC_SC_RUNNING, PROC_SC_NONE, PROC_SC_IN };
struct proc_syscall {
    int state; /* PROC_SC_IN: nr and args valid; sp and pc valid unless RUNNING */
    long nr;
    uint64_t args[6];
    uint64_t sp, pc;
};
int proc_read_syscall(pid_t pid, pid_t tid, struct proc_syscall *sc);

/* 1: PID shares our mount namespace, 0: it does not, -1: cannot tell. */
int proc_same_mount_ns(pid_t pid);

/* The target's memory through /proc/TID/mem (writes fall back to PTRACE_POKEDATA, which needs
 * the thread stopped under our ptrace). 0 on success. */
int proc_mem_read(pid_t tid, uint64_t addr, void *buf, size_t len);
int proc_mem_write(pid_t tid, uint64_t addr, const void *buf, size_t len);
/* Closes the cached /proc/TID/mem descriptor. */
void proc_mem_close(void);

#endif
