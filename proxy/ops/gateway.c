/* SPDX-License-Identifier: MIT */
/*
 * Gateway assembly and request routing, and the hooks the MCP endpoints
 * report through: every call's per-method metrics and access line, the
 * trace, dropped upstream notifications.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alloc.h"
#include "buf.h"
#include "gateway.h"
#include "legacy.h"
#include "log.h"
#include "mcp.h"
#include "metrics.h"
#include "rpc.h"
#include "statuspage.h"
#include "suggest.h"

/* What one message of an HTTP+SSE client's stream may hold, as the SSE
 * answers of /mcp (mcp.c). */
#define LEGACY_EVENT_MAX (16u * 1024 * 1024)

void mx_gateway_error(struct mx_req *req, int status, const char *msg)
{
    json_t *o = json_pack("{s:s}", "error", msg);
    char *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    mx_req_respond(req, status, NULL, 0, "application/json", body, strlen(body));
    free(body);
}

struct mx_upstream *mx_gateway_upstream(struct mx_gateway *gw, struct mx_str name)
{
    for (size_t i = 0; i < gw->upstream_cnt; i++) {
        struct mx_upstream *u = gw->upstreams[i];
        if (!u->retired && mx_str_eq(mx_str_cstr(u->cfg->name), name))
            return u;
    }
    return NULL;
}

/* Host, Origin and client token, before anything else looks at the request. */
static bool guard_pass(struct mx_gateway *gw, struct mx_req *req)
{
    struct mx_guard_req g = {mx_req_method(req),
                             mx_req_path(req),
                             mx_req_header(req, "Host"),
                             mx_req_header(req, "Origin"),
                             mx_req_header(req, "Authorization"),
                             mx_req_header(req, "Accept"),
                             mx_statuspage_logged_in(gw->status, req)};
    enum mx_guard_verdict v = mx_guard_check(&gw->guard, &g);
    if (v == MX_GUARD_OK)
        return true;
    /* One line per refusal at debug only: a hostile page could otherwise
     * fill the log; /health counts them. */
    gw->refused++;
    mx_log_debug("guard", "refused request from %s: %s", mx_req_peer(req), mx_guard_message(v));
    /* A JSON-RPC error (id null: nothing was read), as MCP clients read it. */
    json_t *e = mx_rpc_error_new(json_null(), MX_RPC_INVALID_REQUEST, mx_guard_message(v), NULL);
    char *body = mx_rpc_dump(e);
    json_decref(e);
    mx_req_respond(req, mx_guard_status(v), NULL, 0, "application/json", body, strlen(body));
    free(body);
    return false;
}

/* CORS preflight for an allowed Origin (the guard already refused others). */
static void preflight(struct mx_req *req)
{
    const struct mx_str *o = mx_req_header(req, "Origin");
    char origin[256];
    snprintf(origin, sizeof(origin), "%.*s", o ? (int)o->len : 0, o ? o->p : "");
    struct mx_hdr_out h[] = {
        {"Access-Control-Allow-Origin", origin},
        {"Access-Control-Allow-Methods", "GET, POST, DELETE"},
        {"Access-Control-Allow-Headers", "Content-Type, Accept, Authorization, Mcp-Session-Id, "
                                         "MCP-Protocol-Version, Last-Event-ID"},
        {"Access-Control-Expose-Headers", "Mcp-Session-Id, MCP-Protocol-Version"},
        {"Access-Control-Max-Age", "600"},
        {"Vary", "Origin"},
    };
    mx_req_respond(req, 204, h, sizeof(h) / sizeof(h[0]), NULL, NULL, 0);
}

