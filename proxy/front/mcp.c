/* SPDX-License-Identifier: MIT */
/*
 * The client side of /mcp (MCP 2025-03-26 to 2025-11-25, Streamable HTTP):
 * sessions (initialize, GET stream, DELETE, 404 for unknown ids), the
 * method table (answered here, merged, or routed to one upstream), the
 * routed calls with ids and progress tokens rewritten per upstream, and the
 * way back for requests an upstream sends to a client. Answers are JSON
 * unless something must reach the client before the answer (progress, a
 * log message, a sampling request): then the response turns into an SSE
 * stream, which applies backpressure to the upstream.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "alloc.h"
#include "batch.h"
#include "err.h"
#include "log.h"
#include "mcp_int.h"
#include "revision.h"
#include "rpc.h"
#include "sse.h"
#include "sse_write.h"
#include "up2026.h"

#define SUBSYS SUBSYS_MCP

#define SSE_OUT_CAP (16u * 1024 * 1024)

static const char *const levels[] = {"debug", "info",     "notice", "warning",
                                     "error", "critical", "alert",  "emergency"};

/* The JSON-RPC codes of MCP and its SDKs that are not in rpc.h. */

struct call {
    struct mx_mcp *m;
    struct mx_session *s;
    struct call *prev;
    struct call *next;
    int refs;
    struct mx_req *req; /* NULL once the client's request is answered or gone */
    json_t *client_id;
    uint64_t up_id;
    struct mx_mcpup *u;
    struct upctx *via;
    struct mx_uprpc *rpc;
    bool sse;
    bool blocked;
    bool ended;
    bool orphan;        /* cancelled or abandoned: waits for the upstream to end it */
    json_t *token;      /* the client's progress token, or NULL */
    ev_timer wait_tick; /* "still waking" progress while the upstream wakes */
    int wait_n;
    int sub_op; /* +1 resources/subscribe, -1 unsubscribe, 0 neither */
    char *sub_uri;
};

enum pending_what {
    P_INIT = 0,
    P_LIST = 1,
};

struct pending {
    struct pending *next;
    struct mx_mcp *m;
    struct mx_session *s;
    struct mx_req *req;
    json_t *msg;
    enum pending_what what;
    enum mx_agg_kind kind;
    ev_timer timer;
    struct upwaits ups;
};

int mcp_log_level(const char *name)
{
    for (int i = 0; name && i < (int)(sizeof(levels) / sizeof(levels[0])); i++) {
        if (strcmp(name, levels[i]) == 0)
            return i;
    }
    return -1;
}

const char *mcp_log_level_name(int level)
{
    return level >= 0 && level < (int)(sizeof(levels) / sizeof(levels[0])) ? levels[level] : "info";
}

int mcp_min_log_level(struct mx_mcp *m)
{
    int min = -1;
    for (struct mx_session *s = mx_session_first(m->sessions); s; s = s->next) {
        if (s->log_level >= 0 && (min < 0 || s->log_level < min))
            min = s->log_level;
    }
    return min;
}

static void trace(struct mx_mcp *m, const char *dir, const struct mx_session *s, struct mx_str msg)
{
    mx_trace_msg(m->gw->trace, dir, NULL, s ? s->id : NULL, msg);
}

/* ---- answering ---- */

static void respond_json(struct mx_mcp *m, struct mx_req *req, const struct mx_session *s,
                         int status, json_t *body, const struct mx_hdr_out *extra, size_t n)
{
    char *text = mx_rpc_dump(body);
    json_decref(body);
    trace(m, "s2c", s, mx_str_cstr(text));
    mx_req_respond(req, status, extra, n, "application/json", text, strlen(text));
    free(text);
}

static void respond_error(struct mx_mcp *m, struct mx_req *req, const struct mx_session *s,
                          int status, const json_t *id, int code, const char *msg)
{
    respond_json(m, req, s, status, mx_rpc_error_new(id, code, msg, NULL), NULL, 0);
}

static void respond_result(struct mx_mcp *m, struct mx_req *req, const struct mx_session *s,
                           const json_t *id, json_t *result)
{
    json_t *r = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
    respond_json(m, req, s, 200, r, NULL, 0);
}

static void respond_accepted(struct mx_req *req)
{
    mx_req_respond(req, 202, NULL, 0, NULL, NULL, 0);
}

void mcp_push(struct mx_session *s, const json_t *msg)
{
    struct sessx *sx = s->owner;
    if (sx && sx->m) {
        char *text = mx_rpc_dump(msg);
        trace(sx->m, "s2c", s, mx_str_cstr(text));
        free(text);
    }
    mx_session_push(s, msg);
}

/* ---- calls ---- */

static void call_hold(struct call *c)
{
    c->refs++;
}

static void call_release(struct call *c)
{
    if (--c->refs > 0)
        return;
    json_decref(c->client_id);
    json_decref(c->token);
    free(c->sub_uri);
    free(c);
}

/* Forget the call: no answer will reach the client after this. */
static void call_end(struct call *c)
{
    if (c->ended)
        return;
    c->ended = true;
    ev_timer_stop(c->m->loop, &c->wait_tick);
    c->s->busy--;
    struct sessx *sx = c->s->owner;
    if (c->prev)
        c->prev->next = c->next;
    else if (sx->calls == c)
        sx->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (c->rpc) {
        mx_uprpc_cancel(c->rpc);
        c->rpc = NULL;
    }
    mx_idmap_call_remove(c->m->ids, c->up_id);
    if (c->req)
        mx_req_set_handler(c->req, NULL, NULL, NULL);
    c->req = NULL;
    c->m->gw->inflight--;
    mx_upstream_release(c->u->up);
    call_release(c);
}

/* MCP 2025-06-18, Cancellation: tell the upstream it may stop. */
static void cancel_upstream(struct call *c, const char *reason)
{
    if (c->rpc == NULL || c->m->shutting_down)
        return;
    json_t *note =
        json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method", "notifications/cancelled",
                  "params", "requestId", (json_int_t)c->up_id, "reason", reason);
    mx_upsess_send(c->via->s, note, 0);
    json_decref(note);
}

/*
 * The client no longer wants the answer (it cancelled, or went away and no
 * resumption exists to carry the answer later): tell the upstream, and let
 * the upstream end its stream itself. Closing the stream at once would race
 * with the cancellation (MCP 2025-06-18: a disconnect is not a cancel) and
 * the upstream could see only the disconnect.
 */
static void call_orphan(struct call *c, const char *reason)
{
    if (c->orphan || c->ended)
        return;
    cancel_upstream(c, reason);
    c->orphan = true;
    c->blocked = false;
    mx_idmap_call_remove(c->m->ids, c->up_id); /* its progress goes nowhere now */
    if (c->req)
        mx_req_set_handler(c->req, NULL, NULL, NULL);
    c->req = NULL;
    if (c->rpc == NULL)
        call_end(c);
    else
        mx_uprpc_resume(c->rpc); /* nobody will drain it: read it to its end */
}

static void call_client_gone(struct call *c)
{
    mx_log_debug(SUBSYS, "up:%s client of call %llu went away; cancelling", c->u->cfg->name,
                 (unsigned long long)c->up_id);
    c->req = NULL;
    call_orphan(c, "the client went away");
}

