/* utf8.c: UTF-8 at character boundaries (trace strings are valid UTF-8; the analyzer's own
 * fixed buffers may cut them, and outputs must not carry half a character). */
#include "base/utf8.h"

#include "base/util.h"

#include <string.h>

size_t utf8_char(const char *str, size_t avail, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t n, i;
    uint32_t c, min;

    if (!avail)
        return 0;
    if (s[0] < 0x80)
        return *cp = s[0], 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2, c = s[0] & 0x1f, min = 0x80;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3, c = s[0] & 0x0f, min = 0x800;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4, c = s[0] & 0x07, min = 0x10000;
    else
        return 0;
    if (avail < n)
        return 0;
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return n;
}

size_t utf8_prefix(const char *s, size_t n, size_t max)
{
    size_t i = 0, k;
    uint32_t cp;

    while (i < n) {
        k = utf8_char(s + i, n - i, &cp);
        if (!k)
            k = 1; /* not UTF-8: one byte is one unit (it is replaced where it is written) */
        if (i + k > max)
            break;
        i += k;
    }
    return i;
}

void utf8_trim_tail(char *s)
{
    size_t n = strlen(s), start = n;
    uint32_t cp;

    /* The last character starts at most 3 bytes before the end. */
    while (start > 0 && n - start < 4 && ((unsigned char)s[start - 1] & 0xc0) == 0x80)
        start--;
    if (start > 0 && (unsigned char)s[start - 1] >= 0xc0)
        start--;
    else if (start == n)
        return;
    if (start < n && (unsigned char)s[start] >= 0x80 && !utf8_char(s + start, n - start, &cp))
        s[start] = '\0';
}

size_t utf8_count(const char *s)
{
    size_t n = strlen(s), i = 0, chars = 0, k;
    uint32_t cp;

    while (i < n) {
        k = utf8_char(s + i, n - i, &cp);
        i += k ? k : 1;
        chars++;
    }
    return chars;
}

char *utf8_repair(const char *s, size_t n, size_t *out_n)
{
    size_t i = 0, o = 0, k;
    uint32_t cp;
    char *r;

    while (i < n && (k = utf8_char(s + i, n - i, &cp)))
        i += k;
    if (i == n)
        return NULL;
    r = xmalloc(3 * n + 1);
    for (i = 0; i < n; i += k ? k : 1) {
        k = utf8_char(s + i, n - i, &cp);
        if (k) {
            memcpy(r + o, s + i, k);
            o += k;
        } else {
            memcpy(r + o, "\xef\xbf\xbd", 3); /* U+FFFD */
            o += 3;
        }
    }
    r[o] = '\0';
    *out_n = o;
    return r;
}
