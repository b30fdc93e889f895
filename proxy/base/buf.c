/* SPDX-License-Identifier: MIT */
/* Capped growable buffer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "err.h"

void mx_buf_init(struct mx_buf *b, size_t cap)
{
    memset(b, 0, sizeof(*b));
    b->cap = cap;
}

void mx_buf_clear(struct mx_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->off = b->len = b->size = 0;
}

void mx_buf_reset(struct mx_buf *b)
{
    b->off = b->len = 0;
}

void mx_buf_consume(struct mx_buf *b, size_t len)
{
    if (len >= mx_buf_len(b)) {
        b->off = b->len = 0;
        return;
    }
    b->off += len;
}

static int reserve(struct mx_buf *b, size_t extra)
{
    size_t used = mx_buf_len(b);
    if (extra > b->cap || used > b->cap - extra)
        return MX_ELIMIT;
    if (b->len + extra <= b->size)
        return 0;
    /* Compact first: the front may have been consumed. */
    if (b->off) {
        memmove(b->p, b->p + b->off, used);
        b->off = 0;
        b->len = used;
        if (b->len + extra <= b->size)
            return 0;
    }
    size_t want = b->size ? b->size : 256;
    while (want < used + extra)
        want *= 2;
    if (want > b->cap)
        want = b->cap;
    b->p = mx_xrealloc(b->p, want);
    b->size = want;
    return 0;
}

int mx_buf_append(struct mx_buf *b, const void *p, size_t len)
{
    if (len == 0)
        return 0;
    int rc = reserve(b, len);
    if (rc)
        return rc;
    memcpy(b->p + b->len, p, len);
    b->len += len;
    return 0;
}

int mx_buf_append_str(struct mx_buf *b, const char *s)
{
    return mx_buf_append(b, s, strlen(s));
}

int mx_buf_append_int(struct mx_buf *b, long long v)
{
    char d[24];
    size_t i = sizeof(d);
    /* the magnitude as unsigned: -LLONG_MIN does not fit a long long */
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        d[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        d[--i] = '-';
    return mx_buf_append(b, d + i, sizeof(d) - i);
}

int mx_buf_printf(struct mx_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return MX_EINVAL;
    if ((size_t)n < sizeof(small))
        return mx_buf_append(b, small, (size_t)n);
    int rc = reserve(b, (size_t)n + 1);
    if (rc)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}
