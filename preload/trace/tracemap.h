/* tracemap.h: the trace file as shared memory: threads copy their lines into chunks of a
 * MAP_SHARED mapping, so what they wrote is in the page cache (and the file) the moment
 * the copy ends, even when the process dies by SIGKILL a microsecond later. */
#ifndef TLSM_TRACEMAP_H
#define TLSM_TRACEMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of file a thread reserves and maps at a time (a multiple of the page size), when
 * RLIMIT_AS is unlimited; under it a chunk is at most a 64th of the address space left. */
size_t tlsm_tmap_chunk_size(void);
/* Address space left under RLIMIT_AS when the last chunk was sized (0: none or no limit). */
uint64_t tlsm_tmap_as_left(void);
/* RLIMIT_AS leaves room for chunks too small to be worth it (< 64 KiB): use write(2). */
bool tlsm_tmap_tight(void);
/* Start mapped mode on fd (a regular file of ours, opened O_RDWR, empty): reserves the first
 * chunk. False (errno set) when the filesystem cannot reserve blocks: write(2) mode then. */
bool tlsm_tmap_start(int fd);
/* Reserve the next chunk of the file, allocate its blocks and map it: NULL (errno set:
 * ENOSPC, EFBIG, ENOMEM when RLIMIT_AS is near, ...) when the file cannot grow. *off is its
 * file offset, *size its length. */
char *tlsm_tmap_chunk(int fd, uint64_t *off, size_t *size);
/* A chunk's data ends at off (its bytes after it stay zero): compaction starts there. */
void tlsm_tmap_gap(uint64_t off);
void tlsm_tmap_unmap(char *p, size_t size);
/* Exit: squeeze the zeroed space out of the file, append the end line, cut the file to its
 * data. Only when no chunk is written any more. False (errno set) on an I/O error. */
bool tlsm_tmap_finish(int fd, const char *end, size_t n);
/* The same for trace format 2 (end: a chunk of its own): chunks lose their unused ends. */
bool tlsm_tmap_finish2(int fd, const char *end, size_t n);
/* One line at the cursor with pwrite(2), no mapping: warnings (from anywhere, no lock),
 * an end line when not every writer could be stopped, and a forked child that could not
 * create its own trace writing into its parent's file (the cursor page is shared). */
bool tlsm_tmap_append(int fd, const char *line, size_t n);
/* Forked child: forget the parent's cursor (it is the parent's file's). */
void tlsm_tmap_detach(void);
bool tlsm_tmap_active(void);

#endif
