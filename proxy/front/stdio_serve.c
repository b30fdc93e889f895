/* SPDX-License-Identifier: MIT */
/*
 * /mcp/<server> for stdio upstreams (see stdio_serve.h). One bridge per
 * stdio upstream, made at its first request: a client session table
 * (session.h), the shared upstream session (or one per client session),
 * and the calls in flight. A call is one client request relayed upstream;
 * it owns its HTTP answer until it ends (answered, cancelled, the client
 * gone, or its session closed) and is freed when no code of it is on the
 * stack (refs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alloc.h"
#include "batch.h"
#include "buf.h"
#include "err.h"
#include "log.h"
#include "revision.h"
#include "rpc.h"
#include "session.h"
#include "sse.h"
#include "sse_write.h"
#include "stdio_serve.h"
#include "upsess.h"

#define SUBSYS      "stdio"
#define SSE_OUT_CAP (16u * 1024 * 1024)

struct bridge {
    struct mx_stdio_serve *ss;
    struct mx_upstream *up;
    const struct mx_server_cfg *cfg;
    struct mx_upsess_env env;
    struct mx_session_table *sessions; /* NULL: not used yet */
    struct mx_upsess *shared;          /* session = "shared", opened at first need */
    uint64_t next_id;
};

struct mx_stdio_serve {
    struct mx_gateway *gw;
    struct bridge **b; /* by gateway upstream slot, made on first use */
    size_t cnt;
};

struct bcall;

/* Per client session (mx_session.owner). */
struct bsess {
    struct bridge *b;
    struct mx_session *s;
    struct mx_upsess *us; /* session = "per-client": its own; else NULL */
    struct bcall *calls;
};

struct bcall {
    struct bsess *bs;
    struct bcall *prev;
    struct bcall *next;
    struct mx_req *req;
    struct mx_uprpc *rpc;
    json_t *client_id;
    json_t *client_token; /* progress token the client gave, or NULL */
    uint64_t up_id;
    bool init;   /* the client's initialize: waits for the upstream session */
    bool no_sse; /* the client accepts JSON only: messages before the answer go */
    bool sse;
    bool blocked;
    bool ended;
    int refs;
};

/* ---- answering ---- */

static void respond_json(struct mx_req *req, int status, json_t *body,
                         const struct mx_hdr_out *hdrs, size_t cnt)
{
    char *text = mx_rpc_dump(body);
    json_decref(body);
    mx_req_respond(req, status, hdrs, cnt, "application/json", text, strlen(text));
    free(text);
}

static void respond_error(struct mx_req *req, int status, const json_t *id, int code,
                          const char *msg)
{
    respond_json(req, status, mx_rpc_error_new(id, code, msg, NULL), NULL, 0);
}

static struct mx_upsess *bs_upsess(struct bsess *bs);

/* ---- calls ---- */

static void call_hold(struct bcall *c)
{
    c->refs++;
}

static void call_release(struct bcall *c)
{
    if (--c->refs > 0)
        return;
    json_decref(c->client_id);
    json_decref(c->client_token);
    free(c);
}

static void call_end(struct bcall *c)
{
    struct bsess *bs = c->bs;
    if (c->ended)
        return;
    c->ended = true;
    if (c->prev)
        c->prev->next = c->next;
    else
        bs->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    bs->s->busy--;
    bs->b->ss->gw->inflight--;
    mx_upstream_release(bs->b->up);
    if (c->rpc) {
        mx_uprpc_cancel(c->rpc);
        c->rpc = NULL;
    }
    if (c->req)
        mx_req_set_handler(c->req, NULL, NULL, NULL);
    c->req = NULL;
    call_release(c);
}

/* MCP 2025-06-18, Cancellation: the upstream may stop working on it. */
static void cancel_upstream(struct bcall *c, const char *reason)
{
    if (c->rpc == NULL || c->init)
        return;
    json_t *note =
        json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method", "notifications/cancelled",
                  "params", "requestId", (json_int_t)c->up_id, "reason", reason);
    mx_upsess_send(bs_upsess(c->bs), note, 0);
    json_decref(note);
}

static void call_client_gone(struct bcall *c)
{
    c->req = NULL;
    cancel_upstream(c, "the client went away");
    call_end(c);
}

