/* SPDX-License-Identifier: MIT */
/*
 * A growable byte buffer with a cap fixed at init (curl's dynbuf rule):
 * appending past the cap fails with MX_ELIMIT and leaves the buffer as it was.
 * Bytes live in [p + off, p + len); mx_buf_consume() advances off so a
 * writer can drain the front without moving memory on every call.
 */
#ifndef MX_BUF_H
#define MX_BUF_H

#include <stddef.h>

#include "str.h"

struct mx_buf {
    char *p;
    size_t off;  /* first unread byte */
    size_t len;  /* end of data */
    size_t size; /* allocated */
    size_t cap;  /* most bytes of data ever held at once */
};

void mx_buf_init(struct mx_buf *b, size_t cap);
/* Frees the bytes; the buffer stays usable (empty) with the same cap. */
void mx_buf_clear(struct mx_buf *b);
/* Returns 0 or MX_ELIMIT. */
int mx_buf_append(struct mx_buf *b, const void *p, size_t len);
int mx_buf_append_str(struct mx_buf *b, const char *s);
/* |v| in decimal, with a '-' when negative: no printf on hot paths. */
int mx_buf_append_int(struct mx_buf *b, long long v);
int mx_buf_printf(struct mx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drop |len| bytes from the front. */
void mx_buf_consume(struct mx_buf *b, size_t len);
/* Drop everything but keep the memory. */
void mx_buf_reset(struct mx_buf *b);

static inline const char *mx_buf_data(const struct mx_buf *b)
{
    return b->p ? b->p + b->off : "";
}

static inline size_t mx_buf_len(const struct mx_buf *b)
{
    return b->len - b->off;
}

static inline struct mx_str mx_buf_str(const struct mx_buf *b)
{
    return mx_str_make(mx_buf_data(b), mx_buf_len(b));
}

#endif
