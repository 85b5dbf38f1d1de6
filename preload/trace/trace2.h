/* trace2.h: trace format 2 (docs/trace-format.md): the bytes of the binary trace. Chunks
 * of a thread's stream, fixed records for the hot events from their staged form (json.h),
 * every other event as a length-prefixed JSON entry. Pure encoding: where the bytes go
 * (mapped chunk, write(2) buffer) is trace.c's business. */
#ifndef TLSM_TRACE2_H
#define TLSM_TRACE2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/trace2.def" /* shared with the analyzer */

/* Largest entry the encoder writes for one staged event: its string entries, a time entry
 * and the record with its tail. */
#define TLSM_B2_ENTRY_MAX 4096
/* Longest JSON tail of a fixed record (the rest goes out as a JSON entry). */
#define TLSM_B2_TAIL_MAX 1024

/* One chunk's encoder state: strings written in it so far, its time base. Reset with every
 * new chunk, so each chunk decodes on its own (a killed process's chunks too). */
struct tlsm_b2_stream {
    uint32_t tid;
    uint8_t nstr;
    int64_t base_t;
    const char *cache[64]; /* two slots a string (trace2_fixed.h): cache_id[i] is cache[i]'s id */
    uint8_t cache_id[64];
    const char *strs[256]; /* by id (1-based) */
};

/* The staged form json.h leaves for a hot event (rec, read, write), not JSON text. */
static inline bool tlsm_b2_staged(const char *line, size_t n)
{
    return n && (unsigned char)line[0] >= 1 && (unsigned char)line[0] <= 3;
}

/* The 16-byte file header, at offset 0. */
void tlsm_b2_file_header(char *out);
/* Start a chunk of size bytes at p (8-aligned, size a multiple of 8): its header, a fresh
 * stream state. Returns the header's size (entries follow it). */
size_t tlsm_b2_chunk_start(struct tlsm_b2_stream *s, char *p, size_t size, uint32_t tid);
/* The chunk's entries end at used bytes after its header: the commit point a reader trusts
 * (stored after the entry's bytes, so a process killed mid-copy leaves no torn entry). */
void tlsm_b2_commit(char *chunk, size_t used);
/* Rewrite a chunk header's size (write(2) chunks and the exit squeeze). */
void tlsm_b2_set_size(char *chunk, size_t size);
/* One event as the chunk's entries, into out (TLSM_B2_ENTRY_MAX bytes + the line's length):
 * a staged hot event as a fixed record (with the string and time entries it needs first),
 * or, when a value does not fit its field, as JSON; a JSON text line as a JSON entry.
 * Returns the bytes, 0 when it does not fit out. */
size_t tlsm_b2_encode(struct tlsm_b2_stream *s, const char *line, size_t n, char *out, size_t cap);
/* A JSON text line (with or without its '\n') as a chunk of its own: header, one JSON entry,
 * zero padding to a multiple of 8. Returns the bytes, 0 when it does not fit cap. */
size_t tlsm_b2_mini_chunk(char *out, size_t cap, const char *line, size_t n, uint32_t tid);

#endif
