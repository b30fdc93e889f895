/* SPDX-License-Identifier: MIT */
/*
 * /mcp/<server>: relay one client request to one upstream with the
 * upstream's credential from the vault, and stream the answer back as it
 * arrives (JSON or SSE, event by event, never buffered whole). MCP headers
 * pass through; the client's own Authorization never does. An upstream's
 * 401/403 or failure reaches the client as a JSON-RPC error naming the
 * server, never as a bare 401 (which would send MCP clients into OAuth).
 * Requests of the stateless revision (MCP 2026-07-28) are not relayed:
 * mcp_2026.c serves them over this one upstream, whatever its own era.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alloc.h"
#include "err.h"
#include "gateway.h"
#include "log.h"
#include "mcp_2026.h"
#include "metrics.h"
#include "revision.h"
#include "rpc.h"
#include "sse.h"
#include "sse_write.h"
#include "stdio_serve.h"
#include "upcall.h"
#include "upreq.h"
#include "upsess.h"

#define TRACE_JSON_CAP (4 * 1024 * 1024)

/* MCP Streamable HTTP headers relayed client → upstream. */
static const char *const pass_req[] = {"Mcp-Session-Id", "MCP-Protocol-Version", "Accept",
                                       "Content-Type", "Last-Event-ID"};
/* and upstream → client */
static const char *const pass_resp[] = {"Content-Type", "Mcp-Session-Id", "MCP-Protocol-Version",
                                        "Cache-Control", "Retry-After"};

struct fwd {
    struct fwd *next; /* the gateway's forwards in flight (gw->forwards) */
    struct fwd *prev;
    struct mx_gateway *gw;
    struct mx_upstream *up;
    struct mx_req *req;
    struct mx_upcall *call;
    json_t *rpc_id; /* id of the client's JSON-RPC request, if it was one */
    char *session;  /* Mcp-Session-Id for the trace */
    bool is_sse;
    bool swallow;   /* the answer was replaced by our own; drop upstream bytes */
    bool responded; /* we started a response to the client */
    struct mx_sse_decoder sse;
    struct mx_buf json;     /* a JSON answer, kept for the trace */
    json_t *progress_token; /* params._meta.progressToken of the request */
    bool sse_ours;          /* we opened an SSE answer to report a wake */
    bool accepts_sse;
    ev_timer progress; /* repeats "still waking" while the upstream wakes */
    int progress_n;
    /* for metrics.h and the access line; times from mx_metrics_now() */
    const char *http_method;
    const char *rpc_method; /* method label */
    enum mx_metrics_outcome outcome;
    int status; /* HTTP status the client got; 0: none */
    unsigned long req_id;
    double t_recv, t_up_start, t_up_done; /* t_up_done 0: on_done never came */
};

/*
 * Count the call and write its access line. Gateway-added time is what lies
 * outside the upstream call: the complete request reaching this handler →
 * mx_upcall_start, and on_done → the response ended (now). Reading the
 * request off the socket is the client's time; waiting for a wake or a
 * concurrency slot is the upstream's.
 */
static void account(struct fwd *f)
{
    double now = mx_metrics_now(), up_s = -1.0, added_s = -1.0;
    if (f->t_up_done > 0.0) {
        up_s = f->t_up_done - f->t_up_start;
        added_s = (f->t_up_start - f->t_recv) + (now - f->t_up_done);
    }
    mx_metrics_upstream_call(f->up->metrics, f->up->metrics_slot, f->rpc_method, f->outcome, up_s,
                             added_s);
    if (!mx_log_access_enabled())
        return;
    char path[300];
    snprintf(path, sizeof(path), "/mcp/%s", f->up->cfg->name);
    struct mx_log_access a = {f->http_method,
                              path,
                              f->rpc_method,
                              f->up->cfg->name,
                              f->status,
                              mx_metrics_outcome_name(f->outcome),
                              (now - f->t_recv) * 1000.0,
                              up_s >= 0.0 ? up_s * 1000.0 : -1.0,
                              f->req_id};
    mx_log_access(&a);
}

static void fwd_free(struct fwd *f)
{
    account(f);
    f->gw->inflight--;
    mx_upstream_release(f->up);
    if (f->prev)
        f->prev->next = f->next;
    else
        f->gw->forwards = f->next;
    if (f->next)
        f->next->prev = f->prev;
    ev_timer_stop(f->gw->loop, &f->progress);
    json_decref(f->progress_token);
    json_decref(f->rpc_id);
    free(f->session);
    mx_sse_decoder_clear(&f->sse);
    mx_buf_clear(&f->json);
    free(f);
}

