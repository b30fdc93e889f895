/* SPDX-License-Identifier: MIT */
/*
 * The merged endpoint, POST|GET|DELETE /mcp: one MCP server made of every
 * configured upstream (MCP 2025-03-26 to 2025-11-25 on both sides). It owns
 * the client sessions, the upstream sessions it opens for them (one shared
 * session per upstream, or one per client), each upstream's catalogue
 * (capabilities, tools, prompts, resources, templates), the merged views
 * with their names and cursors, and the id, token and request maps that
 * keep clients apart. See aggregate.h for the name rule, session.h and
 * upsess.h for the two kinds of session.
 */
#ifndef MX_MCP_H
#define MX_MCP_H

#include <stdint.h>

#include <jansson.h>

#include "req.h"

struct mx_gateway;
struct mx_mcp;

/* The aggregate for |gw| (its config, upstreams, uclient, trace, loop). */
struct mx_mcp *mx_mcp_new(struct mx_gateway *gw);
/* Ends every session and upstream session; accepts NULL. Call before the
 * gateway frees its uclient. */
void mx_mcp_free(struct mx_mcp *m);

/*
 * Reload (gateway.h): gateway slot |idx| got a new upstream, was retired
 * (hidden from lists and routing; its calls in flight finish), or is gone
 * (its upstream sessions close; the slot may be reused). reloaded: the
 * gateway's config changed; clients hear list_changed if their view did.
 */
void mx_mcp_slot_added(struct mx_mcp *m, size_t idx);
void mx_mcp_slot_retired(struct mx_mcp *m, size_t idx);
void mx_mcp_slot_gone(struct mx_mcp *m, size_t idx);
void mx_mcp_reloaded(struct mx_mcp *m);

/* Serve one request for the path /mcp. */
void mx_mcp_serve(struct mx_mcp *m, struct mx_req *req);

/* Sessions, per-upstream state and every renamed tool or prompt with its
 * origin, for /health (no secrets). New reference. */
json_t *mx_mcp_health(struct mx_mcp *m);

/* initialize requests refused over [listen] max_sessions since start. */
uint64_t mx_mcp_sessions_refused(const struct mx_mcp *m);

#endif
