/* SPDX-License-Identifier: MIT */
/*
 * The HTTP+SSE transport of MCP 2024-11-05 toward clients: GET /sse (or
 * /sse/<server>) opens a stream whose first event, "endpoint", names the
 * message URL (the same path with ?session=<128 random bits in hex>); each
 * POST there answers 202 and carries one JSON-RPC message. It owns those
 * streams and nothing of MCP itself: each message becomes a request of its
 * own to the Streamable HTTP endpoint (/mcp, or /mcp/<server>) with the
 * client session's Mcp-Session-Id, served by the same engine as any POST
 * there, and whatever that request answers (JSON, or each event of an SSE
 * answer) goes out as a "message" event on the client's stream, as does
 * every event of the session's GET stream, which it opens once initialize
 * was answered. Closing the client's stream aborts what is in flight and
 * ends the session (a DELETE of its own).
 */
#ifndef MX_LEGACY_H
#define MX_LEGACY_H

#include <stddef.h>

#include <ev.h>

#include "req.h"

struct mx_legacy;

/* Serve |inner| (a request the transport made, which the handler owns as it
 * owns any request) at the Streamable HTTP endpoint of |server| (NULL: the
 * merged /mcp). */
typedef void (*mx_legacy_dispatch_fn)(struct mx_req *inner, const char *server, void *data);

/* At most |max| streams open at once; events up to |max_event| bytes. */
struct mx_legacy *mx_legacy_new(struct ev_loop *loop, size_t max, size_t max_event,
                                mx_legacy_dispatch_fn dispatch, void *data);
/* Aborts every request in flight and frees; accepts NULL. Call before the
 * endpoints that serve the requests go. */
void mx_legacy_free(struct mx_legacy *l);

/* A request at /sse (|server| NULL) or /sse/<server> that passed the
 * guard: GET opens a stream, POST delivers a message, others get 405. */
void mx_legacy_serve(struct mx_legacy *l, const char *server, struct mx_req *req);

/* Open streams. */
size_t mx_legacy_cnt(const struct mx_legacy *l);

#endif