static int start_sse(struct bcall *c)
{
    if (c->sse)
        return 0;
    if (mx_sse_start(c->req) != 0)
        return MX_ECLOSED;
    c->sse = true;
    return 0;
}

/* |msg| on the call's SSE answer. Returns 0, MX_EAGAIN (sent; the client
 * is slow) or MX_ECLOSED (the call ended). */
static int call_send(struct bcall *c, const json_t *msg)
{
    if (c->ended)
        return MX_ECLOSED;
    if (c->req == NULL)
        return 0;
    if (c->no_sse) {
        mx_log_debug(SUBSYS, "a message for a client that takes no SSE was dropped");
        return 0;
    }
    if (start_sse(c) != 0) {
        call_client_gone(c);
        return MX_ECLOSED;
    }
    char *text = mx_rpc_dump(msg);
    int rc = mx_sse_write_event(c->req, mx_str_cstr(text), SSE_OUT_CAP);
    free(text);
    if (rc == MX_ELIMIT) {
        mx_log_warn(SUBSYS, "a message over %u bytes for a client was dropped", SSE_OUT_CAP);
        return 0;
    }
    if (rc == MX_EAGAIN) {
        c->blocked = true;
        return MX_EAGAIN;
    }
    if (rc) {
        call_client_gone(c);
        return MX_ECLOSED;
    }
    return 0;
}

/* The final answer, then the call ends. */
static void call_answer(struct bcall *c, json_t *out, const struct mx_hdr_out *hdrs, size_t cnt)
{
    call_hold(c);
    if (c->req && c->sse) {
        if (call_send(c, out) != MX_ECLOSED && c->req) {
            struct mx_req *req = c->req;
            c->req = NULL;
            mx_req_set_handler(req, NULL, NULL, NULL);
            mx_req_end(req);
        }
    } else if (c->req) {
        struct mx_req *req = c->req;
        c->req = NULL;
        mx_req_set_handler(req, NULL, NULL, NULL);
        respond_json(req, 200, json_incref(out), hdrs, cnt);
    }
    call_end(c);
    call_release(c);
}

static int call_on_message(struct mx_uprpc *rpc, uint64_t key, json_t *msg, void *data)
{
    struct bcall *c = data;
    (void)rpc;
    (void)key;
    int rc = 0;
    call_hold(c);
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (method && strcmp(method, "notifications/progress") == 0) {
        if (c->client_token) {
            json_t *out = json_deep_copy(msg);
            json_object_set(json_object_get(out, "params"), "progressToken", c->client_token);
            call_send(c, out);
            json_decref(out);
        }
    } else {
        /* logs, and requests of the server (sampling, elicitation, roots):
         * their ids pass through, the client's answer comes back by POST */
        call_send(c, msg);
    }
    if (!c->ended && c->blocked)
        rc = MX_EAGAIN;
    call_release(c);
    return rc;
}

static void call_on_done(struct mx_uprpc *rpc, json_t *resp, const struct mx_upfail *fail,
                         void *data)
{
    struct bcall *c = data;
    const struct mx_server_cfg *cfg = c->bs->b->cfg;
    (void)rpc;
    c->rpc = NULL;
    json_t *out;
    if (resp) {
        out = json_deep_copy(resp);
        json_object_set(out, "id", c->client_id);
    } else {
        out = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", c->client_id, "error",
                        mx_upfail_error(cfg, fail));
    }
    call_answer(c, out, NULL, 0);
    json_decref(out);
}

static void call_drain(struct mx_req *req, void *data)
{
    struct bcall *c = data;
    (void)req;
    c->blocked = false;
    if (c->rpc)
        mx_uprpc_resume(c->rpc);
}

static void call_abort(struct mx_req *req, void *data)
{
    struct bcall *c = data;
    (void)req;
    mx_log_debug(SUBSYS, "up:%s client of call %llu went away; cancelling", c->bs->b->cfg->name,
                 (unsigned long long)c->up_id);
    call_client_gone(c);
}

static bool accepts_sse(const struct mx_req *req);

static struct bcall *call_new(struct bsess *bs, struct mx_req *req, json_t *client_id)
{
    struct bcall *c = mx_xcalloc(1, sizeof(*c));
    c->bs = bs;
    c->req = req;
    c->refs = 1;
    c->client_id = json_incref(client_id);
    c->up_id = ++bs->b->next_id;
    c->no_sse = !accepts_sse(req);
    c->next = bs->calls;
    if (bs->calls)
        bs->calls->prev = c;
    bs->calls = c;
    bs->s->busy++;
    bs->b->ss->gw->inflight++;
    mx_upstream_hold(bs->b->up);
    mx_req_set_handler(req, call_drain, call_abort, c);
    return c;
}

