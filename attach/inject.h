/* inject.h: load libtlsmeter.so into a running process and call its tlsmeter_attach, or call
 * its tlsmeter_detach, each with every thread of the process stopped for the span. */
#ifndef TLSM_ATTACH_INJECT_H
#define TLSM_ATTACH_INJECT_H

#include <stddef.h>
#include <sys/types.h>

/* Exit codes: done, the target or the library refused / failed, could not start. */
/* INJECT_BUSY (internal): the library asked to be called again at another stop. */
enum { INJECT_OK = 0, INJECT_FAILED = 1, INJECT_REFUSED = 2, INJECT_BUSY = 3 };

struct inject_report {
    double stopped_ms; /* first PTRACE_INTERRUPT to the last thread released */
    double lib_ms;     /* the library's own call (tlsmeter_attach / tlsmeter_detach) */
    int lib_called;    /* the library function ran (msg is its answer) */
    char msg[512];     /* the library's message, or why it failed */
};

/* lib_in_target: the path the target's dlopen gets; lib_here: the same file as seen from here
 * (its symbols are read before the process is stopped). */
int inject_attach(pid_t pid, const char *lib_in_target, const char *lib_here, const char *settings,
                  struct inject_report *rep);
int inject_detach(pid_t pid, struct inject_report *rep);
/* Whether a libtlsmeter.so is mapped in pid: 1 yes, 0 no, -1 cannot tell. */
int inject_lib_mapped(pid_t pid);

#endif
