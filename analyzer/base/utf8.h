/* utf8.h: cutting and checking UTF-8 text, so that no output (SVG, Chrome JSON, folded) gets
 * half a character or a character its format forbids. */
#ifndef TLSM_UTF8_H
#define TLSM_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1..4) of the valid UTF-8 character at s, which has avail bytes; 0 when the bytes
 * there are not one (a stray continuation byte, an overlong form, a surrogate, a cut). The
 * code point goes to *cp. */
size_t utf8_char(const char *s, size_t avail, uint32_t *cp);
/* The longest prefix of s[0..n) that is at most max bytes and ends on a character boundary. */
size_t utf8_prefix(const char *s, size_t n, size_t max);
/* Drops a cut character at the end of the C string s (what a snprintf into a full buffer
 * leaves). */
void utf8_trim_tail(char *s);
/* Characters (not bytes) in s; a byte that is not valid UTF-8 counts as one. */
size_t utf8_count(const char *s);

/* A copy of s[0..n) with every byte that is not valid UTF-8 replaced by U+FFFD (length in
 * *out_n, NUL-terminated; free it), or NULL when s is valid UTF-8 already. */
char *utf8_repair(const char *s, size_t n, size_t *out_n);

#endif
