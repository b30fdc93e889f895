/* SPDX-License-Identifier: MIT */
/*
 * The call core (call.h) and the views over it (mcp.c, mcp_2026.c),
 * driven through a fake upstream: a table of the upstream-session
 * functions the front calls (struct mx_call_upops) that records what is
 * sent and lets each test answer, and requests made with a front end that
 * keeps the response in memory. No socket. The fake answers mcplex's own
 * catalogue requests by itself, from the loop; the calls wait for the
 * test. Covered: wake progress and the upstream's progress (and a forged
 * token dropped), the answer as the last SSE event and the report of the
 * call, a cancellation racing the answer (the upstream hears
 * notifications/cancelled and ends its stream; nothing reaches the
 * client), a client that goes away (orphaned, the upstream's question
 * refused), the drain that resumes a paused upstream stream, a session
 * that closes with a call in flight, a Multi Round-Trip question answered
 * in the retry, /mcp/<server> from the upstream's catalogue, and the
 * upstream's failure as the JSON-RPC error naming it. Every test ends
 * with no call, session or request left.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ev.h>
#include <jansson.h>

#include "alloc.h"
#include "buf.h"
#include "call.h"
#include "err.h"
#include "front_int.h"
#include "idmap.h"
#include "log.h"
#include "mcp.h"
#include "model.h"
#include "req_int.h"
#include "revision.h"
#include "rpc.h"
#include "session.h"
#include "upreq.h"
#include "upstream.h"

/* ---- the fake upstream ---- */

struct mx_upsess {
    const struct mx_upsess_cbs *cbs;
    void *data;
    uint64_t key;
    json_t *init;
    bool closed;
};

struct mx_uprpc {
    struct mx_upsess *s;
    json_t *msg; /* NULL: connect only */
    const struct mx_uprpc_cbs *cbs;
    void *data;
    bool cancelled;
    bool done;
    bool autonomous; /* answered by the fake from the loop */
    int resumed;
    bool want_raw;     /* the caller takes results as bytes */
    struct mx_str raw; /* the result as bytes while on_done runs */
    char *text;        /* the request as bytes (give_text), or NULL */
};

#define MAX_FAKES 64

static struct {
    struct mx_upsess *sess[MAX_FAKES];
    size_t sess_cnt;
    struct mx_uprpc *rpc[MAX_FAKES];
    size_t rpc_cnt;
    json_t *sent; /* what was sent with mx_upsess_send */
    uint64_t keys;
    ev_idle pump;
} fk;

static const char *const init_text =
    "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"tools\":{}},"
    "\"serverInfo\":{\"name\":\"fake-server\",\"version\":\"1\"},\"instructions\":\"be nice\"}";
static const char *const tools_text =
    "{\"tools\":[{\"name\":\"slow\",\"inputSchema\":{\"type\":\"object\"}},"
    "{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"}}]}";

static const char *rpc_method(const struct mx_uprpc *r)
{
    return r->msg ? json_string_value(json_object_get(r->msg, "method")) : NULL;
}

/* mcplex's own requests (connect, lists) are answered from the loop. */
static void pump_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
    (void)revents;
    ev_idle_stop(loop, w);
    for (size_t i = 0; i < fk.rpc_cnt; i++) {
        struct mx_uprpc *r = fk.rpc[i];
        if (!r->autonomous || r->done || r->cancelled || r->s->closed)
            continue;
        r->done = true;
        if (r->msg == NULL) {
            if (r->s->key == 0) {
                r->s->key = ++fk.keys;
                r->s->init = json_loads(init_text, 0, NULL);
                if (r->s->cbs->on_ready)
                    r->s->cbs->on_ready(r->s, r->s->init, r->s->data);
            }
            r->cbs->on_done(r, NULL, NULL, r->data);
            continue;
        }
        json_t *result = strcmp(rpc_method(r), "tools/list") == 0 ? json_loads(tools_text, 0, NULL)
                                                                  : json_object();
        json_t *resp = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
                                 json_object_get(r->msg, "id"), "result", result);
        r->cbs->on_done(r, resp, NULL, r->data);
        json_decref(resp);
    }
}

static struct mx_upsess *f_open(struct mx_upsess_env *env, const json_t *caps,
                                const char *trace_session, const struct mx_upsess_cbs *cbs,
                                void *data)
{
    (void)env;
    (void)caps;
    (void)trace_session;
    assert_true(fk.sess_cnt < MAX_FAKES);
    struct mx_upsess *s = mx_xcalloc(1, sizeof(*s));
    s->cbs = cbs;
    s->data = data;
    fk.sess[fk.sess_cnt++] = s;
    return s;
}

static void f_close(struct mx_upsess *s)
{
    if (s)
        s->closed = true;
}

static uint64_t f_key(const struct mx_upsess *s)
{
    return s->key;
}

static bool f_is_ready(const struct mx_upsess *s)
{
    return s->key != 0 && !s->closed;
}

