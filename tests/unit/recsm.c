/* tests/unit/recsm.c: the record state machine (preload/core/recsm.c) driven directly, no
 * LD_PRELOAD, no network: replays the EVP call sequences OpenSSL 3.0's and 1.1.1's libssl made
 * in real exchanges (tests/unit/evp/[ossl111-]NAME.SIDE.evp, both peers of each) and checks the
 * records against the recorder's own observations and against the peer's records; then hand-written
 * sequences (a write inside a read, a failed tag, reuse after reset, interleaved contexts). Usage:
 * recsm DATADIR. Prints PASS/FAIL lines; exit 1 on any FAIL. */
#include "core/recsm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed;

static void check(int ok, const char *what, const char *detail)
{
    printf("%s recsm %s%s%s\n", ok ? "PASS" : "FAIL", what, detail[0] ? ": " : "", detail);
    failed += !ok;
}

/* What the sink saw. */
struct rec {
    int id, dir, tls, type, len, pt, ok, begun;
    long exp_pt; /* the recorder's: outl (in) or inl (out) less type byte and padding */
    unsigned long long gcm_bytes, gcm_ticks;
};
static struct rec recs[512];
static int n_recs, n_begun, n_forgot, n_forgot_open;

/* Harness state per context: the machine's part first, so the sink finds the rest. */
struct hctx {
    struct tlsm_rsm_ctx c;
    int id, tracked;
    long exp_pt;
};

static void on_begin(void *arg, struct tlsm_rsm_ctx *c)
{
    n_begun++;
    c->mark.cpu = c->t0 + 1; /* the sink's own mark: must come back unchanged */
}

static void on_done(void *arg, struct tlsm_rsm_ctx *c, bool ok, int32_t pt)
{
    struct hctx *h = (struct hctx *)(void *)c;
    if (n_recs == 512 || c->in_rec || c->mark.cpu != c->t0 + 1)
        failed++, printf("FAIL recsm sink: record done with in_rec set, mark lost or overflow\n");
    if (n_recs == 512)
        return;
    recs[n_recs++] = (struct rec){h->id, c->dir, c->tls,    c->type,      c->len,      pt,
                                  ok,    1,      h->exp_pt, c->gcm_bytes, c->gcm_ticks};
}

static void on_forgot(void *arg, struct tlsm_rsm_ctx *c, bool was_open)
{
    n_forgot++;
    n_forgot_open += was_open;
}

static const struct tlsm_rsm_sink sink = {NULL, on_begin, on_done, on_forgot};

static void reset_sink(void)
{
    n_recs = n_begun = n_forgot = n_forgot_open = 0;
}

/* A plaintext of n bytes whose TLS 1.3 framing the recorder saw: content, type, pad zeros.
 * Four buffers in turn: the machine keeps a decrypt output until Final, as libssl's. */
static unsigned char *plain(int n, int type, int pad)
{
    static unsigned char bufs[4][20000];
    static unsigned turn;
    unsigned char *buf = bufs[turn++ % 4];
    if (n < 0 || n > 20000)
        n = 0;
    memset(buf, 0x41, (size_t)n);
    if (type >= 0 && pad >= 0 && pad < n) {
        memset(buf + n - pad, 0, (size_t)pad);
        buf[n - 1 - pad] = (unsigned char)type;
    }
    return buf;
}

static int is_aead(const char *sn)
{
    return !strcmp(sn, "id-aes128-GCM") || !strcmp(sn, "id-aes256-GCM") ||
           !strcmp(sn, "ChaCha20-Poly1305");
}

struct replay {
    int ends;                    /* record-ending calls the file shows (TLS1_AAD ctrl, Final) */
    unsigned long long gcm_line; /* GCM bytes of tracked contexts the recorder saw */
};