static bool start_sse(struct call *c)
{
    if (c->sse)
        return true;
    if (mx_sse_start(c->req) != 0) {
        call_client_gone(c);
        return false;
    }
    c->sse = true;
    return true;
}

/* Send |msg| on the call's response stream. Returns 0, MX_EAGAIN (sent; the
 * client is slow) or MX_ECLOSED (the call ended). */
static int call_send(struct call *c, const json_t *msg)
{
    if (c->ended)
        return MX_ECLOSED;
    if (c->req == NULL)
        return 0;
    if (!start_sse(c))
        return MX_ECLOSED;
    char *text = mx_rpc_dump(msg);
    trace(c->m, "s2c", c->s, mx_str_cstr(text));
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
static void call_answer(struct call *c, json_t *out)
{
    call_hold(c); /* a client found gone while answering ends the call early */
    if (c->req) {
        if (c->sse) {
            if (call_send(c, out) != MX_ECLOSED && c->req) {
                struct mx_req *req = c->req;
                c->req = NULL;
                mx_req_set_handler(req, NULL, NULL, NULL);
                mx_req_end(req);
            }
        } else {
            struct mx_req *req = c->req;
            c->req = NULL;
            mx_req_set_handler(req, NULL, NULL, NULL);
            respond_json(c->m, req, c->s, 200, json_incref(out), NULL, 0);
        }
    }
    call_end(c);
    call_release(c);
}

static void sub_add(struct mx_session *s, size_t up, const char *uri)
{
    struct sessx *sx = s->owner;
    for (struct sub *b = sx->subs; b; b = b->next) {
        if (b->up == up && strcmp(b->uri, uri) == 0)
            return;
    }
    struct sub *b = mx_xcalloc(1, sizeof(*b));
    b->up = up;
    b->uri = mx_xstrdup(uri);
    b->next = sx->subs;
    sx->subs = b;
}

static bool sub_remove(struct mx_session *s, size_t up, const char *uri)
{
    struct sessx *sx = s->owner;
    for (struct sub **pp = &sx->subs; *pp; pp = &(*pp)->next) {
        struct sub *b = *pp;
        if (b->up == up && strcmp(b->uri, uri) == 0) {
            *pp = b->next;
            free(b->uri);
            free(b);
            return true;
        }
    }
    return false;
}

static bool sub_has(struct mx_session *s, size_t up, const char *uri)
{
    struct sessx *sx = s->owner;
    for (struct sub *b = sx->subs; b; b = b->next) {
        if (b->up == up && strcmp(b->uri, uri) == 0)
            return true;
    }
    return false;
}

/* Other sessions sharing the upstream session that want |uri| updates
 * (2026 listen streams included). */
static size_t sub_others(struct mx_mcp *m, struct mx_session *self, size_t up, const char *uri)
{
    size_t n = mcp_modern_subscribed(m, up, uri);
    for (struct mx_session *s = mx_session_first(m->sessions); s; s = s->next) {
        if (s != self && sub_has(s, up, uri))
            n++;
    }
    return n;
}

static int call_on_message(struct mx_uprpc *rpc, uint64_t key, json_t *msg, void *data)
{
    struct call *c = data;
    (void)rpc;
    int rc = 0;
    ev_timer_stop(c->m->loop, &c->wait_tick); /* it is awake */
    call_hold(c);
    enum mx_rpc_kind kind = mx_rpc_classify(msg);
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (c->orphan && kind == MX_RPC_NOTIFICATION && strstr(method, "list_changed") == NULL &&
        strcmp(method, "notifications/resources/updated") != 0) {
        /* progress and logs of a call nobody waits for */
    } else if (kind == MX_RPC_REQUEST) {
        mcp_s2c_request(c->via, key, msg, c);
    } else if (kind == MX_RPC_NOTIFICATION) {
        if (strcmp(method, "notifications/progress") == 0) {
            mcp_progress(c->via, msg);
        } else if (strcmp(method, "notifications/message") == 0) {
            json_t *params = json_object_get(msg, "params");
            int level = mcp_log_level(json_string_value(json_object_get(params, "level")));
            if (c->s->log_level < 0 || level < 0 || level >= c->s->log_level) {
                json_t *out = json_deep_copy(msg);
                const char *logger = json_string_value(json_object_get(params, "logger"));
                char *name = logger ? mx_xasprintf("%s/%s", c->u->cfg->alias, logger)
                                    : mx_xstrdup(c->u->cfg->alias);
                json_object_set_new(json_object_get(out, "params"), "logger", json_string(name));
                free(name);
                call_send(c, out);
                json_decref(out);
            }
        } else if (strstr(method, "list_changed") ||
                   strcmp(method, "notifications/cancelled") == 0 ||
                   strcmp(method, "notifications/resources/updated") == 0) {
            /* about everyone, not this call: once, to every session */
            mcp_up_unsolicited(c->via, key, msg);
        } else {
            call_send(c, msg);
        }
    }
    if (!c->ended && c->blocked)
        rc = MX_EAGAIN;
    call_release(c);
    return rc;
}

static void call_on_done(struct mx_uprpc *rpc, json_t *resp, const struct mx_upfail *fail,
                         void *data)
{
    struct call *c = data;
    struct mx_mcp *m = c->m;
    (void)rpc;
    c->rpc = NULL;
    json_t *out;
    ev_timer_stop(m->loop, &c->wait_tick);
    if (c->orphan) {
        call_end(c);
        return;
    }
    if (resp) {
        mcp_up_note_ok(c->u);
        out = json_deep_copy(resp);
        json_object_set(out, "id", c->client_id);
        mx_up26_legacy_result(json_object_get(out, "result"));
        if (c->sub_op && json_object_get(resp, "result")) {
            if (c->sub_op > 0)
                sub_add(c->s, c->u->idx, c->sub_uri);
            else
                sub_remove(c->s, c->u->idx, c->sub_uri);
        }
    } else {
        mcp_up_note_fail(c->u, fail);
        out = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", c->client_id, "error",
                        mx_upfail_error(c->u->cfg, fail));
    }
    (void)m;
    call_answer(c, out);
    json_decref(out);
}

static void send_wait_progress(struct call *c)
{
    char text[160];
    snprintf(text, sizeof(text), "waiting for sandbox '%s' to wake (%d s)", c->u->cfg->name,
             c->wait_n * 2);
    json_t *n = json_pack("{s:s, s:s, s:{s:O, s:i, s:s}}", "jsonrpc", "2.0", "method",
                          "notifications/progress", "params", "progressToken", c->token, "progress",
                          c->wait_n, "message", text);
    c->wait_n++;
    call_send(c, n);
    json_decref(n);
}

static void wait_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct call *c = mx_container_of(w, struct call, wait_tick);
    (void)loop;
    (void)revents;
    call_hold(c);
    send_wait_progress(c);
    call_release(c);
}

/*
 * The upstream is waking (wake-on-use) and the client asked for progress:
 * say so every 2 s until the upstream answers, as /mcp/<server> does
 * (MCP 2025-06-18, Progress; DESIGN.md, Wake-on-use).
 */