static void trace(struct fwd *f, const char *dir, struct mx_str msg)
{
    mx_trace_msg(f->gw->trace, dir, f->up->cfg->name, f->session, msg);
}

static int on_sse_event(const struct mx_sse_event *ev, void *data)
{
    struct fwd *f = data;
    trace(f, "s2c", ev->data);
    return 0;
}

/* One JSON-RPC message as an event of the SSE answer we opened. */
static int emit_event(struct fwd *f, struct mx_str json)
{
    /* room for the "data: " of every line the message spans */
    return mx_sse_write_event(f->req, json, 2 * json.len + 64);
}

/* Replace the upstream's answer with our own, as JSON-RPC when we can. */
static void answer_error(struct fwd *f, int http_status, int rpc_code, const char *msg)
{
    if (!f->sse_ours)
        f->status = f->rpc_id ? 200 : http_status;
    f->responded = true;
    f->swallow = true;
    if (f->sse_ours) {
        /* the SSE answer is open already: the error is its last event */
        json_t *e = mx_rpc_error_new(f->rpc_id, rpc_code, msg,
                                     json_pack("{s:s}", "server", f->up->cfg->name));
        char *body = mx_rpc_dump(e);
        json_decref(e);
        trace(f, "s2c", mx_str_cstr(body));
        if (emit_event(f, mx_str_cstr(body)) != MX_ECLOSED)
            mx_req_end(f->req);
        free(body);
    } else if (f->rpc_id) {
        /* MCP clients read protocol errors from the body; HTTP 200 keeps them
         * from treating an upstream problem as one of mcplex's own. */
        json_t *e = mx_rpc_error_new(f->rpc_id, rpc_code, msg,
                                     json_pack("{s:s}", "server", f->up->cfg->name));
        char *body = mx_rpc_dump(e);
        json_decref(e);
        trace(f, "s2c", mx_str_cstr(body));
        mx_req_respond(f->req, 200, NULL, 0, "application/json", body, strlen(body));
        free(body);
    } else {
        mx_gateway_error(f->req, http_status, msg);
    }
    f->req = NULL; /* answered: the request is no longer ours */
}

static void on_head(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                    void *data)
{
    struct fwd *f = data;
    char msg[512];
    struct mx_upfail fail;
    (void)u;
    /* upcall.c already noted the answer in the upstream's state */
    enum mx_upstream_event ev = mx_upstream_classify_status(f->up, status);
    if (ev == MX_UPSTREAM_EV_AUTH_REFUSED || status >= 500 || ev == MX_UPSTREAM_EV_NOT_AWAKE) {
        mx_upfail_status(f->up->cfg, status, &fail);
        if (ev == MX_UPSTREAM_EV_AUTH_REFUSED)
            mx_log_warn("forward", "up:%s answered %ld: credential refused", f->up->cfg->name,
                        status);
        answer_error(f, 502, fail.code, fail.message);
        return;
    }

    struct mx_hdr_out out[12];
    char *vals[12];
    size_t n = 0;
    for (size_t i = 0; i < cnt; i++) {
        for (size_t k = 0; k < sizeof(pass_resp) / sizeof(pass_resp[0]) && n < 8; k++) {
            if (!mx_str_caseeq_cstr(hdrs[i].name, pass_resp[k]))
                continue;
            vals[n] = mx_xstrndup(hdrs[i].value.p, hdrs[i].value.len);
            out[n].name = pass_resp[k];
            out[n].value = vals[n];
            if (k == 0 && mx_str_has_prefix(hdrs[i].value, MX_STR_LIT("text/event-stream")))
                f->is_sse = true;
            if (k == 1 && f->session == NULL)
                f->session = mx_xstrndup(hdrs[i].value.p, hdrs[i].value.len);
            n++;
        }
    }
    if (f->sse_ours) {
        /* Our SSE answer is open: relay an SSE body as is, and turn a JSON
         * body into one event when it is complete. */
        ev_timer_stop(f->gw->loop, &f->progress);
        if (status >= 300) {
            snprintf(msg, sizeof(msg), "upstream '%s' answered HTTP %ld", f->up->cfg->name, status);
            answer_error(f, 502, MX_RPC_UPSTREAM_HTTP, msg);
        }
        for (size_t i = 0; i < n; i++)
            free(vals[i]);
        return;
    }
    /* The guard let this Origin in, so the browser may read the answer. */
    const struct mx_str *origin = mx_req_header(f->req, "Origin");
    if (origin) {
        vals[n] = mx_xstrndup(origin->p, origin->len);
        out[n].name = "Access-Control-Allow-Origin";
        out[n].value = vals[n];
        n++;
        vals[n] = mx_xstrdup("Mcp-Session-Id, MCP-Protocol-Version");
        out[n].name = "Access-Control-Expose-Headers";
        out[n].value = vals[n];
        n++;
        vals[n] = mx_xstrdup("Origin");
        out[n].name = "Vary";
        out[n].value = vals[n];
        n++;
    }
    f->responded = true;
    f->status = (int)status;
    int rc = mx_req_start(f->req, (int)status, out, n, -1);
    for (size_t i = 0; i < n; i++)
        free(vals[i]);
    if (rc) {
        /* client gone: nothing left to relay to */
        f->req = NULL;
        f->swallow = true;
        mx_upcall_cancel(f->call);
        fwd_free(f);
    }
}

