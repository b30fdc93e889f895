/* SPDX-License-Identifier: MIT */
/*
 * The sim's HTTP side: the credential check, routing (/mcp, /__*), the
 * pause gate, and the Streamable HTTP session flow of MCP 2025-03-26 to
 * 2025-11-25 (initialize opens a session, later requests name it, DELETE
 * ends it). Methods are answered by mcp.c; revision choices are rev.c's;
 * the slow tool streams through stream.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "check.h"
#include "err.h"
#include "log.h"
#include "rev.h"
#include "sim.h"
#include "tasks.h"

enum msg_kind {
    MSG_INVALID = 0,
    MSG_REQUEST = 1,
    MSG_NOTIFICATION = 2,
    MSG_RESPONSE = 3,
};

static bool is_mcp_path(const struct mx_req *req)
{
    return mx_str_eq(mx_req_path(req), MX_STR_LIT("/mcp"));
}

/* The path for a log line: printable ASCII only, truncated. */
static void log_path(struct mx_str path, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < path.len && n + 1 < cap; i++)
        out[n++] = path.p[i] > 0x20 && path.p[i] < 0x7f ? path.p[i] : '?';
    out[n] = '\0';
}

void mx_sim_log_req(struct mx_sim *sim, const struct mx_req *req, int status, const char *what)
{
    struct mx_str m = mx_req_method(req);
    const char *held = req == sim->releasing ? " (was held)" : "";
    char path[72];
    if (is_mcp_path(req) && status >= 100 && status < 600)
        sim->stats.status[status]++;
    log_path(mx_req_path(req), path, sizeof(path));
    if (status)
        mx_log_info("sim", "req#%lu %.*s %s%s%s%s -> %d", mx_req_id(req), (int)m.len, m.p, path,
                    what ? " " : "", what ? what : "", held, status);
    else
        mx_log_info("sim", "req#%lu %.*s %s%s%s%s -> no answer", mx_req_id(req), (int)m.len, m.p,
                    path, what ? " " : "", what ? what : "", held);
}

/* The value --bad-header puts on the wire: a bare CR that a careless
 * relay would pass on, making its client read a header of the sim's choice. */
#define BAD_HEADER_VALUE "sim\rX-Injected: 1"

void mx_sim_respond(struct mx_sim *sim, struct mx_req *req, int status,
                    const struct mx_hdr_out *hdrs, size_t cnt, json_t *body, const char *what)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    const char *type = text ? "application/json" : NULL;
    struct mx_hdr_out bad[16];
    json_decref(body);
    mx_sim_log_req(sim, req, status, what);
    if (sim->bad_header && is_mcp_path(req) && cnt < 15) {
        bool put = false;
        for (size_t i = 0; i < cnt; i++) {
            bool hit = strcasecmp(hdrs[i].name, sim->bad_header) == 0;
            bad[i] = (struct mx_hdr_out){hdrs[i].name, hit ? BAD_HEADER_VALUE : hdrs[i].value};
            put |= hit;
        }
        if (strcasecmp(sim->bad_header, "Content-Type") == 0 && type) {
            type = "application/json\rX-Injected: 1";
        } else if (!put) {
            bad[cnt++] = (struct mx_hdr_out){sim->bad_header, BAD_HEADER_VALUE};
        }
        hdrs = bad;
    }
    /* Last: answering may dispatch the next pipelined request of this connection. */
    mx_req_respond(req, status, hdrs, cnt, type, text, text ? strlen(text) : 0);
    free(text);
}

/* An HTTP-level refusal with a JSON-RPC error body; |id| borrowed, may be NULL. */
static void rpc_fail(struct mx_sim *sim, struct mx_req *req, int status, json_t *id, int code,
                     const char *msg, const char *what)
{
    mx_sim_respond(sim, req, status, NULL, 0, mx_sim_rpc_error(id, code, msg, NULL), what);
}