static json_t *f_init_result(const struct mx_upsess *s)
{
    return s->init;
}

static int f_request(struct mx_upsess *s, json_t *msg, long timeout_ms,
                     const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out)
{
    (void)timeout_ms;
    if (s->closed)
        return MX_ECLOSED;
    assert_true(fk.rpc_cnt < MAX_FAKES);
    struct mx_uprpc *r = mx_xcalloc(1, sizeof(*r));
    r->s = s;
    r->msg = msg ? json_deep_copy(msg) : NULL;
    r->cbs = cbs;
    r->data = data;
    const char *m = rpc_method(r);
    r->autonomous = m == NULL || strstr(m, "/list") != NULL || strcmp(m, "logging/setLevel") == 0;
    fk.rpc[fk.rpc_cnt++] = r;
    *out = r;
    if (r->autonomous)
        ev_idle_start(ev_default_loop(0), &fk.pump);
    return 0;
}

static void f_cancel(struct mx_uprpc *r)
{
    r->cancelled = true;
}

static void f_resume(struct mx_uprpc *r)
{
    r->resumed++;
}

static const char *f_input_key(const struct mx_uprpc *r, const json_t *id)
{
    (void)r;
    (void)id;
    return NULL;
}

static void f_send(struct mx_upsess *s, json_t *msg, uint64_t key)
{
    (void)s;
    (void)key;
    json_array_append_new(fk.sent, json_deep_copy(msg));
}

static void f_env_clear(struct mx_upsess_env *env)
{
    json_decref(env->tool_params);
    env->tool_params = NULL;
}

static void f_want_raw(struct mx_uprpc *r)
{
    r->want_raw = true;
}

static struct mx_str f_raw_result(const struct mx_uprpc *r)
{
    return r->raw;
}

/* Every text given is the request's message, byte for byte as it
 * encodes: the bytes and the message must never say different things. */
static void f_give_text(struct mx_uprpc *r, char *text, size_t len)
{
    assert_int_equal(strlen(text), len);
    json_t *as_sent = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    assert_non_null(as_sent);
    assert_true(json_equal(as_sent, r->msg));
    json_decref(as_sent);
    free(r->text);
    r->text = text;
}

static const struct mx_call_upops fake_ops = {
    f_open,       f_close,     f_key,       f_is_ready, f_init_result, f_request,
    f_cancel,     f_resume,    f_input_key, f_send,     f_env_clear,   f_want_raw,
    f_raw_result, f_give_text, NULL,        NULL, /* no session is kept */
};

/* The call the test drives: the last tools/call sent upstream. */
static struct mx_uprpc *last_call(void)
{
    for (size_t i = fk.rpc_cnt; i-- > 0;) {
        const char *m = rpc_method(fk.rpc[i]);
        if (m && !fk.rpc[i]->autonomous)
            return fk.rpc[i];
    }
    fail_msg("no call reached the upstream");
    abort();
}

static json_int_t up_id_of(const struct mx_uprpc *r)
{
    return json_integer_value(json_object_get(r->msg, "id"));
}

static json_t *up_token_of(const struct mx_uprpc *r)
{
    return json_object_get(json_object_get(json_object_get(r->msg, "params"), "_meta"),
                           "progressToken");
}

/* Messages sent upstream with |method|. */
static size_t sent_cnt(const char *method)
{
    size_t n = 0, i;
    json_t *m;
    json_array_foreach(fk.sent, i, m)
    {
        const char *mm = json_string_value(json_object_get(m, "method"));
        if (mm && strcmp(mm, method) == 0)
            n++;
    }
    return n;
}

static json_t *sent_last(void)
{
    return json_array_get(fk.sent, json_array_size(fk.sent) - 1);
}

/* ---- the client side: requests that keep their response ---- */

struct resp {
    int status;
    bool started;
    bool ended;
    bool blocked; /* writes answer MX_EAGAIN */
    char sid[MX_SESSION_ID_LEN + 1];
    struct mx_buf body;
    struct mx_req *req;
};

static int r_start(struct mx_req *req, int status, const struct mx_hdr_out *hdrs, size_t cnt,
                   long long body_len)
{
    struct resp *r = req->conn;
    (void)body_len;
    assert_false(r->started);
    r->started = true;
    r->status = status;
    for (size_t i = 0; i < cnt; i++) {
        if (strcmp(hdrs[i].name, "Mcp-Session-Id") == 0)
            snprintf(r->sid, sizeof(r->sid), "%s", hdrs[i].value);
    }
    return 0;
}

static int r_write(struct mx_req *req, const void *p, size_t len)
{
    struct resp *r = req->conn;
    assert_true(r->started && !r->ended);
    assert_int_equal(mx_buf_append(&r->body, p, len), 0);
    return r->blocked ? MX_EAGAIN : 0;
}

static void r_end(struct mx_req *req)
{
    struct resp *r = req->conn;
    r->ended = true;
}

