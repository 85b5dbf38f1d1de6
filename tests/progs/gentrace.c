/* gentrace: writes a large synthetic trace for scripts/bench-analyzer, in format 2 (the
 * preload's own encoder, preload/trace2.c, in per-thread chunks as the writer makes them) or
 * in format 1 (the same JSON builder in text mode): a download over 8 connections and 4
 * threads, one rec and one read per 16 KiB record, EVENTS events in all. The same events
 * in both formats, so their reports must agree.
 *   gentrace [--jsonl] EVENTS FILE   (FILE "-": stdout) */
#include "../../preload/base/json.c"
#include "../../preload/trace/trace2.c"

#include <stdio.h>
#include <stdlib.h>

#define NT    4
#define CHUNK (256 * 1024)

static FILE *out;
static bool jsonl;
static char chunks[NT][CHUNK];
static size_t used[NT];
static struct tlsm_b2_stream streams[NT];

static void flush_chunk(int i)
{
    if (used[i] <= TLSM_B2_CHUNK_HDR)
        return;
    size_t size = (used[i] + 7) / 8 * 8;
    memset(chunks[i] + used[i], 0, size - used[i]);
    tlsm_b2_set_size(chunks[i], size);
    tlsm_b2_commit(chunks[i], used[i] - TLSM_B2_CHUNK_HDR);
    fwrite(chunks[i], 1, size, out);
    used[i] = 0;
}

/* One event of thread i (JSON line or staged hot event) into its chunk, or as text. */
static void emit(int i, int tid, const char *line, size_t n)
{
    if (jsonl) {
        fwrite(line, 1, n, out);
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        if (!used[i])
            used[i] = tlsm_b2_chunk_start(&streams[i], chunks[i], CHUNK, (uint32_t)tid);
        size_t k = tlsm_b2_encode(&streams[i], line, n, chunks[i] + used[i], CHUNK - used[i]);
        if (k) {
            used[i] += k;
            return;
        }
        flush_chunk(i);
    }
    fprintf(stderr, "gentrace: an event larger than a chunk\n");
    exit(1);
}

static void rare(const char *text)
{
    emit(0, 100, text, strlen(text));
}

int main(int argc, char **argv)
{
    int a = 1;
    if (a < argc && !strcmp(argv[a], "--jsonl"))
        jsonl = true, a++;
    if (argc - a != 2) {
        fprintf(stderr, "usage: gentrace [--jsonl] EVENTS FILE\n");
        return 2;
    }
    long long n = atoll(argv[a]);
    out = strcmp(argv[a + 1], "-") ? fopen(argv[a + 1], "w") : stdout;
    if (!out)
        return perror(argv[a + 1]), 1;
    tlsm_json_stage_hot = !jsonl;
    if (!jsonl) {
        char fh[TLSM_B2_FILE_HDR];
        tlsm_b2_file_header(fh);
        fwrite(fh, 1, sizeof(fh), out);
    }
    char hdr[600];
    snprintf(
        hdr, sizeof(hdr),
        "{\"ev\":\"header\",\"format\":%d,\"tool\":\"tlsmeter\",\"version\":\"0.1.0\",\"pid\":4242,"
        "\"comm\":\"bench\",\"exe\":\"/usr/bin/bench\",\"start_unix_ns\":1764489600000000000,"
        "\"clock\":\"tsc\",\"arch\":\"x86_64\",\"cpu\":\"bench\",\"cpu_crypto\":[\"aes\","
        "\"pclmulqdq\"],\"crypto_mode\":\"native\"}\n",
        jsonl ? 1 : 2);
    rare(hdr);
    rare("{\"ev\":\"lib\",\"id\":1,\"path\":\"/usr/lib/x86_64-linux-gnu/libcrypto.so.3\","
         "\"has_ssl\":true,\"has_crypto\":true,\"role\":\"app\",\"caps\":{\"aesni\":false,"
         "\"pclmulqdq\":false,\"ssse3\":false}}\n");
    for (int c = 1; c <= 8; c++) {
        char line[400];
        snprintf(line, sizeof(line),
                 "{\"ev\":\"conn\",\"t\":%d,\"tid\":%d,\"conn\":%d,\"phase\":\"open\",\"role\":"
                 "\"client\",\"proto\":\"TLSv1.3\",\"suite\":\"TLS_AES_128_GCM_SHA256\",\"hs_ns\":"
                 "2000000,\"hs_call_ns\":1300000}\n",
                 c * 1000, 100 + c % 4, c);
        emit(c % 4, 100 + c % 4, line, strlen(line));
    }
    int64_t t = 100000, id = 0;
    char line[768];
    for (long long i = 0; i < n; i += 2) {
        int c = 1 + (int)(i / 2 % 8), th = c % 4, tid = 100 + th;
        int64_t len = i % 64 == 0 ? 1000 + i % 15000 : 16401, pt = len - 17;
        int64_t cns = len * 13 / 2 + i % 97, got = i % 10 == 0 ? -1 : pt;
        struct tlsm_json j;
        id++;
        tlsm_json_begin(&j, line, sizeof(line), "rec");
        tlsm_json_int(&j, "t", t);
        tlsm_json_int(&j, "tid", tid);
        tlsm_json_int(&j, "conn", c);
        tlsm_json_int(&j, "read", id);
        tlsm_json_safe(&j, "dir", "in");
        tlsm_json_safe(&j, "tls", "1.3");
        tlsm_json_int(&j, "type", 23);
        tlsm_json_int(&j, "len", len);
        tlsm_json_int(&j, "pt", pt);
        tlsm_json_safe(&j, "cipher", "AES-128-GCM");
        tlsm_json_int(&j, "crypto_ns", cns);
        tlsm_json_int(&j, "gcm_ns", cns - 900);
        tlsm_json_int(&j, "gcm_bytes", len - 16);
        tlsm_json_safe(&j, "gcm_fn", "decrypt");
        tlsm_json_safe(&j, "path", "native");
        tlsm_json_bool(&j, "tag_ok", true);
        tlsm_json_int(&j, "lib", 1);
        size_t k = tlsm_json_end(&j, line);
        emit(th, tid, line, k);
        tlsm_json_begin(&j, line, sizeof(line), "read");
        tlsm_json_int(&j, "t", t - 50);
        tlsm_json_int(&j, "tid", tid);
        tlsm_json_int(&j, "conn", c);
        tlsm_json_int(&j, "id", id);
        tlsm_json_safe(&j, "fn", "SSL_read_ex");
        tlsm_json_int(&j, "want", 16384);
        tlsm_json_int(&j, "got", got);
        tlsm_json_int(&j, "ns", cns + 2000);
        tlsm_json_int(&j, "recs", 1);
        tlsm_json_int(&j, "crypto_ns", cns);
        k = tlsm_json_end(&j, line);
        emit(th, tid, line, k);
        t += cns + 3000;
    }
    char end[300];
    snprintf(end, sizeof(end),
             "{\"ev\":\"end\",\"t\":%lld,\"events\":%lld,\"dropped\":0,\"user_ns\":%lld,\"sys_ns\":"
             "1000000,\"wall_ns\":%lld,\"hooks\":{},\"unfired\":[]}\n",
             (long long)t, n + 10, (long long)t, (long long)t);
    for (int i = 0; i < NT; i++)
        flush_chunk(i);
    if (jsonl) {
        fputs(end, out);
    } else { /* the end entry last, in a chunk of its own, as the writer does at exit */
        char mini[400];
        fwrite(mini, 1, tlsm_b2_mini_chunk(mini, sizeof(mini), end, strlen(end), 100), out);
    }
    return fclose(out) ? 1 : 0;
}