static int on_data(struct mx_ureq *u, const char *p, size_t len, void *data)
{
    struct fwd *f = data;
    (void)u;
    if (f->swallow)
        return 0;
    if (f->sse_ours && !f->is_sse) {
        if (mx_buf_append(&f->json, p, len) == 0)
            return 0;
        answer_error(f, 502, MX_RPC_UPSTREAM_HTTP, "upstream answer too large");
        return 0;
    }
    if (f->gw->trace) {
        if (f->is_sse) {
            if (mx_sse_decode(&f->sse, p, len) == MX_ELIMIT)
                mx_log_debug("forward", "up:%s SSE event over trace cap", f->up->cfg->name);
        } else {
            mx_buf_append(&f->json, p, len);
        }
    }
    int rc = mx_req_write(f->req, p, len);
    if (rc == MX_EAGAIN)
        return MX_EAGAIN; /* slow client: pause the upstream transfer until drained */
    if (rc) {
        mx_upcall_cancel(f->call);
        fwd_free(f);
        return MX_EAGAIN;
    }
    return 0;
}

static void on_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data)
{
    struct fwd *f = data;
    (void)u;
    f->t_up_done = mx_metrics_now();
    f->outcome = mx_metrics_outcome_of(err, info);
    if (f->swallow) {
        fwd_free(f);
        return;
    }
    if (err == 0) {
        if (!f->is_sse && mx_buf_len(&f->json))
            trace(f, "s2c", mx_buf_str(&f->json));
        if (f->sse_ours && !f->is_sse && emit_event(f, mx_buf_str(&f->json)) == MX_ECLOSED) {
            fwd_free(f);
            return;
        }
        mx_req_end(f->req);
        fwd_free(f);
        return;
    }
    if (f->responded && !(f->sse_ours && !f->is_sse)) {
        /* The answer broke mid-stream: end the client's stream the same way. */
        mx_log_warn("forward", "up:%s stream broke: %s", f->up->cfg->name, mx_strerror(err));
        mx_req_reset(f->req);
        fwd_free(f);
        return;
    }
    /* upcall.c noted the failure in the upstream's state */
    struct mx_upfail fail;
    mx_upfail_transport(f->up->cfg, err, info, &fail);
    mx_log_warn("forward", "%s", fail.message);
    answer_error(f, !info->wake_timeout && err == MX_ETIMEDOUT ? 504 : 502, fail.code,
                 fail.message);
    fwd_free(f);
}

static void send_progress(struct fwd *f)
{
    char text[160];
    snprintf(text, sizeof(text), "waiting for sandbox '%s' to wake (%d s)", f->up->cfg->name,
             f->progress_n * 2);
    json_t *n = json_pack("{s:s, s:s, s:{s:O, s:i, s:s}}", "jsonrpc", "2.0", "method",
                          "notifications/progress", "params", "progressToken", f->progress_token,
                          "progress", f->progress_n, "message", text);
    char *body = mx_rpc_dump(n);
    json_decref(n);
    f->progress_n++;
    trace(f, "s2c", mx_str_cstr(body));
    emit_event(f, mx_str_cstr(body));
    free(body);
}

static void progress_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct fwd *f = mx_container_of(w, struct fwd, progress);
    (void)loop;
    (void)revents;
    send_progress(f);
}

