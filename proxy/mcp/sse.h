/* SPDX-License-Identifier: MIT */
/*
 * Incremental Server-Sent Events decoder (WHATWG HTML "event stream
 * interpretation") and encoder. Pure: bytes in, events out; the decoder can
 * be fed any split of the stream and yields the same events.
 */
#ifndef MX_SSE_H
#define MX_SSE_H

#include <stddef.h>

#include "buf.h"
#include "str.h"

struct mx_sse_event {
    struct mx_str event; /* "" when the stream gave no event name ("message") */
    struct mx_str data;  /* data lines joined with "\n" */
    struct mx_str id;    /* last id seen on the stream, may be empty */
    long retry_ms;       /* -1 when this event carried no retry field */
};

/* Called per dispatched event; slices are valid during the call only. A
 * non-zero return stops decoding and is returned by mx_sse_decode(). */
typedef int (*mx_sse_event_cb)(const struct mx_sse_event *ev, void *data);

struct mx_sse_decoder {
    struct mx_buf line; /* partial line */
    struct mx_buf event;
    struct mx_buf data;
    struct mx_buf id;
    long retry_ms;
    int has_data;
    int saw_cr; /* previous chunk ended with CR: a following LF is part of it */
    int bom_checked;
    mx_sse_event_cb cb;
    void *cb_data;
};

/* |max_event| caps one event's data (and one line); beyond it MX_ELIMIT. */
void mx_sse_decoder_init(struct mx_sse_decoder *d, size_t max_event, mx_sse_event_cb cb,
                         void *data);
void mx_sse_decoder_clear(struct mx_sse_decoder *d);
/* Feed bytes. Returns 0, MX_ELIMIT, or the callback's non-zero value. */
int mx_sse_decode(struct mx_sse_decoder *d, const char *p, size_t len);

/*
 * Append one event to |out|: optional |event| name and |id|, |data| split on
 * newlines into data: lines, then a blank line. Returns 0 or MX_ELIMIT.
 */
int mx_sse_encode(struct mx_buf *out, const char *event, const char *id, struct mx_str data);

#endif
