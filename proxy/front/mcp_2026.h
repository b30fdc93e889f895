/* SPDX-License-Identifier: MIT */
/*
 * MCP 2026-07-28 (stateless) clients at the merged /mcp endpoint, over the
 * same upstreams, catalogues, merged views and cursors as the 2025 clients.
 * A modern request carries everything in itself (_meta, headers): no client
 * session exists, every upstream request goes through the upstream's shared
 * session. Upstream questions (sampling, elicitation, roots) become Multi
 * Round-Trip input_required results whose signed requestState leads the
 * client's retry back to the waiting upstream call; subscriptions/listen
 * streams carry list_changed and resource updates. Internal to /mcp
 * (mcp.c, mcp_up.c), except the two mx_ functions below, through which
 * /mcp/<server> (forward.c) serves its 2026-07-28 clients with the same
 * machinery scoped to one upstream: its own names, lists and capabilities.
 */
#ifndef MX_MCP_2026_H
#define MX_MCP_2026_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "req.h"

struct mx_mcp;
struct mx_upstream;
struct mcp_modern;

/* State for the modern clients of |m|; freed with mcp_modern_free(), which
 * ends their calls and listen streams (accepts NULL). */
struct mcp_modern *mcp_modern_new(struct mx_mcp *m);
void mcp_modern_free(struct mcp_modern *mm);

/* Whether the parsed POST |msg| belongs to the stateless revision. */
bool mcp_modern_claims(const struct mx_req *req, const json_t *msg);
/* Serve it (|msg| borrowed). */
void mcp_modern_post(struct mx_mcp *m, struct mx_req *req, json_t *msg);
/* A GET or DELETE from a modern client (no session, modern version
 * header): answered here with 405, returns true. */
bool mcp_modern_refuses(struct mx_mcp *m, struct mx_req *req);

/* The merged lists changed (|changed| per enum mx_agg_kind, resources
 * including templates): tell the listen streams that asked for it. */
void mcp_modern_announce(struct mx_mcp *m, const bool *changed);

/* An upstream's notifications/resources/updated (its shared session, upstream
 * index |up|): to the listen streams that follow that resource. */
void mcp_modern_resource_updated(struct mx_mcp *m, size_t up, json_t *msg);
/* How many holders of |uri| of upstream |up| the modern clients count as
 * (0 or 1): the shared session stays subscribed while it is not 0. */
size_t mcp_modern_subscribed(struct mx_mcp *m, size_t up, const char *uri);

/*
 * /mcp/<server> for upstream |up|: when |req| belongs to the stateless
 * revision (the same classifier as /mcp; |msg| is its parsed POST body,
 * borrowed, or NULL), answer it over that upstream alone and return true:
 * the same checks and errors as /mcp, server/discover with its
 * capabilities and instructions, its own lists and names unprefixed and
 * unfiltered, calls relayed as sent, subscriptions/listen for its changes,
 * GET and DELETE 405. Returns false, having answered nothing, for a 2025
 * request.
 */
bool mx_mcp_modern_serve_one(struct mx_mcp *m, struct mx_upstream *up, struct mx_req *req,
                             json_t *msg);
/* Upstream slot |idx| was retired at a reload: its listen streams end (with
 * the final result) and its waiting lists are refused. */
void mx_mcp_modern_retired(struct mx_mcp *m, size_t idx);

#endif
