/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC batches (MCP 2025-03-26, Streamable HTTP: a POST body may be an
 * array of requests, notifications and responses, and a server must accept
 * one). Each element becomes a request of its own — the parent's head with
 * the element as body — handed to the same handler as any POST, so the MCP
 * layer serves it exactly as if it had come alone. The answers of all
 * elements come back to the client on one SSE stream, event by event as
 * they are ready (an element answered with JSON becomes one event, an
 * element answered with SSE passes its events through whole, never
 * interleaved mid-event); a batch without a request is answered 202 once
 * every element was taken. Progress and other notifications of each element
 * reach the client as they happen; a client that goes away aborts every
 * element still running (which cancels their upstream calls as a closed
 * stream does).
 */
#ifndef MX_BATCH_H
#define MX_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include <ev.h>
#include <jansson.h>

#include "req.h"

/* Most elements one batch may hold. */
#define MX_BATCH_MAX 64

/*
 * Why the batch |arr| POSTed in a session negotiated at |version| must be
 * refused (MCP 2025-03-26 has batches, later revisions removed them;
 * initialize, which opens a session, is never in one; 1 to MX_BATCH_MAX
 * elements): a message for the client's -32600, or NULL when it may be
 * served.
 */
const char *mx_batch_refusal(const json_t *arr, const char *version);

/* Serve one element (a request the batch made; the handler owns it as it
 * owns any request). */
typedef void (*mx_batch_dispatch_fn)(struct mx_req *element, void *data);

/*
 * Serve the batch |arr| (a non-empty JSON array of at most MX_BATCH_MAX
 * elements, borrowed) POSTed as |parent|, on |loop|: every element through
 * |dispatch| and the answers on |parent|. |max_event| caps what one element's answer
 * may hold (larger ones become a JSON-RPC error for that element).
 * Returns 0 (the batch owns the response of |parent| from now on) or
 * MX_EINVAL (|arr| empty or too long, which mx_batch_refusal() tells
 * first; nothing was sent).
 */
int mx_batch_serve(struct ev_loop *loop, struct mx_req *parent, const json_t *arr, size_t max_event,
                   mx_batch_dispatch_fn dispatch, void *data);

/* Batches in progress, for leak checks in tests. */
size_t mx_batch_live_cnt(void);

/* Whether |req| is an element of a batch (its answer goes out on the
 * batch's). */
bool mx_batch_is_element(const struct mx_req *req);

#endif