static bool auth_ok(const struct mx_sim *sim, const struct mx_req *req)
{
    switch (sim->auth_mode) {
    case MX_SIM_AUTH_NONE:
        return true;
    case MX_SIM_AUTH_BEARER: {
        const struct mx_str *a = mx_req_header(req, "Authorization");
        return a && mx_sim_bearer_ok(*a, sim->secret, sim->secret_len);
    }
    case MX_SIM_AUTH_COOKIE:
        /* HTTP/2 may split cookies over several fields (RFC 9113 §8.2.3). */
        for (size_t i = 0; i < mx_req_header_cnt(req); i++) {
            const struct mx_header *h = mx_req_header_at(req, i);
            if (mx_str_caseeq_cstr(h->name, "Cookie") &&
                mx_sim_cookie_ok(h->value, sim->cookie_name, sim->secret, sim->secret_len))
                return true;
        }
        return false;
    }
    return false;
}

static json_t *config_json(void *arg)
{
    return mx_sim_settings_json(arg);
}

/* "tools/call echo", "initialize": known names only, never client bytes. */
static void label(char *out, size_t cap, enum mx_sim_method m, int tool, const char *note)
{
    snprintf(out, cap, "%s%s%s%s", mx_sim_method_name(m), tool >= 0 ? " " : "",
             tool >= 0 ? mx_sim_tool_name((enum mx_sim_tool)tool) : "", note);
}

/* --whoami-credential: a server that hands its credential to the model,
 * which is what mcplex's trace redaction is there for. */
static void leak_credential(const struct mx_sim *sim, const struct mx_req *req,
                            struct mx_sim_reply *r)
{
    const struct mx_str *h =
        mx_req_header(req, sim->auth_mode == MX_SIM_AUTH_COOKIE ? "Cookie" : "Authorization");
    char *text = mx_xasprintf("%s got: %.*s", sim->name, h ? (int)h->len : 0, h ? h->p : "");
    json_decref(r->result);
    r->result = mx_sim_text_result(text, false);
    free(text);
}

static void run_request(struct mx_sim *sim, struct mx_req *req, struct mx_sim_session *s,
                        bool new_session, const char *method, json_t *id, json_t *params)
{
    struct mx_sim_mcp_ctx ctx = {
        .name = sim->name,
        .revision = s->revision,
        .config_json = config_json,
        .config_arg = sim,
        .conf = sim->conformance ? &s->conf : NULL,
        .list_ttl_ms = sim->list_ttl_ms,
        .extra_tools = sim->extra_tools,
        .huge_pages = sim->huge_pages,
        .claim_uri = sim->claim_uri,
        .tasks = !sim->conformance && mx_sim_rev_has_tasks(s->revision) ? sim->tasks : NULL};
    struct mx_hdr_out hdrs[] = {{"Mcp-Session-Id", s->id}};
    enum mx_sim_method m = mx_sim_method_find(method);
    struct mx_sim_reply r;
    char what[80];
    json_t *out;

    mx_sim_mcp_request(&ctx, method, params, &r);
    if (sim->whoami_credential && r.tool == MX_SIM_T_WHOAMI && r.result)
        leak_credential(sim, req, &r);
    sim->stats.methods[m]++;
    if (r.tool >= 0)
        sim->stats.tools[r.tool]++;
    if (strcmp(method, "tasks/get") == 0)
        sim->stats.tasks_get++;
    else if (strcmp(method, "tasks/result") == 0)
        sim->stats.tasks_result++;
    else if (ctx.tasks && strcmp(method, "tasks/cancel") == 0 && r.result)
        mx_sim_stream_task_changed(sim, json_string_value(json_object_get(params, "taskId")));
    if (sim->drop_before_response) {
        /* The request ran; the client never learns its outcome. */
        sim->drop_before_response = false;
        sim->stats.dropped++;
        label(what, sizeof(what), m, r.tool, " (dropped before response)");
        mx_sim_log_req(sim, req, 0, what);
        mx_sim_reply_clear(&r);
        mx_req_reset(req);
        return;
    }
    if (r.task_wait) {
        mx_sim_stream_task_wait(sim, req, id, &r);
        mx_sim_reply_clear(&r);
        return;
    }
    if (r.deferred) {
        mx_sim_stream_start(sim, req, id, s->id, &r);
        mx_sim_reply_clear(&r);
        return;
    }
    if (r.script == MX_SIM_SCRIPT_POLL) {
        mx_sim_stream_poll(sim, req, id, s->id, &r);
        mx_sim_reply_clear(&r);
        return;
    }
    if (r.script != MX_SIM_SCRIPT_NONE) {
        mx_sim_stream_script(sim, req, id, s->id, &r);
        mx_sim_reply_clear(&r);
        return;
    }
    if (r.result)
        out = mx_sim_rpc_result(id, json_incref(r.result));
    else
        out = mx_sim_rpc_error(id, r.err_code, r.err_msg, json_incref(r.err_data));
    label(what, sizeof(what), m, r.tool, r.result ? "" : " (error)");
    mx_sim_reply_clear(&r);
    mx_sim_respond(sim, req, 200, hdrs, new_session ? 1 : 0, out, what);
}

