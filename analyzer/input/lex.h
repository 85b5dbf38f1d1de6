/* lex.h: the byte-level pieces the JSON Lines fast paths share (scan.c, shape.c): white
 * space, word compares, integers without per-byte bound checks. */
#ifndef TLSM_LEX_H
#define TLSM_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* JSON's white space (a line holds no '\n', a buffer of lines may). */
static const unsigned char lex_ws[256]
    __attribute__((unused)) = {[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1};

static inline uint64_t ld64(const char *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint32_t ld32(const char *p)
{
    uint32_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

/* p[0..n) == pat[0..n) for 1 <= n, both readable: overlapping word loads, no call. */
static inline bool same_bytes(const char *p, const char *pat, size_t n)
{
    size_t i;

    if (n >= 8) {
        for (i = 0; i + 8 < n; i += 8)
            if (ld64(p + i) != ld64(pat + i))
                return false;
        return ld64(p + n - 8) == ld64(pat + n - 8);
    }
    if (n >= 4)
        return ld32(p) == ld32(pat) && ld32(p + n - 4) == ld32(pat + n - 4);
    for (i = 0; i < n; i++)
        if (p[i] != pat[i])
            return false;
    return true;
}

/* A run of digits at d (no bound: the closing '}' stops it), its end in *end. */
static inline uint64_t digit_run(const char *d, const char **end)
{
    uint64_t v = 0;
    unsigned digit;

    while ((digit = (unsigned)(unsigned char)*d - '0') < 10) {
        v = v * 10 + digit; /* unsigned: a run past 18 digits wraps and is declined */
        d++;
    }
    *end = d;
    return v;
}

/* The bytes that may not follow an integer's digits ('.', 'e', 'E': a real, which the
 * scanner leaves to jansson). */
static const unsigned char lex_not_int_end[256]
    __attribute__((unused)) = {['.'] = 1, ['e'] = 1, ['E'] = 1};

/* The integer value of the n (1..8) digits in t (the eight bytes at them, each ^ '0'):
 * shifted so leading zeros fill the word, summed pairwise (first digit in the lowest byte). */
static inline uint64_t lex_swar8(uint64_t t, unsigned n)
{
    t <<= 8 * (8 - n);
    t = ((t & 0x0f0f0f0f0f0f0f0full) * 2561) >> 8;
    t = ((t & 0x00ff00ff00ff00ffull) * 6553601) >> 16;
    return ((t & 0x0000ffff0000ffffull) * 42949672960001ull) >> 32;
}

/* How many of the eight bytes at d are digits before the first other byte (a byte b ^ '0'
 * above 9), and in *t the eight bytes ^ '0'. */
static inline unsigned lex_run8(const char *d, uint64_t *t)
{
    uint64_t x = ld64(d) ^ 0x3030303030303030ull;
    uint64_t nd =
        (((x & 0x7f7f7f7f7f7f7f7full) + 0x7676767676767676ull) | x) & 0x8080808080808080ull;

    *t = x;
    return nd ? (unsigned)__builtin_ctzll(nd) >> 3 : 8;
}

/* An integer as the scanner reads it (at most 18 digits, no leading zero, no fraction or
 * exponent) at p, lim the end of the line: its end, or NULL. No bound checks on the digits:
 * the caller knows a '}' ends the line. Up to 15 digits (a trace's times and sizes) are read
 * as one or two 8-byte words where the line holds them (little-endian only), which avoids the byte
 * loop's exit at an unpredictable length. */
static inline const char *lex_int(const char *p, const char *lim, int64_t *out)
{
    bool neg = *p == '-';
    const char *d = p + neg, *q;
    uint64_t v;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (lim - d >= 8) {
        static const uint64_t pow10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
        uint64_t t, t2;
        unsigned n = lex_run8(d, &t), m;

        if (n < 8) {
            v = n ? lex_swar8(t, n) : 0;
        } else if (lim - d >= 16 && (m = lex_run8(d + 8, &t2)) < 8) {
            v = lex_swar8(t, 8) * pow10[m] + (m ? lex_swar8(t2, m) : 0);
            n += m;
        } else {
            goto loop; /* 16 digits or more, or too near the end for a second word */
        }
        if (!n || (n > 1 && *d == '0') || lex_not_int_end[(unsigned char)d[n]])
            return NULL;
        *out = neg ? -(int64_t)v : (int64_t)v;
        return d + n;
    }
loop:
#endif
    v = digit_run(d, &q);
    if (q == d || q - d > 18 || (q - d > 1 && *d == '0') || *q == '.' || *q == 'e' || *q == 'E')
        return NULL;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return q;
}

#endif