static void r_reset(struct mx_req *req)
{
    struct resp *r = req->conn;
    r->ended = true;
}

static const struct mx_req_proto proto = {r_start, r_write, r_end, r_reset};

static void add_header(struct mx_req *req, const char *name, const char *value)
{
    assert_int_equal(mx_req_add_header_piece(req, true, name, strlen(name)), 0);
    assert_int_equal(mx_req_add_header_piece(req, false, value, strlen(value)), 0);
}

struct world {
    struct ev_loop *loop;
    struct mx_config *cfg;
    struct mx_upstream up;
    struct mx_upstream *ups[1];
    struct mx_mcp *m;
    json_t *reports; /* {"rpc", "status", "server", "cancelled", "fail"} per client request */
    size_t dropped;
};

static struct world W;
static size_t base_calls, base_sessions, base_reqs; /* live at setup: a failed test leaks */

static void spin(void)
{
    for (int i = 0; i < 6; i++)
        ev_run(W.loop, EVRUN_NOWAIT);
}

/* A request to |path| (NULL: /mcp), answered into |r| (caller frees with
 * resp_free); |extra| are "Name: value" header lines. */
static void request(struct resp *r, const char *method, const char *path, const char *sid,
                    const char *const *extra, const char *body)
{
    memset(r, 0, sizeof(*r));
    mx_buf_init(&r->body, 1u << 20);
    struct mx_req *req = mx_req_new(&proto, r, 64 * 1024, 1u << 20);
    r->req = req;
    snprintf(req->method, sizeof(req->method), "%s", method);
    req->version = 11;
    const char *p = path ? path : "/mcp";
    mx_buf_append(&req->url, p, strlen(p));
    add_header(req, "Host", "127.0.0.1");
    add_header(req, "Content-Type", "application/json");
    add_header(req, "Accept", "application/json, text/event-stream");
    if (sid) {
        add_header(req, "Mcp-Session-Id", sid);
        add_header(req, "MCP-Protocol-Version", "2025-06-18");
    }
    for (size_t i = 0; extra && extra[i]; i++) {
        const char *colon = strchr(extra[i], ':');
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)(colon - extra[i]), extra[i]);
        add_header(req, name, colon + 2);
    }
    mx_req_finish_head(req);
    if (body)
        mx_buf_append(&req->body, body, strlen(body));
    if (path && strncmp(path, "/mcp/", 5) == 0)
        mx_mcp_serve_one(W.m, &W.up, req);
    else
        mx_mcp_serve(W.m, req);
    spin();
}

static void resp_free(struct resp *r)
{
    if (r->req && !r->ended)
        mx_req_notify_abort(r->req);
    spin();
    mx_req_free(r->req);
    mx_buf_clear(&r->body);
    r->req = NULL;
}

/* The JSON-RPC messages of the answer: one for JSON, each event for SSE. */
static json_t *messages(const struct resp *r)
{
    json_t *out = json_array();
    struct mx_str b = mx_buf_str(&r->body);
    char *text = mx_xstrndup(b.p, b.len);
    if (strncmp(text, "event:", 6) != 0 && strncmp(text, "data:", 5) != 0) {
        json_t *m = json_loads(text, 0, NULL);
        if (m)
            json_array_append_new(out, m);
        free(text);
        return out;
    }
    for (char *p = strstr(text, "data: "); p; p = strstr(p, "data: ")) {
        p += 6;
        char *nl = strchr(p, '\n');
        json_t *m = json_loadb(p, nl ? (size_t)(nl - p) : strlen(p), 0, NULL);
        if (m)
            json_array_append_new(out, m);
    }
    free(text);
    return out;
}

/* ---- the hooks ops would install ---- */

static void on_done(const struct mx_call_report *r, void *data)
{
    (void)data;
    json_array_append_new(
        W.reports, json_pack("{s:s?, s:i, s:s?, s:b, s:s?}", "rpc", r->rpc_method, "status",
                             r->status, "server", r->up ? r->up->cfg->name : NULL, "cancelled",
                             r->cancelled, "fail", r->fail ? r->fail->reason : NULL));
}

static void on_dropped(struct mx_upstream *up, void *data)
{
    (void)up;
    (void)data;
    W.dropped++;
}

/* The last report of a request with JSON-RPC method |rpc|. */
static json_t *report_of(const char *rpc)
{
    for (size_t i = json_array_size(W.reports); i-- > 0;) {
        json_t *r = json_array_get(W.reports, i);
        if (json_string_value(json_object_get(r, "rpc")) &&
            strcmp(json_string_value(json_object_get(r, "rpc")), rpc) == 0)
            return r;
    }
    fail_msg("no report for %s", rpc);
    abort();
}

