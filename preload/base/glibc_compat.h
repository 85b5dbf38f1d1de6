/* glibc_compat.h: what tlsmeter uses from glibc newer than 2.31, for builds against an older
 * glibc (make dist: Debian 11's 2.31). Include it after <dlfcn.h>/<link.h>, instead of
 * <sys/rseq.h>.
 *
 * Built against glibc >= 2.35 this header is only those headers: the library then needs
 * that glibc, and the real functions are called directly. Built against an older glibc, the
 * library links no symbol version past the build's glibc and picks at run time:
 *   _dl_find_object (2.35)   the real one when the running glibc has it (dlvsym), else a
 *                            lookup through dl_iterate_phdr (tlsm_compat_find_object);
 *   __rseq_size/__rseq_offset (2.35)   the running glibc's when it has them, else 0: glibc
 *                            did not register rseq, so cputime's rseq method reports "not
 *                            registered by glibc" and falls back (tlsmeter registers none
 *                            of its own: a thread has one rseq area, and the program or a
 *                            later library may want it);
 *   strerrorname_np (2.32)   the real one when present, else a table of the errno names
 *                            tlsmeter's own messages meet;
 *   gettid (2.30)            the system call (once per thread), so a dist build needs no
 *                            symbol past glibc 2.28 (Debian 10, RHEL 8). */
#ifndef TLSM_GLIBC_COMPAT_H
#define TLSM_GLIBC_COMPAT_H

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <string.h>

#if __GLIBC_PREREQ(2, 35)
#include <sys/rseq.h>
#else
#define TLSM_GLIBC_COMPAT 1
#include <linux/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>
#define gettid() ((pid_t)syscall(SYS_gettid))

/* The kernel checks these 4 bytes before an rseq abort address; glibc's values. */
#if defined(__x86_64__) || defined(__i386__)
#define RSEQ_SIG 0x53053053
#elif defined(__aarch64__)
#define RSEQ_SIG 0xd428bc00
#else
#error "RSEQ_SIG: unknown architecture"
#endif

/* glibc 2.35's layout (dlfcn.h), so the real function can fill it when it exists. */
struct dl_find_object {
    __extension__ unsigned long long int dlfo_flags;
    void *dlfo_map_start;
    void *dlfo_map_end;
    struct link_map *dlfo_link_map;
    void *dlfo_eh_frame;
    __extension__ unsigned long long int __dflo_reserved[7];
};

int tlsm_compat_find_object(void *addr, struct dl_find_object *out);
int tlsm_compat_find_object_walk(void *addr, struct dl_find_object *out); /* the fallback */
unsigned int tlsm_compat_rseq_size(void);
ptrdiff_t tlsm_compat_rseq_offset(void);
const char *tlsm_compat_strerrorname(int err);

#define _dl_find_object tlsm_compat_find_object
#define __rseq_size     tlsm_compat_rseq_size()
#define __rseq_offset   tlsm_compat_rseq_offset()
#define strerrorname_np tlsm_compat_strerrorname
#endif

#endif
