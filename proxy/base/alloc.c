/* SPDX-License-Identifier: MIT */
/* Out of memory is fatal, as in h2o and redis: no caller handles it better. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static void oom(size_t len) __attribute__((noreturn));

static void oom(size_t len)
{
    fprintf(stderr, "mcplex: out of memory allocating %zu bytes\n", len);
    abort();
}

void *mx_xmalloc(size_t len)
{
    void *p = malloc(len ? len : 1);
    if (p == NULL)
        oom(len);
    return p;
}

void *mx_xcalloc(size_t cnt, size_t len)
{
    void *p = calloc(cnt ? cnt : 1, len ? len : 1);
    if (p == NULL)
        oom(cnt * len);
    return p;
}

void *mx_xrealloc(void *p, size_t len)
{
    void *q = realloc(p, len ? len : 1);
    if (q == NULL)
        oom(len);
    return q;
}

char *mx_xstrdup(const char *s)
{
    return mx_xstrndup(s, strlen(s));
}

char *mx_xstrndup(const char *p, size_t len)
{
    char *s = mx_xmalloc(len + 1);
    if (len)
        memcpy(s, p, len);
    s[len] = '\0';
    return s;
}

char *mx_xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(0);
    return s;
}