/* One line of a .evp file as machine events (the preload's adapter does the same). */
static void replay_line(struct hctx *hs, const char *l, uint64_t t, struct replay *r)
{
    char kind[16], a[32], b[64];
    int id, x, y, z, w, v;
    if (sscanf(l, "%15s %d", kind, &id) != 2 || id < 1 || id > 255)
        return;
    struct hctx *h = &hs[id];
    h->id = id;
    if (!strcmp(kind, "init") && sscanf(l, "init %*d %31s %d %63s ret=%d", a, &x, b, &y) == 4) {
        unsigned given = (a[0] == 'c' ? TLSM_RSM_CIPHER : 0) | (a[1] == 'k' ? TLSM_RSM_KEY : 0) |
                         (a[2] == 'i' ? TLSM_RSM_IV : 0);
        if (h->tracked)
            tlsm_rsm_init(&sink, &h->c, given, x, t);
        if (y > 0 && (given & TLSM_RSM_CIPHER)) {
            if (h->tracked)
                tlsm_rsm_forget(&sink, &h->c);
            h->tracked = is_aead(b);
            if (h->tracked)
                tlsm_rsm_key(&sink, &h->c, b, x ? TLSM_DIR_OUT : TLSM_DIR_IN, b[0] == 'i' ? 8 : 0);
        }
    } else if (!h->tracked) {
        return;
    } else if (!strcmp(kind, "ctrl") &&
               sscanf(l, "ctrl %*d %x %d ret=%d aad_type=%d aad_len=%d", &x, &y, &z, &w, &v) == 5) {
        unsigned char aad[13] = {0};
        aad[8] = (unsigned char)w, aad[11] = (unsigned char)(v >> 8), aad[12] = (unsigned char)v;
        tlsm_rsm_ctrl(&sink, &h->c, x, y, aad, t);
        r->ends++;
    } else if (!strcmp(kind, "aad") && sscanf(l, "aad %*d %d ret=%*d hdr_len=%d", &x, &y) == 2) {
        unsigned char hdr[5] = {23, 3, 3, (unsigned char)(y >> 8), (unsigned char)y};
        tlsm_rsm_aad(&sink, &h->c, hdr, x);
    } else if (!strcmp(kind, "update") &&
               sscanf(l, "update %*d %d outl=%d ret=%d inner_type=%d pad=%d", &x, &y, &z, &w, &v) ==
                   5) {
        int out = h->c.dir == TLSM_DIR_OUT, n = out ? x : y;
        h->exp_pt = w >= 0 ? n - 1 - v : -1;
        tlsm_rsm_payload(&sink, &h->c, plain(n, w, v), z > 0 || out ? n : 0, x, z > 0);
    } else if (!strcmp(kind, "final") && sscanf(l, "final %*d ret=%d", &x) == 1) {
        tlsm_rsm_final(&sink, &h->c, x > 0);
        r->ends++;
    } else if (!strcmp(kind, "cipher") &&
               sscanf(l, "cipher %*d %d out=%d ret=%d", &x, &y, &z) == 3) {
        tlsm_rsm_cipher(&sink, &h->c, y, x, z);
    } else if (!strcmp(kind, "gcm") && sscanf(l, "gcm %*d %31s %d", a, &x) == 2) {
        tlsm_rsm_gcm(&h->c, 3u * (unsigned)x, (unsigned)x,
                     a[0] == 'c' ? TLSM_RSM_GCM_CTR32 : TLSM_RSM_GCM_PLAIN);
        r->gcm_line += h->c.in_rec ? (unsigned)x : 0;
    } else if (!strcmp(kind, "reset") || !strcmp(kind, "free")) {
        tlsm_rsm_forget(&sink, &h->c);
        h->tracked = 0;
    }
}

/* Replays DIR/NAME.SIDE.evp into recs[base..]; returns the number of records, -1 if absent. */
static int replay(const char *dir, const char *name, const char *side, struct replay *r)
{
    char path[512], line[256];
    snprintf(path, sizeof(path), "%s/%s.%s.evp", dir, name, side);
    FILE *f = fopen(path, "r");
    if (!f) {
        check(0, name, "data file missing");
        return -1;
    }
    static struct hctx hs[256];
    memset(hs, 0, sizeof(hs));
    memset(r, 0, sizeof(*r));
    uint64_t t = 1000;
    int before = n_recs;
    while (fgets(line, sizeof(line), f))
        if (line[0] != '#')
            replay_line(hs, line, t += 10, r);
    fclose(f);
    return n_recs - before;
}

/* Records of direction d among recs[from..from+n). */
static int pick(int from, int n, int d, struct rec *out)
{
    int k = 0;
    for (int i = from; i < from + n; i++)
        if (recs[i].dir == d)
            out[k++] = recs[i];
    return k;
}

