/* util.c: allocation helpers; the analyzer is a batch tool, so out of memory ends it. */
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
    fprintf(stderr, "tlsmeter-analyze: out of memory (%zu bytes)\n", n);
    exit(1);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p)
        oom(n);
    return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

    if (!p)
        oom(nmemb * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);

    if (!q)
        oom(n);
    return q;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);

    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

void grow_array_slow(void **arr, size_t *cap, size_t need, size_t esz)
{
    size_t ncap = *cap ? *cap : 8;

    if (need < *cap)
        return;
    while (ncap <= need)
        ncap *= 2;
    *arr = xrealloc(*arr, ncap * esz);
    memset((char *)*arr + *cap * esz, 0, (ncap - *cap) * esz);
    *cap = ncap;
}