static enum msg_kind classify(json_t *msg, const char **method, json_t **id)
{
    json_t *m = json_object_get(msg, "method");
    *id = json_object_get(msg, "id");
    *method = json_string_value(m);
    if (!json_is_object(msg) || !json_is_string(json_object_get(msg, "jsonrpc")) ||
        strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0)
        return MSG_INVALID;
    /* MCP 2025-06-18, Basic: ids are strings or integers, never null. */
    if (*id && !json_is_string(*id) && !json_is_integer(*id))
        return MSG_INVALID;
    if (m)
        return *method == NULL ? MSG_INVALID : *id ? MSG_REQUEST : MSG_NOTIFICATION;
    if (*id && (json_object_get(msg, "result") != NULL) != (json_object_get(msg, "error") != NULL))
        return MSG_RESPONSE;
    return MSG_INVALID;
}

/* MCP 2025-03-26 to 2025-11-25, Streamable HTTP: the session-based flow. */
static void session_post(struct mx_sim *sim, struct mx_req *req, json_t *msg)
{
    const struct mx_str *sid = mx_req_header(req, "Mcp-Session-Id");
    json_t *params = json_object_get(msg, "params");
    struct mx_sim_session *s;
    const char *method;
    json_t *id;
    enum msg_kind kind = classify(msg, &method, &id);
    enum mx_sim_method m;

    if (kind == MSG_INVALID) {
        rpc_fail(sim, req, 400, id && (json_is_string(id) || json_is_integer(id)) ? id : NULL,
                 MX_SIM_RPC_INVALID, "Invalid Request", "invalid");
        return;
    }
    m = kind == MSG_RESPONSE ? MX_SIM_M_RESPONSE : mx_sim_method_find(method);
    if (kind == MSG_REQUEST && m == MX_SIM_M_INITIALIZE) {
        if (sid) {
            rpc_fail(sim, req, 400, id, MX_SIM_RPC_INVALID,
                     "Invalid Request: initialize must not carry an Mcp-Session-Id", "initialize");
            return;
        }
        const char *want = json_string_value(json_object_get(params, "protocolVersion"));
        s = mx_sim_session_new(sim, mx_sim_rev_negotiate(want));
        run_request(sim, req, s, true, method, id, params);
        return;
    }
    if (sid == NULL) {
        rpc_fail(sim, req, 400, id, MX_SIM_RPC_SERVER,
                 "Bad Request: Mcp-Session-Id header is required", "no session");
        return;
    }
    s = mx_sim_session_find(sim, *sid);
    if (s == NULL) {
        /* 404 tells the client to initialize again (MCP 2025-06-18, Session Management). */
        rpc_fail(sim, req, 404, id, MX_SIM_RPC_NOSESSION, "Session not found", "unknown session");
        return;
    }
    if (!mx_sim_rev_header_ok(mx_req_header(req, "MCP-Protocol-Version"), s->revision)) {
        rpc_fail(sim, req, 400, id, MX_SIM_RPC_SERVER,
                 "Bad Request: unsupported or mismatched MCP-Protocol-Version", "bad version");
        return;
    }
    if (kind == MSG_REQUEST) {
        run_request(sim, req, s, false, method, id, params);
        return;
    }
    /* Notifications and client responses are accepted with 202 and no body. */
    sim->stats.methods[m]++;
    if (m == MX_SIM_M_N_INITIALIZED)
        s->initialized = true;
    else if (m == MX_SIM_M_N_CANCELLED)
        mx_sim_stream_cancel(sim, s->id, json_object_get(params, "requestId"));
    else if (m == MX_SIM_M_RESPONSE)
        mx_sim_stream_answer(sim, s->id, msg);
    mx_sim_respond(sim, req, 202, NULL, 0, NULL, mx_sim_method_name(m));
}