/* What one side wrote, the other read: same types, lengths and plaintext sizes, in order
 * (one record more on the writer's side when the reader closed first). */
static void same_stream(const char *what, const struct rec *w, int nw, const struct rec *rd, int nr)
{
    char d[160] = "";
    int ok = nw >= nr && nw <= nr + 1 && nr > 0;
    for (int i = 0; ok && i < nr; i++)
        if (w[i].type != rd[i].type || w[i].len != rd[i].len || w[i].pt != rd[i].pt) {
            snprintf(d, sizeof(d), "record %d: wrote type %d len %d pt %d, read %d %d %d", i,
                     w[i].type, w[i].len, w[i].pt, rd[i].type, rd[i].len, rd[i].pt);
            ok = 0;
        }
    if (ok || !d[0])
        snprintf(d, sizeof(d), "%d written, %d read", nw, nr);
    check(ok, what, d);
}

/* Every record of one file: version, tag, framing as the recorder saw it. */
static void per_record(const char *what, int from, int n, int tls, int gcm, const struct replay *r,
                       int ends)
{
    char d[200] = "";
    int ok = n == ends;
    unsigned long long gb = 0;
    for (int i = from; i < from + n; i++) {
        const struct rec *x = &recs[i];
        gb += x->gcm_bytes;
        /* TLS 1.3: content ‖ type ‖ padding ‖ tag; TLS 1.2: explicit nonce ‖ content ‖ tag. */
        int framing = tls == TLSM_TLS13 ? x->pt == x->exp_pt && x->len >= x->pt + 17
                                        : x->len == x->pt + (gcm ? 24 : 16);
        if (x->tls != tls || !x->ok || x->type < 20 || x->type > 23 || !framing ||
            x->gcm_ticks != 3 * x->gcm_bytes) {
            snprintf(d, sizeof(d), "record %d: tls %d ok %d type %d len %d pt %d (recorder pt %ld)",
                     i - from, x->tls, x->ok, x->type, x->len, x->pt, x->exp_pt);
            ok = 0;
            break;
        }
    }
    if (ok && gb != r->gcm_line) {
        snprintf(d, sizeof(d), "GCM bytes %llu in records, %llu in GCM calls", gb, r->gcm_line);
        ok = 0;
    }
    if (ok && gcm != (gb > 0)) {
        snprintf(d, sizeof(d), "GCM bytes %llu for a %s cipher", gb, gcm ? "GCM" : "non-GCM");
        ok = 0;
    }
    if (!d[0])
        snprintf(d, sizeof(d), "%d records (%d record-ending calls), GCM bytes %llu", n, ends, gb);
    check(ok, what, d);
}

static int has(const struct rec *v, int n, int type, int pt)
{
    for (int i = 0; i < n; i++)
        if (v[i].type == type && v[i].pt == pt)
            return 1;
    return 0;
}

/* Both sides of recording NAME replayed: each side's records checked one by one
 * (per_record), then split by direction, and each direction's sealed records compared with
 * what the other side opened (same_stream). NULL when a side could not be replayed. */
struct both_sides {
    struct rec cin[256], cout[256], sin_[256], sout[256];
    int a, b, c, d; /* counts of cin, cout, sin_, sout */
};

static const struct both_sides *replay_both(const char *dir, const char *name, int tls, int gcm)
{
    static struct both_sides p;
    char what[96];
    struct replay rc, rs;
    reset_sink();
    int nc = replay(dir, name, "client", &rc), from_s = n_recs;
    int ns = replay(dir, name, "server", &rs);
    if (nc < 0 || ns < 0)
        return NULL;
    snprintf(what, sizeof(what), "%s client", name);
    per_record(what, 0, nc, tls, gcm, &rc, rc.ends);
    snprintf(what, sizeof(what), "%s server", name);
    per_record(what, from_s, ns, tls, gcm, &rs, rs.ends);
    p.a = pick(0, nc, TLSM_DIR_IN, p.cin);
    p.b = pick(0, nc, TLSM_DIR_OUT, p.cout);
    p.c = pick(from_s, ns, TLSM_DIR_IN, p.sin_);
    p.d = pick(from_s, ns, TLSM_DIR_OUT, p.sout);
    snprintf(what, sizeof(what), "%s client-to-server", name);
    same_stream(what, p.cout, p.b, p.sin_, p.c);
    snprintf(what, sizeof(what), "%s server-to-client", name);
    same_stream(what, p.sout, p.d, p.cin, p.a);
    return &p;
}