static bool is_server_name(struct mx_str s)
{
    if (s.len == 0 || s.len > 32)
        return false;
    for (size_t i = 0; i < s.len; i++) {
        char c = s.p[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

/*
 * /mcp/<name> for a name no server has: 404 with a JSON-RPC error (id null:
 * the body was not read) that lists the servers' names, and the nearest one
 * when |name| looks like a slip. Names only: never a URL, which may carry a
 * key. The guard has run, so a client token already gates this list.
 */
static void no_such_server(struct mx_gateway *gw, struct mx_req *req, struct mx_str name)
{
    const char *names[MX_GATEWAY_MAX_SLOTS];
    size_t cnt = 0;
    json_t *list = json_array();
    struct mx_buf msg;
    for (size_t i = 0; i < gw->upstream_cnt && cnt < MX_GATEWAY_MAX_SLOTS; i++) {
        if (gw->upstreams[i]->retired)
            continue;
        names[cnt++] = gw->upstreams[i]->cfg->name;
        json_array_append_new(list, json_string(gw->upstreams[i]->cfg->name));
    }
    /* 256 names of 32 characters and the sentences around them */
    mx_buf_init(&msg, 16 * 1024);
    bool shown = is_server_name(name);
    int near = shown ? mx_suggest(name, names, cnt) : -1;
    int rc = 0;
    if (shown) {
        rc |= mx_buf_append_str(&msg, "no server '");
        rc |= mx_buf_append(&msg, name.p, name.len);
        rc |= mx_buf_append_str(&msg, "'");
    } else {
        rc |= mx_buf_append_str(&msg, "no such server");
    }
    if (cnt == 0) {
        rc |= mx_buf_append_str(&msg, ": none is configured; add a [servers.NAME] table to the "
                                      "config");
    } else {
        if (near >= 0) {
            rc |= mx_buf_append_str(&msg, "; did you mean /mcp/");
            rc |= mx_buf_append_str(&msg, names[near]);
            rc |= mx_buf_append_str(&msg, "? The configured servers are: ");
        } else {
            rc |= mx_buf_append_str(&msg, "; the configured servers are: ");
        }
        for (size_t i = 0; i < cnt; i++) {
            rc |= mx_buf_append_str(&msg, i ? ", " : "");
            rc |= mx_buf_append_str(&msg, names[i]);
        }
        rc |= mx_buf_append_str(&msg, " (all of them at /mcp)");
    }
    rc |= mx_buf_append(&msg, "", 1);
    MX_ASSERT(rc == 0); /* the cap holds every name a gateway can have */
    json_t *e = mx_rpc_error_new(json_null(), MX_RPC_INVALID_REQUEST, mx_buf_data(&msg),
                                 json_pack("{s:o}", "servers", list));
    char *body = mx_rpc_dump(e);
    json_decref(e);
    mx_buf_clear(&msg);
    mx_req_respond(req, 404, NULL, 0, "application/json", body, strlen(body));
    free(body);
}

/* /mcp/<name>: the endpoint of server |name|, or the list of servers. */
static void serve_mcp(struct mx_gateway *gw, struct mx_req *req, struct mx_str name)
{
    struct mx_upstream *up = mx_gateway_upstream(gw, name);
    if (up == NULL) {
        no_such_server(gw, req, name);
        return;
    }
    mx_mcp_serve_one(gw->mcp, up, req);
}

/* A message of an HTTP+SSE client, as a request at /mcp or /mcp/<server>
 * (legacy.h); the server may have gone in a reload since its stream opened. */
static void legacy_dispatch(struct mx_req *inner, const char *server, void *data)
{
    struct mx_gateway *gw = data;
    if (server)
        serve_mcp(gw, inner, mx_str_cstr(server));
    else
        mx_mcp_serve(gw->mcp, inner);
}

static void on_request(struct mx_req *req, void *data)
{
    struct mx_gateway *gw = data;
    struct mx_str path = mx_req_path(req);
    struct mx_str method = mx_req_method(req);

    if (!guard_pass(gw, req))
        return;
    const struct mx_str *origin = mx_req_header(req, "Origin");
    if (mx_str_eq(method, MX_STR_LIT("OPTIONS")) && origin) {
        preflight(req);
        return;
    }
    if (origin) {
        /* The guard let this Origin in, so the browser may read the answer,
         * whichever handler gives it. */
        char o[256];
        snprintf(o, sizeof(o), "%.*s", (int)(origin->len < 255 ? origin->len : 255), origin->p);
        mx_req_add_response_header(req, "Access-Control-Allow-Origin", o);
        mx_req_add_response_header(req, "Access-Control-Expose-Headers",
                                   "Mcp-Session-Id, MCP-Protocol-Version");
        mx_req_add_response_header(req, "Vary", "Origin");
    }
    const struct mx_str mcp_prefix = MX_STR_LIT("/mcp/");
    const struct mx_str sse_prefix = MX_STR_LIT("/sse/");

    if (mx_str_eq(path, MX_STR_LIT("/health"))) {
        if (!mx_str_eq(method, MX_STR_LIT("GET"))) {
            mx_gateway_error(req, 405, "use GET /health");
            return;
        }
        mx_health_serve(gw, req);
        return;
    }
    if (mx_str_eq(path, MX_STR_LIT("/metrics"))) {
        if (!mx_str_eq(method, MX_STR_LIT("GET"))) {
            mx_gateway_error(req, 405, "use GET /metrics");
            return;
        }
        mx_metrics_serve(gw, req);
        return;
    }
    if (mx_guard_is_page_path(path)) {
        mx_statuspage_serve(gw->status, req);
        return;
    }
    if (mx_str_has_prefix(path, mcp_prefix)) {
        serve_mcp(gw, req, mx_str_make(path.p + mcp_prefix.len, path.len - mcp_prefix.len));
        return;
    }
    if (mx_str_eq(path, MX_STR_LIT("/mcp"))) {
        mx_mcp_serve(gw->mcp, req);
        return;
    }
    if (mx_str_has_prefix(path, sse_prefix)) {
        struct mx_str name = mx_str_make(path.p + sse_prefix.len, path.len - sse_prefix.len);
        struct mx_upstream *up = mx_gateway_upstream(gw, name);
        if (up == NULL) {
            no_such_server(gw, req, name);
            return;
        }
        mx_legacy_serve(gw->legacy, up->cfg->name, req);
        return;
    }
    if (mx_str_eq(path, MX_STR_LIT("/sse"))) {
        mx_legacy_serve(gw->legacy, NULL, req);
        return;
    }
    mx_gateway_error(req, 404, "not found");
}

/* The redaction of the log and the trace: every secret of every config
 * generation in use, and every upstream's refreshed credential. */
static void redact(char *msg, size_t len, void *data)
{
    const struct mx_gateway *gw = data;
    for (const struct mx_cfg_gen *g = gw->gens; g; g = g->next) {
        if (g->cfg)
            mx_config_redact(g->cfg, msg, len);
    }
    for (size_t i = 0; i < gw->upstream_cnt; i++)
        mx_upstream_redact(gw->upstreams[i], msg, len);
}

size_t mx_gateway_inflight(const struct mx_gateway *gw)
{
    return mx_mcp_inflight(gw->mcp);
}

/*
 * One client request at an MCP endpoint ended: count it against its
 * upstream and write its access line. Gateway-added time is what lies
 * outside the upstream side (the call, or the wait for upstreams' lists):
 * the complete request reaching the endpoint until the upstream side began,
 * and its end until now, the answer sent; all of it for an answer mcplex
 * gave by itself. Reading the request off the socket is the client's time;
 * waiting for a wake or a concurrency slot is the upstream's.
 */
static void on_call_done(const struct mx_call_report *r, void *data)
{
    struct mx_gateway *gw = data;
    double now = mx_metrics_now(), up_s = -1.0, added_s = -1.0;
    if (r->t_up_start > 0.0 && r->t_up_done > 0.0) {
        up_s = r->t_up_done - r->t_up_start;
        added_s = (r->t_up_start - r->t_recv) + (now - r->t_up_done);
    } else if (r->t_up_start == 0.0 && !r->cancelled) {
        added_s = now - r->t_recv;
    }
    enum mx_metrics_outcome o = r->cancelled       ? MX_METRICS_CANCELLED
                                : r->fail          ? mx_metrics_outcome_of_fail(r->fail)
                                : r->status >= 400 ? MX_METRICS_ERROR
                                                   : MX_METRICS_OK;
    const char *label = mx_metrics_method_label(r->rpc_method);
    if (r->up)
        mx_metrics_upstream_call(r->up->metrics, r->up->metrics_slot, label, o, up_s, added_s);
    mx_statuspage_call(gw->status, r, mx_metrics_outcome_name(o), now);
    if (!mx_log_access_enabled())
        return;
    struct mx_log_access a = {r->http_method,
                              r->path,
                              label,
                              r->up ? r->up->cfg->name : NULL,
                              r->status,
                              mx_metrics_outcome_name(o),
                              (now - r->t_recv) * 1000.0,
                              up_s >= 0.0 ? up_s * 1000.0 : -1.0,
                              r->req_id};
    mx_log_access(&a);
}

static void on_trace(const char *dir, const char *server, const char *session, struct mx_str msg,
                     void *data)
{
    struct mx_gateway *gw = data;
    mx_trace_msg(gw->trace, dir, server, session, msg);
}

static void on_dropped(struct mx_upstream *up, void *data)
{
    (void)data;
    mx_metrics_upstream_dropped(up->metrics, up->metrics_slot);
}

static struct mx_gateway *gateway_new(struct ev_loop *loop, struct mx_config *cfg, bool bind,
                                      struct mx_diag *diag)
{
    struct mx_gateway *gw = mx_xcalloc(1, sizeof(*gw));
    struct mx_httpd_opts hopts;
    char err[256];

    gw->loop = loop;
    gw->cfg = cfg;
    gw->gens = mx_xcalloc(1, sizeof(*gw->gens));
    gw->gens->cfg = cfg;
    mx_log_set_redact(redact, gw);
    gw->started = time(NULL);
    /* The configured listen name is accepted as Host besides loopback names. */
    const char *a = cfg->listen.address;
    const char *colon = strrchr(a, ':');
    size_t hl = colon ? (size_t)(colon - a) : strlen(a);
    if (hl >= 2 && a[0] == '[' && a[hl - 1] == ']')
        gw->listen_host = mx_xstrndup(a + 1, hl - 2);
    else
        gw->listen_host = mx_xstrndup(a, hl);
    gw->guard.listen_host = gw->listen_host;
    gw->guard.allowed_origins = (const char *const *)cfg->listen.allowed_origins.v;
    gw->guard.allowed_origin_cnt = cfg->listen.allowed_origins.cnt;
    gw->guard.client_token = cfg->listen.client_token;
    gw->metrics = mx_metrics_new(NULL);
    struct mx_statuspage_src src = {loop, cfg->listen.tls, mx_health_page_state, gw};
    gw->status = mx_statuspage_new(&src);
    for (size_t i = 0; i < cfg->server_cnt; i++) {
        if (mx_gateway_slot_add(gw, &cfg->servers[i], gw->gens) == NULL) {
            mx_diag_set(diag, cfg->path, 0, 0, "more than %d servers", MX_GATEWAY_MAX_SLOTS);
            goto fail;
        }
    }

    if (cfg->proxy.trace) {
        gw->trace = mx_trace_open(cfg->proxy.trace, redact, gw, diag);
        if (gw->trace == NULL)
            goto fail;
    }
    gw->uclient = mx_uclient_new(loop);
    if (gw->uclient == NULL) {
        mx_diag_set(diag, NULL, 0, 0, "cannot initialise the upstream HTTP client");
        goto fail;
    }
    struct mx_front_env env = {loop,          cfg,
                               gw->upstreams, gw->upstream_cnt,
                               gw->uclient,   {on_call_done, on_trace, on_dropped, gw},
                               NULL};
    gw->mcp = mx_mcp_new(&env);
    gw->legacy = mx_legacy_new(loop, (size_t)cfg->listen.max_sessions, LEGACY_EVENT_MAX,
                               legacy_dispatch, gw);
    mx_httpd_opts_default(&hopts);
    hopts.max_body = (size_t)cfg->listen.max_body;
    hopts.max_header = (size_t)cfg->listen.max_header;
    hopts.max_connections = (size_t)cfg->listen.max_connections;
    hopts.max_per_client = (size_t)cfg->listen.max_connections_per_client;
    hopts.max_requests_per_conn = (size_t)cfg->listen.max_requests_per_connection;
    hopts.header_timeout_s = (double)cfg->listen.header_timeout_ms / 1000.0;
    hopts.idle_timeout_s = (double)cfg->listen.idle_timeout_ms / 1000.0;
    gw->httpd = mx_httpd_new(loop, &hopts, on_request, gw);
    if (bind && mx_httpd_listen(gw->httpd, cfg->listen.address, &gw->port, err, sizeof(err))) {
        mx_diag_set(diag, cfg->path, 0, 0, "[listen] %s", err);
        goto fail;
    }
    return gw;
fail:
    gw->gens->cfg = NULL; /* the caller still owns cfg on failure */
    mx_gateway_free(gw);
    return NULL;
}

struct mx_gateway *mx_gateway_new(struct ev_loop *loop, struct mx_config *cfg, struct mx_diag *diag)
{
    return gateway_new(loop, cfg, true, diag);
}

struct mx_gateway *mx_gateway_new_unbound(struct ev_loop *loop, struct mx_config *cfg,
                                          struct mx_diag *diag)
{
    return gateway_new(loop, cfg, false, diag);
}

void mx_gateway_free(struct mx_gateway *gw)
{
    if (gw == NULL)
        return;
    /* its feeds end before their connections go */
    mx_statuspage_free(gw->status);
    gw->status = NULL;
    mx_httpd_free(gw->httpd);
    /* its requests are the endpoints' until they are aborted */
    mx_legacy_free(gw->legacy);
    /* after the connections (their requests end first), before the uclient */
    mx_mcp_free(gw->mcp);
    ev_timer_stop(gw->loop, &gw->retire_timer);
    for (size_t i = 0; i < gw->upstream_cnt; i++) {
        mx_upstream_clear(gw->upstreams[i]);
        free(gw->upstreams[i]);
    }
    gw->upstream_cnt = 0; /* what the log's redaction walks */
    mx_uclient_free(gw->uclient);
    mx_trace_close(gw->trace);
    mx_metrics_free(gw->metrics);
    free(gw->upstreams);
    free(gw->listen_host);
    /* the last log lines of the teardown above are still redacted */
    mx_log_set_redact(NULL, NULL);
    while (gw->gens) {
        struct mx_cfg_gen *g = gw->gens;
        gw->gens = g->next;
        mx_config_free(g->cfg);
        free(g);
    }
    free(gw);
}