static void post_mcp(struct mx_sim *sim, struct mx_req *req)
{
    const struct mx_str *accept = mx_req_header(req, "Accept");
    const struct mx_str *ctype = mx_req_header(req, "Content-Type");
    struct mx_str body = mx_req_body(req);
    json_error_t jerr;
    json_t *msg;

    /* MCP 2025-06-18, Streamable HTTP: the client must accept both. */
    if (accept == NULL || !mx_sim_accept_has(*accept, "application/json") ||
        !mx_sim_accept_has(*accept, "text/event-stream")) {
        rpc_fail(sim, req, 406, NULL, MX_SIM_RPC_SERVER,
                 "Not Acceptable: Accept must list application/json and text/event-stream",
                 "bad accept");
        return;
    }
    if (ctype == NULL || !mx_sim_ctype_is(*ctype, "application/json")) {
        rpc_fail(sim, req, 415, NULL, MX_SIM_RPC_SERVER,
                 "Unsupported Media Type: Content-Type must be application/json",
                 "bad content-type");
        return;
    }
    msg = body.len ? json_loadb(body.p, body.len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    if (msg == NULL) {
        rpc_fail(sim, req, 400, NULL, MX_SIM_RPC_PARSE, "Parse error", "parse error");
        return;
    }
    if (json_is_array(msg)) {
        rpc_fail(sim, req, 400, NULL, MX_SIM_RPC_INVALID,
                 "Invalid Request: batches are not supported", "batch");
        json_decref(msg);
        return;
    }
    /* The 2025 revisions use sessions (revision checks are rev.c's); in
     * conformance mode the stateless 2026-07-28 revision is modern.c's. */
    if (sim->conformance && mx_sim_modern_is(req, msg)) {
        mx_sim_modern_post(sim, req, msg);
    } else if (sim->modern_only) {
        /* MCP 2026-07-28, Version negotiation: a server of that revision
         * alone names what it supports; a 2025 client cannot fall forward */
        json_t *id = json_object_get(msg, "id");
        const char *asked =
            json_string_value(json_object_get(json_object_get(msg, "params"), "protocolVersion"));
        mx_sim_respond(sim, req, 400, NULL, 0,
                       mx_sim_rpc_error(json_is_string(id) || json_is_integer(id) ? id : NULL,
                                        -32022,
                                        "Unsupported protocol version: this server "
                                        "speaks 2026-07-28 only",
                                        json_pack("{s:[s], s:s}", "supported", "2026-07-28",
                                                  "requested", asked ? asked : "")),
                       "2025 request (modern only)");
    } else {
        session_post(sim, req, msg);
    }
    json_decref(msg);
}

/* The session a GET or DELETE names, or NULL once the refusal is sent. */
static struct mx_sim_session *named_session(struct mx_sim *sim, struct mx_req *req)
{
    const struct mx_str *sid = mx_req_header(req, "Mcp-Session-Id");
    struct mx_sim_session *s = sid ? mx_sim_session_find(sim, *sid) : NULL;
    if (sid == NULL)
        rpc_fail(sim, req, 400, NULL, MX_SIM_RPC_SERVER,
                 "Bad Request: Mcp-Session-Id header is required", "no session");
    else if (s == NULL)
        rpc_fail(sim, req, 404, NULL, MX_SIM_RPC_NOSESSION, "Session not found", "unknown session");
    return s;
}

static void delete_mcp(struct mx_sim *sim, struct mx_req *req)
{
    struct mx_sim_session *s = named_session(sim, req);
    if (s == NULL)
        return;
    mx_sim_session_delete(sim, s);
    mx_sim_respond(sim, req, 200, NULL, 0, NULL, "session deleted");
}

/* MCP 2025-06-18, Streamable HTTP: GET opens the session's stream for
 * what belongs to no request (--get-stream; else 405 below). */
static void get_mcp(struct mx_sim *sim, struct mx_req *req)
{
    struct mx_sim_session *s = named_session(sim, req);
    if (s != NULL)
        mx_sim_stream_get(sim, req, s->id);
}

/* MCP 2025-11-25, Streamable HTTP, Resumability and Redelivery: a GET with
 * Last-Event-ID resumes the stream that id belongs to (conformance mode:
 * a test_reconnection call's). */
static void resume_mcp(struct mx_sim *sim, struct mx_req *req, struct mx_str last)
{
    struct mx_sim_session *s = named_session(sim, req);
    if (s == NULL || mx_sim_stream_resume(sim, req, s->id, last))
        return;
    rpc_fail(sim, req, 400, NULL, MX_SIM_RPC_SERVER,
             "Bad Request: Last-Event-ID names no stream of this session", "unknown event id");
}

void mx_sim_serve_mcp(struct mx_sim *sim, struct mx_req *req)
{
    static const struct mx_hdr_out allow[] = {{"Allow", "POST, DELETE"}};
    static const struct mx_hdr_out post_only[] = {{"Allow", "POST"}};
    struct mx_str m = mx_req_method(req);

    if (mx_sim_fault_inject(sim)) {
        sim->stats.injected++;
        mx_sim_respond(sim, req, 503, NULL, 0,
                       json_pack("{s:s,s:s}", "error", "unavailable", "message",
                                 "service unavailable (injected by error_rate)"),
                       "injected error");
        return;
    }
    if (mx_str_eq(m, MX_STR_LIT("POST")))
        post_mcp(sim, req);
    else if (sim->modern_only)
        /* MCP 2026-07-28, Streamable HTTP: POST only */
        mx_sim_respond(sim, req, 405, post_only, 1,
                       mx_sim_rpc_error(NULL, MX_SIM_RPC_SERVER,
                                        "Method Not Allowed: MCP 2026-07-28 is POST only", NULL),
                       NULL);
    else if (mx_str_eq(m, MX_STR_LIT("DELETE")))
        delete_mcp(sim, req);
    else if (sim->conformance && mx_str_eq(m, MX_STR_LIT("GET")) &&
             mx_req_header(req, "Last-Event-ID") != NULL)
        resume_mcp(sim, req, *mx_req_header(req, "Last-Event-ID"));
    else if (sim->get_stream && mx_str_eq(m, MX_STR_LIT("GET")))
        get_mcp(sim, req);
    else
        /* No standalone GET stream: MCP 2025-06-18 allows 405 for it. */
        mx_sim_respond(sim, req, 405, allow, 1,
                       mx_sim_rpc_error(NULL, MX_SIM_RPC_SERVER,
                                        "Method Not Allowed: no standalone SSE stream", NULL),
                       NULL);
}

/* unauthorized_delay_ms: a wrong credential is refused late, as an
 * identity provider's round trip makes it; a test has several requests
 * refused at once with it. */
struct mx_sim_slow401 {
    struct mx_sim_slow401 *next;
    struct mx_sim_slow401 *prev;
    struct mx_sim *sim;
    struct mx_req *req;
    ev_timer timer;
};

static void slow401_unlink(struct mx_sim_slow401 *d)
{
    struct mx_sim *sim = d->sim;
    ev_timer_stop(sim->loop, &d->timer);
    if (d->prev)
        d->prev->next = d->next;
    else
        sim->slow401 = d->next;
    if (d->next)
        d->next->prev = d->prev;
}

static void refuse(struct mx_sim *sim, struct mx_req *req)
{
    static const struct mx_hdr_out www[] = {{"WWW-Authenticate", "Bearer realm=\"sandbox-sim\""}};
    mx_sim_respond(
        sim, req, 401, www, sim->auth_mode == MX_SIM_AUTH_BEARER ? 1 : 0,
        json_pack("{s:s,s:s}", "error", "unauthorized", "message", "missing or wrong credential"),
        "unauthorized");
}

static void slow401_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_sim_slow401 *d = mx_container_of(w, struct mx_sim_slow401, timer);
    struct mx_sim *sim = d->sim;
    struct mx_req *req = d->req;
    (void)loop;
    (void)revents;
    slow401_unlink(d);
    free(d);
    mx_req_set_handler(req, NULL, NULL, NULL);
    refuse(sim, req);
}