static void call_start(struct bsess *bs, struct mx_req *req, json_t *msg)
{
    static const struct mx_uprpc_cbs cbs = {call_on_message, call_on_done, NULL};
    const struct mx_server_cfg *cfg = bs->b->cfg;
    struct bcall *c = call_new(bs, req, json_object_get(msg, "id"));
    /* ids and tokens of every client meet in one process: make them ours */
    json_t *up = json_deep_copy(msg);
    json_object_set_new(up, "id", json_integer((json_int_t)c->up_id));
    json_t *meta = json_object_get(json_object_get(up, "params"), "_meta");
    json_t *token = json_object_get(meta, "progressToken");
    if (token) {
        char tok[48];
        c->client_token = json_incref(token);
        snprintf(tok, sizeof(tok), "mcplex-%llu", (unsigned long long)c->up_id);
        json_object_set_new(meta, "progressToken", json_string(tok));
    }
    int rc = mx_upsess_request(bs_upsess(bs), up, (long)cfg->request_timeout_ms, &cbs, c, &c->rpc);
    json_decref(up);
    if (rc) {
        json_t *out = mx_rpc_error_new(c->client_id, MX_RPC_UPSTREAM_UNAVAILABLE,
                                       "the upstream session is closed", NULL);
        call_answer(c, out, NULL, 0);
        json_decref(out);
    }
}

/* ---- initialize ---- */

static const char *negotiate(const char *asked)
{
    return mx_rev_session_version_known(asked) ? asked : mx_rev_session_versions[0];
}

static void init_on_done(struct mx_uprpc *rpc, json_t *resp, const struct mx_upfail *fail,
                         void *data)
{
    struct bcall *c = data;
    struct bsess *bs = c->bs;
    struct mx_session *s = bs->s;
    (void)resp;
    c->rpc = NULL;
    if (fail) {
        json_t *out = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", c->client_id, "error",
                                mx_upfail_error(bs->b->cfg, fail));
        call_answer(c, out, NULL, 0);
        json_decref(out);
        mx_session_close(s);
        return;
    }
    (void)rpc;
    json_t *result = json_deep_copy(mx_upsess_init_result(bs_upsess(bs)));
    if (!json_is_object(result)) {
        json_decref(result);
        result = json_object();
    }
    json_object_set_new(result, "protocolVersion", json_string(s->version));
    json_t *out =
        json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", c->client_id, "result", result);
    struct mx_hdr_out h[] = {{"Mcp-Session-Id", s->id}};
    s->answered = true;
    call_answer(c, out, h, 1);
    json_decref(out);
}

/* The client's capabilities an upstream may use for it (per-client). */
static json_t *client_caps(const json_t *params)
{
    static const char *const keep[] = {"sampling", "elicitation", "roots"};
    json_t *caps = json_object_get(params, "capabilities");
    json_t *out = json_object();
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
        json_t *v = json_object_get(caps, keep[i]);
        if (json_is_object(v))
            json_object_set(out, keep[i], v);
    }
    return out;
}

static void pc_on_message(struct mx_upsess *us, uint64_t key, json_t *msg, void *data);
static void shared_on_message(struct mx_upsess *us, uint64_t key, json_t *msg, void *data);

static const struct mx_upsess_cbs pc_cbs = {pc_on_message, NULL, NULL};
static const struct mx_upsess_cbs shared_cbs = {shared_on_message, NULL, NULL};

static struct mx_upsess *bs_upsess(struct bsess *bs)
{
    struct bridge *b = bs->b;
    if (bs->us)
        return bs->us;
    if (b->shared == NULL) {
        /* every client is behind it: the server may ask; the answer comes
         * from the client whose call made it ask */
        json_t *caps = json_pack("{s:{}, s:{}}", "sampling", "elicitation");
        b->shared = mx_upsess_new(&b->env, caps, NULL, &shared_cbs, b);
        json_decref(caps);
    }
    return b->shared;
}

