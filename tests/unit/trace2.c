/* trace2.c (unit): the format-2 encoder (preload/trace/trace2.c) under the JSON builder
 * (preload/base/json.c): every event is built twice with the same calls, once staged and
 * encoded into a chunk, once as format-1 text. Writes DIR/u.trace (format 2) and
 * DIR/u.expect.jsonl (format 1); tests/cases/unit-preload.sh checks that tlsmeter-analyze
 * --jsonl of the first gives the second, and this program checks which entry each event
 * became: a fixed record, or a JSON entry when a value does not fit its field. The direct
 * write encoder (trace2_fixed.h tlsm_b2_write_io, core/conn.c's write events) gives the bytes
 * the staged path gives for the same event. */
#include "base/json.h"
#include "trace/trace2.h"
#include "trace/trace2_fixed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char chunk[1 << 16];
static size_t used;
static struct tlsm_b2_stream st;
static FILE *expect;
static int failed;

static char long_cipher[300]; /* 294 bytes (set in main): longer than a string entry holds */

/* build(j): the builder calls of one event. */
typedef void (*build_fn)(struct tlsm_json *j);

/* One event both ways; want is the entry type it must become (1..3 fixed, 10 JSON). */
static void event(const char *name, const char *ev, build_fn build, int want)
{
    char line[1024], text[1024];
    struct tlsm_json j;
    tlsm_json_stage_hot = true;
    tlsm_json_begin(&j, line, sizeof(line), ev);
    build(&j);
    size_t n = tlsm_json_end(&j, line);
    size_t at = used, k = n ? tlsm_b2_encode(&st, line, n, chunk + used, sizeof(chunk) - used) : 0;
    used += k;
    /* the record itself follows any string and time entries it needed */
    size_t p = at;
    while (p < used && (chunk[p] == TLSM_B2_E_STR || chunk[p] == TLSM_B2_E_TIME))
        p += chunk[p] == TLSM_B2_E_STR ? 3 + (unsigned char)chunk[p + 2] : 9;
    int got = p < used ? chunk[p] : -1;
    printf("%s unit trace2 %s: %s entry (type %d, want %d, %zu bytes)\n",
           got == want ? "PASS" : "FAIL", name, got == 10 ? "JSON" : "fixed", got, want, k);
    failed |= got != want;
    tlsm_json_stage_hot = false;
    tlsm_json_begin(&j, text, sizeof(text), ev);
    build(&j);
    n = tlsm_json_end(&j, text);
    fwrite(text, 1, n, expect);
}

static void rec_full(struct tlsm_json *j)
{
    tlsm_json_int(j, "t", 1000);
    tlsm_json_int(j, "tid", 77);
    tlsm_json_int(j, "conn", 3);
    tlsm_json_int(j, "write", 9);
    tlsm_json_safe(j, "dir", "out");
    tlsm_json_safe(j, "tls", "1.3");
    tlsm_json_int(j, "type", 23);
    tlsm_json_int(j, "len", 16401);
    tlsm_json_int(j, "pt", 16384);
    tlsm_json_safe(j, "cipher", "AES-128-GCM");
    tlsm_json_int(j, "crypto_ns", 4100);
    tlsm_json_int(j, "preempt", 2);
    tlsm_json_int(j, "wall_ns", 9000);
    tlsm_json_int(j, "gcm_ns", 0);
    tlsm_json_int(j, "gcm_bytes", 0);
    tlsm_json_safe(j, "gcm_fn", "none");
    tlsm_json_safe(j, "path", "hw");
    tlsm_json_bool(j, "tag_ok", false);
    tlsm_json_int(j, "lib", 2);
    tlsm_json_int(j, "impl", 1);
    tlsm_json_safe(j, "verify", "same");
    tlsm_json_int(j, "stack", 12);
}

