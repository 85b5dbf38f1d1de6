/* check.h: the refusals checked before a process is touched (nothing is written to it, it is
 * never stopped): each says in one sentence why tlsmeter will not attach. */
#ifndef TLSM_ATTACH_CHECK_H
#define TLSM_ATTACH_CHECK_H

#include <stddef.h>
#include <sys/types.h>

/* 0 when pid can be attached (comm gets its name, ossl a word on its OpenSSL), else -1 with
 * the sentence in why. */
int check_target(pid_t pid, char *comm, size_t commcap, char *ossl, size_t osslcap, char *why,
                 size_t whycap);
/* Why PTRACE_SEIZE of pid failed with EPERM, as far as we can tell. */
void explain_ptrace_eperm(pid_t pid, char *why, size_t whycap);
/* "NAME" or "uid N" */
const char *user_name(unsigned uid, char *buf, size_t cap);

#endif
