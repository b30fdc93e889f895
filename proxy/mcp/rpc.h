/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC 2.0 helpers (jansson): classify messages, build error responses,
 * and the mcplex-specific error codes a client sees for upstream problems.
 */
#ifndef MX_RPC_H
#define MX_RPC_H

#include <jansson.h>

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

#endif