static int setup(void **state)
{
    static const char cfg_text[] = "[listen]\naddress = \"127.0.0.1:0\"\ntls = false\n"
                                   "[proxy]\nfanout_timeout = \"2s\"\n"
                                   "[servers.up]\nurl = \"http://127.0.0.1:9/mcp\"\n"
                                   "auth = \"none\"\n";
    struct mx_diag diag;
    (void)state;
    memset(&W, 0, sizeof(W));
    memset(&fk, 0, sizeof(fk));
    base_calls = mx_call_live_cnt();
    base_sessions = mx_session_live_cnt();
    base_reqs = mx_req_live_cnt();
    mx_log_set_level(getenv("MX_TEST_LOG") ? MX_LOG_DEBUG : MX_LOG_ERR);
    W.loop = ev_default_loop(0);
    ev_idle_init(&fk.pump, pump_cb);
    fk.sent = json_array();
    W.reports = json_array();
    assert_int_equal(mx_config_parse("unit.toml", cfg_text, sizeof(cfg_text) - 1, &W.cfg, &diag),
                     0);
    /* no state dir: no catalogue is read or written */
    free(W.cfg->proxy.state_dir);
    W.cfg->proxy.state_dir = NULL;
    mx_upstream_init(&W.up, &W.cfg->servers[0]);
    W.up.idx = 0;
    W.ups[0] = &W.up;
    struct mx_front_env env = {W.loop,   W.cfg, W.ups, 1, NULL, {on_done, NULL, on_dropped, NULL},
                               &fake_ops};
    W.m = mx_mcp_new(&env);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mx_mcp_free(W.m);
    spin();
    ev_idle_stop(W.loop, &fk.pump);
    assert_int_equal(mx_call_live_cnt(), base_calls);
    assert_int_equal(mx_session_live_cnt(), base_sessions);
    assert_int_equal(mx_req_live_cnt(), base_reqs);
    mx_upstream_clear(&W.up);
    mx_config_free(W.cfg);
    for (size_t i = 0; i < fk.rpc_cnt; i++) {
        json_decref(fk.rpc[i]->msg);
        free(fk.rpc[i]->text);
        free(fk.rpc[i]);
    }
    for (size_t i = 0; i < fk.sess_cnt; i++) {
        json_decref(fk.sess[i]->init);
        free(fk.sess[i]);
    }
    json_decref(fk.sent);
    json_decref(W.reports);
    return 0;
}

