/* SPDX-License-Identifier: MIT */
/*
 * The running gateway: one config generation, its upstreams, the HTTP
 * server, the upstream client and the trace, all on one libev loop. Routes
 * each request: GET /health, GET /metrics, /mcp (every upstream merged)
 * and /mcp/<server> (one upstream alone), both served by the endpoints of
 * mcp.h, which get what they need of the gateway at creation (struct
 * mx_front_env: the config, the upstream slots, and the hooks through
 * which the gateway records each call's metrics and access line).
 */
#ifndef MX_GATEWAY_H
#define MX_GATEWAY_H

#include <ev.h>
#include <jansson.h>

#include "diag.h"
#include "guard.h"
#include "httpd.h"
#include "model.h"
#include "trace.h"
#include "uclient.h"
#include "upstream.h"

struct mx_mcp;
struct mx_statuspage;

/*
 * A config generation: the config read at start or at one reload. The
 * current one serves new requests; an older one lives on while an upstream
 * slot it made is still in use (unchanged upstreams keep theirs across
 * reloads), and is wiped and freed after the last one goes.
 */
struct mx_cfg_gen {
    struct mx_cfg_gen *next;
    struct mx_config *cfg; /* owned */
    size_t users;          /* upstream slots made from it */
};

/* What the last reload did, for /health and `mcplex reload`. */
struct mx_reload_info {
    uint64_t ok;     /* reloads applied */
    uint64_t failed; /* reloads refused (the old config kept serving) */
    time_t at;       /* wall clock of the last attempt, 0: none */
    char error[512]; /* why the last attempt was refused; "" after success */
};

struct mx_gateway {
    struct ev_loop *loop;
    struct mx_config *cfg;          /* the current generation's config */
    struct mx_cfg_gen *gens;        /* every generation in use, the current one first */
    struct mx_upstream **upstreams; /* slots by index; see upstream.h for retired */
    size_t upstream_cnt;
    ev_timer retire_timer; /* frees retired slots once their requests ended */
    struct mx_reload_info reload;
    struct mx_httpd *httpd;
    struct mx_uclient *uclient;
    struct mx_trace *trace;
    struct mx_mcp *mcp;           /* the MCP endpoints, /mcp and /mcp/<server> (mcp.h) */
    struct mx_legacy *legacy;     /* HTTP+SSE at /sse and /sse/<server> (legacy.h) */
    struct mx_metrics *metrics;   /* GET /metrics (metrics.h) */
    struct mx_statuspage *status; /* GET /, /status/... (statuspage.h) */
    struct mx_guard_cfg guard;
    char *listen_host;
    uint64_t refused; /* requests refused by the guard */
    int port;
    time_t started;
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
/* The live (not retired) upstream called |name|, or NULL. */
struct mx_upstream *mx_gateway_upstream(struct mx_gateway *gw, struct mx_str name);

/*
 * Apply |cfg| (ownership taken; secrets resolved) to the running gateway:
 * upstreams whose settings and secrets did not change keep their sessions
 * and connections; changed and removed ones are retired (hidden at once,
 * freed when their requests ended); new ones join, and clients hear
 * list_changed. [listen] address, tls, cert and key need a restart (a
 * warning says so); the client token, allowed origins and log level apply.
 * Returns 0; on failure (MX_ELIMIT: too many upstream slots) the config is
 * freed and |err| says why.
 */
int mx_gateway_reload(struct mx_gateway *gw, struct mx_config *cfg, char *err, size_t cap);
/* Record a refused reload (a config that failed to load) for /health. */
void mx_gateway_reload_refused(struct mx_gateway *gw, const char *why);

/* A new upstream slot for |cfg| of generation |gen| (reload.c); reuses a
 * slot freed by an earlier reload. NULL when MX_GATEWAY_MAX_SLOTS are used. */
#define MX_GATEWAY_MAX_SLOTS 256 /* merged-list cursors name a source in one byte */
struct mx_upstream *mx_gateway_slot_add(struct mx_gateway *gw, const struct mx_server_cfg *cfg,
                                        struct mx_cfg_gen *gen);

/* Request handlers (gateway.c dispatches to these; health.c). */
void mx_health_serve(struct mx_gateway *gw, struct mx_req *req);
/* What GET /health answers, as a new object (the status page reads it). */
json_t *mx_health_json(struct mx_gateway *gw);
/* The status page's facts of the gateway |data| (statuspage.h's state). */
json_t *mx_health_page_state(void *data);
void mx_metrics_serve(struct mx_gateway *gw, struct mx_req *req);
/* Calls in flight to upstreams with a client waiting (what a drain waits for). */
size_t mx_gateway_inflight(const struct mx_gateway *gw);

/* Answer |req| with |status| and a JSON body {"error": |msg|}. */
void mx_gateway_error(struct mx_req *req, int status, const char *msg);

#endif