static void call_on_wait(struct mx_uprpc *rpc, void *data)
{
    struct call *c = data;
    (void)rpc;
    if (c->token == NULL || c->req == NULL || c->orphan || ev_is_active(&c->wait_tick))
        return;
    call_hold(c);
    send_wait_progress(c);
    if (!c->ended) {
        ev_timer_set(&c->wait_tick, 2.0, 2.0);
        ev_timer_start(c->m->loop, &c->wait_tick);
    }
    call_release(c);
}

static void call_drain(struct mx_req *req, void *data)
{
    struct call *c = data;
    (void)req;
    c->blocked = false;
    mx_uprpc_resume(c->rpc);
}

static void call_abort(struct mx_req *req, void *data)
{
    struct call *c = data;
    (void)req;
    c->req = NULL;
    call_client_gone(c);
}

/*
 * MCP 2026-07-28, Logging: the level travels in the _meta of each request,
 * so a request carries the level its client set with logging/setLevel
 * (|level|, -1 for none). upsess_http.c drops it for a 2025 session, whose
 * level is the session's own.
 */
static void put_log_level(json_t *upmsg, int level)
{
    json_t *params = json_object_get(upmsg, "params");
    json_t *meta = json_object_get(params, "_meta");
    if (level < 0) {
        json_object_del(meta, MX_REV_META_LOG_LEVEL);
        return;
    }
    if (!json_is_object(params)) {
        params = json_object();
        json_object_set_new(upmsg, "params", params);
    }
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(params, "_meta", meta);
    }
    json_object_set_new(meta, MX_REV_META_LOG_LEVEL, json_string(mcp_log_level_name(level)));
}

/*
 * Route the client's request |msg| to upstream |u| as |upmsg| (owned; its
 * id, progress token and log level are set here).
 */
static void call_start(struct mx_mcp *m, struct mx_session *s, struct mx_req *req, json_t *msg,
                       struct mx_mcpup *u, json_t *upmsg, int sub_op, const char *sub_uri)
{
    struct sessx *sx = s->owner;
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    const struct mx_idmap_call *e;
    if (!json_is_string(token) && !json_is_integer(token))
        token = NULL;
    struct call *c = mx_xcalloc(1, sizeof(*c));
    struct upctx *via = mcp_up_session(u, s);
    int rc = mx_idmap_call_add(m->ids, s->key, id, token, u->idx, via->key, c, &e);
    if (rc) {
        free(c);
        json_decref(upmsg);
        respond_error(m, req, s, 200, id, MX_RPC_INVALID_REQUEST,
                      rc == MX_EEXIST ? "a request with this id is already in flight"
                                      : "too many requests in flight");
        return;
    }
    c->m = m;
    c->s = s;
    c->refs = 1;
    c->req = req;
    c->client_id = json_incref(id);
    c->up_id = e->up_id;
    c->u = u;
    mx_upstream_hold(u->up);
    c->sub_op = sub_op;
    c->sub_uri = sub_uri ? mx_xstrdup(sub_uri) : NULL;
    c->token = token ? json_incref(token) : NULL;
    ev_init(&c->wait_tick, wait_tick_cb);
    s->busy++;
    c->next = sx->calls;
    if (sx->calls)
        sx->calls->prev = c;
    sx->calls = c;
    m->gw->inflight++;

    /* MCP checklist §8: the upstream sees mcplex's ids and tokens only. */
    json_object_set_new(upmsg, "id", json_integer((json_int_t)c->up_id));
    if (token) {
        json_t *up_params = json_object_get(upmsg, "params");
        json_t *meta = json_object_get(up_params, "_meta");
        json_object_set_new(meta, "progressToken", json_integer((json_int_t)c->up_id));
    }
    /* only upstreams that may speak 2026-07-28 take the level in _meta */
    put_log_level(upmsg,
                  (mx_upsess_caps(u->cfg) & MX_UPSESS_CAP_META_LOG_LEVEL) ? s->log_level : -1);
    c->via = via;
    static const struct mx_uprpc_cbs cbs = {call_on_message, call_on_done, call_on_wait};
    rc = mx_upsess_request(c->via->s, upmsg, (long)u->cfg->request_timeout_ms, &cbs, c, &c->rpc);
    json_decref(upmsg);
    if (rc) {
        struct mx_upfail fail;
        mx_upfail_proto(u->cfg, "its session is closed", &fail);
        json_t *out = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "error",
                                mx_upfail_error(u->cfg, &fail));
        call_answer(c, out);
        json_decref(out);
        return;
    }
    mx_req_set_handler(req, call_drain, call_abort, c);
}

void mcp_progress(struct upctx *ctx, json_t *msg)
{
    struct mx_mcpup *u = ctx->u;
    json_t *params = json_object_get(msg, "params");
    const struct mx_idmap_call *e;
    /* MCP 2025-06-18, Progress: only for requests still active, and only
     * from the upstream session the request went over */
    int rc = mx_idmap_call_from(u->m->ids, u->idx, ctx->key,
                                json_object_get(params, "progressToken"), &e);
    if (rc) {
        mcp_up_dropped(u, "notifications/progress",
                       rc == MX_EPERM ? "names a call of another upstream session"
                                      : "names no call in flight");
        return;
    }
    struct call *c = e->data;
    json_t *out = json_deep_copy(msg);
    json_object_set(json_object_get(out, "params"), "progressToken", e->client_token);
    call_send(c, out);
    json_decref(out);
}

/* ---- requests from upstreams to clients ---- */

static void reply_upstream(struct upctx *ctx, uint64_t key, json_t *id, json_t *result, int code,
                           const char *msg)
{
    json_t *r;
    if (result)
        r = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
    else
        r = mx_rpc_error_new(id, code, msg, NULL);
    mx_upsess_send(ctx->s, r, key);
    json_decref(r);
}

void mcp_s2c_request(struct upctx *ctx, uint64_t key, json_t *msg, struct call *call)
{
    struct mx_mcp *m = ctx->u->m;
    json_t *id = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    char text[160];
    /* MCP 2025-06-18, Ping: either side may ping; mcplex answers for itself */
    if (strcmp(method, "ping") == 0) {
        reply_upstream(ctx, key, id, json_object(), 0, NULL);
        return;
    }
    if (call && call->orphan) {
        reply_upstream(ctx, key, id, NULL, MX_RPC_INVALID_REQUEST,
                       "the request this belongs to was cancelled");
        return;
    }
    struct mx_session *target = call ? call->s : ctx->owner;
    if (target == NULL) {
        /* A shared session's GET stream carries requests of no particular
         * client (MCP checklist §5): roots are none, the rest is refused. */
        if (strcmp(method, "roots/list") == 0) {
            reply_upstream(ctx, key, id, json_pack("{s:[]}", "roots"), 0, NULL);
            return;
        }
        snprintf(text, sizeof(text),
                 "mcplex cannot tell which client %.60s is for; send it while handling a "
                 "request",
                 method);
        reply_upstream(ctx, key, id, NULL, MX_RPC_METHOD_NOT_FOUND, text);
        return;
    }
    const char *cap = strcmp(method, "sampling/createMessage") == 0 ? "sampling"
                      : strcmp(method, "elicitation/create") == 0   ? "elicitation"
                      : strcmp(method, "roots/list") == 0           ? "roots"
                                                                    : NULL;
    if (cap == NULL) {
        reply_upstream(ctx, key, id, NULL, MX_RPC_METHOD_NOT_FOUND, "Method not found");
        return;
    }
    json_t *caps = json_object_get(target->init_params, "capabilities");
    if (!json_is_object(json_object_get(caps, cap))) {
        snprintf(text, sizeof(text), "the client did not declare the %s capability", cap);
        reply_upstream(ctx, key, id, NULL, MX_RPC_METHOD_NOT_FOUND, text);
        return;
    }
    const struct mx_idmap_s2c *e;
    if (mx_idmap_s2c_add(m->ids, target->key, key, ctx->u->idx, id, call ? call->up_id : 0, &e)) {
        reply_upstream(ctx, key, id, NULL, MX_RPC_INVALID_REQUEST,
                       "duplicate or too many requests");
        return;
    }
    json_t *out = json_deep_copy(msg);
    json_object_set_new(out, "id", json_integer((json_int_t)e->client_id));
    /* MCP 2025-06-18, Streamable HTTP: on the stream of the request it
     * belongs to, else on the session's GET stream */
    if (call && call->req && !call->ended)
        call_send(call, out);
    else
        mcp_push(target, out);
    json_decref(out);
}