/* A 2025 session at |path|: its id into |sid|. */
static void open_session(const char *path, char *sid)
{
    struct resp r;
    request(&r, "POST", path, NULL, NULL,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
            "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"sampling\":{}},"
            "\"clientInfo\":{\"name\":\"unit\",\"version\":\"1\"}}}");
    assert_true(r.ended);
    assert_int_equal(r.status, 200);
    assert_int_equal(strlen(r.sid), MX_SESSION_ID_LEN);
    memcpy(sid, r.sid, MX_SESSION_ID_LEN + 1);
    resp_free(&r);
    request(&r, "POST", path, sid, NULL,
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    assert_int_equal(r.status, 202);
    resp_free(&r);
}

#define SLOW_CALL                                                                                  \
    "{\"jsonrpc\":\"2.0\",\"id\":\"c-1\",\"method\":\"tools/call\",\"params\":{\"name\":"          \
    "\"slow\",\"arguments\":{},\"_meta\":{\"progressToken\":\"tok\"}}}"

#define ECHO_CALL                                                                                  \
    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":"                \
    "\"echo\",\"arguments\":{}}}"

/* A 2025 session at /mcp with |body| (a tools/call) on its way upstream:
 * the call as the upstream got it. */
static struct mx_uprpc *session_call(char *sid, struct resp *r, const char *body)
{
    open_session(NULL, sid);
    request(r, "POST", NULL, sid, NULL, body);
    assert_false(r->ended);
    return last_call();
}

static void upstream_progress(struct mx_uprpc *rpc, json_t *token, int n)
{
    json_t *p =
        json_pack("{s:s, s:s, s:{s:O, s:i}}", "jsonrpc", "2.0", "method", "notifications/progress",
                  "params", "progressToken", token, "progress", n);
    rpc->cbs->on_message(rpc, rpc->s->key, p, rpc->data);
    json_decref(p);
}

static void upstream_answer(struct mx_uprpc *rpc, const char *text)
{
    json_t *resp = json_pack("{s:s, s:I, s:{s:[{s:s, s:s}]}}", "jsonrpc", "2.0", "id",
                             up_id_of(rpc), "result", "content", "type", "text", "text", text);
    rpc->done = true;
    rpc->cbs->on_done(rpc, resp, NULL, rpc->data);
    json_decref(resp);
    spin();
}

/* Wake progress while the upstream wakes, the upstream's own progress with
 * the client's token, a forged token dropped, the answer last. */
static void test_call_wake_and_progress(void **state)
{
    char sid[MX_SESSION_ID_LEN + 1];
    struct resp r;
    (void)state;
    struct mx_uprpc *rpc = session_call(sid, &r, SLOW_CALL);
    assert_false(r.ended);
    assert_int_equal(mx_mcp_inflight(W.m), 1);
    /* the upstream sees mcplex's id and token, not the client's */
    assert_true(json_is_integer(json_object_get(rpc->msg, "id")));
    assert_true(json_is_integer(up_token_of(rpc)));

    rpc->cbs->on_wait(rpc, rpc->data);
    upstream_progress(rpc, up_token_of(rpc), 1);
    json_t *forged = json_integer(json_integer_value(up_token_of(rpc)) + 1000);
    upstream_progress(rpc, forged, 2);
    json_decref(forged);
    assert_int_equal(W.dropped, 1);
    upstream_answer(rpc, "done");

    assert_true(r.ended);
    assert_int_equal(r.status, 200);
    json_t *msgs = messages(&r);
    assert_int_equal(json_array_size(msgs), 3);
    json_t *wake = json_object_get(json_array_get(msgs, 0), "params");
    assert_string_equal(json_string_value(json_object_get(wake, "progressToken")), "tok");
    assert_non_null(strstr(json_string_value(json_object_get(wake, "message")),
                           "waiting for sandbox 'up' to wake"));
    json_t *own = json_object_get(json_array_get(msgs, 1), "params");
    assert_string_equal(json_string_value(json_object_get(own, "progressToken")), "tok");
    assert_int_equal(json_integer_value(json_object_get(own, "progress")), 1);
    json_t *last = json_array_get(msgs, 2);
    assert_string_equal(json_string_value(json_object_get(last, "id")), "c-1");
    assert_non_null(json_object_get(last, "result"));
    json_decref(msgs);

    json_t *rep = report_of("tools/call");
    assert_string_equal(json_string_value(json_object_get(rep, "server")), "up");
    assert_int_equal(json_integer_value(json_object_get(rep, "status")), 200);
    assert_false(json_is_true(json_object_get(rep, "cancelled")));
    assert_int_equal(mx_mcp_inflight(W.m), 0);
    assert_int_equal(mx_idmap_call_cnt(W.m->ids), 0);
    resp_free(&r);
}

/* The client cancels while the call runs: its stream ends with no answer,
 * the upstream hears notifications/cancelled and is let end its stream (it
 * is read on, never dropped: closing it at once would race with the
 * cancellation), and what it still sends goes nowhere. */
static void test_call_cancel_race(void **state)
{
    char sid[MX_SESSION_ID_LEN + 1];
    struct resp r, n;
    (void)state;
    struct mx_uprpc *rpc = session_call(sid, &r, SLOW_CALL);
    upstream_progress(rpc, up_token_of(rpc), 1);
    assert_false(r.ended);
    request(&n, "POST", NULL, sid, NULL,
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
            "\"requestId\":\"c-1\",\"reason\":\"changed my mind\"}}");
    assert_int_equal(n.status, 202);
    resp_free(&n);
    /* the client's stream ended, and held only the progress before */
    assert_true(r.ended);
    json_t *msgs = messages(&r);
    assert_int_equal(json_array_size(msgs), 1);
    json_decref(msgs);
    /* the upstream heard it, with its own id; its stream goes on */
    assert_int_equal(sent_cnt("notifications/cancelled"), 1);
    json_t *note = json_object_get(sent_last(), "params");
    assert_int_equal(json_integer_value(json_object_get(note, "requestId")), up_id_of(rpc));
    assert_string_equal(json_string_value(json_object_get(note, "reason")), "changed my mind");
    assert_false(rpc->cancelled);
    assert_true(rpc->resumed >= 1);
    assert_int_equal(mx_mcp_inflight(W.m), 1);
    /* late progress: nobody waits for it, and it is not a forgery */
    size_t before = mx_buf_len(&r.body);
    upstream_progress(rpc, up_token_of(rpc), 2);
    assert_int_equal(W.dropped, 0);
    upstream_answer(rpc, "too late");
    assert_int_equal(mx_buf_len(&r.body), before);
    assert_int_equal(mx_mcp_inflight(W.m), 0);
    assert_int_equal(mx_idmap_call_cnt(W.m->ids), 0);
    assert_true(json_is_true(json_object_get(report_of("tools/call"), "cancelled")));
    resp_free(&r);
}

/* The client goes away mid-call: the call is orphaned as for a cancel, and
 * a question the upstream asks for it is refused. */
static void test_call_client_gone(void **state)
{
    char sid[MX_SESSION_ID_LEN + 1];
    struct resp r;
    (void)state;
    struct mx_uprpc *rpc = session_call(sid, &r, SLOW_CALL);
    mx_req_notify_abort(r.req);
    spin();
    assert_int_equal(sent_cnt("notifications/cancelled"), 1);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(sent_last(), "params"), "reason")),
        "the client went away");
    assert_false(rpc->cancelled);
    json_t *ask = json_pack("{s:s, s:s, s:s, s:{}}", "jsonrpc", "2.0", "id", "q-1", "method",
                            "sampling/createMessage", "params");
    rpc->cbs->on_message(rpc, rpc->s->key, ask, rpc->data);
    json_decref(ask);
    json_t *refusal = sent_last();
    assert_string_equal(json_string_value(json_object_get(refusal, "id")), "q-1");
    assert_non_null(json_object_get(refusal, "error"));
    upstream_answer(rpc, "nobody");
    assert_int_equal(mx_mcp_inflight(W.m), 0);
    json_t *rep = report_of("tools/call");
    assert_true(json_is_true(json_object_get(rep, "cancelled")));
    assert_int_equal(json_integer_value(json_object_get(rep, "status")), 0);
    mx_req_free(r.req);
    r.req = NULL;
    resp_free(&r);
}