/*
 * The upstream is waking and the client asked for progress: answer with SSE
 * now and say so every 2 s, so the client sees why the call takes longer
 * (MCP 2025-06-18, Progress).
 */
static void on_wait(struct mx_upcall *c, void *data)
{
    struct fwd *f = data;
    (void)c;
    if (f->progress_token == NULL || !f->accepts_sse || f->responded)
        return;
    if (mx_sse_start(f->req) != 0)
        return;
    f->responded = true;
    f->status = 200;
    f->sse_ours = true;
    send_progress(f);
    ev_timer_init(&f->progress, progress_cb, 2.0, 2.0);
    ev_timer_start(f->gw->loop, &f->progress);
}

static void on_client_drain(struct mx_req *req, void *data)
{
    struct fwd *f = data;
    (void)req;
    mx_upcall_resume(f->call);
}

static void on_client_abort(struct mx_req *req, void *data)
{
    struct fwd *f = data;
    (void)req;
    mx_log_debug("forward", "up:%s client went away; cancelling", f->up->cfg->name);
    mx_upcall_cancel(f->call);
    fwd_free(f);
}

/* End a relayed GET stream whose upstream side is gone: the client's
 * stream ends as streams may (it opens a new one when it wants). */
static void stream_end(struct fwd *f, const char *why)
{
    if (f->req) {
        mx_req_set_handler(f->req, NULL, NULL, NULL);
        if (f->responded)
            mx_req_end(f->req);
        else
            answer_error(f, 503, MX_RPC_UPSTREAM_UNAVAILABLE, why);
    }
    f->outcome = MX_METRICS_CANCELLED;
    fwd_free(f);
}

/* idle_close closed the upstream's GET stream (upcall.h). */
static void on_idle(void *data)
{
    struct fwd *f = data;
    f->call = NULL; /* gone */
    mx_log_debug("forward", "up:%s unused for idle_close; ending a stream", f->up->cfg->name);
    stream_end(f, "the server was idle");
}

static const struct mx_upcall_cbs cbs = {{on_head, on_data, on_done}, on_wait, NULL};
static const struct mx_upcall_cbs get_cbs = {{on_head, on_data, on_done}, on_wait, on_idle};

void mx_forward_retire(struct mx_gateway *gw, struct mx_upstream *up)
{
    mx_mcp_modern_retired(gw->mcp, up->idx);
    struct fwd *f = gw->forwards;
    while (f) {
        struct fwd *next = f->next;
        /* A request ends within its timeout; a GET stream would live on with
         * a server that is no longer configured: end it (the client opens a
         * new one, which reaches the new config). */
        if (f->up == up && strcmp(f->http_method, "GET") == 0) {
            mx_log_debug("forward", "up:%s left the config; ending a stream", up->cfg->name);
            mx_upcall_cancel(f->call);
            stream_end(f, "the server left the config at a reload");
        }
        f = next;
    }
}

/* The method label of a POSTed JSON-RPC message (metrics.h). */
static const char *rpc_label(const json_t *msg)
{
    switch (mx_rpc_classify(msg)) {
    case MX_RPC_REQUEST:
    case MX_RPC_NOTIFICATION:
        return mx_metrics_method_label(json_string_value(json_object_get(msg, "method")));
    case MX_RPC_RESPONSE:
        return "response";
    case MX_RPC_INVALID:
        break;
    }
    return "other";
}

