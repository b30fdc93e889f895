/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC 2.0 helpers (jansson): classify messages, build error responses,
 * and the mcplex-specific error codes a client sees for upstream problems.
 */
#ifndef MX_RPC_H
#define MX_RPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "str.h"

/* The JSON-RPC error codes mcplex sends: the standard ones, those MCP
 * clients know, and those of the "server error" range reserved for mcplex.
 * MCP 2026-07-28's own codes are in revision.h. */
enum mx_rpc_code {
    MX_RPC_PARSE_ERROR = -32700,          /* JSON-RPC 2.0 §5.1 */
    MX_RPC_INVALID_REQUEST = -32600,      /* JSON-RPC 2.0 §5.1 */
    MX_RPC_METHOD_NOT_FOUND = -32601,     /* JSON-RPC 2.0 §5.1 */
    MX_RPC_INVALID_PARAMS = -32602,       /* JSON-RPC 2.0 §5.1 */
    MX_RPC_INTERNAL_ERROR = -32603,       /* JSON-RPC 2.0 §5.1 */
    MX_RPC_SESSION_GONE = -32001,         /* TS SDK: "Session not found" */
    MX_RPC_NO_RESOURCE = -32002,          /* MCP 2025-06-18, Resources; -32602 in 2026-07-28 */
    MX_RPC_UPSTREAM_UNAVAILABLE = -32010, /* refused, reset, down, paused too long */
    MX_RPC_UPSTREAM_AUTH = -32011,        /* upstream refused the vault credential */
    MX_RPC_UPSTREAM_TIMEOUT = -32012,     /* request_timeout passed */
    MX_RPC_OUTCOME_UNKNOWN = -32013,      /* the request may or may not have run */
    MX_RPC_UPSTREAM_HTTP = -32014,        /* upstream answered an unexpected HTTP status */
};

enum mx_rpc_kind {
    MX_RPC_INVALID = 0,
    MX_RPC_REQUEST = 1,
    MX_RPC_NOTIFICATION = 2,
    MX_RPC_RESPONSE = 3,
};

enum mx_rpc_kind mx_rpc_classify(const json_t *msg);

/*
 * Parse |body| as one JSON value with duplicate keys rejected. Returns a new
 * reference or NULL.
 */
json_t *mx_rpc_parse(struct mx_str body);

/* {"jsonrpc":"2.0","id":|id|,"error":{"code","message"[,"data"]}}; |id| may be
 * NULL (then omitted); steals |data|. Returns a new reference. */
json_t *mx_rpc_error_new(const json_t *id, int code, const char *message, json_t *data);

/* Serialize compactly; caller frees with free(). */
char *mx_rpc_dump(const json_t *msg);

/*
 * |parent|'s member |key| made |parent|'s own to change: a shallow copy of
 * that object put in its place, so that members set in it change no other
 * message that shares the original (messages for upstreams are shallow
 * copies of the client's, copied along the path that changes). When the
 * member is missing or not an object: a new empty object there if |make|,
 * else NULL. |parent| must be an object.
 */
json_t *mx_rpc_own(json_t *parent, const char *key, bool make);

/* The changes a request's text takes on its way to an upstream. */
struct mx_rpc_edits {
    uint64_t id;      /* the new "id" */
    bool token;       /* params._meta.progressToken becomes |id| too */
    const char *name; /* params.name becomes this string, or NULL */
};

/*
 * The request |text| (one JSON object, as the client sent it) with the
 * edits made and every other byte as it came, in a new NUL-terminated
 * string of *|len| bytes (free()). NULL when the text is not one that
 * mx_jscan_object decides, or lacks a member an edit changes: the caller
 * encodes the parsed message then, as before.
 */
char *mx_rpc_splice(struct mx_str text, const struct mx_rpc_edits *ed, size_t *len);

#endif
