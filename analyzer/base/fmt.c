/* fmt.c: number formatting shared by the text report and the compare table. */
#include "base/fmt.h"

#include <stdio.h>

const char *fmt_bytes(struct fmtbuf *b, uint64_t v)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double d = (double)v;
    int u = 0;

    while (d >= 1024 && u < 5) {
        d /= 1024;
        u++;
    }
    if (!u)
        snprintf(b->s, sizeof(b->s), "%llu B", (unsigned long long)v);
    else if (d == (double)(uint64_t)d || d >= 100)
        snprintf(b->s, sizeof(b->s), "%.0f %s", d, unit[u]);
    else
        snprintf(b->s, sizeof(b->s), "%.1f %s", d, unit[u]);
    return b->s;
}

const char *fmt_ns(struct fmtbuf *b, double ns)
{
    if (ns < 1e3)
        snprintf(b->s, sizeof(b->s), "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(b->s, sizeof(b->s), "%.3g us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(b->s, sizeof(b->s), "%.3g ms", ns / 1e6);
    else
        snprintf(b->s, sizeof(b->s), "%.2f s", ns / 1e9);
    return b->s;
}

const char *fmt_rate(struct fmtbuf *b, double bps)
{
    if (bps >= 1e9)
        snprintf(b->s, sizeof(b->s), "%.2f GB/s", bps / 1e9);
    else if (bps >= 1e6)
        snprintf(b->s, sizeof(b->s), "%.1f MB/s", bps / 1e6);
    else
        snprintf(b->s, sizeof(b->s), "%.1f kB/s", bps / 1e3);
    return b->s;
}

const char *fmt_pct(struct fmtbuf *b, double frac)
{
    double p = frac * 100;

    if (p >= 10 || p == 0)
        snprintf(b->s, sizeof(b->s), "%.1f %%", p);
    else if (p >= 0.01)
        snprintf(b->s, sizeof(b->s), "%.2f %%", p);
    else
        snprintf(b->s, sizeof(b->s), "<0.01 %%");
    return b->s;
}

const char *fmt_ratio(struct fmtbuf *b, double r)
{
    if (r >= 10)
        snprintf(b->s, sizeof(b->s), "%.0fx", r);
    else /* three digits: 65 reads against 64 is 1.02x, not "1x more" */
        snprintf(b->s, sizeof(b->s), "%.3gx", r);
    return b->s;
}
