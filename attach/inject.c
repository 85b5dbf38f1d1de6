/* inject.c: the attach and detach sequences. Addresses are worked out before the process is
 * stopped (from /proc/PID/maps and the mapped files' dynamic symbols). Then every thread is
 * stopped, system calls the stop broke with EINTR are rewound, one thread waiting in a
 * blocking system call (where it holds no library lock) runs the calls: dlopen and
 * tlsmeter_attach, or tlsmeter_detach, between saving and restoring the thread's errno.
 * If no thread waits in such a call the process is let go as it was and tried again. */
#include "inject.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "call.h"
#include "check.h"
#include "elfsym.h"
#include "syscalls.h"
#include "threads.h"

#define MSG_CAP        512
#define PICK_TRIES     300
#define PICK_PAUSE_MS  10
#define DL_RTLD_NOW    0x2
#define DL_RTLD_DLOPEN 0x80000000u /* glibc's __RTLD_DLOPEN, for __libc_dlopen_mode */

struct job {
    pid_t pid;
    int attach;
    const char *lib_in_target;
    const char *settings;
    uint64_t dlopen, dlerror, errno_location, dlopen_flags;
    int lib_mapped;
    uint64_t lib_fn;                /* tlsmeter_attach / tlsmeter_detach, once mapped */
    uint64_t lib_value, lib_vaddr0; /* its symbol in lib_here, placed after dlopen */
    unsigned long long lib_inode;
    struct inject_report *rep;
};

static int is_libc(const char *b)
{
    return !strcmp(b, "libc.so.6") || (!strncmp(b, "libc-", 5) && strstr(b, ".so"));
}

static int is_libdl(const char *b)
{
    return !strncmp(b, "libdl.so", 8) || !strncmp(b, "libdl-", 6);
}

/* libtlsmeter-attach.so, or a library given with --lib under the preload's name. */
static int is_tlsmeter(const char *b)
{
    size_t n = !strncmp(b, "libtlsmeter-attach.so", 21) ? 21
               : !strncmp(b, "libtlsmeter.so", 14)      ? 14
                                                        : 0;
    return n && (!b[n] || !strcmp(b + n, " (deleted)"));
}

/* A mapped file as this program can open it: through the target's root, or the map_files
 * link when the file was deleted or replaced since. */
static void mapped_file(pid_t pid, const struct proc_map *m, char *buf, size_t cap)
{
    if (strstr(m->path, " (deleted)"))
        snprintf(buf, cap, "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)m->start,
                 (unsigned long long)m->end);
    else
        snprintf(buf, cap, "/proc/%d/root%s", (int)pid, m->path);
}

static int symbol_in(pid_t pid, const struct proc_map *m, const char *name, uint64_t *addr,
                     char *why, size_t whycap)
{
    uint64_t value, vaddr0;
    char path[600];

    mapped_file(pid, m, path, sizeof(path));
    if (elf_dynsym(path, name, &value, &vaddr0, why, whycap) != 0)
        return -1;
    *addr = m->start - vaddr0 + value;
    return 0;
}

/* glibc >= 2.34: dlopen in libc.so.6; before: libdl's dlopen where libdl is loaded, else
 * libc's __libc_dlopen_mode (no dlerror to ask then). */
static int find_dlopen(struct job *j, const struct proc_maps *maps, char *why, size_t whycap)
{
    const struct proc_map *libc = proc_find_file(maps, is_libc);
    const struct proc_map *libdl = proc_find_file(maps, is_libdl);
    char ignored[128];

    if (!libc) {
        snprintf(why, whycap,
                 "%d has no glibc (libc.so.6) mapped: there is no dlopen to load "
                 "tlsmeter with",
                 (int)j->pid);
        return -1;
    }
    if (symbol_in(j->pid, libc, "__errno_location", &j->errno_location, why, whycap) != 0)
        return -1;
    j->dlopen_flags = DL_RTLD_NOW;
    if (symbol_in(j->pid, libc, "dlopen", &j->dlopen, ignored, sizeof(ignored)) == 0) {
        symbol_in(j->pid, libc, "dlerror", &j->dlerror, ignored, sizeof(ignored));
    } else if (libdl && symbol_in(j->pid, libdl, "dlopen", &j->dlopen, why, whycap) == 0) {
        symbol_in(j->pid, libdl, "dlerror", &j->dlerror, ignored, sizeof(ignored));
    } else if (symbol_in(j->pid, libc, "__libc_dlopen_mode", &j->dlopen, why, whycap) == 0) {
        j->dlopen_flags = DL_RTLD_NOW | DL_RTLD_DLOPEN;
    } else {
        snprintf(why, whycap, "no dlopen found in %.400s", libc->path);
        return -1;
    }
    return 0;
}

/* Everything needed before the process is stopped. lib_here: the library to dlopen, as this
 * program sees it (attach, when not mapped yet). */
