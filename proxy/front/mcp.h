/* SPDX-License-Identifier: MIT */
/*
 * The MCP endpoints: POST|GET|DELETE /mcp, one MCP server made of every
 * configured upstream, and /mcp/<server>, the same engine scoped to one
 * upstream (its own names, lists and capabilities, nothing merged), for
 * clients of every revision (2025-03-26 to 2025-11-25 with mcplex's own
 * client sessions, and stateless 2026-07-28 requests), whatever the
 * upstream speaks. It owns the client sessions, the upstream sessions it
 * opens for them (one shared session per upstream, or one per client),
 * each upstream's catalogue (capabilities, tools, prompts, resources,
 * templates), the merged views with their names and cursors, and the id,
 * token and request maps that keep clients apart (call.h). See
 * aggregate.h for the name rule, session.h and upsess.h for the two kinds
 * of session. What it needs of the gateway comes in struct mx_front_env.
 */
#ifndef MX_MCP_H
#define MX_MCP_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "call.h"
#include "model.h"
#include "req.h"
#include "upstream.h"

struct mx_mcp;
struct mx_uclient;

/* What the endpoints are made with (borrowed; the pointers must outlive
 * the endpoints). */
struct mx_front_env {
    struct ev_loop *loop;
    const struct mx_config *cfg;    /* the current config (mx_mcp_reloaded changes it) */
    struct mx_upstream *const *ups; /* the upstream slots at the start, by index */
    size_t up_cnt;
    struct mx_uclient *uc;           /* for the upstream sessions */
    struct mx_front_hooks hooks;     /* accounting, trace, dropped notifications */
    const struct mx_call_upops *ops; /* NULL: upsess.h's functions */
};

/* The endpoints for |env| (copied). */
struct mx_mcp *mx_mcp_new(const struct mx_front_env *env);
/* Ends every session and upstream session; accepts NULL. Call before the
 * gateway frees its uclient. */
void mx_mcp_free(struct mx_mcp *m);

/*
 * Reload: upstream |up| joined in its slot (a new one, or one reused), slot
 * |idx| was retired (hidden from lists and routing; its calls in flight
 * finish; the sessions, streams and waits of its /mcp/<server> end), or is
 * gone (its upstream sessions close; the slot may be reused). reloaded:
 * the config is now |cfg|; clients hear list_changed if their view changed.
 */
void mx_mcp_slot_added(struct mx_mcp *m, struct mx_upstream *up);
void mx_mcp_slot_retired(struct mx_mcp *m, size_t idx);
void mx_mcp_slot_gone(struct mx_mcp *m, size_t idx);
void mx_mcp_reloaded(struct mx_mcp *m, const struct mx_config *cfg);

/* Serve one request for the path /mcp. */
void mx_mcp_serve(struct mx_mcp *m, struct mx_req *req);
/* Serve one request for /mcp/<server> of the live upstream |up|. */
void mx_mcp_serve_one(struct mx_mcp *m, struct mx_upstream *up, struct mx_req *req);

/* Sessions, per-upstream state and every renamed tool or prompt with its
 * origin, for /health (no secrets). New reference. */
json_t *mx_mcp_health(struct mx_mcp *m);

/* initialize requests refused over [listen] max_sessions since start. */
uint64_t mx_mcp_sessions_refused(const struct mx_mcp *m);
/* Open client sessions (2025), both endpoints together. */
size_t mx_mcp_session_cnt(const struct mx_mcp *m);
/* Calls in flight to upstreams with a client waiting: what a drain waits for. */
size_t mx_mcp_inflight(const struct mx_mcp *m);

#endif
