/* SPDX-License-Identifier: MIT */
/*
 * The running gateway: one config generation, its upstreams, the HTTP
 * server, the upstream client and the trace, all on one libev loop. Routes
 * each request: GET /health, /mcp (every upstream merged, mcp.h),
 * /mcp/<server> (one upstream, credential injected, nothing merged).
 */
#ifndef MX_GATEWAY_H
#define MX_GATEWAY_H

#include <ev.h>

#include "diag.h"
#include "guard.h"
#include "httpd.h"
#include "model.h"
#include "trace.h"
#include "uclient.h"
#include "upstream.h"

struct mx_mcp;
struct mx_stdio_serve;

struct mx_gateway {
    struct ev_loop *loop;
    struct mx_config *cfg; /* owned */
    struct mx_upstream *upstreams;
    size_t upstream_cnt;
    struct mx_httpd *httpd;
    struct mx_uclient *uclient;
    struct mx_trace *trace;
    struct mx_mcp *mcp;                 /* the merged /mcp endpoint */
    struct mx_metrics *metrics;         /* GET /metrics (metrics.h) */
    struct mx_stdio_serve *stdio_serve; /* /mcp/<server> of stdio upstreams (stdio_serve.h) */
    struct mx_guard_cfg guard;
    char *listen_host;
    uint64_t refused; /* requests refused by the guard */
    int port;
    time_t started;
    size_t inflight; /* forwarded requests not finished */
};

/*
 * Build a gateway for |cfg| (takes ownership; secrets must be resolved) and
 * listen. Returns NULL with |diag| set.
 */
struct mx_gateway *mx_gateway_new(struct ev_loop *loop, struct mx_config *cfg,
                                  struct mx_diag *diag);
/* The same without a listener: no port is bound, nothing is accepted, and
 * requests reach the endpoints only from within the process (`mcplex
 * stdio`, stdio_front.h). */
struct mx_gateway *mx_gateway_new_unbound(struct ev_loop *loop, struct mx_config *cfg,
                                          struct mx_diag *diag);
void mx_gateway_free(struct mx_gateway *gw);
struct mx_upstream *mx_gateway_upstream(struct mx_gateway *gw, struct mx_str name);

/* Request handlers (route.c dispatches to these). */
void mx_health_serve(struct mx_gateway *gw, struct mx_req *req);
void mx_forward_serve(struct mx_gateway *gw, struct mx_upstream *up, struct mx_req *req);

/* Answer |req| with |status| and a JSON body {"error": |msg|}. */
void mx_gateway_error(struct mx_req *req, int status, const char *msg);

#endif