/* The client answers a request an upstream sent it. */
static void client_response(struct mx_mcp *m, struct mx_session *s, json_t *msg)
{
    const struct mx_idmap_s2c *e =
        mx_idmap_s2c_by_client(m->ids, s->key, json_object_get(msg, "id"));
    if (e == NULL) {
        mx_log_debug(SUBSYS, "session %.8s...: an answer to nothing we asked; dropped", s->id);
        return;
    }
    struct mx_mcpup *u = m->ups[e->upstream];
    struct upctx *ctx = u->cfg->session == MX_SESSION_SHARED
                            ? &u->shared
                            : mcp_pc((struct sessx *)s->owner, e->upstream);
    json_t *out = json_deep_copy(msg);
    json_object_set(out, "id", e->up_id);
    if (ctx && ctx->s)
        mx_upsess_send(ctx->s, out, e->upsess);
    json_decref(out);
    mx_idmap_s2c_remove(m->ids, e->client_id);
}

/* ---- fan-out waits (initialize, lists) ---- */

static void pending_respond(struct pending *p);

static void pending_free(struct pending *p)
{
    struct sessx *sx = p->s->owner;
    ev_timer_stop(p->m->loop, &p->timer);
    mcp_upwaits_clear(&p->ups, p->m);
    for (struct pending **pp = &sx->pendings; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    if (p->req)
        mx_req_set_handler(p->req, NULL, NULL, NULL);
    json_decref(p->msg);
    free(p);
}

static void pending_finish(struct pending *p)
{
    pending_respond(p);
    pending_free(p);
}

static void pending_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct pending *p = mx_container_of(w, struct pending, timer);
    (void)loop;
    (void)revents;
    mx_log_debug(SUBSYS, "fan-out bound reached; answering with the upstreams that answered");
    pending_finish(p);
}

static void pending_up_done(struct upwaits *ws)
{
    if (ws->waiting == 0)
        pending_finish(mx_container_of(ws, struct pending, ups));
}

static void pending_abort(struct mx_req *req, void *data)
{
    struct pending *p = data;
    (void)req;
    p->req = NULL;
    pending_free(p);
}

/* Wait (bounded) for the upstreams that need a refresh of |kinds|, then
 * answer. Answers at once when none does. */
static void pending_start(struct mx_mcp *m, struct mx_session *s, struct mx_req *req, json_t *msg,
                          enum pending_what what, enum mx_agg_kind kind, unsigned kinds)
{
    struct sessx *sx = s->owner;
    struct pending *p = mx_xcalloc(1, sizeof(*p));
    p->m = m;
    p->s = s;
    p->req = req;
    p->msg = json_incref(msg);
    p->what = what;
    p->kind = kind;
    mcp_upwaits_init(&p->ups, m, pending_up_done);
    p->next = sx->pendings;
    sx->pendings = p;
    ev_timer_init(&p->timer, pending_timer, (double)m->cfg->proxy.fanout_timeout_ms / 1000.0, 0.0);
    for (size_t i = 0; i < m->up_cnt; i++) {
        struct mx_mcpup *u = m->ups[i];
        /* kinds 0: answer from the catalogue as it is, waiting for nobody */
        if (kinds == 0 || !mcp_up_needs(u, kinds, true))
            continue;
        /* MCP checklist §9.2: initialize and lists must not hang on one
         * slow upstream; the bound above ends the wait */
        mcp_upwaits_add(&p->ups, u, mcp_up_session(u, s), kinds);
    }
    if (mcp_upwaits_started(&p->ups) == 0) {
        pending_finish(p);
        return;
    }
    ev_timer_start(m->loop, &p->timer);
    mx_req_set_handler(req, NULL, pending_abort, p);
}

/* ---- initialize ---- */

json_t *mcp_merged_caps(struct mx_mcp *m)
{
    bool tools = false, prompts = false, resources = false, subscribe = false;
    bool completions = false, unknown = false;
    for (size_t i = 0; i < m->up_cnt; i++) {
        struct mx_mcpup *u = m->ups[i];
        json_t *caps = json_object_get(u->init, "capabilities");
        if (u->up->retired)
            continue;
        if (u->init == NULL) {
            unknown = unknown || u->state != UPS_FAILED;
            continue;
        }
        tools = tools || json_is_object(json_object_get(caps, "tools"));
        prompts = prompts || json_is_object(json_object_get(caps, "prompts"));
        json_t *res = json_object_get(caps, "resources");
        resources = resources || json_is_object(res);
        subscribe = subscribe || json_is_true(json_object_get(res, "subscribe"));
        completions = completions || json_is_object(json_object_get(caps, "completions"));
    }
    /* An upstream that has not answered yet may offer anything: say so, and
     * its lists arrive with a list_changed. listChanged is always true: the
     * merged lists change when upstreams come and go (MCP checklist §6). */
    json_t *out = json_object();
    if (tools || unknown)
        json_object_set_new(out, "tools", json_pack("{s:b}", "listChanged", 1));
    if (prompts || unknown)
        json_object_set_new(out, "prompts", json_pack("{s:b}", "listChanged", 1));
    if (resources || unknown)
        json_object_set_new(out, "resources",
                            json_pack("{s:b, s:b}", "listChanged", 1, "subscribe", subscribe));
    if (completions)
        json_object_set_new(out, "completions", json_object());
    /* logging/setLevel is answered here for every client */
    json_object_set_new(out, "logging", json_object());
    return out;
}

json_t *mcp_merged_instructions(struct mx_mcp *m)
{
    struct mx_buf b;
    mx_buf_init(&b, 256 * 1024);
    for (size_t i = 0; i < m->up_cnt; i++) {
        const char *ins = json_string_value(json_object_get(m->ups[i]->init, "instructions"));
        if (ins == NULL || *ins == '\0' || m->ups[i]->up->retired)
            continue;
        if (mx_buf_len(&b))
            mx_buf_append_str(&b, "\n\n");
        mx_buf_printf(&b, "## %s\n", m->ups[i]->cfg->alias);
        mx_buf_append_str(&b, ins);
    }
    json_t *out = mx_buf_len(&b) ? json_stringn(mx_buf_data(&b), mx_buf_len(&b)) : NULL;
    mx_buf_clear(&b);
    return out;
}