static void initialize(struct bridge *b, struct mx_req *req, json_t *msg)
{
    static const struct mx_uprpc_cbs cbs = {NULL, init_on_done, NULL};
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    struct mx_session *s = mx_session_new(b->sessions);
    if (s == NULL) {
        static const struct mx_hdr_out retry[] = {{"Retry-After", MX_SESSION_RETRY_AFTER}};
        respond_json(req, 503,
                     mx_rpc_error_new(id, MX_RPC_UPSTREAM_UNAVAILABLE,
                                      "too many sessions ([listen] max_sessions)", NULL),
                     retry, 1);
        return;
    }
    struct bsess *bs = mx_xcalloc(1, sizeof(*bs));
    bs->b = b;
    bs->s = s;
    s->owner = bs;
    s->init_params = json_deep_copy(params);
    snprintf(s->version, sizeof(s->version), "%s",
             negotiate(json_string_value(json_object_get(params, "protocolVersion"))));
    if (b->cfg->session == MX_SESSION_PER_CLIENT) {
        json_t *caps = client_caps(params);
        bs->us = mx_upsess_new(&b->env, caps, s->id, &pc_cbs, bs);
        json_decref(caps);
    }
    struct bcall *c = call_new(bs, req, id);
    c->init = true;
    /* MCP 2025-06-18, Lifecycle: answered with what the server answered
     * mcplex, once its process is up and initialized */
    if (mx_upsess_request(bs_upsess(bs), NULL, (long)b->cfg->request_timeout_ms, &cbs, c,
                          &c->rpc) != 0) {
        json_t *out = mx_rpc_error_new(id, MX_RPC_UPSTREAM_UNAVAILABLE,
                                       "the upstream session is closed", NULL);
        call_answer(c, out, NULL, 0);
        json_decref(out);
        mx_session_close(s);
    }
}

/* ---- what the upstream sends outside any call ---- */

static void reply(struct mx_upsess *us, uint64_t key, json_t *id, json_t *result, int code,
                  const char *text)
{
    json_t *r = result ? json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result)
                       : mx_rpc_error_new(id, code, text, NULL);
    mx_upsess_send(us, r, key);
    json_decref(r);
}

static void pc_on_message(struct mx_upsess *us, uint64_t key, json_t *msg, void *data)
{
    struct bsess *bs = data;
    enum mx_rpc_kind kind = mx_rpc_classify(msg);
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (kind == MX_RPC_REQUEST && strcmp(method, "ping") == 0) {
        reply(us, key, json_object_get(msg, "id"), json_object(), 0, NULL);
        return;
    }
    if (kind == MX_RPC_NOTIFICATION && strcmp(method, "notifications/progress") == 0)
        return; /* of no call still running */
    /* MCP 2025-06-18, Streamable HTTP: on the session's GET stream */
    mx_session_push(bs->s, msg);
}

static void shared_on_message(struct mx_upsess *us, uint64_t key, json_t *msg, void *data)
{
    struct bridge *b = data;
    enum mx_rpc_kind kind = mx_rpc_classify(msg);
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (kind == MX_RPC_REQUEST) {
        json_t *id = json_object_get(msg, "id");
        if (strcmp(method, "ping") == 0)
            reply(us, key, id, json_object(), 0, NULL);
        else if (strcmp(method, "roots/list") == 0)
            reply(us, key, id, json_pack("{s:[]}", "roots"), 0, NULL);
        else
            reply(us, key, id, NULL, MX_RPC_METHOD_NOT_FOUND,
                  "mcplex cannot tell which client this is for; send it while handling a "
                  "request");
        return;
    }
    if (kind != MX_RPC_NOTIFICATION || strcmp(method, "notifications/progress") == 0)
        return;
    /* list_changed, logs, resources/updated: for every client of the process */
    for (struct mx_session *s = mx_session_first(b->sessions); s; s = s->next) {
        if (s->answered)
            mx_session_push(s, msg);
    }
}

/* ---- sessions ---- */

static void session_on_close(struct mx_session *s, void *data)
{
    struct bsess *bs = s->owner;
    (void)data;
    if (bs == NULL)
        return;
    while (bs->calls) {
        struct bcall *c = bs->calls;
        call_hold(c);
        cancel_upstream(c, "the session ended");
        if (c->req) {
            struct mx_req *req = c->req;
            c->req = NULL;
            mx_req_set_handler(req, NULL, NULL, NULL);
            if (c->sse)
                mx_req_end(req);
            else
                respond_error(req, 404, c->client_id, MX_RPC_INVALID_REQUEST, "the session ended");
        }
        call_end(c);
        call_release(c);
    }
    mx_upsess_close(bs->us);
    free(bs);
    s->owner = NULL;
}

