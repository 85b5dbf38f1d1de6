/* syscalls.h: which system calls a stopped thread may wait in for us to run the loader in it,
 * and which ones the stop broke with EINTR (to be run again). */
#ifndef TLSM_ATTACH_SYSCALLS_H
#define TLSM_ATTACH_SYSCALLS_H

#include "threads.h"

/* Rewinds, in every thread stopped by our interrupt, a system call that the stop made return
 * -EINTR where the program would not have seen one. */
void syscalls_rewind_eintr(struct threads *ts);
/* A thread waiting in a blocking system call where it holds no library lock, the main thread
 * when it does; NULL when none does. */
struct thread *syscalls_pick_thread(struct threads *ts);

/* One line per thread on stderr: its stop and system call (TLSM_ATTACH_DEBUG). */
void syscalls_describe(const struct threads *ts, const struct thread *chosen);

#endif