static void respond_init(struct pending *p)
{
    struct mx_mcp *m = p->m;
    struct mx_session *s = p->s;
    json_t *result = json_pack("{s:s, s:o, s:{s:s, s:s, s:s}}", "protocolVersion", s->version,
                               "capabilities", mcp_merged_caps(m), "serverInfo", "name", "mcplex",
                               "title", "mcplex MCP gateway", "version", MX_VERSION);
    json_t *ins = mcp_merged_instructions(m);
    if (ins)
        json_object_set_new(result, "instructions", ins);
    json_t *r = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", json_object_get(p->msg, "id"),
                          "result", result);
    struct mx_hdr_out hdrs[] = {{"Mcp-Session-Id", s->id}};
    mcp_announce_now(m);
    s->answered = true;
    respond_json(m, p->req, s, 200, r, hdrs, 1);
    p->req = NULL;
}

/* ---- lists ---- */

_Static_assert(MX_GATEWAY_MAX_SLOTS <= MX_CURSOR_MAX_SOURCES, "a cursor names every slot");

static bool cursor_source(struct mx_mcp *m, size_t i, enum mx_agg_kind kind)
{
    return i < MX_CURSOR_MAX_SOURCES && mcp_up_visible(m->ups[i]) && m->ups[i]->lists[kind] != NULL;
}

json_t *mcp_list_page(struct mx_mcp *m, enum mx_agg_kind kind, const json_t *params,
                      const char **why)
{
    json_t *cur = json_object_get(params, "cursor");
    struct mx_agg_view *v = mcp_view(m, kind);
    uint32_t *pos = mx_xcalloc(m->up_cnt ? m->up_cnt : 1, sizeof(*pos));
    uint32_t *next = mx_xcalloc(m->up_cnt ? m->up_cnt : 1, sizeof(*next));
    struct mx_cursor c;
    const char *bad = NULL;

    if (cur && !json_is_string(cur)) {
        bad = "Invalid cursor";
    } else if (cur) {
        const char *t = json_string_value(cur);
        if (mx_cursor_decode(mx_str_make(t, json_string_length(cur)), m->cursor_key, &c) != 0 ||
            c.kind != kind) {
            bad = "Invalid cursor";
        } else {
            /* every upstream listed then must be listed now, with the same
             * list, and no other: else the positions mean nothing */
            size_t k = 0;
            for (size_t i = 0; i < m->up_cnt && !bad; i++) {
                if (!cursor_source(m, i, kind))
                    continue;
                if (k >= c.cnt || c.v[k].src != i || c.v[k].gen != m->ups[i]->gen[kind])
                    bad = "Invalid cursor: the list changed since; list again from the start";
                else
                    pos[i] = c.v[k++].pos;
            }
            if (!bad && k != c.cnt)
                bad = "Invalid cursor: the list changed since; list again from the start";
        }
    }
    if (bad) {
        *why = bad;
        free(pos);
        free(next);
        return NULL;
    }
    json_t *items = json_array();
    bool more = mx_agg_page(v, pos, (size_t)m->cfg->proxy.page_size, items, next);
    json_t *result = json_pack("{s:o}", mx_agg_list_key(kind), items);
    if (more) {
        char text[MX_CURSOR_TEXT_MAX];
        memset(&c, 0, sizeof(c));
        c.kind = (uint8_t)kind;
        for (size_t i = 0; i < m->up_cnt; i++) {
            if (!cursor_source(m, i, kind))
                continue;
            c.v[c.cnt].src = (uint8_t)i;
            c.v[c.cnt].gen = m->ups[i]->gen[kind];
            c.v[c.cnt].pos = next[i];
            c.cnt++;
        }
        if (mx_cursor_encode(&c, m->cursor_key, text, sizeof(text)) > 0)
            json_object_set_new(result, "nextCursor", json_string(text));
    }
    free(pos);
    free(next);
    return result;
}

static void respond_list(struct pending *p)
{
    const char *bad = NULL;
    json_t *id = json_object_get(p->msg, "id");
    json_t *result = mcp_list_page(p->m, p->kind, json_object_get(p->msg, "params"), &bad);
    if (result)
        respond_result(p->m, p->req, p->s, id, result);
    else /* MCP 2025-06-18, Pagination: an invalid cursor is -32602 */
        respond_error(p->m, p->req, p->s, 200, id, MX_RPC_INVALID_PARAMS, bad);
    p->req = NULL;
}

static void pending_respond(struct pending *p)
{
    if (p->req == NULL)
        return;
    if (p->what == P_INIT)
        respond_init(p);
    else
        respond_list(p);
}

/* ---- routing ---- */

static void unknown_name(struct mx_mcp *m, struct mx_req *req, struct mx_session *s, json_t *id,
                         const char *what, const char *name)
{
    char text[300];
    /* MCP 2025-06-18, Tools: an unknown tool is a protocol error, -32602 */
    snprintf(text, sizeof(text), "Unknown %s: %.200s", what, name ? name : "(none)");
    respond_error(m, req, s, 200, id, MX_RPC_INVALID_PARAMS, text);
}

static void dispatch_request(struct mx_mcp *m, struct mx_session *s, struct mx_req *req,
                             json_t *msg, bool may_wait);

static void parked_retry(struct mx_mcp *m, struct mx_req *req, json_t *msg, void *data)
{
    dispatch_request(m, data, req, msg, false);
}

/* |name| is no upstream's yet: wait while one that may hold it lists
 * (mcp_park). Returns true when the request was parked. */
static bool park(struct mx_mcp *m, struct mx_session *s, struct mx_req *req, json_t *msg,
                 enum mx_agg_kind kind, const char *name, bool may_wait)
{
    return may_wait && mcp_park(m, s, req, msg, kind, name, parked_retry, s);
}

/* tools/call and prompts/get: by exposed name, the original restored. */
static void route_named(struct mx_mcp *m, struct mx_session *s, struct mx_req *req, json_t *msg,
                        enum mx_agg_kind kind, bool may_wait)
{
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    const char *name = json_string_value(json_object_get(params, "name"));
    const struct mx_agg_entry *e =
        name ? mx_agg_lookup(mcp_view(m, kind), mx_str_make(name, strlen(name))) : NULL;
    if (e == NULL) {
        if (!park(m, s, req, msg, kind, name, may_wait))
            unknown_name(m, req, s, id, kind == MX_AGG_TOOLS ? "tool" : "prompt", name);
        return;
    }
    json_t *upmsg = json_deep_copy(msg);
    json_object_set_new(json_object_get(upmsg, "params"), "name", json_string(e->orig));
    call_start(m, s, req, msg, m->ups[e->src], upmsg, 0, NULL);
}

/* The one upstream for |uri|, or NULL after answering the client with an
 * error that names the candidates (or parking the request). */
