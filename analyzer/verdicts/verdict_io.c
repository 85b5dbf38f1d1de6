/* verdict_io.c: findings about reads, records and connections: what a bigger buffer would
 * (not) change, how data arrives, what handshakes cost. */
#include "verdicts/summary.h"

#include "base/fmt.h"

static void record_cap(struct summary *s)
{
    const struct model *m = s->m;
    uint64_t want = hist__pct(&m->read_want, 0.5);
    struct fmtbuf a, b;
    struct verdict *v;

    /* Evidence: most reads ask for more than a record can hold, and none got more. */
    if (!m->read_got.n || m->st.want_big * 2 < m->read_want.n ||
        m->read_got.max > TLS_RECORD_PT_MAX)
        return;
    v = summary__verdict(s, V_RECORD_CAP, "info",
                         "reads ask for %s (p50) but none returned more than %s: one read "
                         "returns at most one TLS record, whose plaintext is capped at 16 KiB; "
                         "a buffer above 16 KiB gains nothing",
                         fmt_bytes(&a, want), fmt_bytes(&b, m->read_got.max));
    verdict__evidence(v, "want_p50", (double)want);
    verdict__evidence(v, "got_max", (double)m->read_got.max);
}

/* Many SSL_read calls per record, most finding no complete record: the reader is woken for
 * every packet (the OTA case: a shaper letting ~1.5 KB through at a time). */
static void small_arrivals(struct summary *s)
{
    const struct stats *st = &s->m->st;
    double per_rec, miss, piece;
    struct fmtbuf a, b;
    struct verdict *v;

    if (st->recs_app < 8 || !st->reads)
        return;
    per_rec = (double)st->reads / (double)st->recs_app;
    miss = (double)st->want_read / (double)st->reads;
    if (per_rec < 2 || miss < 0.3)
        return;
    piece = (double)st->rec_len / (double)st->recs / per_rec;
    v = summary__verdict(s, V_SMALL_ARRIVALS, "problem",
                         "data arrives in small pieces: %.1f SSL_read calls per record, %s of "
                         "them return WANT_READ (no complete record yet); with records of %llu B "
                         "that is ~%s per wake-up: the reader is woken per packet, and a bigger "
                         "buffer will not help (look at the network path: shaping, MTU)",
                         per_rec, fmt_pct(&a, miss),
                         (unsigned long long)hist__pct(&s->m->rec_len, 0.5),
                         fmt_bytes(&b, (uint64_t)piece));
    verdict__evidence(v, "reads_per_record", per_rec);
    verdict__evidence(v, "want_read_share", miss);
    verdict__evidence(v, "bytes_per_wakeup", piece);
}

/* Reads that ask for a full record but get small ones: the sender writes small records. */
static void small_records(struct summary *s)
{
    const struct model *m = s->m;
    uint64_t rec = hist__pct(&m->rec_len, 0.5), want = hist__pct(&m->read_want, 0.5);
    struct fmtbuf a, b;
    struct verdict *v;

    if (m->st.recs_app < 8 || rec >= 4096 || want < 4 * rec)
        return;
    v = summary__verdict(s, V_SMALL_RECORDS, "info",
                         "records are small (%s p50) while reads ask for %s: the sender writes "
                         "small records, so every record costs a read and a record's fixed "
                         "costs; a bigger buffer will not help",
                         fmt_bytes(&a, rec), fmt_bytes(&b, want));
    verdict__evidence(v, "record_len_p50", (double)rec);
    verdict__evidence(v, "want_p50", (double)want);
}

/* Reads smaller than the records: each record is handed out in several reads. */
static void small_buffer(struct summary *s)
{
    const struct model *m = s->m;
    uint64_t rec = hist__pct(&m->rec_len, 0.5), want = hist__pct(&m->read_want, 0.5);
    struct fmtbuf a, b;
    struct verdict *v;

    if (m->st.recs_app < 8 || !want || want * 2 > rec)
        return;
    v = summary__verdict(s, V_SMALL_BUFFER, "problem",
                         "reads ask for only %s (p50) while records are %s: each record takes "
                         "~%.0f reads; a 16 KiB buffer would cut SSL_read calls that much",
                         fmt_bytes(&a, want), fmt_bytes(&b, rec), (double)rec / (double)want);
    verdict__evidence(v, "want_p50", (double)want);
    verdict__evidence(v, "record_len_p50", (double)rec);
}

static void handshakes(struct summary *s)
{
    const struct model *m = s->m;
    uint64_t n = 0, ns = 0;
    struct fmtbuf a, b, c;
    struct verdict *v;
    size_t i;

    for (i = 0; i < m->nconns; i++)
        if (m->conns[i].hs_call_ns > 0) {
            n++;
            ns += (uint64_t)m->conns[i].hs_call_ns;
        }
    if (n < 10 || ns < m->st.crypto_ns / 5)
        return;
    v = summary__verdict(
        s, V_HANDSHAKES, "info",
        "%llu connections spent %s in handshakes (%s each), %s of the record "
        "decryption time: per-connection costs matter here; reuse connections",
        (unsigned long long)n, fmt_ns(&a, (double)ns), fmt_ns(&b, (double)ns / (double)n),
        m->st.crypto_ns ? fmt_ratio(&c, (double)ns / (double)m->st.crypto_ns) : "more than all");
    verdict__evidence(v, "connections", (double)n);
    verdict__evidence(v, "handshake_ns", (double)ns);
}

void verdicts_io(struct summary *s)
{
    record_cap(s);
    small_arrivals(s);
    small_records(s);
    small_buffer(s);
    handshakes(s);
}
