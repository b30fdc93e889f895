/* SPDX-License-Identifier: MIT */
/*
 * A resumable SSE stream toward a client (MCP 2025-03-26 onward, Streamable
 * HTTP, Resumability and Redelivery): every event carries an id naming the
 * stream and its place in it ("<stream>-<seq>"), and the stream keeps its
 * newest events in a buffer bounded by count and bytes ([listen]
 * stream_buffer_events and stream_buffer_bytes), so that a client that lost
 * the connection and comes back with GET and Last-Event-ID gets what it
 * missed and then the live events. The stream outlives the requests that
 * carry it: a producer writes into it whether or not a client request is
 * attached, and a request that goes away only detaches. With |prime| (MCP
 * 2025-11-25) each attached request starts with a priming event (an id and
 * empty data) and the retry field. It does not know sessions or calls:
 * session.c owns the streams, the call core writes into them.
 */
#ifndef MX_RSTREAM_H
#define MX_RSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "req.h"
#include "str.h"

/* The retry field of a priming event: how long a client waits before it
 * reconnects (MCP 2025-11-25, Streamable HTTP). */
#define MX_RSTREAM_RETRY_MS 1000

struct mx_rstream;

/* What each stream keeps; at least the newest event stays, whatever its
 * size. */
struct mx_rstream_limits {
    size_t max_events;
    size_t max_bytes;
};

/* The producer may write again: the client drained, or went away (then
 * what follows goes to the buffer). */
typedef void (*mx_rstream_cb)(struct mx_rstream *rs, void *data);

/* A new stream number |no| with no request attached. */
struct mx_rstream *mx_rstream_new(uint64_t no, const struct mx_rstream_limits *lim, bool prime);
/* Ends an attached request (its SSE answer ends) and frees; accepts NULL. */
void mx_rstream_free(struct mx_rstream *rs);
uint64_t mx_rstream_no(const struct mx_rstream *rs);

/* The producer's callback (NULL: none). */
void mx_rstream_set_producer(struct mx_rstream *rs, mx_rstream_cb cb, void *data);

/*
 * Make |req| carry the stream: its SSE answer starts (or goes on, when
 * |started|), a priming event first when the stream primes, then the events
 * after |after| (with |resume|; else the events not written yet) and the
 * live ones. A request attached before is ended first (a client that comes
 * back may find its old connection not yet noticed as gone). Returns 0,
 * MX_ENOTFOUND (|after| is newer than the stream's newest event),
 * MX_ELIMIT (events after |after| were dropped from the buffer) or
 * MX_ECLOSED (|req| is gone; forget it). On an error nothing changed.
 * With |req| NULL only the checks are made.
 */
int mx_rstream_attach(struct mx_rstream *rs, struct mx_req *req, bool started, bool resume,
                      uint64_t after);
/* Whether each attached request starts with a priming event. */
bool mx_rstream_primes(const struct mx_rstream *rs);
/* Whether a client request carries the stream now. */
bool mx_rstream_attached(const struct mx_rstream *rs);
/* The oldest event number a resume may name (events after it are kept). */
uint64_t mx_rstream_oldest(const struct mx_rstream *rs);

/*
 * Append |data| (one JSON-RPC message, no CR or LF) as the next event and
 * write it when a request is attached. Returns 0 (written or buffered),
 * MX_EAGAIN (written, but the client is slow: wait for the producer
 * callback) or MX_ELIMIT (the event would exceed |cap| bytes; dropped).
 */
int mx_rstream_send(struct mx_rstream *rs, struct mx_str data, size_t cap);
/* An SSE comment (keepalive) when a request is attached and not slow. */
void mx_rstream_comment(struct mx_rstream *rs, struct mx_str text);
/* No more events: the attached request ends once it has them all; a later
 * resume gets what it missed, then the end. Idempotent. */
void mx_rstream_end(struct mx_rstream *rs);
bool mx_rstream_is_ended(const struct mx_rstream *rs);
/* Detach and end the attached request, if any; the stream stays. */
void mx_rstream_end_req(struct mx_rstream *rs);

/* Parse a Last-Event-ID "<stream>-<seq>". Returns 0 or MX_EINVAL. */
int mx_rstream_parse_id(struct mx_str id, uint64_t *no, uint64_t *seq);

/* Live stream objects, for leak checks. */
size_t mx_rstream_live_cnt(void);

#endif