static struct mx_mcpup *route_uri(struct mx_mcp *m, struct mx_session *s, struct mx_req *req,
                                  json_t *msg, const char *uri, bool as_template, bool may_wait)
{
    json_t *id = json_object_get(msg, "id");
    struct mx_uriroute_result r;
    char text[600];
    if (uri == NULL) {
        respond_error(m, req, s, 200, id, MX_RPC_INVALID_PARAMS, "params.uri must be a string");
        return NULL;
    }
    if (as_template) {
        mx_uriroute_find_template(mcp_uris(m), mx_str_cstr(uri), &r);
        if (r.cnt == 0)
            mx_uriroute_find(mcp_uris(m), mx_str_cstr(uri), &r);
    } else {
        mx_uriroute_find(mcp_uris(m), mx_str_cstr(uri), &r);
    }
    if (r.cnt == 1)
        return m->ups[r.cands[0]];
    if (r.cnt == 0 && park(m, s, req, msg, MX_AGG_RESOURCES, uri, may_wait))
        return NULL;
    if (r.cnt == 0) {
        /* Not in any list: with one upstream that serves resources at all,
         * it is the only place the URI can live. */
        struct mx_mcpup *only = NULL;
        size_t with = 0;
        for (size_t i = 0; i < m->up_cnt; i++) {
            json_t *caps = json_object_get(m->ups[i]->init, "capabilities");
            if (!m->ups[i]->up->retired && json_is_object(json_object_get(caps, "resources"))) {
                only = m->ups[i];
                with++;
            }
        }
        if (with == 1)
            return only;
        snprintf(text, sizeof(text),
                 "Resource not found: no upstream lists %.200s or a template that matches it", uri);
        json_t *err =
            mx_rpc_error_new(id, MX_RPC_NO_RESOURCE, text, json_pack("{s:s}", "uri", uri));
        respond_json(m, req, s, 200, err, NULL, 0);
        return NULL;
    }
    respond_json(m, req, s, 200, mcp_uri_ambiguous(m, id, uri, &r), NULL, 0);
    return NULL;
}

static void route_resource(struct mx_mcp *m, struct mx_session *s, struct mx_req *req, json_t *msg,
                           const char *method, bool may_wait)
{
    json_t *id = json_object_get(msg, "id");
    const char *uri = json_string_value(json_object_get(json_object_get(msg, "params"), "uri"));
    struct mx_mcpup *u = route_uri(m, s, req, msg, uri, false, may_wait);
    if (u == NULL)
        return;
    int op = strcmp(method, "resources/subscribe") == 0     ? 1
             : strcmp(method, "resources/unsubscribe") == 0 ? -1
                                                            : 0;
    bool shared = u->cfg->session == MX_SESSION_SHARED;
    /* Subscriptions live on the upstream session: with a shared one, the
     * first subscriber subscribes and the last one unsubscribes. */
    if (op > 0 && (sub_has(s, u->idx, uri) || (shared && sub_others(m, s, u->idx, uri)))) {
        sub_add(s, u->idx, uri);
        respond_result(m, req, s, id, json_object());
        return;
    }
    if (op < 0 && (!sub_has(s, u->idx, uri) || (shared && sub_others(m, s, u->idx, uri)))) {
        sub_remove(s, u->idx, uri);
        respond_result(m, req, s, id, json_object());
        return;
    }
    call_start(m, s, req, msg, u, json_deep_copy(msg), op, uri);
}

static void route_completion(struct mx_mcp *m, struct mx_session *s, struct mx_req *req,
                             json_t *msg, bool may_wait)
{
    json_t *id = json_object_get(msg, "id");
    json_t *ref = json_object_get(json_object_get(msg, "params"), "ref");
    const char *type = json_string_value(json_object_get(ref, "type"));
    json_t *upmsg;
    if (type && strcmp(type, "ref/prompt") == 0) {
        const char *name = json_string_value(json_object_get(ref, "name"));
        const struct mx_agg_entry *e =
            name ? mx_agg_lookup(mcp_view(m, MX_AGG_PROMPTS), mx_str_cstr(name)) : NULL;
        if (e == NULL) {
            if (!park(m, s, req, msg, MX_AGG_PROMPTS, name, may_wait))
                unknown_name(m, req, s, id, "prompt", name);
            return;
        }
        upmsg = json_deep_copy(msg);
        json_object_set_new(json_object_get(json_object_get(upmsg, "params"), "ref"), "name",
                            json_string(e->orig));
        call_start(m, s, req, msg, m->ups[e->src], upmsg, 0, NULL);
        return;
    }
    if (type && strcmp(type, "ref/resource") == 0) {
        const char *uri = json_string_value(json_object_get(ref, "uri"));
        struct mx_mcpup *u = route_uri(m, s, req, msg, uri, true, may_wait);
        if (u)
            call_start(m, s, req, msg, u, json_deep_copy(msg), 0, NULL);
        return;
    }
    respond_error(m, req, s, 200, id, MX_RPC_INVALID_PARAMS,
                  "params.ref.type must be ref/prompt or ref/resource");
}

static void set_level(struct mx_mcp *m, struct mx_session *s, struct mx_req *req, json_t *msg)
{
    json_t *id = json_object_get(msg, "id");
    const char *lv = json_string_value(json_object_get(json_object_get(msg, "params"), "level"));
    int level = mcp_log_level(lv);
    if (level < 0) {
        respond_error(m, req, s, 200, id, MX_RPC_INVALID_PARAMS, "Invalid log level");
        return;
    }
    s->log_level = level;
    /* answered here: one client's level never changes what another sees */
    respond_result(m, req, s, id, json_object());
    mcp_up_levels(m, s);
}

static enum mx_agg_kind list_kind(const char *method, bool *is_list)
{
    *is_list = true;
    if (strcmp(method, "tools/list") == 0)
        return MX_AGG_TOOLS;
    if (strcmp(method, "prompts/list") == 0)
        return MX_AGG_PROMPTS;
    if (strcmp(method, "resources/list") == 0)
        return MX_AGG_RESOURCES;
    if (strcmp(method, "resources/templates/list") == 0)
        return MX_AGG_TEMPLATES;
    *is_list = false;
    return MX_AGG_TOOLS;
}

/* |may_wait|: a name no upstream holds yet may wait for lists (once). */
static void dispatch_request(struct mx_mcp *m, struct mx_session *s, struct mx_req *req,
                             json_t *msg, bool may_wait)
{
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    const char *method = json_string_value(json_object_get(msg, "method"));
    bool is_list;
    enum mx_agg_kind kind = list_kind(method, &is_list);
    if (params && !json_is_object(params)) {
        respond_error(m, req, s, 200, id, MX_RPC_INVALID_PARAMS, "params must be an object");
        return;
    }
    if (is_list) {
        /* A cursor continues a list made from the catalogue as it was: no
         * fan-out then, or the positions would move under the client. */
        if (json_object_get(params, "cursor"))
            pending_start(m, s, req, msg, P_LIST, kind, 0);
        else
            pending_start(m, s, req, msg, P_LIST, kind, KIND_BIT(kind));
    } else if (strcmp(method, "ping") == 0) {
        respond_result(m, req, s, id, json_object());
    } else if (strcmp(method, "tools/call") == 0) {
        route_named(m, s, req, msg, MX_AGG_TOOLS, may_wait);
    } else if (strcmp(method, "prompts/get") == 0) {
        route_named(m, s, req, msg, MX_AGG_PROMPTS, may_wait);
    } else if (strcmp(method, "resources/read") == 0 ||
               strcmp(method, "resources/subscribe") == 0 ||
               strcmp(method, "resources/unsubscribe") == 0) {
        route_resource(m, s, req, msg, method, may_wait);
    } else if (strcmp(method, "completion/complete") == 0) {
        route_completion(m, s, req, msg, may_wait);
    } else if (strcmp(method, "logging/setLevel") == 0) {
        set_level(m, s, req, msg);
    } else if (strcmp(method, "initialize") == 0) {
        respond_error(m, req, s, 400, id, MX_RPC_INVALID_REQUEST,
                      "Invalid Request: the session is already initialized");
    } else {
        char text[160];
        snprintf(text, sizeof(text), "Method not found: %.100s", method);
        respond_error(m, req, s, 200, id, MX_RPC_METHOD_NOT_FOUND, text);
    }
}

