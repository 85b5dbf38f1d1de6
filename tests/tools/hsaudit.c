/* hsaudit.c: an LD_AUDIT recorder of every PLT call the program, libssl and libcrypto make, with depth and thread CPU ns (how docs/handshake.md's call sequences were recorded). */
/* Build and use (not part of make; a one-off instrument):
 *   gcc -shared -fPIC -O1 -o /tmp/hsaudit.so tests/tools/hsaudit.c
 *   HSA_OUT=/tmp/calls LD_AUDIT=/tmp/hsaudit.so openssl s_client ...   -> /tmp/calls.PID
 *   python3 tests/tools/hsaudit_sum.py /tmp/calls.PID 2
 * Each line: indent (call depth), CALLER>CALLEE object cookies (0 program, 1 libssl,
 * 2 libcrypto), the symbol and the thread's CPU ns at entry; "<symbol ns" at return.
 * la_pltenter sees a call only when it goes through a PLT slot: exactly what an LD_PRELOAD
 * can interpose. Calls inside one library that do not (static functions, -Bsymbolic) are
 * invisible to both. x86_64 only (la_x86_64_gnu_pltenter). */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static FILE *out;
static __thread int depth;

static long long cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

unsigned la_version(unsigned v)
{
    const char *p = getenv("HSA_OUT");
    char b[512];
    snprintf(b, sizeof(b), "%s.%d", p ? p : "/tmp/hsaudit", (int)getpid());
    out = fopen(b, "w");
    return v;
}

/* Cookie 0 the program, 1 libssl, 2 libcrypto; other objects are not audited (3). */
unsigned la_objopen(struct link_map *m, Lmid_t lmid, uintptr_t *cookie)
{
    const char *n = m->l_name;
    (void)lmid;
    *cookie = strstr(n, "libssl") ? 1 : strstr(n, "libcrypto") ? 2 : !*n ? 0 : 3;
    return *cookie != 3 ? LA_FLG_BINDTO | LA_FLG_BINDFROM : 0;
}

uintptr_t la_symbind64(Elf64_Sym *sym, unsigned idx, uintptr_t *refcook, uintptr_t *defcook,
                       unsigned *flags, const char *name)
{
    (void)idx, (void)refcook, (void)defcook, (void)flags, (void)name;
    return sym->st_value;
}

Elf64_Addr la_x86_64_gnu_pltenter(Elf64_Sym *sym, unsigned idx, uintptr_t *refcook,
                                  uintptr_t *defcook, La_x86_64_regs *regs, unsigned *flags,
                                  const char *name, long *framesize)
{
    (void)idx, (void)regs, (void)flags;
    if (out && *defcook != 3)
        fprintf(out, "%*s%lu>%lu %s %lld\n", depth, "", (unsigned long)*refcook,
                (unsigned long)*defcook, name, cpu());
    depth++;
    *framesize = 512; /* ask for la_pltexit: copies this much of the caller's stack */
    return sym->st_value;
}

unsigned la_x86_64_gnu_pltexit(Elf64_Sym *sym, unsigned idx, uintptr_t *refcook,
                               uintptr_t *defcook, const La_x86_64_regs *in,
                               La_x86_64_retval *outregs, const char *name)
{
    (void)sym, (void)idx, (void)refcook, (void)in, (void)outregs;
    depth--;
    if (out && *defcook != 3)
        fprintf(out, "%*s<%s %lld\n", depth, "", name, cpu());
    return 0;
}