static void read_tail(struct tlsm_json *j)
{
    tlsm_json_int(j, "t", 990); /* before the record: a negative delta */
    tlsm_json_int(j, "tid", 77);
    tlsm_json_int(j, "conn", 3);
    tlsm_json_int(j, "id", 41);
    tlsm_json_safe(j, "fn", "SSL_read_ex");
    tlsm_json_int(j, "want", 16384);
    tlsm_json_int(j, "got", -1);
    tlsm_json_int(j, "err", 5);
    tlsm_json_int(j, "ns", 12000);
    tlsm_json_int(j, "recs", 1);
    tlsm_json_int(j, "crypto_ns", 4100);
    tlsm_json_int(j, "stack", 12);                      /* read.stack: no field, the tail */
    tlsm_json_str(j, "site", "libfoo.so+0x1234 \"x\""); /* a key no list has, escaped */
}

static void write_ev(struct tlsm_json *j)
{
    tlsm_json_int(j, "t", 5000000000LL); /* past an i32 delta: a time entry first */
    tlsm_json_int(j, "tid", 77);
    tlsm_json_int(j, "conn", 3);
    tlsm_json_int(j, "id", 9);
    tlsm_json_int(j, "asked", 100);
    tlsm_json_int(j, "written", 100);
    tlsm_json_int(j, "recs", 1);
    tlsm_json_int(j, "crypto_ns", 300);
}

static void read_huge(struct tlsm_json *j)
{
    tlsm_json_int(j, "t", 5000000100LL);
    tlsm_json_int(j, "tid", 77);
    tlsm_json_int(j, "id", 42);
    tlsm_json_safe(j, "fn", "SSL_read_ex");
    tlsm_json_int(j, "want", 6000000000LL); /* > i32 */
    tlsm_json_int(j, "got", 6000000000LL);
}

static void rec_other_tid(struct tlsm_json *j)
{
    tlsm_json_int(j, "t", 5000000200LL);
    tlsm_json_int(j, "tid", 78); /* not the chunk's thread */
    tlsm_json_int(j, "len", 100);
    tlsm_json_int(j, "crypto_ns", 50);
}

static void rec_long_string(struct tlsm_json *j)
{
    tlsm_json_int(j, "t", 5000000300LL);
    tlsm_json_int(j, "tid", 77);
    tlsm_json_int(j, "len", 100);
    tlsm_json_int(j, "crypto_ns", 50);
    tlsm_json_safe(j, "cipher", long_cipher);
}

static void read_id_slot_in_rec(struct tlsm_json *j)
{
    tlsm_json_int(j, "t", 5000000400LL);
    tlsm_json_int(j, "tid", 77);
    tlsm_json_int(j, "len", 100);
    tlsm_json_int(j, "crypto_ns", 50);
    tlsm_json_int(j, "asked", 3); /* a slot key rec has no field for: its tail */
}

static void conn_ev(struct tlsm_json *j)
{
    tlsm_json_int(j, "t", 5000000500LL);
    tlsm_json_safe(j, "phase", "open");
    tlsm_json_raw(j, "hs", "{\"ns\":5,\"parts\":{\"cert_parse\":{\"ns\":2,\"calls\":1}}}");
}

/* A write event staged (tlsm_b2_encode of its JSON text) and through tlsm_b2_write_io, each
 * into a fresh chunk of the same thread: the same bytes. */
