/* trace_detach.c: the trace of an attach ends at the detach, not at exit. The process goes on
 * without tlsmeter, so nothing of the file may stay: its end line is written, its chunks
 * unmapped and its descriptor closed, and a later attach starts a new file. Called with every
 * other thread of the process stopped by the tracer (preload/hooks/attach.c). */
#include "trace/trace.h"
#include "trace/trace_int.h"
#include "trace/tracemap.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

bool tlsm_trace_attached;

const char *tlsm_trace_file(void)
{
    return tlsm_tr_path;
}

void tlsm_trace_disallow(void)
{
    atomic_store(&tlsm_tr_allowed, false);
}

/* Is any thread inside the trace writer (a buffer or the file lock held)? A thread stopped
 * there would go on writing into a descriptor that is closed, or the program's by then. */
bool tlsm_trace_writers_busy(void)
{
    if (pthread_mutex_trylock(&tlsm_tr_open_lock))
        return true;
    bool busy = pthread_mutex_trylock(&tlsm_tr_bufs_lock) != 0;
    for (struct tlsm_tbuf *b = busy ? NULL : tlsm_tr_bufs; b; b = b->next)
        busy |= atomic_load(&b->lock) != 0;
    if (!busy)
        pthread_mutex_unlock(&tlsm_tr_bufs_lock);
    pthread_mutex_unlock(&tlsm_tr_open_lock);
    return busy;
}

void tlsm_trace_detach(void)
{
    tlsm_trace_finish(); /* every buffer out, then the end line; the chunks closed */
    pthread_mutex_lock(&tlsm_tr_open_lock);
    pthread_mutex_lock(&tlsm_tr_bufs_lock);
    for (struct tlsm_tbuf *b = tlsm_tr_bufs; b; b = b->next) {
        if (tlsm_tr_mapped)
            tlsm_tmap_unmap(b->data, b->cap), b->data = NULL, b->cap = 0;
        b->used = b->off = b->hdr = 0;
        b->pending = b->written = b->dropped = 0;
        memset(&b->s2, 0, sizeof(b->s2));
    }
    pthread_mutex_unlock(&tlsm_tr_bufs_lock);
    atomic_store(&tlsm_tr_retired_written, 0);
    atomic_store(&tlsm_tr_retired_dropped, 0);
    atomic_store(&tlsm_tr_dropped_bytes, 0);
    atomic_store(&tlsm_tr_warnings, 0);
    atomic_store(&tlsm_tr_direct_lines, 0);
    atomic_store(&tlsm_tr_nearly_warn, 0);
    if (tlsm_tr_fd >= 0)
        close(tlsm_tr_fd);
    tlsm_tr_fd = -1;
    tlsm_tr_mapped = false;
    if (tlsm_tr_sh)
        munmap(tlsm_tr_sh, sizeof(*tlsm_tr_sh));
    tlsm_tr_sh = NULL;
    tlsm_tmap_detach();
    tlsm_tr_quiet_reason[0] = 0;
    atomic_store(&tlsm_tr_state, ST_UNOPENED);
    pthread_mutex_unlock(&tlsm_tr_open_lock);
}

/* A child forked while attached gets no trace of its own: its copy of the parent's file is let
 * go (chunks unmapped, descriptor closed) and nothing is written. The parent's locks, held
 * across the fork by its prepare handler, are new ones here. */
void tlsm_trace_child_detach(void)
{
    pthread_mutex_init(&tlsm_tr_open_lock, NULL);
    pthread_mutex_init(&tlsm_tr_bufs_lock, NULL);
    atomic_store(&tlsm_tr_allowed, false);
    atomic_store(&tlsm_tr_state, ST_FINISHED);
    for (struct tlsm_tbuf *b = tlsm_tr_bufs; b; b = b->next) {
        if (tlsm_tr_mapped)
            tlsm_tmap_unmap(b->data, b->cap), b->data = NULL, b->cap = 0;
        atomic_store(&b->lock, 0);
    }
    if (tlsm_tr_fd >= 0)
        close(tlsm_tr_fd);
    tlsm_tr_fd = -1;
    if (tlsm_tr_sh)
        munmap(tlsm_tr_sh, sizeof(*tlsm_tr_sh));
    tlsm_tr_sh = NULL;
    tlsm_tmap_detach();
}