static int prepare(struct job *j, const char *lib_here, char *why, size_t whycap)
{
    const char *fname = j->attach ? "tlsmeter_attach" : "tlsmeter_detach";
    const struct proc_map *lib;
    struct proc_maps maps;
    struct stat st;
    int rc = -1;

    if (proc_read_maps(j->pid, &maps) != 0) {
        snprintf(why, whycap, "cannot read /proc/%d/maps: %s", (int)j->pid, strerror(errno));
        return -1;
    }
    lib = proc_find_file(&maps, is_tlsmeter);
    j->lib_mapped = lib != NULL;
    if (lib) {
        rc = symbol_in(j->pid, lib, fname, &j->lib_fn, why, whycap);
    } else if (!j->attach) {
        snprintf(why, whycap, "tlsmeter is not loaded in %d: nothing to detach", (int)j->pid);
    } else if (stat(lib_here, &st) == 0 &&
               elf_dynsym(lib_here, fname, &j->lib_value, &j->lib_vaddr0, why, whycap) == 0) {
        j->lib_inode = (unsigned long long)st.st_ino;
        rc = find_dlopen(j, &maps, why, whycap);
    } else if (!why[0]) {
        snprintf(why, whycap, "cannot read %s: %s", lib_here, strerror(errno));
    }
    if (rc == 0 && j->lib_mapped)
        rc = find_dlopen(j, &maps, why, whycap); /* __errno_location */
    proc_free_maps(&maps);
    return rc;
}

/* After dlopen: where the library landed (its inode: dlopen may have resolved a link). */
static int place_library(struct job *j, char *why, size_t whycap)
{
    struct proc_maps maps;
    const struct proc_map *lib = NULL;

    if (proc_read_maps(j->pid, &maps) != 0) {
        snprintf(why, whycap, "cannot read /proc/%d/maps", (int)j->pid);
        return -1;
    }
    for (size_t i = 0; i < maps.n && !lib; i++)
        if (maps.m[i].offset == 0 && maps.m[i].inode == j->lib_inode)
            lib = &maps.m[i];
    if (!lib)
        lib = proc_find_file(&maps, is_tlsmeter);
    if (lib)
        j->lib_fn = lib->start - j->lib_vaddr0 + j->lib_value;
    else
        snprintf(why, whycap, "dlopen succeeded but %s is not in /proc/%d/maps", j->lib_in_target,
                 (int)j->pid);
    proc_free_maps(&maps);
    return lib ? 0 : -1;
}

static int call(struct remote_call *c, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2,
                uint64_t *ret, char *why, size_t whycap)
{
    uint64_t args[3] = {a0, a1, a2};

    return rcall_run(c, fn, args, 3, ret, why, whycap);
}

static int load_library(struct job *j, struct remote_call *c, char *why, size_t whycap)
{
    uint64_t path = rcall_push(c, j->lib_in_target, strlen(j->lib_in_target) + 1);
    uint64_t handle, err;
    char text[400];

    if (!path || call(c, j->dlopen, path, j->dlopen_flags, 0, &handle, why, whycap) != 0)
        return -1;
    if (handle == 0) {
        text[0] = '\0';
        if (j->dlerror && call(c, j->dlerror, 0, 0, 0, &err, why, whycap) == 0 && err)
            rcall_read_string(c->tid, err, text, sizeof(text));
        snprintf(why, whycap, "dlopen(\"%s\") failed: %s", j->lib_in_target,
                 text[0] ? text : "(no dlerror)");
        return -1;
    }
    return place_library(j, why, whycap);
}

static double ms_since(const struct timespec *t0)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return ms_between(t0, &now);
}

/* The library's function with its message buffer (and the settings, for attach). */
static int call_library(struct job *j, struct remote_call *c, char *why, size_t whycap)
{
    static const char zeros[MSG_CAP];
    uint64_t settings = 0, msg, ret;
    struct timespec t0;
    int rc;

    if (j->attach && !(settings = rcall_push(c, j->settings, strlen(j->settings) + 1)))
        return -1;
    if (!(msg = rcall_push(c, zeros, sizeof(zeros))))
        return -1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (j->attach)
        rc = call(c, j->lib_fn, settings, msg, MSG_CAP, &ret, why, whycap);
    else
        rc = call(c, j->lib_fn, msg, MSG_CAP, 0, &ret, why, whycap);
    j->rep->lib_ms = ms_since(&t0);
    if (rc != 0)
        return -1;
    j->rep->lib_called = 1;
    rcall_read_string(c->tid, msg, j->rep->msg, sizeof(j->rep->msg));
    /* tlsmeter_detach's 2: a thread was stopped inside the trace writer; another stop will
     * find it out of there. */
    return (int)(uint32_t)ret == 0 ? 0 : (int)(uint32_t)ret == 2 && !j->attach ? 2 : 1;
}