/* A record of TYPE with PT plaintext bytes sealed and opened in each direction. */
static int both_ways(const struct both_sides *p, int type, int pt)
{
    return has(p->cout, p->b, type, pt) && has(p->sin_, p->c, type, pt) &&
           has(p->sout, p->d, type, pt) && has(p->cin, p->a, type, pt);
}

static void recorded(const char *dir, const char *name, int tls, int gcm)
{
    char what[96];
    const struct both_sides *p = replay_both(dir, name, tls, gcm);
    if (!p)
        return;
    /* s_client sent "hello\n", s_server -rev answered "olleh\n": 6 bytes each way. */
    snprintf(what, sizeof(what), "%s application data both ways", name);
    check(both_ways(p, 23, 6), what, "");
}

/* Application-data plaintext of v: bytes, records, and whether each is at most max. */
static long app_bytes(const struct rec *v, int n, int max, int *nrec, int *fits)
{
    long sum = 0;
    *nrec = 0;
    *fits = 1;
    for (int i = 0; i < n; i++)
        if (v[i].type == 23) {
            sum += v[i].pt;
            ++*nrec;
            *fits &= v[i].pt <= max;
        }
    return sum;
}

/* NAME-frag recordings: s_client wrote one 40001-byte line with -max_send_frag 4096, so its
 * writes were split into records of at most 4096 plaintext bytes; the server read them all and
 * echoed the line back in records of up to 16 KiB. */
static void recorded_frag(const char *dir, const char *name, int tls, int gcm)
{
    char what[96], d[160];
    int nrec, fits, nrec_s, fits_s;
    const struct both_sides *p = replay_both(dir, name, tls, gcm);
    if (!p)
        return;
    long sent = app_bytes(p->cout, p->b, 4096, &nrec, &fits);
    long got = app_bytes(p->sin_, p->c, 16384, &nrec_s, &fits_s);
    snprintf(d, sizeof(d),
             "client sealed %ld B in %d records (each <= 4096: %d), server opened %ld", sent, nrec,
             fits, got);
    snprintf(what, sizeof(what), "%s split writes", name);
    check(sent == 40001 && got == 40001 && fits && nrec >= 10, what, d);
}

/* NAME-keyupdate recordings: a TLS 1.3 KeyUpdate each way (handshake type, 4-byte header + 1
 * byte: 5 plaintext bytes) between two "hello" lines; both sides re-key a context in
 * flight (Init with the cipher again on the same context) and keep every record. */
static void recorded_keyupdate(const char *dir, const char *name)
{
    char what[96];
    const struct both_sides *p = replay_both(dir, name, TLSM_TLS13, 1);
    if (!p)
        return;
    snprintf(what, sizeof(what), "%s KeyUpdate both ways", name);
    check(both_ways(p, 22, 5), what,
          "a 5-byte handshake record sealed and opened in each direction");
}

/* Hand-written sequences: the machine's own calls, as libssl would make them. */
static struct hctx A, B;

static void key(struct hctx *h, int id, enum tlsm_dir d)
{
    h->id = id;
    tlsm_rsm_key(&sink, &h->c, "AES-128-GCM", d, 8);
}

/* TLS 1.3 record on h: Init(nonce), header AAD, payload of n plaintext bytes of type. The
 * caller sends Final. */
static void tls13_open(struct hctx *h, uint64_t t, int len)
{
    unsigned char hdr[5] = {23, 3, 3, (unsigned char)(len >> 8), (unsigned char)len};
    tlsm_rsm_init(&sink, &h->c, TLSM_RSM_IV, -1, t);
    tlsm_rsm_aad(&sink, &h->c, hdr, 5);
}

static void tls13_payload(struct hctx *h, int n, int type)
{
    tlsm_rsm_payload(&sink, &h->c, plain(n, type, 0), n, n, true);
}