/* ---- notifications from the client ---- */

static void client_cancelled(struct mx_mcp *m, struct mx_session *s, json_t *msg)
{
    json_t *params = json_object_get(msg, "params");
    const struct mx_idmap_call *e =
        mx_idmap_call_by_client(m->ids, s->key, json_object_get(params, "requestId"));
    if (e == NULL)
        return; /* MCP 2025-06-18, Cancellation: unknown or finished: ignore */
    struct call *c = e->data;
    const char *reason = json_string_value(json_object_get(params, "reason"));
    if (c->req) {
        struct mx_req *req = c->req;
        c->req = NULL;
        mx_req_set_handler(req, NULL, NULL, NULL);
        /* no answer follows a cancelled request; end its stream empty */
        if (c->sse || mx_sse_start(req) == 0)
            mx_req_end(req);
    }
    call_orphan(c, reason ? reason : "cancelled by the client");
}

static void dispatch_notification(struct mx_mcp *m, struct mx_session *s, json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    struct sessx *sx = s->owner;
    if (strcmp(method, "notifications/cancelled") == 0) {
        client_cancelled(m, s, msg);
    } else if (strcmp(method, "notifications/roots/list_changed") == 0) {
        /* roots belong to this client: only its own upstream sessions care */
        for (size_t i = 0; i < sx->pc_cnt; i++) {
            if (sx->pc[i] && sx->pc[i]->s)
                mx_upsess_send(sx->pc[i]->s, msg, 0);
        }
    }
    /* notifications/initialized and anything else: accepted */
}

/* ---- sessions ---- */

/* An upstream still waits for this session's answer: it will not come. */
static void s2c_orphaned(const struct mx_idmap_s2c *e, void *arg)
{
    struct mx_mcp *m = arg;
    struct mx_mcpup *u = m->ups[e->upstream];
    if (m->shutting_down || u->cfg->session != MX_SESSION_SHARED || u->shared.s == NULL)
        return; /* a per-client upstream session ends with the client's */
    json_t *r =
        mx_rpc_error_new(e->up_id, MX_RPC_INVALID_REQUEST, "the client session ended", NULL);
    mx_upsess_send(u->shared.s, r, e->upsess);
    json_decref(r);
}

static void parked_gone(struct mx_mcp *m, struct mx_req *req, json_t *msg, void *data)
{
    respond_error(m, req, data, 404, json_object_get(msg, "id"), MX_RPC_SESSION_GONE,
                  "Session not found");
}

static void session_on_close(struct mx_session *s, void *data)
{
    struct mx_mcp *m = data;
    struct sessx *sx = s->owner;
    if (sx == NULL)
        return;
    while (sx->pendings) {
        struct pending *p = sx->pendings;
        if (p->req) {
            respond_error(m, p->req, s, 404, json_object_get(p->msg, "id"), MX_RPC_SESSION_GONE,
                          "Session not found");
            p->req = NULL;
        }
        pending_free(p);
    }
    mcp_park_drop(m, s, parked_gone, s);
    while (sx->calls) {
        struct call *c = sx->calls;
        if (!c->orphan)
            cancel_upstream(c, "the client session ended");
        if (c->req) {
            struct mx_req *req = c->req;
            c->req = NULL;
            mx_req_set_handler(req, NULL, NULL, NULL);
            if (c->sse)
                mx_req_end(req);
            else
                respond_error(m, req, s, 404, c->client_id, MX_RPC_SESSION_GONE,
                              "Session not found");
        }
        call_end(c);
    }
    while (sx->subs) {
        struct sub *b = sx->subs;
        struct mx_mcpup *u = m->ups[b->up];
        sx->subs = b->next;
        if (!m->shutting_down && u->cfg->session == MX_SESSION_SHARED && u->shared.s &&
            sub_others(m, s, b->up, b->uri) == 0) {
            json_t *msg =
                json_pack("{s:s, s:o, s:s, s:{s:s}}", "jsonrpc", "2.0", "id", mcp_internal_id(m),
                          "method", "resources/unsubscribe", "params", "uri", b->uri);
            mx_upsess_send(u->shared.s, msg, 0);
            json_decref(msg);
        }
        free(b->uri);
        free(b);
    }
    mx_idmap_drop_session(m->ids, s->key, NULL, s2c_orphaned, m);
    mcp_up_session_closed(s);
    for (size_t i = 0; i < sx->pc_cnt; i++)
        free(sx->pc[i]);
    free(sx->pc);
    free(sx);
    s->owner = NULL;
}

static struct mx_session *session_from(struct mx_mcp *m, struct mx_req *req, const json_t *id)
{
    const struct mx_str *sid = mx_req_header(req, "Mcp-Session-Id");
    if (sid == NULL) {
        /* MCP 2025-06-18, Session Management: 400 without the header */
        respond_error(m, req, NULL, 400, id, MX_RPC_INVALID_REQUEST,
                      "Bad Request: Mcp-Session-Id header is required");
        return NULL;
    }
    struct mx_session *s = mx_session_find(m->sessions, *sid);
    if (s == NULL) {
        /* ... and 404 for one that is unknown, expired or deleted */
        respond_error(m, req, NULL, 404, id, MX_RPC_SESSION_GONE, "Session not found");
        return NULL;
    }
    const struct mx_str *pv = mx_req_header(req, "MCP-Protocol-Version");
    if (pv) {
        char v[32];
        snprintf(v, sizeof(v), "%.*s", (int)(pv->len < 31 ? pv->len : 31), pv->p);
        if (!mx_rev_session_version_known(v)) {
            respond_error(m, req, s, 400, id, MX_RPC_INVALID_REQUEST,
                          "Bad Request: unsupported MCP-Protocol-Version");
            return NULL;
        }
    }
    return s;
}