/* A slow client: the upstream stream pauses (MX_EAGAIN from on_message)
 * and resumes once the client drained. */
static void test_call_drain(void **state)
{
    char sid[MX_SESSION_ID_LEN + 1];
    struct resp r;
    (void)state;
    struct mx_uprpc *rpc = session_call(sid, &r, SLOW_CALL);
    r.blocked = true;
    json_t *p =
        json_pack("{s:s, s:s, s:{s:O, s:i}}", "jsonrpc", "2.0", "method", "notifications/progress",
                  "params", "progressToken", up_token_of(rpc), "progress", 1);
    assert_int_equal(rpc->cbs->on_message(rpc, rpc->s->key, p, rpc->data), MX_EAGAIN);
    json_decref(p);
    int resumed = rpc->resumed;
    r.blocked = false;
    mx_req_notify_drain(r.req);
    assert_int_equal(rpc->resumed, resumed + 1);
    upstream_answer(rpc, "drained");
    assert_true(r.ended);
    json_t *msgs = messages(&r);
    assert_int_equal(json_array_size(msgs), 2);
    json_decref(msgs);
    resp_free(&r);
}

/* The session ends (DELETE) with a call in flight: the upstream hears the
 * cancellation, the call's stream is dropped, the client's ends. */
static void test_call_session_closed(void **state)
{
    char sid[MX_SESSION_ID_LEN + 1];
    struct resp r, d;
    (void)state;
    open_session(NULL, sid);
    request(&r, "POST", NULL, sid, NULL,
            "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
            "\"echo\",\"arguments\":{}}}");
    struct mx_uprpc *rpc = last_call();
    request(&d, "DELETE", NULL, sid, NULL, NULL);
    assert_int_equal(d.status, 200);
    resp_free(&d);
    assert_true(r.ended);
    assert_int_equal(r.status, 404);
    assert_int_equal(sent_cnt("notifications/cancelled"), 1);
    assert_true(rpc->cancelled);
    assert_int_equal(mx_mcp_inflight(W.m), 0);
    /* and the session is gone for the next request */
    struct resp again;
    request(&again, "POST", NULL, sid, NULL, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}");
    assert_int_equal(again.status, 404);
    resp_free(&again);
    resp_free(&r);
}

static const char *const modern_hdrs[] = {"MCP-Protocol-Version: 2026-07-28",
                                          "Mcp-Method: tools/call", "Mcp-Name: slow", NULL};

static char *modern_call(const char *id, const char *extra)
{
    return mx_xasprintf(
        "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"slow\",\"arguments\":{}%s,\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
        "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{\"sampling\":{}}}}}",
        id, extra ? extra : "");
}

/* MCP 2026-07-28, Multi Round-Trip: the upstream's question becomes an
 * input_required result (the call waits, not counted in flight), the
 * retry's answer goes back to the upstream, the final answer to the retry. */