static int is(const struct rec *r, int id, int dir, int tls, int type, int len, int pt, int ok)
{
    return r->id == id && r->dir == dir && r->tls == tls && r->type == type && r->len == len &&
           r->pt == pt && r->ok == ok;
}

static void write_inside_read(void)
{
    reset_sink();
    key(&A, 1, TLSM_DIR_IN);
    key(&B, 2, TLSM_DIR_OUT);
    tls13_open(&A, 100, 117); /* a read's record begins ... */
    tlsm_rsm_gcm(&A.c, 5, 100, TLSM_RSM_GCM_CTR32);
    tls13_open(&B, 200, 40); /* ... a write (KeyUpdate reply) inside it */
    tlsm_rsm_gcm(&B.c, 7, 23, TLSM_RSM_GCM_PLAIN);
    tls13_payload(&B, 24, 22);
    tlsm_rsm_final(&sink, &B.c, true);
    tls13_payload(&A, 101, 23);
    tlsm_rsm_final(&sink, &A.c, true);
    int ok = n_recs == 2 && is(&recs[0], 2, TLSM_DIR_OUT, 13, 22, 40, 23, 1) &&
             is(&recs[1], 1, TLSM_DIR_IN, 13, 23, 117, 100, 1) && recs[0].gcm_bytes == 23 &&
             recs[1].gcm_bytes == 100 && recs[0].gcm_ticks == 7 && n_begun == 2;
    check(ok, "write inside a read", "records and GCM counts stay apart");
}

static void failed_tag(void)
{
    reset_sink();
    key(&A, 1, TLSM_DIR_IN);
    tls13_open(&A, 100, 117);
    tls13_payload(&A, 101, 23);
    tlsm_rsm_final(&sink, &A.c, false);
    unsigned char aad[13] = {[8] = 23, [11] = 0, [12] = 64};
    key(&B, 2, TLSM_DIR_IN);
    tlsm_rsm_ctrl(&sink, &B.c, TLSM_RSM_CTRL_TLS1_AAD, 13, aad, 300);
    tlsm_rsm_payload(&sink, &B.c, plain(40, -1, -1), 0, 64, false);
    tlsm_rsm_ctrl(&sink, &B.c, TLSM_RSM_CTRL_TLS1_AAD, 13, aad, 400);
    tlsm_rsm_cipher(&sink, &B.c, true, 64, -1);
    int ok = n_recs == 3 && is(&recs[0], 1, TLSM_DIR_IN, 13, -1, 117, 0, 0) &&
             is(&recs[1], 2, TLSM_DIR_IN, 12, 23, 64, 0, 0) &&
             is(&recs[2], 2, TLSM_DIR_IN, 12, 23, 64, 0, 0);
    check(ok, "failed tag",
          "TLS 1.3 Final (type unknown), TLS 1.2 Update, EVP_Cipher: tag_ok false, pt 0");
}

static void reuse_after_reset(void)
{
    reset_sink();
    key(&A, 1, TLSM_DIR_IN);
    tls13_open(&A, 100, 117);
    tlsm_rsm_gcm(&A.c, 5, 50, TLSM_RSM_GCM_CTR32);
    tlsm_rsm_forget(&sink, &A.c); /* reset with a record in flight */
    int forgot = n_forgot == 1 && n_forgot_open == 1 && !A.c.in_rec;
    tls13_payload(&A, 101, 23); /* stale calls after the reset: no record */
    tlsm_rsm_final(&sink, &A.c, true);
    int none = n_recs == 0;
    key(&A, 1, TLSM_DIR_IN); /* re-keyed for TLS 1.2 */
    unsigned char aad[13] = {[8] = 21, [11] = 0, [12] = 26};
    tlsm_rsm_ctrl(&sink, &A.c, TLSM_RSM_CTRL_TLS1_AAD, 13, aad, 500);
    tlsm_rsm_payload(&sink, &A.c, plain(2, -1, -1), 2, 26, true);
    int ok = forgot && none && n_recs == 1 && is(&recs[0], 1, TLSM_DIR_IN, 12, 21, 26, 2, 1) &&
             recs[0].gcm_bytes == 0;
    check(ok, "context reuse after reset", "open record dropped and reported, fresh record after");
}