static void initialize(struct mx_mcp *m, struct mx_req *req, json_t *msg)
{
    json_t *id = json_object_get(msg, "id");
    json_t *params = json_object_get(msg, "params");
    if (mx_req_header(req, "Mcp-Session-Id")) {
        respond_error(m, req, NULL, 400, id, MX_RPC_INVALID_REQUEST,
                      "Invalid Request: initialize must not carry an Mcp-Session-Id");
        return;
    }
    if (!json_is_object(params)) {
        respond_error(m, req, NULL, 200, id, MX_RPC_INVALID_PARAMS,
                      "initialize needs params with protocolVersion and capabilities");
        return;
    }
    struct mx_session *s = mx_session_new(m->sessions);
    if (s == NULL) {
        static const struct mx_hdr_out retry[] = {{"Retry-After", MX_SESSION_RETRY_AFTER}};
        respond_json(m, req, NULL, 503,
                     mx_rpc_error_new(id, MX_RPC_UPSTREAM_UNAVAILABLE,
                                      "too many sessions ([listen] max_sessions); end one with "
                                      "DELETE /mcp or retry later",
                                      NULL),
                     retry, 1);
        return;
    }
    struct sessx *sx = mx_xcalloc(1, sizeof(*sx));
    sx->m = m;
    s->owner = sx;
    s->init_params = json_deep_copy(params);
    /* MCP 2025-06-18, Lifecycle: the client's version if mcplex speaks it,
     * else mcplex's latest; independent of every upstream's version */
    const char *want = json_string_value(json_object_get(params, "protocolVersion"));
    snprintf(s->version, sizeof(s->version), "%s",
             mx_rev_session_version_known(want) ? want : mx_rev_session_versions[0]);
    mx_log_debug(SUBSYS, "session %.8s... opened (%s)", s->id, s->version);
    pending_start(m, s, req, msg, P_INIT, MX_AGG_TOOLS, KINDS_ALL);
}

/* ---- HTTP ---- */

static void post(struct mx_mcp *m, struct mx_req *req);

static void post_element(struct mx_req *element, void *data)
{
    post(data, element);
}

/* MCP 2025-03-26, Streamable HTTP: a POST may carry a JSON-RPC batch
 * (batch.h says which are taken). */
static void post_batch(struct mx_mcp *m, struct mx_req *req, json_t *arr)
{
    struct mx_session *s = session_from(m, req, NULL);
    if (s == NULL)
        return;
    const char *why = mx_batch_refusal(arr, s->version);
    if (why == NULL && mx_batch_serve(m->loop, req, arr, SSE_OUT_CAP, post_element, m) == 0)
        return;
    respond_error(m, req, s, 400, NULL, MX_RPC_INVALID_REQUEST, why ? why : "Invalid Request");
}

static void post(struct mx_mcp *m, struct mx_req *req)
{
    struct mx_str body = mx_req_body(req);
    /* MCP 2025-06-18, Streamable HTTP: JSON in, and the client accepts both
     * JSON and SSE out */
    struct mx_rev_error media;
    if (mx_rev_check_media(mx_req_header(req, "Content-Type"), mx_req_header(req, "Accept"),
                           &media) != 0) {
        respond_error(m, req, NULL, media.status, NULL, media.code, media.message);
        return;
    }
    json_t *msg = mx_rpc_parse(body);
    if (msg == NULL) {
        respond_error(m, req, NULL, 400, NULL, MX_RPC_PARSE_ERROR, "Parse error");
        return;
    }
    if (json_is_array(msg)) {
        post_batch(m, req, msg);
        json_decref(msg);
        return;
    }
    enum mx_rpc_kind kind = mx_rpc_classify(msg);
    json_t *id = json_object_get(msg, "id");
    if (kind == MX_RPC_INVALID) {
        respond_error(m, req, NULL, 400, json_is_string(id) || json_is_integer(id) ? id : NULL,
                      MX_RPC_INVALID_REQUEST, "Invalid Request");
        json_decref(msg);
        return;
    }
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (mcp_modern_claims(req, msg)) {
        mcp_modern_post(m, req, msg); /* MCP 2026-07-28 (stateless) */
        json_decref(msg);
        return;
    }
    if (kind == MX_RPC_REQUEST && strcmp(method, "initialize") == 0 &&
        !mx_req_header(req, "Mcp-Session-Id")) {
        trace(m, "c2s", NULL, body);
        initialize(m, req, msg);
        json_decref(msg);
        return;
    }
    struct mx_session *s = session_from(m, req, id);
    if (s == NULL) {
        json_decref(msg);
        return;
    }
    trace(m, "c2s", s, body);
    switch (kind) {
    case MX_RPC_REQUEST:
        dispatch_request(m, s, req, msg, true);
        break;
    case MX_RPC_NOTIFICATION:
        /* MCP 2025-06-18, Streamable HTTP: an accepted notification is 202 */
        respond_accepted(req);
        dispatch_notification(m, s, msg);
        break;
    case MX_RPC_RESPONSE:
        respond_accepted(req);
        client_response(m, s, msg);
        break;
    case MX_RPC_INVALID:
        break;
    }
    json_decref(msg);
}

/* The guard let only an SSE stream request through (mx_rev_accepts). */
static void get(struct mx_mcp *m, struct mx_req *req)
{
    struct mx_session *s = session_from(m, req, NULL);
    if (s == NULL)
        return;
    int rc = mx_session_attach_get(s, req);
    if (rc == MX_EEXIST)
        /* one GET stream per session, as the TS SDK server does */
        respond_error(m, req, s, 409, NULL, MX_RPC_INVALID_REQUEST,
                      "Conflict: this session already has a GET stream");
}

static void del(struct mx_mcp *m, struct mx_req *req)
{
    struct mx_session *s = session_from(m, req, NULL);
    if (s == NULL)
        return;
    mx_log_debug(SUBSYS, "session %.8s... ended by the client", s->id);
    mx_session_close(s);
    mx_req_respond(req, 200, NULL, 0, NULL, NULL, 0);
}

void mx_mcp_serve(struct mx_mcp *m, struct mx_req *req)
{
    static const struct mx_hdr_out allow[] = {{"Allow", "GET, POST, DELETE"}};
    struct mx_str method = mx_req_method(req);
    if (mcp_modern_refuses(m, req))
        return; /* MCP 2026-07-28: no GET stream, no DELETE */
    if (mx_str_eq(method, MX_STR_LIT("POST")))
        post(m, req);
    else if (mx_str_eq(method, MX_STR_LIT("GET")))
        get(m, req);
    else if (mx_str_eq(method, MX_STR_LIT("DELETE")))
        del(m, req);
    else
        respond_json(m, req, NULL, 405,
                     mx_rpc_error_new(NULL, MX_RPC_INVALID_REQUEST, "Method Not Allowed", NULL),
                     allow, 1);
}

/* ---- setup ---- */

struct mx_mcp *mx_mcp_new(struct mx_gateway *gw)
{
    struct mx_mcp *m = mx_xcalloc(1, sizeof(*m));
    static const struct mx_session_cbs cbs = {session_on_close};
    m->gw = gw;
    m->loop = gw->loop;
    m->cfg = gw->cfg;
    m->ids = mx_idmap_new();
    /* cursors are good for this process only */
    if (RAND_bytes(m->cursor_key, sizeof(m->cursor_key)) != 1)
        mx_fatal(SUBSYS, "RAND_bytes failed");
    m->sessions = mx_session_table_new(gw->loop, gw->cfg->listen.session_idle_ms,
                                       (size_t)gw->cfg->listen.max_sessions, &cbs, m);
    mcp_up_init(m);
    m->modern = mcp_modern_new(m);
    return m;
}

void mx_mcp_free(struct mx_mcp *m)
{
    if (m == NULL)
        return;
    m->shutting_down = true;
    mcp_modern_free(m->modern);
    mx_session_table_free(m->sessions);
    mcp_up_clear(m);
    mx_idmap_free(m->ids);
    free(m);
}