static void test_call_input_required(void **state)
{
    struct resp r, r2;
    (void)state;
    char *first = modern_call("m-1", NULL);
    request(&r, "POST", NULL, NULL, modern_hdrs, first);
    free(first);
    struct mx_uprpc *rpc = last_call();
    json_t *ask = json_pack("{s:s, s:s, s:s, s:{s:[]}}", "jsonrpc", "2.0", "id", "q-7", "method",
                            "sampling/createMessage", "params", "messages");
    rpc->cbs->on_message(rpc, rpc->s->key, ask, rpc->data);
    json_decref(ask);
    spin();
    assert_true(r.ended);
    json_t *msgs = messages(&r);
    json_t *result = json_object_get(json_array_get(msgs, json_array_size(msgs) - 1), "result");
    assert_string_equal(json_string_value(json_object_get(result, "resultType")), "input_required");
    const char *key = NULL;
    json_t *q;
    json_object_foreach(json_object_get(result, "inputRequests"), key, q)
    {
        break;
    }
    assert_non_null(key);
    char *state_s = mx_xstrdup(json_string_value(json_object_get(result, "requestState")));
    char *key_s = mx_xstrdup(key);
    json_decref(msgs);
    assert_int_equal(mx_mcp_inflight(W.m), 0); /* parked */
    assert_false(rpc->cancelled);

    char *extra = mx_xasprintf(",\"requestState\":\"%s\",\"inputResponses\":{\"%s\":{"
                               "\"role\":\"assistant\",\"content\":{\"type\":\"text\","
                               "\"text\":\"ANSWER-9\"},\"model\":\"m\"}}",
                               state_s, key_s);
    char *retry = modern_call("m-2", extra);
    request(&r2, "POST", NULL, NULL, modern_hdrs, retry);
    free(retry);
    free(extra);
    free(state_s);
    free(key_s);
    /* the answer went to the upstream with its own id */
    json_t *ans = sent_last();
    assert_string_equal(json_string_value(json_object_get(ans, "id")), "q-7");
    char *dump = json_dumps(ans, 0);
    assert_non_null(strstr(dump, "ANSWER-9"));
    free(dump);
    assert_int_equal(mx_mcp_inflight(W.m), 1);
    upstream_answer(rpc, "sampled");
    assert_true(r2.ended);
    msgs = messages(&r2);
    json_t *fin = json_array_get(msgs, json_array_size(msgs) - 1);
    assert_string_equal(json_string_value(json_object_get(fin, "id")), "m-2");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(fin, "result"), "resultType")),
        "complete");
    json_decref(msgs);
    assert_int_equal(mx_mcp_inflight(W.m), 0);
    resp_free(&r2);
    resp_free(&r);
}

/* /mcp/<server>: a session of mcplex's own, answered from that upstream's
 * catalogue (its capabilities, name and instructions), its own list, and a
 * method mcplex does not know goes to it as sent. */
static void test_call_scoped(void **state)
{
    char sid[MX_SESSION_ID_LEN + 1];
    struct resp r;
    (void)state;
    request(&r, "POST", "/mcp/up", NULL, NULL,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
            "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
            "\"clientInfo\":{\"name\":\"unit\",\"version\":\"1\"}}}");
    assert_int_equal(r.status, 200);
    memcpy(sid, r.sid, sizeof(sid));
    json_t *msgs = messages(&r);
    json_t *res = json_object_get(json_array_get(msgs, 0), "result");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(res, "serverInfo"), "name")),
        "fake-server");
    assert_string_equal(json_string_value(json_object_get(res, "instructions")), "be nice");
    assert_non_null(json_object_get(json_object_get(res, "capabilities"), "tools"));
    assert_null(json_object_get(json_object_get(res, "capabilities"), "prompts"));
    json_decref(msgs);
    resp_free(&r);
    /* the session belongs to that endpoint only */
    request(&r, "POST", NULL, sid, NULL, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
    assert_int_equal(r.status, 404);
    resp_free(&r);
    request(&r, "POST", "/mcp/up", sid, NULL,
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
    msgs = messages(&r);
    json_t *tools = json_object_get(json_object_get(json_array_get(msgs, 0), "result"), "tools");
    assert_int_equal(json_array_size(tools), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 0), "name")),
                        "slow");
    json_decref(msgs);
    resp_free(&r);
    request(&r, "POST", "/mcp/up", sid, NULL,
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"x/made-up\",\"params\":{}}");
    struct mx_uprpc *rpc = last_call();
    assert_string_equal(rpc_method(rpc), "x/made-up");
    upstream_answer(rpc, "as sent");
    msgs = messages(&r);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(msgs, 0), "id")), 4);
    json_decref(msgs);
    /* every request there is the server's, in the report */
    assert_string_equal(json_string_value(json_object_get(report_of("initialize"), "server")),
                        "up");
    assert_string_equal(json_string_value(json_object_get(report_of("x/made-up"), "server")), "up");
    resp_free(&r);
}

/* The upstream's result as bytes (what upsess_http.c gives for a plain
 * answer): {"jsonrpc","id"} with the result beside it. */
static void upstream_answer_raw(struct mx_uprpc *rpc, const char *raw)
{
    json_t *resp = json_pack("{s:s, s:I}", "jsonrpc", "2.0", "id", up_id_of(rpc));
    assert_true(rpc->want_raw);
    rpc->done = true;
    rpc->raw = mx_str_cstr(raw);
    rpc->cbs->on_done(rpc, resp, NULL, rpc->data);
    rpc->raw = mx_str_make(NULL, 0);
    json_decref(resp);
    spin();
}

#define RAW_RESULT "{\"content\":[{\"type\":\"text\",\"text\":\"as it came\"}],\"n\":1.50}"

/* A result that came as bytes reaches the client as those bytes with the
 * client's id, as JSON, and as the last event of an SSE answer. */
