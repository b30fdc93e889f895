/* SPDX-License-Identifier: MIT */
/*
 * Who may call the local endpoint: the Host check (DNS rebinding), the Origin
 * check (browsers), and the client token. Pure: request facts in, a verdict
 * out, so every rule is table-tested and fuzzed.
 */
#ifndef MX_GUARD_H
#define MX_GUARD_H

#include <stdbool.h>

#include "secret.h"
#include "str.h"

struct mx_guard_cfg {
    const char *listen_host;            /* host part of [listen] address, without brackets */
    const char *const *allowed_origins; /* exact origins ("http://localhost:3000") */
    size_t allowed_origin_cnt;
    const struct mx_secret *client_token; /* NULL: no token required */
};

struct mx_guard_req {
    struct mx_str method;
    struct mx_str path;
    const struct mx_str *host;          /* NULL when absent */
    const struct mx_str *origin;        /* NULL when absent */
    const struct mx_str *authorization; /* NULL when absent */
    const struct mx_str *accept;        /* NULL when absent */
    /* the request carries a live status-page login cookie (checked by the
     * caller, which keeps them); counts only on the page's paths */
    bool page_login;
};

enum mx_guard_verdict {
    MX_GUARD_OK = 0,
    MX_GUARD_BAD_HOST,   /* 403: Host is not loopback nor the configured name */
    MX_GUARD_BAD_ORIGIN, /* 403: Origin present, not allowed and not the Host's own */
    MX_GUARD_NO_TOKEN,   /* 403: client token required and missing or wrong */
    MX_GUARD_NOT_STREAM, /* 406: a GET at /mcp or /mcp/<server> that asks for no SSE stream */
    MX_GUARD_NO_LOGIN,   /* 403: the status page, with a client token, without it or a login */
};
/*
 * The status page's paths: "/", "/status" and "/status/..." (its assets,
 * its feed, its login). With a client token they accept the token or a
 * page login (mx_guard_req.page_login), except "/status/login", which its
 * one-time code guards, and "/status/code", which makes those codes and
 * takes the token only. Every other path takes the token only.
 */
bool mx_guard_is_page_path(struct mx_str path);

enum mx_guard_verdict mx_guard_check(const struct mx_guard_cfg *cfg,
                                     const struct mx_guard_req *req);

/* A client-facing sentence for |v| (never mentions a secret value). */
const char *mx_guard_message(enum mx_guard_verdict v);
/* The HTTP status that refuses |v| (403, or 406 for MX_GUARD_NOT_STREAM). */
int mx_guard_status(enum mx_guard_verdict v);

/*
 * Whether a header value may cross mcplex, in either direction: no control
 * byte but HTAB (RFC 9110 §5.5: field-value is VCHAR, obs-text, SP, HTAB).
 * A CR or LF would let the sender write header lines of its choosing to the
 * other side; the other control bytes are refused along with them. The one
 * check for every value copied between a client and an upstream.
 */
bool mx_guard_header_value_ok(struct mx_str value);

/* Whether |host| (a Host header value, with optional port) names this
 * machine's loopback: localhost, *.localhost, 127.0.0.0/8, [::1]. */
bool mx_guard_host_is_loopback(struct mx_str host);

/* Whether |origin| is in the allow-list. */
bool mx_guard_origin_allowed(const struct mx_guard_cfg *cfg, struct mx_str origin);

#endif