static struct bridge *bridge_for(struct mx_gateway *gw, struct mx_upstream *up)
{
    static const struct mx_session_cbs cbs = {session_on_close};
    if (gw->stdio_serve == NULL) {
        struct mx_stdio_serve *ss = mx_xcalloc(1, sizeof(*ss));
        ss->gw = gw;
        gw->stdio_serve = ss;
    }
    struct mx_stdio_serve *ss = gw->stdio_serve;
    size_t idx = up->idx;
    if (idx >= ss->cnt) {
        ss->b = mx_xrealloc(ss->b, (idx + 1) * sizeof(*ss->b));
        memset(ss->b + ss->cnt, 0, (idx + 1 - ss->cnt) * sizeof(*ss->b));
        ss->cnt = idx + 1;
    }
    if (ss->b[idx] == NULL)
        ss->b[idx] = mx_xcalloc(1, sizeof(*ss->b[idx]));
    struct bridge *b = ss->b[idx];
    if (b->sessions == NULL) {
        b->ss = ss;
        b->up = up;
        b->cfg = up->cfg;
        b->env.loop = gw->loop;
        b->env.uc = gw->uclient;
        b->env.up = up;
        b->sessions = mx_session_table_new(gw->loop, gw->cfg->listen.session_idle_ms,
                                           (size_t)gw->cfg->listen.max_sessions, &cbs, b);
    }
    return b;
}

static void bridge_free(struct bridge *b)
{
    if (b == NULL)
        return;
    if (b->sessions) {
        mx_session_table_free(b->sessions);
        mx_upsess_close(b->shared);
        mx_upsess_env_clear(&b->env);
    }
    free(b);
}

void mx_stdio_serve_free(struct mx_stdio_serve *ss)
{
    if (ss == NULL)
        return;
    for (size_t i = 0; i < ss->cnt; i++)
        bridge_free(ss->b[i]);
    free(ss->b);
    free(ss);
}

void mx_stdio_serve_slot_gone(struct mx_stdio_serve *ss, size_t idx)
{
    if (ss == NULL || idx >= ss->cnt)
        return;
    bridge_free(ss->b[idx]);
    ss->b[idx] = NULL;
}

/* ---- HTTP ---- */

static struct mx_session *session_of(struct bridge *b, struct mx_req *req, const json_t *id)
{
    const struct mx_str *sid = mx_req_header(req, "Mcp-Session-Id");
    if (sid == NULL) {
        respond_error(req, 400, id, MX_RPC_INVALID_REQUEST,
                      "Bad Request: Mcp-Session-Id header is required");
        return NULL;
    }
    struct mx_session *s = mx_session_find(b->sessions, *sid);
    if (s == NULL || s->owner == NULL) {
        /* MCP 2025-06-18, Session Management: 404, and the client starts a
         * new session */
        respond_error(req, 404, id, MX_RPC_SESSION_GONE, "Session not found");
        return NULL;
    }
    return s;
}

static void client_cancelled(struct bsess *bs, json_t *msg)
{
    json_t *rid = json_object_get(json_object_get(msg, "params"), "requestId");
    for (struct bcall *c = bs->calls; c; c = c->next) {
        if (!c->init && rid && json_equal(c->client_id, rid)) {
            call_hold(c);
            cancel_upstream(c, "cancelled by the client");
            /* MCP 2025-06-18, Cancellation: no answer to a cancelled request */
            if (c->req) {
                struct mx_req *req = c->req;
                c->req = NULL;
                mx_req_set_handler(req, NULL, NULL, NULL);
                if (c->sse)
                    mx_req_end(req);
                else
                    mx_req_respond(req, 202, NULL, 0, NULL, NULL, 0);
            }
            call_end(c);
            call_release(c);
            return;
        }
    }
}

static void post(struct bridge *b, struct mx_req *req, json_t *body);

static void post_element(struct mx_req *element, void *data)
{
    json_t *msg = mx_rpc_parse(mx_req_body(element));
    post(data, element, msg);
    json_decref(msg);
}

