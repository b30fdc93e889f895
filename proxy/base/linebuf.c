/* SPDX-License-Identifier: MIT */
/* Newline framing with a line cap; see linebuf.h. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "linebuf.h"

void mx_linebuf_init(struct mx_linebuf *lb, size_t max_line)
{
    memset(lb, 0, sizeof(*lb));
    lb->max_line = max_line;
}

void mx_linebuf_clear(struct mx_linebuf *lb)
{
    size_t max_line = lb->max_line;
    free(lb->p);
    mx_linebuf_init(lb, max_line);
}

size_t mx_linebuf_len(const struct mx_linebuf *lb)
{
    return lb->end - lb->start;
}

/* Room for |len| more bytes at the end: move the held bytes to the front
 * first, grow only when that is not enough. */
static void reserve(struct mx_linebuf *lb, size_t len)
{
    if (lb->start == lb->end) {
        lb->start = lb->end = 0;
    } else if (lb->start > 0 && lb->size - lb->end < len) {
        memmove(lb->p, lb->p + lb->start, lb->end - lb->start);
        lb->end -= lb->start;
        lb->start = 0;
    }
    if (lb->size - lb->end >= len)
        return;
    size_t want = lb->size ? lb->size : 4096;
    while (want - lb->end < len)
        want *= 2;
    lb->p = mx_xrealloc(lb->p, want);
    lb->size = want;
}

void mx_linebuf_feed(struct mx_linebuf *lb, const char *p, size_t len)
{
    while (len > 0) {
        const char *lf = memchr(p, '\n', len);
        size_t n = lf ? (size_t)(lf - p) : len; /* bytes of the current line here */
        if (lb->discarding) {
            if (lf == NULL)
                return;
            lb->discarding = false;
            p = lf + 1;
            len -= n + 1;
            continue;
        }
        if (lb->tail_len + n > lb->max_line) {
            /* the line is over the cap: forget what is held of it, then skip
             * up to its LF (now or in a later feed) */
            lb->end -= lb->tail_len;
            lb->tail_len = 0;
            lb->dropped++;
            if (lf == NULL) {
                lb->discarding = true;
                return;
            }
            p = lf + 1;
            len -= n + 1;
            continue;
        }
        size_t take = lf ? n + 1 : n;
        reserve(lb, take);
        memcpy(lb->p + lb->end, p, take);
        lb->end += take;
        if (lf) {
            lb->lf_cnt++;
            lb->tail_len = 0;
        } else {
            lb->tail_len += n;
        }
        p += take;
        len -= take;
    }
}

static struct mx_str strip_cr(const char *p, size_t n)
{
    if (n > 0 && p[n - 1] == '\r')
        n--;
    return mx_str_make(p, n);
}

bool mx_linebuf_next(struct mx_linebuf *lb, struct mx_str *line)
{
    if (lb->lf_cnt == 0)
        return false;
    const char *s = lb->p + lb->start;
    const char *lf = memchr(s, '\n', lb->end - lb->start);
    size_t n = (size_t)(lf - s);
    *line = strip_cr(s, n);
    lb->start += n + 1;
    lb->lf_cnt--;
    return true;
}

bool mx_linebuf_finish(struct mx_linebuf *lb, struct mx_str *line)
{
    if (lb->lf_cnt > 0 || lb->discarding || lb->tail_len == 0)
        return false;
    const char *s = lb->p + lb->start;
    size_t n = lb->tail_len;
    *line = strip_cr(s, n);
    lb->start += n;
    lb->tail_len = 0;
    return true;
}

uint64_t mx_linebuf_take_dropped(struct mx_linebuf *lb)
{
    uint64_t n = lb->dropped;
    lb->dropped = 0;
    return n;
}
