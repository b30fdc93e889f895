/* SPDX-License-Identifier: MIT */
/*
 * The protocol-neutral request: what routing, the MCP layer and sandbox-sim
 * see of an HTTP/1.1 request or an HTTP/2 stream, alike. The request head
 * and the whole body (capped by the server's max_body) are available when the
 * handler is called; the response is written either whole or streamed. On
 * HTTP/2, :authority appears as a Host header and header names are lowercase
 * (lookups are case-insensitive either way).
 *
 * Ownership: the connection owns the request. The handler may keep the
 * pointer until it calls mx_req_end(), or until its on_abort callback
 * returns, whichever comes first; after that the request may be freed.
 */
#ifndef MX_REQ_H
#define MX_REQ_H

#include <stdbool.h>
#include <stddef.h>

#include "str.h"

struct mx_req;

struct mx_header {
    struct mx_str name;
    struct mx_str value;
};

/* A header to send: NUL-terminated name and value. */
struct mx_hdr_out {
    const char *name;
    const char *value;
};

typedef void (*mx_req_cb)(struct mx_req *req, void *data);

/* Request head, valid until the request is freed. */
struct mx_str mx_req_method(const struct mx_req *req);
struct mx_str mx_req_path(const struct mx_req *req);  /* without the query */
struct mx_str mx_req_query(const struct mx_req *req); /* after '?', may be empty */
struct mx_str mx_req_body(const struct mx_req *req);
size_t mx_req_header_cnt(const struct mx_req *req);
const struct mx_header *mx_req_header_at(const struct mx_req *req, size_t i);
/* The first header named |name| (case-insensitive), or NULL. */
const struct mx_str *mx_req_header(const struct mx_req *req, const char *name);
/* Peer address as text ("127.0.0.1"). */
const char *mx_req_peer(const struct mx_req *req);
/* 11 for HTTP/1.1, 10 for HTTP/1.0, 20 for HTTP/2; 0 for a request that came
 * over no HTTP at all (mcplex stdio). */
int mx_req_http_version(const struct mx_req *req);
/* A small id unique within the process, for logs. */
unsigned long mx_req_id(const struct mx_req *req);

/*
 * Callbacks for the handler. on_drain runs when queued response bytes fell
 * below the low watermark after mx_req_write() returned MX_EAGAIN (on HTTP/2:
 * once the peer's flow-control window let them go). on_abort runs once if
 * the client goes away before mx_req_end() (connection closed, or on HTTP/2
 * RST_STREAM); the handler must drop the request in it and must not call any
 * mx_req_* on it afterwards. Neither runs inside the handler's own
 * mx_req_* call.
 */
void mx_req_set_handler(struct mx_req *req, mx_req_cb on_drain, mx_req_cb on_abort, void *data);
void *mx_req_handler_data(const struct mx_req *req);

/*
 * Start the response with |status| and |cnt| headers. Content-Length and
 * Transfer-Encoding are managed here: with |body_len| >= 0 the length is
 * known; with -1 the body is streamed (chunked on HTTP/1.1).
 * Returns 0, MX_EINVAL if already started, or MX_ECLOSED.
 *
 * MX_ECLOSED from any response call means the client is gone: on_abort will
 * not be called for it, and the handler must forget |req| at once.
 */
int mx_req_start(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                 long long body_len);

/*
 * Queue response body bytes. Returns 0, or MX_EAGAIN when the bytes were
 * queued but the output is above the high watermark (stop producing until
 * on_drain), or MX_ECLOSED.
 */
int mx_req_write(struct mx_req *req, const void *p, size_t len);

/* Finish the response. After this the handler must forget |req|. */
void mx_req_end(struct mx_req *req);

/*
 * Whatever answers |req| also sends header |name|: |value| (both copied),
 * e.g. the CORS headers of an allowed Origin, which the router knows and
 * the handlers do not. At most MX_REQ_EXTRA_MAX; returns 0 or MX_ELIMIT.
 */
#define MX_REQ_EXTRA_MAX 4
int mx_req_add_response_header(struct mx_req *req, const char *name, const char *value);

/* Convenience: start + write + end with a known length. */
int mx_req_respond(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                   const char *content_type, const void *body, size_t len);

/*
 * Drop the connection without finishing the response (a fault switch in
 * sandbox-sim, or a broken upstream stream in the proxy). The handler must
 * forget |req|; on_abort is not called.
 */
void mx_req_reset(struct mx_req *req);

/* Standard reason phrase for |status|. */
const char *mx_http_reason(int status);

#endif
