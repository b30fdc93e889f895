/* SPDX-License-Identifier: MIT */
/*
 * /mcp/<server> for a stdio upstream: a Streamable HTTP server (MCP
 * 2025-03-26 to 2025-11-25) in front of one `command` server. mcplex owns
 * the client sessions (its own Mcp-Session-Id) and answers initialize from
 * the process's initialize result; requests are relayed through an
 * upstream session (upsess.h, one process shared by every client of this
 * endpoint, or one per client with session = "per-client") with ids and
 * progress tokens rewritten, and answered as JSON, or as SSE when messages
 * come before the answer. Notifications of no request go to the sessions'
 * GET streams. Nothing is merged: this is that one server, alone.
 *
 * Nothing here is stdio's own: every upstream whose transport cannot be
 * relayed as it is (no MX_UPSESS_CAP_RELAY: legacy HTTP+SSE too) is served
 * the same way, through its upsess.
 *
 * The processes behind this endpoint are not the ones behind /mcp: each
 * endpoint opens its own upstream sessions, as it does for HTTP upstreams.
 */
#ifndef MX_STDIO_SERVE_H
#define MX_STDIO_SERVE_H

#include <jansson.h>

#include "gateway.h"

struct mx_stdio_serve;

/* Serve |req| for stdio upstream |up| of |gw| (|msg|: its POST body parsed,
 * borrowed; NULL when it is not JSON); the endpoint's state is made on
 * first use and kept in gw->stdio_serve. */
void mx_stdio_serve(struct mx_gateway *gw, struct mx_upstream *up, struct mx_req *req, json_t *msg);

/* End every session and process of the endpoint; accepts NULL. Call after
 * the HTTP server is freed. */
void mx_stdio_serve_free(struct mx_stdio_serve *ss);

/* Upstream slot |idx| left the config (reload): end its sessions and
 * process; accepts NULL. */
void mx_stdio_serve_slot_gone(struct mx_stdio_serve *ss, size_t idx);

#endif