/* The calls in the chosen thread, errno saved and restored around them. */
static int run_calls(struct job *j, struct threads *ts, struct thread *t, char *why, size_t whycap)
{
    struct remote_call c;
    uint64_t errno_at = 0;
    int32_t saved_errno = 0;
    int rc = -1;

    if (rcall_begin(&c, ts, t, why, whycap) != 0)
        return -1; /* nothing changed yet */
    if (call(&c, j->errno_location, 0, 0, 0, &errno_at, why, whycap) == 0 &&
        proc_mem_read(t->tid, errno_at, &saved_errno, sizeof(saved_errno)) == 0 &&
        (j->lib_mapped || load_library(j, &c, why, whycap) == 0)) {
        if (c.others_released)
            snprintf(why, whycap,
                     "dlopen took over 5 s; the other threads had to run, so "
                     "tlsmeter was loaded but not started: try again");
        else
            rc = call_library(j, &c, why, whycap);
    }
    if (errno_at && !c.lost)
        proc_mem_write(t->tid, errno_at, &saved_errno, sizeof(saved_errno));
    if (c.lost) {
        t->stopped = 0; /* running the call: the kernel detaches it when we exit */
        snprintf(why + strlen(why), whycap - strlen(why),
                 "; THE PROCESS MAY BE WEDGED inside the call, and crash when it returns");
    } else if (rcall_end(&c) != 0) {
        snprintf(why, whycap, "cannot restore thread %d: %s", (int)t->tid, strerror(errno));
        rc = -1;
    }
    return rc;
}

static void pause_ms(long ms)
{
    struct timespec d = {0, ms * 1000000L};

    nanosleep(&d, NULL);
}

static int stopped_run(struct job *j, struct threads *ts, struct thread *t)
{
    char why[sizeof(j->rep->msg)] = "";
    int rc = run_calls(j, ts, t, why, sizeof(why));

    threads_release(ts, 0);
    j->rep->stopped_ms = threads_stopped_ms(ts);
    if (rc < 0)
        snprintf(j->rep->msg, sizeof(j->rep->msg), "%s", why);
    return rc == 0 ? INJECT_OK : rc == 2 ? INJECT_BUSY : INJECT_FAILED;
}

static int with_process_stopped(struct job *j)
{
    char why[sizeof(j->rep->msg)];

    for (int try = 0; try < PICK_TRIES; try++) {
        struct threads ts;
        struct thread *t;
        int rc;

        if (threads_stop(&ts, j->pid, why, sizeof(why)) != 0) {
            int err = errno;

            if (err == EPERM)
                explain_ptrace_eperm(j->pid, why, sizeof(why));
            snprintf(j->rep->msg, sizeof(j->rep->msg), "%s", why);
            threads_free(&ts);
            proc_mem_close();
            return err == EPERM ? INJECT_REFUSED : INJECT_FAILED;
        }
        threads_read_regs(&ts);
        syscalls_rewind_eintr(&ts);
        t = syscalls_pick_thread(&ts);
        if (getenv("TLSM_ATTACH_DEBUG"))
            syscalls_describe(&ts, t);
        if (t) {
            rc = stopped_run(j, &ts, t);
            threads_free(&ts);
            proc_mem_close();
            if (rc != INJECT_BUSY)
                return rc;
            pause_ms(PICK_PAUSE_MS);
            continue;
        }
        threads_release(&ts, 0);
        threads_free(&ts);
        proc_mem_close();
        pause_ms(PICK_PAUSE_MS);
    }
    snprintf(j->rep->msg, sizeof(j->rep->msg),
             "no thread of %d waited in a system call where loading tlsmeter is safe; try again "
             "when it is idle",
             (int)j->pid);
    return INJECT_FAILED;
}

static int run_job(struct job *j, const char *lib_here)
{
    char why[sizeof(j->rep->msg)] = "";

    if (prepare(j, lib_here, why, sizeof(why)) != 0) {
        snprintf(j->rep->msg, sizeof(j->rep->msg), "%s", why);
        return INJECT_REFUSED;
    }
    return with_process_stopped(j);
}

int inject_attach(pid_t pid, const char *lib_in_target, const char *lib_here, const char *settings,
                  struct inject_report *rep)
{
    struct job j = {
        .pid = pid, .attach = 1, .lib_in_target = lib_in_target, .settings = settings, .rep = rep};

    memset(rep, 0, sizeof(*rep));
    return run_job(&j, lib_here);
}

int inject_detach(pid_t pid, struct inject_report *rep)
{
    struct job j = {.pid = pid, .attach = 0, .rep = rep};

    memset(rep, 0, sizeof(*rep));
    return run_job(&j, NULL);
}

int inject_lib_mapped(pid_t pid)
{
    struct proc_maps maps;
    int mapped;

    if (proc_read_maps(pid, &maps) != 0)
        return -1;
    mapped = proc_find_file(&maps, is_tlsmeter) != NULL;
    proc_free_maps(&maps);
    return mapped;
}
