/* SPDX-License-Identifier: MIT */
/*
 * SSE responses to clients (MCP Streamable HTTP): the one set of response
 * headers every SSE answer and GET stream starts with, and one event
 * written onto it.
 */
#ifndef MX_SSE_WRITE_H
#define MX_SSE_WRITE_H

#include <stddef.h>

#include "str.h"

struct mx_req;

/*
 * Start |req|'s response as an SSE stream: 200, Content-Type
 * text/event-stream, Cache-Control no-cache and X-Accel-Buffering no (no
 * caching, no buffering in a reverse proxy in front). Returns 0, MX_ECLOSED
 * (the client is gone) or MX_EINVAL (the response had started).
 */
int mx_sse_start(struct mx_req *req);

/*
 * Write |data| (one JSON-RPC message) as an SSE "message" event on the
 * streamed response |req|. Returns 0, MX_EAGAIN (written, but the client is
 * slow: stop until on_drain), MX_ECLOSED (the client is gone) or MX_ELIMIT
 * (the event would exceed |cap| bytes; nothing written).
 */
int mx_sse_write_event(struct mx_req *req, struct mx_str data, size_t cap);

#endif