/* A 2025-era request (|msg| its parsed body, borrowed, or NULL): relayed. */
static void relay(struct mx_gateway *gw, struct mx_upstream *up, struct mx_req *req,
                  const json_t *msg, double t_recv)
{
    struct mx_str method = mx_req_method(req);
    struct mx_str body = mx_req_body(req);
    char method_z[16];
    struct mx_upreq_hdrs h;

    if (!mx_str_eq(method, MX_STR_LIT("POST")) && !mx_str_eq(method, MX_STR_LIT("GET")) &&
        !mx_str_eq(method, MX_STR_LIT("DELETE"))) {
        mx_gateway_error(req, 405, "use POST, GET or DELETE");
        return;
    }
    snprintf(method_z, sizeof(method_z), "%.*s", (int)method.len, method.p);

    struct fwd *f = mx_xcalloc(1, sizeof(*f));
    f->gw = gw;
    f->up = up;
    f->req = req;
    f->t_recv = t_recv;
    f->req_id = mx_req_id(req);
    f->outcome = MX_METRICS_CANCELLED; /* until on_done says otherwise */
    f->http_method = mx_metrics_method_label(method_z);
    f->rpc_method = f->http_method;
    if (strcmp(f->http_method, "other") == 0)
        f->http_method = "POST";
    gw->inflight++;
    mx_upstream_hold(up);
    f->next = gw->forwards;
    if (f->next)
        f->next->prev = f;
    gw->forwards = f;
    mx_sse_decoder_init(&f->sse, TRACE_JSON_CAP, on_sse_event, f);
    mx_buf_init(&f->json, TRACE_JSON_CAP);
    ev_init(&f->progress, progress_cb);
    const struct mx_str *acc = mx_req_header(req, "Accept");
    f->accepts_sse = mx_rev_accepts(acc, "text/event-stream", false);
    const struct mx_str *sid = mx_req_header(req, "Mcp-Session-Id");
    if (sid)
        f->session = mx_xstrndup(sid->p, sid->len);

    if (body.len) {
        if (msg && mx_rpc_classify(msg) == MX_RPC_REQUEST) {
            f->rpc_id = json_incref(json_object_get(msg, "id"));
            json_t *tok = json_object_get(json_object_get(json_object_get(msg, "params"), "_meta"),
                                          "progressToken");
            const char *m = json_string_value(json_object_get(msg, "method"));
            /* initialize must keep its own headers (Mcp-Session-Id) */
            if (tok && m && strcmp(m, "initialize") != 0)
                f->progress_token = json_incref(tok);
        }
        f->rpc_method = rpc_label(msg);
        trace(f, "c2s", body);
    }

    mx_upreq_hdrs_init(&h);
    for (size_t k = 0; k < sizeof(pass_req) / sizeof(pass_req[0]); k++) {
        const struct mx_str *v = mx_req_header(req, pass_req[k]);
        if (v && mx_upreq_hdrs_add(&h, pass_req[k], *v) == MX_EINVAL) {
            char why[128];
            snprintf(why, sizeof(why), "invalid header: %s holds a control character", pass_req[k]);
            mx_upreq_hdrs_clear(&h);
            answer_error(f, 400, MX_RPC_INVALID_REQUEST, why);
            fwd_free(f);
            return;
        }
    }
    mx_upreq_hdrs_auth(&h, up->cfg);

    struct mx_ureq_opts o = {0};
    o.method = method_z;
    o.url = up->cfg->url;
    o.headers = h.lines;
    o.header_cnt = h.cnt;
    o.body = body.p;
    o.body_len = body.len;
    /* A GET opens a long-lived SSE stream: no total timeout on it. */
    o.timeout_ms = mx_str_eq(method, MX_STR_LIT("GET")) ? 0 : (long)up->cfg->request_timeout_ms;
    o.connect_timeout_ms = 10000;
    o.idle_close_ms = (long)up->cfg->idle_close_ms;
    o.ca_file = up->cfg->ca;
    o.may_repeat = !mx_str_eq(method, MX_STR_LIT("POST"));

    f->t_up_start = mx_metrics_now();
    bool get = mx_str_eq(method, MX_STR_LIT("GET"));
    int rc = mx_upcall_start(gw->loop, gw->uclient, up, &o, get ? &get_cbs : &cbs, f, &f->call);
    mx_upreq_hdrs_clear(&h);
    if (rc) {
        f->outcome = MX_METRICS_ERROR;
        answer_error(f, 502, MX_RPC_UPSTREAM_UNAVAILABLE, "cannot start the upstream request");
        fwd_free(f);
        return;
    }
    mx_req_set_handler(req, on_client_drain, on_client_abort, f);
}

void mx_forward_serve(struct mx_gateway *gw, struct mx_upstream *up, struct mx_req *req)
{
    struct mx_str body = mx_req_body(req);
    double t_recv = mx_metrics_now();
    /* parsed once: for the revision, then for the relay */
    json_t *msg = body.len ? mx_rpc_parse(body) : NULL;

    if (mx_mcp_modern_serve_one(gw->mcp, up, req, msg)) {
        json_decref(msg);
        return;
    }
    if (!(mx_upsess_caps(up->cfg) & MX_UPSESS_CAP_RELAY)) {
        mx_stdio_serve(gw, up, req, msg); /* stdio_serve.h: any upstream behind upsess.h */
    } else if (up->cfg->url == NULL) {
        mx_gateway_error(req, 501, "this server is not an HTTP upstream");
    } else {
        relay(gw, up, req, msg, t_recv);
    }
    json_decref(msg);
}