/* MCP 2025-03-26 lets a client POST a JSON-RPC batch (batch.h says which
 * are taken): each element is served as if it came alone. */
static void post_batch(struct bridge *b, struct mx_req *req, json_t *arr)
{
    struct mx_session *s = session_of(b, req, NULL);
    if (s == NULL)
        return;
    const char *why = mx_batch_refusal(arr, s->version);
    if (why == NULL && mx_batch_serve(b->ss->gw->loop, req, arr, SSE_OUT_CAP, post_element, b) == 0)
        return;
    respond_error(req, 400, NULL, MX_RPC_INVALID_REQUEST, why ? why : "Invalid Request");
}

static void post(struct bridge *b, struct mx_req *req, json_t *body)
{
    json_t *msg = json_incref(body);
    if (msg == NULL) {
        respond_error(req, 400, NULL, MX_RPC_PARSE_ERROR, "Parse error");
        return;
    }
    if (json_is_array(msg)) {
        post_batch(b, req, msg);
        json_decref(msg);
        return;
    }
    if (!json_is_object(msg)) {
        respond_error(req, 400, NULL, MX_RPC_INVALID_REQUEST, "Invalid Request");
        json_decref(msg);
        return;
    }
    enum mx_rpc_kind kind = mx_rpc_classify(msg);
    json_t *id = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (kind == MX_RPC_INVALID) {
        respond_error(req, 400, id, MX_RPC_INVALID_REQUEST, "Invalid Request");
        json_decref(msg);
        return;
    }
    if (kind == MX_RPC_REQUEST && strcmp(method, "initialize") == 0) {
        initialize(b, req, msg);
        json_decref(msg);
        return;
    }
    struct mx_session *s = session_of(b, req, id);
    if (s == NULL) {
        json_decref(msg);
        return;
    }
    struct bsess *bs = s->owner;
    switch (kind) {
    case MX_RPC_RESPONSE:
        /* the client answers a request of the server: its id is the server's */
        mx_upsess_send(bs_upsess(bs), msg, 0);
        mx_req_respond(req, 202, NULL, 0, NULL, NULL, 0);
        break;
    case MX_RPC_NOTIFICATION:
        if (strcmp(method, "notifications/cancelled") == 0)
            client_cancelled(bs, msg);
        else if (strcmp(method, "notifications/initialized") != 0)
            mx_upsess_send(bs_upsess(bs), msg, 0); /* mcplex sent its own initialized */
        mx_req_respond(req, 202, NULL, 0, NULL, NULL, 0);
        break;
    case MX_RPC_REQUEST:
        if (strcmp(method, "ping") == 0) {
            json_t *r = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result");
            respond_json(req, 200, r, NULL, 0);
        } else {
            call_start(bs, req, msg);
        }
        break;
    case MX_RPC_INVALID:
        break;
    }
    json_decref(msg);
}

static bool accepts_sse(const struct mx_req *req)
{
    return mx_rev_accepts(mx_req_header(req, "Accept"), "text/event-stream", false);
}

void mx_stdio_serve(struct mx_gateway *gw, struct mx_upstream *up, struct mx_req *req, json_t *msg)
{
    struct mx_str method = mx_req_method(req);
    struct bridge *b = bridge_for(gw, up);
    if (mx_str_eq(method, MX_STR_LIT("POST"))) {
        post(b, req, msg);
        return;
    }
    if (mx_str_eq(method, MX_STR_LIT("GET"))) {
        /* the guard let only an SSE stream request through */
        struct mx_session *s = session_of(b, req, NULL);
        if (s == NULL)
            return;
        int rc = mx_session_attach_get(s, req);
        if (rc == MX_EEXIST)
            mx_gateway_error(req, 409, "this session has a GET stream already");
        return;
    }
    if (mx_str_eq(method, MX_STR_LIT("DELETE"))) {
        struct mx_session *s = session_of(b, req, NULL);
        if (s == NULL)
            return;
        /* MCP 2025-06-18, Session Management: the client ends its session
         * (and, per client, its process) */
        mx_session_close(s);
        mx_req_respond(req, 200, NULL, 0, NULL, NULL, 0);
        return;
    }
    mx_gateway_error(req, 405, "use POST, GET or DELETE");
}
