/* trace_header.h: the header line's fields (trace_header.c), for trace.c. */
#ifndef TLSM_TRACE_HEADER_H
#define TLSM_TRACE_HEADER_H

#include "base/json.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct tlsm_tr_hdr {
    uint64_t unix_t0, mono_t0, since_start_ns; /* the trace's time origins */
    pid_t fork_of;                             /* parent of a forked child, else 0 */
    bool mapped;                               /* io: mmap or write */
    const char *io_why;                        /* why write(2), or "" */
};

void tlsm_tr_header_fields(struct tlsm_json *j, const struct tlsm_tr_hdr *h);

#endif