static void slow401_abort(struct mx_req *req, void *data)
{
    struct mx_sim_slow401 *d = data;
    (void)req;
    slow401_unlink(d);
    free(d);
}

static void slow401_clear(struct mx_sim *sim)
{
    while (sim->slow401) {
        struct mx_sim_slow401 *d = sim->slow401;
        slow401_unlink(d);
        mx_req_set_handler(d->req, NULL, NULL, NULL);
        mx_req_reset(d->req);
        free(d);
    }
}

static void on_request(struct mx_req *req, void *data)
{
    struct mx_sim *sim = data;
    struct mx_str path = mx_req_path(req);
    bool mcp = is_mcp_path(req);

    if (mcp)
        sim->stats.requests++;
    if (!auth_ok(sim, req)) {
        sim->stats.unauthorized++;
        if (sim->set.unauthorized_delay_ms > 0) {
            struct mx_sim_slow401 *d = mx_xcalloc(1, sizeof(*d));
            d->sim = sim;
            d->req = req;
            d->next = sim->slow401;
            if (sim->slow401)
                sim->slow401->prev = d;
            sim->slow401 = d;
            mx_req_set_handler(req, NULL, slow401_abort, d);
            ev_timer_init(&d->timer, slow401_cb, (double)sim->set.unauthorized_delay_ms / 1000.0,
                          0.0);
            ev_timer_start(sim->loop, &d->timer);
            return;
        }
        refuse(sim, req);
        return;
    }
    if (!mcp) {
        if (mx_str_has_prefix(path, MX_STR_LIT("/__")))
            mx_sim_control_route(sim, req);
        else
            mx_sim_respond(sim, req, 404, NULL, 0,
                           json_pack("{s:s,s:s}", "error", "not_found", "message",
                                     "no such path; MCP is at /mcp"),
                           NULL);
        return;
    }
    if (sim->conformance &&
        !mx_sim_host_origin_ok(mx_req_header(req, "Host"), mx_req_header(req, "Origin"))) {
        mx_sim_respond(sim, req, 403, NULL, 0,
                       json_pack("{s:s,s:s}", "error", "forbidden", "message",
                                 "Host and Origin must name the loopback"),
                       "foreign host or origin");
        return;
    }
    if (sim->set.gone) {
        /* a deleted sandbox: its provider's edge answers for it (RFC 9110
         * §15.5.11: gone, and no forwarding address is known) */
        sim->stats.gone++;
        mx_sim_respond(
            sim, req, 410, NULL, 0,
            json_pack("{s:s,s:s}", "error", "gone", "message", "this sandbox no longer exists"),
            "gone");
        return;
    }
    switch (mx_sim_fault_gate(sim)) {
    case MX_SIM_GO:
        mx_sim_serve_mcp(sim, req);
        break;
    case MX_SIM_HOLD:
        mx_log_debug("sim", "req#%lu held until the wake completes", mx_req_id(req));
        mx_sim_fault_hold(sim, req);
        break;
    case MX_SIM_REFUSE: {
        /* RFC 9110 §10.2.3: how long the client is asked to wait */
        char secs[24];
        snprintf(secs, sizeof(secs), "%lld", (long long)sim->set.retry_after);
        const struct mx_hdr_out ra[] = {{"Retry-After", secs}};
        sim->stats.refused++;
        mx_sim_respond(sim, req, (int)sim->set.refuse_status, ra, sim->set.retry_after >= 0 ? 1 : 0,
                       json_pack("{s:s,s:s}", "error", "paused", "message",
                                 "sandbox is paused; POST /__wake to resume"),
                       sim->state == MX_SIM_WAKING ? "refused (waking)" : "refused (paused)");
        break;
    }
    }
}

int mx_sim_start(struct mx_sim *sim, const char *address, int *port, char *err, size_t errcap)
{
    struct mx_httpd_opts o;
    mx_httpd_opts_default(&o);
    o.max_body = MX_SIM_MAX_BODY;
    mx_sim_fault_init(sim);
    sim->httpd = mx_httpd_new(sim->loop, &o, on_request, sim);
    return mx_httpd_listen(sim->httpd, address, port, err, errcap);
}

void mx_sim_stop(struct mx_sim *sim)
{
    /* Closing the connections aborts held requests and streams first. */
    mx_httpd_free(sim->httpd);
    sim->httpd = NULL;
    mx_sim_stream_clear(sim);
    mx_sim_fault_clear(sim);
    slow401_clear(sim);
    mx_sim_session_expire_all(sim);
    mx_sim_tasks_free(sim->tasks);
    sim->tasks = NULL;
}
