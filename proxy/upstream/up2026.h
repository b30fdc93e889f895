/* SPDX-License-Identifier: MIT */
/*
 * MCP 2026-07-28 (the stateless revision) toward an upstream, as its client:
 * the shape of each request (params._meta with the protocol version,
 * mcplex's clientInfo and the client capabilities; the MCP-Protocol-Version,
 * Mcp-Method and Mcp-Name headers), what a server/discover answer says about
 * the upstream's revision, the initialize-like result the rest of mcplex
 * reads from it, and the answers that say the revision is wrong. Pure: the
 * exchanges themselves are upsess_http26.c's.
 */
#ifndef MX_UP2026_H
#define MX_UP2026_H

#include <stdbool.h>

#include <jansson.h>

#include "upreq.h"

#define MX_UP26_VERSION "2026-07-28"

/* What a server/discover exchange says about the upstream. */
enum mx_up26_verdict {
    MX_UP26_MODERN = 0,  /* it speaks 2026-07-28: no initialize, no session */
    MX_UP26_LEGACY = 1,  /* it does not: open a 2025 session with initialize */
    MX_UP26_UNKNOWN = 2, /* no evidence (credential refused, 5xx, paused): try later */
    MX_UP26_RETRY = 3,   /* it refused the version yet lists it as supported: ask again */
};

/* The discover request with JSON-RPC id |id| (borrowed) and client
 * capabilities |caps|; new reference. */
json_t *mx_up26_discover(json_t *id, const json_t *caps);

/* The subscriptions/listen request for the list kinds whose listChanged
 * |server_caps| (an initialize-like result's "capabilities") advertises,
 * as its resourceSubscriptions the keys of |uris| and as its taskIds (the
 * tasks extension, SEP-2663) the keys of |tasks| (objects, or NULL); NULL
 * when there is nothing to listen to. New reference. */
json_t *mx_up26_listen(json_t *id, const json_t *server_caps, json_t *uris, json_t *tasks,
                       const json_t *caps);

/* mcplex's own requests to a 2026-07-28 upstream session, never sent as
 * they are: follow (or stop following) params.taskId on its listen
 * stream, whose notifications/tasks come as the session's messages. */
#define MX_UP26_TASK_WATCH   "mcplex/tasks/watch"
#define MX_UP26_TASK_UNWATCH "mcplex/tasks/unwatch"
/* Most tasks one upstream session follows. */
#define MX_UP26_TASK_WATCH_MAX 256

/* Whether the notifications/subscriptions/acknowledged |ack| (a JSON-RPC
 * message, borrowed) lists |uri| among the resourceSubscriptions the
 * upstream honours. */
bool mx_up26_honoured(const json_t *ack, const char *uri);

/*
 * |msg| (a JSON-RPC request, borrowed) as a 2026-07-28 upstream must see
 * it: a copy whose params._meta carries protocolVersion, clientInfo
 * (mcplex) and clientCapabilities |caps| — or, when |msg| already names
 * clientCapabilities (a stateless client's own), those, limited to
 * sampling, elicitation and roots; other _meta keys (progressToken) stay.
 * New reference.
 */
json_t *mx_up26_request(const json_t *msg, const json_t *caps);

/*
 * Add the headers of MCP 2026-07-28, Streamable HTTP, for the shaped request
 * |msg| to |h|: MCP-Protocol-Version, Mcp-Method, and Mcp-Name (params.name
 * of tools/call and prompts/get, params.uri of resources/read), in the
 * "=?base64?...?=" form when the value is not plain visible ASCII or has
 * spaces at its ends. For a tools/call, |params_map| (may be NULL) is the
 * tool's mx_up26_param_map(): each argument it names that is a string,
 * number or boolean goes as Mcp-Param-<header name>, encoded the same way
 * (null and absent arguments get no header). Returns 0, or MX_ELIMIT (a
 * value over its cap, or too many lines) / MX_EINVAL from the lines.
 */
int mx_up26_headers(const json_t *msg, json_t *params_map, struct mx_upreq_hdrs *h);

/*
 * What |tool| (a tools/list entry) asks for with x-mcp-header in the
 * properties of its inputSchema: a new object {argument name: header name},
 * empty when nothing; NULL when an annotation is invalid (not a token name,
 * on a type other than string, integer or boolean, a name used twice in any
 * case, more than 32), which excludes the tool (MCP 2026-07-28, Tools).
 */
json_t *mx_up26_param_map(const json_t *tool);

/*
 * A tools/list |result| as mcplex passes it on: a new reference without the
 * tools mx_up26_param_map() refuses (their names appended to |dropped|, may
 * be NULL); the others' non-empty maps set in |maps| under their names,
 * empty ones removed from it (|maps| may be NULL).
 */
json_t *mx_up26_tools_seen(json_t *result, json_t *maps, json_t *dropped);

/*
 * The verdict of a discover exchange: HTTP |status| and the JSON-RPC
 * message it carried (|answer|, NULL when none or not JSON). A result
 * listing 2026-07-28 in supportedVersions is modern; another result, an
 * error answer, or 400/404/405 without an answer is legacy (a 2025 server
 * knows no server/discover and no request without a session); 401, 403,
 * 5xx and the rest are no evidence. An unsupported-version error (-32022)
 * whose data.supported names 2026-07-28 is a 2026 server that wants the
 * request again (MCP 2026-07-28, Versioning: the client retries with a
 * version from that list): MX_UP26_RETRY.
 */
enum mx_up26_verdict mx_up26_verdict(long status, const json_t *answer);

/* The discover |result| (borrowed) as an initialize result: protocolVersion,
 * capabilities, serverInfo (from _meta), instructions. New reference. */
json_t *mx_up26_init_result(const json_t *result);

/* Whether |answer| (a JSON-RPC message, or NULL) says the upstream does not
 * speak the version it was sent (-32022). */
bool mx_up26_wrong_version(const json_t *answer);

/* |msg| without the clientCapabilities and logLevel keys of params._meta,
 * for a 2025 upstream: a new reference (|msg| itself, or a changed copy). */
json_t *mx_up26_strip(json_t *msg);

/* |result| (a JSON-RPC result object of a 2026-07-28 upstream, changed in
 * place) as a 2025 client sees it: without the members only 2026-07-28
 * has (resultType, ttlMs, cacheScope) and without the upstream's serverInfo
 * in _meta (mcplex is the server the client talks to). */
void mx_up26_legacy_result(json_t *result);

/* Whether |result| is an input_required result (Multi Round-Trip Requests). */
bool mx_up26_input_required(const json_t *result);

#endif
