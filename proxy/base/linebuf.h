/* SPDX-License-Identifier: MIT */
/*
 * Newline framing for a byte stream (MCP 2025-06-18, Transports, stdio:
 * messages are delimited by newlines). Pure: bytes in, lines out, any split
 * of the input gives the same lines. A CR before the LF is dropped; a line
 * longer than the cap is dropped whole (counted, never half-delivered) and
 * framing resumes after its LF. It does no I/O and knows nothing of JSON.
 */
#ifndef MX_LINEBUF_H
#define MX_LINEBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "str.h"

struct mx_linebuf {
    char *p;
    size_t start;    /* first byte not yet returned */
    size_t end;      /* end of the bytes held */
    size_t size;     /* allocated */
    size_t max_line; /* longest line kept, LF excluded */
    size_t tail_len; /* bytes after the last LF held */
    size_t lf_cnt;   /* complete lines held */
    bool discarding; /* inside an over-long line: drop up to its LF */
    uint64_t dropped;
};

/* |max_line| is the longest line kept, without its LF (CR counts). */
void mx_linebuf_init(struct mx_linebuf *lb, size_t max_line);
/* Frees the bytes; the buffer may be fed again (empty, same cap). */
void mx_linebuf_clear(struct mx_linebuf *lb);

/*
 * Append |len| bytes. The buffer holds at most the complete lines not yet
 * taken plus one partial line of at most |max_line| bytes: the caller takes
 * every line (mx_linebuf_next) before it feeds much more. Slices returned by
 * mx_linebuf_next() before this call are invalid after it.
 */
void mx_linebuf_feed(struct mx_linebuf *lb, const char *p, size_t len);

/*
 * Take the next complete line into |*line| (without LF and a CR before it;
 * may be empty), valid until the next feed or clear. Returns true, or false
 * when no complete line is held.
 */
bool mx_linebuf_next(struct mx_linebuf *lb, struct mx_str *line);

/*
 * At end of input: the partial line left without a final LF, if any and not
 * over the cap; it is taken. Returns true with |*line| set, else false.
 */
bool mx_linebuf_finish(struct mx_linebuf *lb, struct mx_str *line);

/* Over-long lines dropped since the last call; resets the count. */
uint64_t mx_linebuf_take_dropped(struct mx_linebuf *lb);

/* Bytes held (complete lines not taken and the partial line). */
size_t mx_linebuf_len(const struct mx_linebuf *lb);

#endif
