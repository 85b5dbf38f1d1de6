/* util.h: allocation helpers for the analyzer; running out of memory is fatal here. */
#ifndef TLSM_UTIL_H
#define TLSM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrndup(const char *s, size_t n);
char *xstrdup(const char *s);

/* Grow *arr (element size esz) so that index `need` fits; doubles capacity. */
void grow_array_slow(void **arr, size_t *cap, size_t need, size_t esz);
/* The check inline: callers on the per-event path mostly find the room there. */
static inline void grow_array(void **arr, size_t *cap, size_t need, size_t esz)
{
    if (need >= *cap)
        grow_array_slow(arr, cap, need, esz);
}

#endif
