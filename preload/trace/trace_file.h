/* trace_file.h: naming, creating and write(2)-ing the trace file. */
#ifndef TLSM_TRACE_FILE_H
#define TLSM_TRACE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Expand TLSMETER_OUT: %p, %t (unix_t0 in seconds), %%; a forked child without %p in a file
 * template gets ".PID" appended (a directory is left as is: the child's file goes inside
 * it). False when it does not fit in cap. */
bool tlsm_trace_path(char *out, size_t cap, bool child, uint64_t unix_t0);
/* Create p 0600 (O_EXCL|O_NOFOLLOW, O_RDWR for the mapping), trying p.1 .. p.9 on a clash,
 * or open the FIFO/device it names; p a directory: p/tlsmeter.PID.jsonl. p gets the name
 * used. -1 with errno on failure. */
int tlsm_trace_create(char *p, size_t cap, bool *is_pipe);
/* All of p[0..n) with write(2); for a FIFO, SIGPIPE blocked on this thread for the write. */
bool tlsm_trace_write(int fd, bool is_pipe, const char *p, size_t n);

/* Descriptors a program keeps free for itself: with fewer, tlsmeter opens no trace. */
#define TLSM_FD_RESERVE 16
/* Room under RLIMIT_NOFILE for the trace's descriptor and TLSM_FD_RESERVE more; else false
 * and why. */
bool tlsm_trace_fd_room(char *why, size_t cap);

#endif
