/* SPDX-License-Identifier: MIT */
/*
 * MCP 2026-07-28 (the stateless revision) on the front side of /mcp: which
 * POSTs belong to it, and the per-request checks of its Streamable HTTP
 * transport (MCP-Protocol-Version, Mcp-Method and Mcp-Name headers against
 * the body, the required _meta keys, supported versions, known methods),
 * each failure with the HTTP status and JSON-RPC code the revision names.
 * Pure: headers come in as slices, nothing is sent from here.
 */
#ifndef MX_REVISION_H
#define MX_REVISION_H

#include <stdbool.h>

#include <jansson.h>

#include "str.h"

/* The stateless revision mcplex speaks to clients. */
#define MX_REV_MODERN "2026-07-28"

/* MCP 2026-07-28 error codes (Streamable HTTP, Versioning). */
#define MX_REV_HEADER_MISMATCH      -32020
#define MX_REV_MISSING_CAPABILITY   -32021
#define MX_REV_UNSUPPORTED_VERSION  -32022
#define MX_REV_META_VERSION         "io.modelcontextprotocol/protocolVersion"
#define MX_REV_META_CAPS            "io.modelcontextprotocol/clientCapabilities"
#define MX_REV_META_LOG_LEVEL       "io.modelcontextprotocol/logLevel"
#define MX_REV_META_SERVER_INFO     "io.modelcontextprotocol/serverInfo"
#define MX_REV_META_SUBSCRIPTION_ID "io.modelcontextprotocol/subscriptionId"

/* The tasks extension (SEP-2663), as named in capabilities.extensions. */
#define MX_REV_EXT_TASKS "io.modelcontextprotocol/tasks"

/* The request headers the checks look at; NULL when absent. */
struct mx_rev_hdrs {
    const struct mx_str *version; /* MCP-Protocol-Version */
    const struct mx_str *method;  /* Mcp-Method */
    const struct mx_str *name;    /* Mcp-Name */
    bool session;                 /* an Mcp-Session-Id was sent */
    /* the request came over a transport without HTTP headers (stdio):
     * what the Streamable HTTP transport asks of headers does not apply,
     * the version is the one _meta names */
    bool no_headers;
};

/* Why a request was refused. |data| is a new reference or NULL. */
struct mx_rev_error {
    int status; /* HTTP status */
    int code;   /* JSON-RPC error code */
    char message[240];
    json_t *data;
};

/*
 * Whether the POSTed message |msg| is for the stateless revision (MCP
 * checklist §2.1): it names a protocol version in params._meta; or it has no
 * session and its MCP-Protocol-Version header names 2026-07-28 or later.
 * A session id alone never makes a request modern, nor does a _meta object
 * (legacy requests carry progressToken there).
 */
bool mx_rev_is_modern(const json_t *msg, const struct mx_rev_hdrs *h);

/*
 * The session revisions (those with initialize) mcplex speaks, to clients
 * and to upstreams, newest first, NULL-terminated (MCP 2025-11-25,
 * Lifecycle): the one list, also for the version an upstream's initialize
 * answer may name.
 */
extern const char *const mx_rev_session_versions[];

/* Whether |v| (may be NULL) is one of mx_rev_session_versions. */
bool mx_rev_session_version_known(const char *v);

/* Whether |v| (NUL-terminated) is a revision served statelessly. */
bool mx_rev_version_supported(const char *v);

/*
 * Check the request |msg| (a JSON-RPC request object) against its headers in
 * the order MCP 2026-07-28 asks for: version header present (-32020), _meta
 * with protocolVersion and clientCapabilities (-32602), header version equal
 * to the _meta one (-32020), Mcp-Method equal to the method (-32020),
 * Mcp-Name equal to params.name or params.uri for tools/call, prompts/get and
 * resources/read, after decoding the =?base64?...?= form (-32020), version
 * supported (-32022, data.supported and data.requested), method known
 * (404, -32601). Returns 0, or MX_EPROTO with |*err| filled.
 */
int mx_rev_check(const json_t *msg, const struct mx_rev_hdrs *h, struct mx_rev_error *err);

/*
 * Whether the Accept value |accept| (NULL: absent) lists the media type
 * |want| ("type/subtype") with a q above 0 (RFC 9110 §12.5.1); with
 * |wildcards|, the any-type range and a range of |want|'s type (text/ and
 * a star) count too.
 */
bool mx_rev_accepts(const struct mx_str *accept, const char *want, bool wildcards);

/*
 * The media checks of a POST (MCP 2026-07-28, Streamable HTTP, the same as
 * for 2025 clients at /mcp): Content-Type application/json (415), and an
 * Accept header listing application/json and text/event-stream (406). The
 * header values may be NULL (absent). Returns 0, or MX_EPROTO with |*err|
 * filled (code -32600, no data).
 */
int mx_rev_check_media(const struct mx_str *content_type, const struct mx_str *accept,
                       struct mx_rev_error *err);

/* Looks up the request header |name| (case-insensitive); NULL when absent. */
typedef const struct mx_str *(*mx_rev_header_fn)(const void *ctx, const char *name);

/*
 * MCP 2026-07-28, Streamable HTTP, Custom Headers: the Mcp-Param-{Name}
 * headers of a tools/call, for each property of the tool's |input_schema|
 * whose "x-mcp-header" names one (string, integer and boolean properties;
 * other annotations are ignored), against its value in |arguments|. A value
 * without its header, a header without its value, a header that does not
 * decode (=?base64?...?= form, visible ASCII otherwise), or that differs
 * from the value (integers compared as numbers, booleans as true/false) is
 * 400/-32020. |get| reads the headers with |ctx|. Returns 0, or MX_EPROTO
 * with |*err| filled (no data).
 */
int mx_rev_check_params(const json_t *input_schema, const json_t *arguments, mx_rev_header_fn get,
                        const void *ctx, struct mx_rev_error *err);

/*
 * Decode a header value that may use the Base64 sentinel form of MCP
 * 2026-07-28 into |out| (|cap| bytes, NUL added). Plain values must be
 * visible ASCII or spaces inside. Returns the decoded length, or MX_EINVAL
 * (bad characters, bad base64, a NUL inside), MX_ELIMIT (|cap| too small).
 */
int mx_rev_header_decode(struct mx_str v, char *out, size_t cap);

#endif
