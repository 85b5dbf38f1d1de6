/* fmt.h: human-readable numbers for the reports (bytes, durations, rates, percentages). */
#ifndef TLSM_FMT_H
#define TLSM_FMT_H

#include <stddef.h>
#include <stdint.h>

struct fmtbuf {
    char s[32];
};

/* 16384 -> "16 KiB", 1536 -> "1.5 KiB", 512 -> "512 B" */
const char *fmt_bytes(struct fmtbuf *b, uint64_t v);
/* 3490000000 -> "3.49 s", 106496 -> "106 us" */
const char *fmt_ns(struct fmtbuf *b, double ns);
/* bytes per second -> "153.8 MB/s" (decimal megabytes, like openssl speed) */
const char *fmt_rate(struct fmtbuf *b, double bytes_per_s);
/* 0.2834 -> "28.3 %", small values keep two significant digits: "0.92 %" */
const char *fmt_pct(struct fmtbuf *b, double frac);
/* A ratio as "43x" or "1.6x" */
const char *fmt_ratio(struct fmtbuf *b, double r);

#endif