static void interleaved(void)
{
    reset_sink();
    key(&A, 1, TLSM_DIR_IN);
    key(&B, 2, TLSM_DIR_IN);
    tls13_open(&A, 100, 117);
    tls13_open(&B, 110, 33);
    tls13_payload(&B, 17, 21);
    tls13_payload(&A, 101, 23);
    tlsm_rsm_final(&sink, &A.c, true);
    tlsm_rsm_final(&sink, &B.c, true);
    int ok = n_recs == 2 && is(&recs[0], 1, TLSM_DIR_IN, 13, 23, 117, 100, 1) &&
             is(&recs[1], 2, TLSM_DIR_IN, 13, 21, 33, 16, 1);
    check(ok, "interleaved contexts", "two records in flight on one thread");
}

static void turned_around(void)
{
    reset_sink();
    key(&A, 1, TLSM_DIR_IN);
    tls13_open(&A, 100, 117);
    tlsm_rsm_init(&sink, &A.c, TLSM_RSM_IV, 1, 200); /* now encrypting: a new record, out */
    int flipped = A.c.dir == TLSM_DIR_OUT && n_forgot_open == 1 && A.c.in_rec;
    unsigned char hdr[5] = {23, 3, 3, 0, 30};
    tlsm_rsm_aad(&sink, &A.c, hdr, 5);
    tls13_payload(&A, 14, 23);
    tlsm_rsm_final(&sink, &A.c, true);
    check(flipped && n_recs == 1 && is(&recs[0], 1, TLSM_DIR_OUT, 13, 23, 30, 13, 1),
          "direction turned around", "the open read record is forgotten, the write recorded");
}

/* The preload reads an out record's plaintext before the seal (tlsm_rsm_seal_peek), then
 * reports the payload call after it, when the buffer holds ciphertext: the type and length
 * must be the plaintext's, never read from the ciphertext. */
static void seal_in_place(void)
{
    reset_sink();
    key(&B, 2, TLSM_DIR_OUT);
    tls13_open(&B, 100, 1000 + 17);
    unsigned char *buf = plain(1001, 23, 40); /* 960 content ‖ type ‖ 40 padding */
    tlsm_rsm_seal_peek(&B.c, buf, 1001);
    memset(buf, 0x5a, 1001); /* sealed in place: ciphertext now, no zero padding */
    tlsm_rsm_payload(&sink, &B.c, buf, 1001, 1001, true);
    tlsm_rsm_final(&sink, &B.c, true);
    check(n_recs == 1 && is(&recs[0], 2, TLSM_DIR_OUT, 13, 23, 1017, 960, 1), "seal in place",
          "type and plaintext length from before the seal, not from the ciphertext");
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "tests/unit/evp";
    recorded(dir, "tls12-aes128gcm", TLSM_TLS12, 1);
    recorded(dir, "tls13-aes128gcm", TLSM_TLS13, 1);
    recorded(dir, "tls13-chacha20", TLSM_TLS13, 0);
    recorded(dir, "tls12-chacha20", TLSM_TLS12, 0);
    /* OpenSSL 1.1.1w (tests/unit/evp/ossl111-*): TLS 1.2 records go through EVP_Cipher
     * (returns the length), TLS 1.3 ones through Init/ctrl/Update/Final as in 3.0. */
    recorded(dir, "ossl111-tls12-aes128gcm", TLSM_TLS12, 1); /* EVP_Cipher returns pt */
    recorded(dir, "ossl111-tls13-aes128gcm", TLSM_TLS13, 1);
    recorded(dir, "ossl111-tls13-chacha20", TLSM_TLS13, 0);
    recorded(dir, "ossl111-tls12-chacha20", TLSM_TLS12, 0); /* EVP_Cipher returns the whole */
    recorded_frag(dir, "tls13-aes256gcm-frag", TLSM_TLS13, 1);
    recorded_frag(dir, "tls12-chacha20-frag", TLSM_TLS12, 0);
    recorded_keyupdate(dir, "tls13-aes128gcm-keyupdate");
    write_inside_read();
    failed_tag();
    reuse_after_reset();
    interleaved();
    turned_around();
    seal_in_place();
    return failed ? 1 : 0;
}
