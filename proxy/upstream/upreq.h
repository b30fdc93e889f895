/* SPDX-License-Identifier: MIT */
/*
 * What every request to an upstream shares, whoever sends it (the
 * /mcp/<server> relay in forward.c, the upstream sessions of /mcp in
 * upsess_*.c): the header lines with the upstream's credential from the vault,
 * and the words a client gets when the upstream fails — a JSON-RPC error
 * code from rpc.h and a message naming the server and the reason, never a
 * secret and never a bare HTTP 401.
 */
#ifndef MX_UPREQ_H
#define MX_UPREQ_H

#include <stddef.h>

#include <jansson.h>

#include "model.h"
#include "str.h"
#include "uclient.h"
#include "upstream.h"

#define MX_UPREQ_MAX_HEADERS 48 /* room for a tool's Mcp-Param-* headers */

/* Header lines for one request; the credential line is wiped on clear. */
struct mx_upreq_hdrs {
    const char *lines[MX_UPREQ_MAX_HEADERS]; /* "Name: value", for mx_ureq_opts.headers */
    char *owned[MX_UPREQ_MAX_HEADERS];
    size_t cnt;
};

void mx_upreq_hdrs_init(struct mx_upreq_hdrs *h);
/* Add "|name|: |value|" ("|name|;" for an empty value, which libcurl sends
 * as an empty header). Returns 0, MX_EINVAL (a control byte in the value:
 * mx_guard_header_value_ok) or MX_ELIMIT (full). */
int mx_upreq_hdrs_add(struct mx_upreq_hdrs *h, const char *name, struct mx_str value);
/* Add the credential line of |up| (its auth kind with mx_upstream_secret;
 * none for auth = "none"), for a request that is not an mx_upcall (which
 * adds it to each attempt itself). Returns 0 or MX_ELIMIT. */
int mx_upreq_hdrs_auth(struct mx_upreq_hdrs *h, const struct mx_upstream *up);
/* Wipe and free every line; the struct may be reused after init. */
void mx_upreq_hdrs_clear(struct mx_upreq_hdrs *h);

/* Why an upstream exchange failed, in the client's words. */
struct mx_upfail {
    int code;           /* JSON-RPC error code (enum mx_rpc_code) */
    const char *reason; /* "auth-failed", "unreachable", "timed-out", "not-awake",
                           "retry-after", "gone", "http-error", "outcome-unknown",
                           "protocol-error" */
    char message[512];
};

/* The upstream answered HTTP |status|, which is not an MCP answer. */
void mx_upfail_status(const struct mx_server_cfg *cfg, long status, struct mx_upfail *out);
/* The exchange failed with |err| from uclient's on_done, |info| as given.
 * MX_EAUTH (from upcall.c): the credential was refused (info->http_status)
 * and its refresh gave no new one (info->cause says why). */
void mx_upfail_transport(const struct mx_server_cfg *cfg, int err, const struct mx_ureq_info *info,
                         struct mx_upfail *out);
/* The upstream broke the protocol: |what| says how (a fixed string). */
void mx_upfail_proto(const struct mx_server_cfg *cfg, const char *what, struct mx_upfail *out);
/* A JSON-RPC error object {"code","message","data":{"server","reason"}}
 * for |f| (new reference), as the "error" member of a response. */
json_t *mx_upfail_error(const struct mx_server_cfg *cfg, const struct mx_upfail *f);

#endif