static void test_call_raw_result(void **state)
{
    char sid[MX_SESSION_ID_LEN + 1];
    struct resp r;
    (void)state;
    upstream_answer_raw(session_call(sid, &r, ECHO_CALL), RAW_RESULT);
    assert_true(r.ended);
    assert_int_equal(r.status, 200);
    static const char want[] = "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":" RAW_RESULT "}";
    struct mx_str body = mx_buf_str(&r.body);
    assert_int_equal(body.len, sizeof(want) - 1);
    assert_memory_equal(body.p, want, body.len);
    assert_int_equal(json_integer_value(json_object_get(report_of("tools/call"), "status")), 200);
    resp_free(&r);

    /* after progress the answer is SSE: the bytes are its last event */
    request(&r, "POST", NULL, sid, NULL, SLOW_CALL);
    struct mx_uprpc *rpc = last_call();
    upstream_progress(rpc, up_token_of(rpc), 1);
    upstream_answer_raw(rpc, RAW_RESULT);
    assert_true(r.ended);
    static const char last[] =
        "data: {\"jsonrpc\":\"2.0\",\"id\":\"c-1\",\"result\":" RAW_RESULT "}\n\n";
    body = mx_buf_str(&r.body);
    assert_true(body.len > sizeof(last) - 1);
    assert_memory_equal(body.p + body.len - (sizeof(last) - 1), last, sizeof(last) - 1);
    resp_free(&r);
}

/* The request goes upstream as the client's bytes (spacing, member order
 * and number spelling kept) with only the id and progress token made
 * mcplex's own; the client's answer has its own id and token back. */
static void test_call_text(void **state)
{
    char sid[MX_SESSION_ID_LEN + 1];
    struct resp r;
    (void)state;
    struct mx_uprpc *rpc = session_call(
        sid, &r,
        "{ \"params\": {\"_meta\":{\"progressToken\": \"tok\" , \"x\":[1.50]},\"name\":\"slow\","
        "\"arguments\":{\"b\":1e2,\"a\":\"\\u00e9\"}}, \"id\":\"c-1\",\"method\":\"tools/call\","
        "\"jsonrpc\":\"2.0\"}\n");
    assert_non_null(rpc->text);
    char want[512];
    json_int_t up = json_integer_value(json_object_get(rpc->msg, "id"));
    snprintf(want, sizeof(want),
             "{ \"params\": {\"_meta\":{\"progressToken\": %" JSON_INTEGER_FORMAT
             " , \"x\":[1.50]},\"name\":\"slow\",\"arguments\":{\"b\":1e2,\"a\":\"\\u00e9\"}}, "
             "\"id\":%" JSON_INTEGER_FORMAT ",\"method\":\"tools/call\",\"jsonrpc\":\"2.0\"}\n",
             up, up);
    assert_string_equal(rpc->text, want);
    upstream_progress(rpc, up_token_of(rpc), 1);
    upstream_answer(rpc, "done");
    json_t *msgs = messages(&r);
    json_t *own = json_object_get(json_array_get(msgs, 0), "params");
    assert_string_equal(json_string_value(json_object_get(own, "progressToken")), "tok");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 1), "id")), "c-1");
    json_decref(msgs);
    resp_free(&r);

    /* a client's level goes to an upstream that takes it in _meta: the
     * message changed, so it is encoded (no text) */
    request(&r, "POST", NULL, sid, NULL,
            "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"logging/setLevel\","
            "\"params\":{\"level\":\"error\"}}");
    resp_free(&r);
    request(&r, "POST", NULL, sid, NULL, ECHO_CALL);
    rpc = last_call();
    assert_null(rpc->text);
    json_t *meta = json_object_get(json_object_get(rpc->msg, "params"), "_meta");
    assert_string_equal(json_string_value(json_object_get(meta, MX_REV_META_LOG_LEVEL)), "error");
    upstream_answer(rpc, "done");
    resp_free(&r);
}

/* The upstream fails: the JSON-RPC error naming it, HTTP 200, and the
 * failure in the report. */
static void test_call_upstream_fails(void **state)
{
    char sid[MX_SESSION_ID_LEN + 1];
    struct resp r;
    (void)state;
    struct mx_uprpc *rpc = session_call(sid, &r, ECHO_CALL);
    struct mx_upfail fail;
    mx_upfail_transport(W.up.cfg, MX_ECLOSED, NULL, &fail);
    rpc->done = true;
    rpc->cbs->on_done(rpc, NULL, &fail, rpc->data);
    spin();
    assert_true(r.ended);
    assert_int_equal(r.status, 200);
    json_t *msgs = messages(&r);
    json_t *err = json_object_get(json_array_get(msgs, 0), "error");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32010);
    assert_non_null(strstr(json_string_value(json_object_get(err, "message")), "'up'"));
    json_decref(msgs);
    assert_string_equal(json_string_value(json_object_get(report_of("tools/call"), "fail")),
                        "unreachable");
    resp_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_call_wake_and_progress, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_cancel_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_client_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_session_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_input_required, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_scoped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_upstream_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_raw_result, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_text, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