static void write_direct(const char *name, int64_t t, int64_t asked, int64_t written, int err,
                         int preempt, uint64_t ns, const char *fn)
{
    static char ca[4096], cb[4096];
    struct tlsm_b2_stream a, b;
    size_t na = tlsm_b2_chunk_start(&a, ca, sizeof(ca), 77);
    size_t nb = tlsm_b2_chunk_start(&b, cb, sizeof(cb), 77);
    char line[1024];
    struct tlsm_json j;
    tlsm_json_stage_hot = true;
    tlsm_json_begin(&j, line, sizeof(line), "write");
    tlsm_json_int(&j, "t", t);
    tlsm_json_int(&j, "tid", 77);
    tlsm_json_int(&j, "conn", 3);
    tlsm_json_int(&j, "id", 12);
    tlsm_json_safe(&j, "fn", fn);
    tlsm_json_int(&j, "asked", asked);
    tlsm_json_int(&j, "written", written);
    if (err >= 0)
        tlsm_json_int(&j, "err", err);
    tlsm_json_int(&j, "ns", (int64_t)ns);
    tlsm_json_int(&j, "recs", 1);
    tlsm_json_int(&j, "crypto_ns", 300);
    if (preempt)
        tlsm_json_int(&j, "preempt", preempt);
    size_t n = tlsm_json_end(&j, line);
    tlsm_json_stage_hot = false;
    size_t ka = n ? tlsm_b2_encode(&a, line, n, ca + na, sizeof(ca) - na) : 0;
#define H(k) TLSM_B2_HAS(write, k)
    struct tlsm_b2_write v = {
        .have = H(t) | H(tid) | H(conn) | H(id) | H(asked) | H(written) | (err >= 0 ? H(err) : 0) |
                H(recs) | H(crypto_ns) | (preempt ? H(preempt) : 0),
        .t = t,
        .tid = 77,
        .conn = 3,
        .id = 12,
        .asked = asked,
        .written = written,
        .err = err >= 0 ? err : 0, /* absent members are 0 */
        .recs = 1,
        .crypto_ns = 300,
        .preempt = preempt,
    };
#undef H
    size_t kb = tlsm_b2_write_io(&b, cb + nb, cb + sizeof(cb), &v, ns, fn);
    int same = ka && ka == kb && na == nb && !memcmp(ca, cb, na + ka);
    size_t at = 0; /* the first byte that differs */
    while (!same && at + 1 < na + ka && at + 1 < nb + kb && ca[at] == cb[at])
        at++;
    printf("%s unit trace2 direct write = staged (%s): %zu and %zu bytes", same ? "PASS" : "FAIL",
           name, ka, kb);
    if (!same)
        printf(", byte %zu: %02x staged, %02x direct", at, (unsigned char)ca[at],
               (unsigned char)cb[at]);
    printf("\n");
    failed |= !same;
}

int main(int argc, char **argv)
{
    char path[4096];
    if (argc != 2)
        return fprintf(stderr, "usage: trace2 DIR\n"), 2;
    snprintf(path, sizeof(path), "%s/u.expect.jsonl", argv[1]);
    expect = fopen(path, "w");
    if (!expect)
        return perror(path), 1;
    memcpy(long_cipher, "AES-", 4);
    memset(long_cipher + 4, 'Z', 290);
    used = tlsm_b2_chunk_start(&st, chunk, sizeof(chunk), 77);
    const char *hdr = "{\"ev\":\"header\",\"format\":2,\"tool\":\"tlsmeter\",\"pid\":1}\n";
    used += tlsm_b2_encode(&st, hdr, strlen(hdr), chunk + used, sizeof(chunk) - used);
    fputs("{\"ev\":\"header\",\"format\":1,\"tool\":\"tlsmeter\",\"pid\":1}\n", expect);
    event("rec, every field", "rec", rec_full, 1);
    event("read, a tail", "read", read_tail, 2);
    event("write, a time entry", "write", write_ev, 3);
    event("read, want past i32", "read", read_huge, 10);
    event("rec, another tid", "rec", rec_other_tid, 10);
    event("rec, a 294-byte string", "rec", rec_long_string, 10);
    event("rec, a slot key of another kind (the tail)", "rec", read_id_slot_in_rec, 1);
    event("rec, after the JSON ones", "rec", rec_full, 1);
    event("conn, nested JSON", "conn", conn_ev, 10);
    write_direct("SSL_write", 1000, 100, 100, -1, 0, 1234, "SSL_write");
    write_direct("failed SSL_write_ex, err, preempt, a time entry", 5000000000LL, 16384, 0, 3, 2,
                 987654321, "SSL_write_ex");
    size_t size = (used + 7) / 8 * 8;
    tlsm_b2_set_size(chunk, size);
    tlsm_b2_commit(chunk, used - TLSM_B2_CHUNK_HDR);
    snprintf(path, sizeof(path), "%s/u.trace", argv[1]);
    FILE *f = fopen(path, "w");
    char fh[TLSM_B2_FILE_HDR];
    tlsm_b2_file_header(fh);
    if (!f || fwrite(fh, 1, sizeof(fh), f) != sizeof(fh) || fwrite(chunk, 1, size, f) != size ||
        fclose(f) || fclose(expect))
        return perror(path), 1;
    return failed;
}
