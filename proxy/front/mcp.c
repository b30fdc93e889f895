/* SPDX-License-Identifier: MIT */
/*
 * The endpoints' entry (mcp.h) and their 2025 side (MCP 2025-03-26 to
 * 2025-11-25, Streamable HTTP), at /mcp and at /mcp/<server>: the client
 * sessions (initialize, GET stream, DELETE, 404 for unknown ids), the
 * method table (answered here, merged, or routed to one upstream), the
 * routed calls (a view over the call core, call.h) and the way back for
 * requests an upstream sends to a client. At /mcp/<server> a session sees
 * that upstream alone: its capabilities, its own lists and names, and what
 * mcplex does not answer itself goes to it as sent. Stateless requests
 * (MCP 2026-07-28) are mcp_2026.c's.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "alloc.h"
#include "batch.h"
#include "diag.h"
#include "err.h"
#include "fileio.h"
#include "front_int.h"
#include "log.h"
#include "mcp.h"
#include "revision.h"
#include "rpc.h"
#include "tasks.h"
#include "up2026.h"

#define SUBSYS SUBSYS_MCP

#define SSE_OUT_CAP (16u * 1024 * 1024)
#define WAIT_INIT   (-1) /* a wait's |what|: initialize; else the list kind */
/* A routed call of a session that primes (MCP 2025-11-25) not answered
 * within this long starts its resumable SSE answer, so that its client
 * holds an event id to resume it with. */
#define PRIME_AFTER_S 1.0

/* A routed call of a 2025 session (the call's view data). */
struct lcall {
    struct mx_call *c; /* back-pointer */
    struct mx_session *s;
    struct mx_mcpup *u;
    ev_timer prime;
    int sub_op; /* +1 resources/subscribe, -1 unsubscribe, 0 neither */
    bool tasks; /* MCP 2025-11-25 tasks: its answer's task ids are sealed */
    /* ... to a 2026-07-28 upstream: its answers are put in 2025 form
     * (tasks.h), by the method */
    bool tasks26;
    char method[16];
    char *task_up; /* the upstream's task id it names, kept out of errors */
    char *sub_uri;
};

static void trace_in(struct mx_mcp *m, const struct mx_session *s, struct mx_str msg)
{
    mx_callhub_trace(m->hub, "c2s", s ? s->id : NULL, msg);
}

void mcp_push(struct mx_session *s, const json_t *msg)
{
    struct sessx *sx = s->owner;
    if (sx && sx->m) {
        char *text = mx_rpc_dump(msg);
        mx_callhub_trace(sx->m->hub, "s2c", s->id, mx_str_cstr(text));
        free(text);
    }
    mx_session_push(s, msg);
}

/* ---- subscriptions of a session ---- */

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

size_t mcp_legacy_subscribers(struct mx_mcp *m, const struct mx_session *self, size_t up,
                              const char *uri)
{
    size_t n = 0;
    if (up >= m->up_cnt || m->ups[up]->cfg->session != MX_SESSION_SHARED)
        return 0; /* theirs are on their own upstream sessions */
    for (struct mx_session *s = mx_session_first(m->sessions); s; s = s->next) {
        if (s != self && s->owner && sub_has(s, up, uri))
            n++;
    }
    return n;
}

/* Other holders of |uri| on the shared upstream session (2026 listen
 * streams included). */
static size_t sub_others(struct mx_mcp *m, struct mx_session *self, size_t up, const char *uri)
{
    return mcp_modern_subscribed(m, up, uri) + mcp_legacy_subscribers(m, self, up, uri);
}

/* ---- routed calls: the view ---- */

static struct lcall *lcall_of(struct mx_call *c)
{
    return c->data;
}

static void lcall_question(struct mx_call *c, uint64_t key, json_t *msg)
{
    mcp_s2c_request(mcp_ctx_of(c->via), key, msg, c);
}

/* Withdrawn questions and changes that concern everyone: the upstream
 * side routes them as it does on the sessions' own streams. */
static void lcall_unsolicited(struct mx_call *c, uint64_t key, json_t *msg)
{
    mcp_up_unsolicited(mcp_ctx_of(c->via), key, msg);
}

/* MCP 2025-06-18, Logging: the session's level, all when it set none. */
static bool lcall_wants_log(struct mx_call *c, int level)
{
    const struct mx_session *s = lcall_of(c)->s;
    return s->log_level < 0 || level < 0 || level >= s->log_level;
}

static json_t *lcall_answer(struct mx_call *c, json_t *resp, const struct mx_upfail *fail,
                            bool *is_error, int *status)
{
    struct lcall *lc = lcall_of(c);
    (void)status;
    if (resp == NULL) {
        mcp_up_note_fail(lc->u, fail);
        *is_error = true;
        return mx_upfail_error(lc->u->cfg, fail);
    }
    mcp_up_note_ok(lc->u);
    json_t *err = json_object_get(resp, "error");
    if (err) {
        *is_error = true;
        return lc->task_up ? mcp_tasks_scrub(lc->u->m, lc->u, lc->task_up, json_deep_copy(err))
                           : json_incref(err);
    }
    json_t *result = json_object_get(resp, "result");
    result = result ? json_deep_copy(result) : json_object();
    if (lc->tasks26)
        mcp_tasks25_from26(lc->u->m, lc->u, lc->method, lc->task_up, &result);
    /* what 2026-07-28 adds to a result means nothing to a 2025 client */
    mx_up26_legacy_result(result);
    if (lc->tasks && !mcp_tasks25_seal(lc->u->m, lc->u, lc->s->key, result)) {
        /* the client must never see an upstream's task id raw */
        json_decref(result);
        *is_error = true;
        return json_pack("{s:i, s:s}", "code", MX_RPC_INTERNAL_ERROR, "message",
                         "the server's task id is longer than mcplex carries");
    }
    if (lc->sub_op > 0)
        sub_add(lc->s, lc->u->idx, lc->sub_uri);
    else if (lc->sub_op < 0)
        sub_remove(lc->s, lc->u->idx, lc->sub_uri);
    return result;
}

/* A result that passes as it came: nothing of it changes for a 2025
 * client (the upstream layer checked it has no 2026 members), and a
 * subscription's bookkeeping needs the parsed way. */
static bool lcall_answer_raw(struct mx_call *c)
{
    struct lcall *lc = lcall_of(c);
    if (lc->sub_op != 0 || lc->tasks)
        return false;
    mcp_up_note_ok(lc->u);
    return true;
}

static void lcall_ended(struct mx_call *c)
{
    struct lcall *lc = lcall_of(c);
    ev_timer_stop(lc->u->m->loop, &lc->prime);
    lc->s->busy--;
}

static void lcall_clear(struct mx_call *c)
{
    struct lcall *lc = lcall_of(c);
    ev_timer_stop(lc->u->m->loop, &lc->prime);
    free(lc->task_up);
    free(lc->sub_uri);
    free(lc);
}

/* MCP 2025-03-26, Resumability and Redelivery: every SSE answer of a
 * session is a stream it can resume; a batch's elements go out on the
 * batch's own answer. */
static struct mx_rstream *lcall_stream(struct mx_call *c)
{
    if (c->req == NULL || mx_batch_is_element(c->req))
        return NULL;
    return mx_session_stream_new(lcall_of(c)->s);
}

static void prime_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct lcall *lc = mx_container_of(w, struct lcall, prime);
    (void)loop;
    (void)revents;
    struct mx_call *c = lc->c;
    mx_call_hold(c);
    mx_call_stream(c);
    mx_call_release(c);
}

static const struct mx_call_view legacy_view = {
    .stream = lcall_stream,
    .question = lcall_question,
    .withdrawn = lcall_unsolicited,
    .broadcast = lcall_unsolicited,
    .wants_log = lcall_wants_log,
    .answer = lcall_answer,
    .answer_raw = lcall_answer_raw,
    .ended = lcall_ended,
    .clear = lcall_clear,
    .pass_other = true,
    .gone_reason = "the client went away",
};

/*
 * MCP 2026-07-28, Logging: the level travels in the _meta of each request,
 * so a request carries the level its client set with logging/setLevel
 * (|level|, -1 for none). upsess_http.c drops it for a 2025 session, whose
 * level is the session's own.
 */
/* The level in |upmsg|'s _meta (|level| < 0: none). Returns whether
 * that changed the message. */
static bool put_log_level(json_t *upmsg, int level)
{
    json_t *meta = json_object_get(json_object_get(upmsg, "params"), "_meta");
    if (level < 0) {
        if (json_object_get(meta, MX_REV_META_LOG_LEVEL) == NULL)
            return false;
        meta = mx_rpc_own(mx_rpc_own(upmsg, "params", false), "_meta", false);
        json_object_del(meta, MX_REV_META_LOG_LEVEL);
        return true;
    }
    meta = mx_rpc_own(mx_rpc_own(upmsg, "params", true), "_meta", true);
    json_object_set_new(meta, MX_REV_META_LOG_LEVEL, json_string(mx_call_log_level_name(level)));
    return true;
}

/* Route the session's request (call |c|) to upstream |u| as |upmsg|
 * (owned; a shallow copy of the client's message, copied further along
 * each path that changes), which is |text| (may be NULL) as mx_call_route
 * says. */
static void route_as(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, struct mx_mcpup *u,
                     json_t *upmsg, const struct mx_call_text *text, int sub_op,
                     const char *sub_uri)
{
    struct sessx *sx = s->owner;
    struct lcall *lc = mx_xcalloc(1, sizeof(*lc));
    lc->c = c;
    lc->s = s;
    lc->u = u;
    lc->sub_op = sub_op;
    const char *method = json_string_value(json_object_get(upmsg, "method"));
    lc->tasks = mcp_tasks25_involved(method, upmsg);
    /* only a task request's: the rest pay no lookup */
    const char *tid =
        lc->tasks ? json_string_value(json_object_get(json_object_get(upmsg, "params"), "taskId"))
                  : NULL;
    if (tid)
        lc->task_up = mx_xstrdup(tid);
    if (lc->tasks && mcp_tasks_modern(u)) {
        lc->tasks26 = true;
        snprintf(lc->method, sizeof(lc->method), "%s", method);
        mcp_tasks25_declare(upmsg, s);
        text = NULL;
    }
    ev_timer_init(&lc->prime, prime_cb, PRIME_AFTER_S, 0.0);
    if (mx_session_primes(s) && c->req && !mx_batch_is_element(c->req))
        ev_timer_start(m->loop, &lc->prime);
    lc->sub_uri = sub_uri ? mx_xstrdup(sub_uri) : NULL;
    mx_call_set_view(c, &legacy_view, lc);
    s->busy++; /* the session is not idle meanwhile */
    /* at /mcp several upstreams' loggers meet: each is named */
    c->log_prefix = sx->scope ? NULL : u->cfg->alias;
    /* only upstreams that may speak 2026-07-28 take the level in _meta */
    if (put_log_level(upmsg,
                      (mx_upsess_caps(u->cfg) & MX_UPSESS_CAP_META_LOG_LEVEL) ? s->log_level : -1))
        text = NULL;
    struct upctx *via = mcp_up_session(u, s);
    mx_call_route(c, &via->v, u->idx, u->up, upmsg, text, s->key, (long)u->cfg->request_timeout_ms);
    (void)m;
}

/* Route the session's request |msg| (call |c|, whose client request's body
 * it is) to upstream |u| as it came, with params.name |name| when not
 * NULL. */
static void call_start(struct mx_mcp *m, struct mx_session *s, struct mx_call *c,
                       struct mx_mcpup *u, json_t *msg, const char *name, int sub_op,
                       const char *sub_uri)
{
    json_t *upmsg = json_copy(msg);
    if (name)
        json_object_set_new(mx_rpc_own(upmsg, "params", false), "name", json_string(name));
    struct mx_call_text text = {c->req ? mx_req_body(c->req) : mx_str_make(NULL, 0), name};
    route_as(m, s, c, u, upmsg, &text, sub_op, sub_uri);
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
    if (ctx->v.s)
        ctx->u->m->ops->send(ctx->v.s, r, key);
    json_decref(r);
}

void mcp_s2c_request(struct upctx *ctx, uint64_t key, json_t *msg, struct mx_call *call)
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
    struct mx_session *target = call ? call->owner : ctx->owner;
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
        mx_call_send(call, out);
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
    if (ctx && ctx->v.s)
        m->ops->send(ctx->v.s, out, e->upsess);
    json_decref(out);
    mx_idmap_s2c_remove(m->ids, e->client_id);
}

/* ---- initialize and the lists: answered after a bounded wait ---- */

static void respond_init(struct mx_mcp *m, struct mx_session *s, struct mx_call *c)
{
    struct sessx *sx = s->owner;
    struct mx_mcpup *scope = sx->scope;
    struct mx_upfail f;
    json_t *result;
    if (scope && mcp_scope_unready(scope, -1, &f)) {
        /* /mcp/<server> is that server: when it cannot answer, neither can
         * the endpoint (the JSON-RPC error naming it, never its 401) */
        mx_call_note_fail(c, &f);
        json_t *e = mx_upfail_error(scope->cfg, &f);
        mx_call_reply(c, e, true, 200);
        json_decref(e);
        mx_session_close(s);
        return;
    }
    if (scope) {
        /* that one server, alone: its capabilities, its name, its words */
        json_t *info = json_object_get(scope->init, "serverInfo");
        if (!json_is_object(info))
            info = json_object_get(json_object_get(scope->init, "_meta"), MX_REV_META_SERVER_INFO);
        result = json_pack("{s:s, s:o}", "protocolVersion", s->version, "capabilities",
                           mcp_scope_caps(scope));
        if (json_is_object(info))
            json_object_set(result, "serverInfo", info);
        else
            json_object_set_new(result, "serverInfo",
                                json_pack("{s:s, s:s}", "name", "mcplex", "version", MX_VERSION));
        json_t *ins = json_object_get(scope->init, "instructions");
        if (json_is_string(ins))
            json_object_set(result, "instructions", ins);
    } else {
        result = json_pack("{s:s, s:o, s:{s:s, s:s, s:s}}", "protocolVersion", s->version,
                           "capabilities", mcp_merged_caps(m), "serverInfo", "name", "mcplex",
                           "title", "mcplex MCP gateway", "version", MX_VERSION);
        json_t *ins = mcp_merged_instructions(m);
        if (ins)
            json_object_set_new(result, "instructions", ins);
    }
    json_t *r =
        json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", c->client_id, "result", result);
    struct mx_hdr_out hdrs[] = {{"Mcp-Session-Id", s->id}};
    mcp_announce_now(m);
    mcp_session_told(m, sx, -1);
    s->answered = true;
    mx_call_json(c, 200, r, hdrs, 1);
}

static void respond_list(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                         enum mx_agg_kind kind)
{
    static const char *const caps[MX_AGG_KIND_CNT] = {"tools", "prompts", "resources", "resources"};
    struct mx_mcpup *scope = ((struct sessx *)s->owner)->scope;
    const char *bad = NULL;
    struct mx_upfail f;
    if (scope && mcp_scope_unready(scope, (int)kind, &f)) {
        mx_call_note_fail(c, &f);
        json_t *e = mx_upfail_error(scope->cfg, &f);
        mx_call_reply(c, e, true, 200);
        json_decref(e);
        return;
    }
    if (scope && !json_is_object(
                     json_object_get(json_object_get(scope->init, "capabilities"), caps[kind]))) {
        mx_call_error(c, 200, MX_RPC_METHOD_NOT_FOUND, "Method not found", NULL);
        return;
    }
    struct mx_str page;
    if (mcp_list_page_text(m, kind, json_object_get(msg, "params"), scope, &page, &bad)) {
        mcp_session_told(m, s->owner, (int)kind);
        mx_call_result_text(c, page);
    } else /* MCP 2025-06-18, Pagination: an invalid cursor is -32602 */
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS, bad, NULL);
}

static void wait_done(struct mx_mcp *m, struct mx_call *c, json_t *msg, int what,
                      struct mx_mcpup *scope, enum mcp_wait_end end, void *data)
{
    struct mx_session *s = data;
    (void)scope;
    switch (end) {
    case MCP_WAIT_READY:
        break;
    case MCP_WAIT_GONE:
        mx_call_error(c, 404, MX_RPC_SESSION_GONE, "Session not found", NULL);
        return;
    case MCP_WAIT_STOPPING:
        mx_call_error(c, 503, MX_RPC_INTERNAL_ERROR, "mcplex is stopping", NULL);
        return;
    case MCP_WAIT_RETIRED:
        mx_call_error(c, 503, MX_RPC_INTERNAL_ERROR, "the server left the config at a reload",
                      NULL);
        mx_session_close(s);
        return;
    }
    if (what == WAIT_INIT)
        respond_init(m, s, c);
    else
        respond_list(m, s, c, msg, (enum mx_agg_kind)what);
}

/*
 * Wait (bounded) for the upstreams that need a refresh of |kinds|, then
 * answer; at once when none does. At /mcp/<server> that upstream alone, as
 * long as a request to it may take.
 */
static void list_wait(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                      int what, unsigned kinds)
{
    struct mx_mcpup *scope = ((struct sessx *)s->owner)->scope;
    struct mcp_wait *w = mcp_wait_new(m, c, msg, what, scope, wait_done, s);
    for (size_t i = 0; i < m->up_cnt; i++) {
        struct mx_mcpup *u = m->ups[i];
        /* kinds 0: answer from the catalogue as it is, waiting for nobody */
        if (kinds == 0 || (scope && u != scope) || !mcp_up_needs(u, kinds, true))
            continue;
        /* MCP checklist §9.2: initialize and lists must not hang on one
         * slow upstream; the bound ends the wait */
        if (what == WAIT_INIT) /* the lists go on coming meanwhile */
            mcp_wait_add_init(w, u, mcp_up_session(u, s), kinds);
        else
            mcp_wait_add(w, u, mcp_up_session(u, s), kinds);
    }
    mcp_wait_start(w, scope ? mcp_scope_wait_s(scope)
                            : (double)m->cfg->proxy.fanout_timeout_ms / 1000.0);
}

/* ---- routing ---- */

static void dispatch_request(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                             bool may_wait);

static void parked_retry(struct mx_mcp *m, struct mx_call *c, json_t *msg, int what,
                         struct mx_mcpup *scope, enum mcp_wait_end end, void *data)
{
    (void)what;
    if (end == MCP_WAIT_READY)
        dispatch_request(m, data, c, msg, false);
    else
        wait_done(m, c, msg, 0, scope, end, data);
}

/* |name| is no upstream's yet: wait while one that may hold it lists
 * (mcp_park). Returns true when the request waits. */
static bool park(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                 enum mx_agg_kind kind, const char *name, bool may_wait)
{
    return may_wait && mcp_park(m, s, c, msg, kind, name, parked_retry, s);
}

/* tools/call and prompts/get: by exposed name, the original restored. */
static void route_named(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                        enum mx_agg_kind kind, bool may_wait)
{
    json_t *params = json_object_get(msg, "params");
    const char *name = json_string_value(json_object_get(params, "name"));
    const struct mx_agg_entry *e =
        name ? mx_agg_lookup(mcp_view(m, kind), mx_str_make(name, strlen(name))) : NULL;
    if (e == NULL) {
        if (!park(m, s, c, msg, kind, name, may_wait))
            mcp_unknown_name(m, c, kind, name);
        return;
    }
    call_start(m, s, c, m->ups[e->src], msg, strcmp(e->orig, name) ? e->orig : NULL, 0, NULL);
}

/* The one upstream for |uri|, or NULL after answering the client with an
 * error that names the candidates (or parking the request). */
static struct mx_mcpup *route_uri(struct mx_mcp *m, struct mx_session *s, struct mx_call *c,
                                  json_t *msg, const char *uri, bool as_template, bool may_wait)
{
    struct mx_uriroute_result r;
    if (uri == NULL) {
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS, "params.uri must be a string", NULL);
        return NULL;
    }
    struct mx_mcpup *u = mcp_uri_target(m, uri, as_template, &r);
    if (u || (r.cnt == 0 && park(m, s, c, msg, MX_AGG_RESOURCES, uri, may_wait)))
        return u;
    if (r.cnt == 0 && (u = mcp_uri_only(m)) != NULL)
        return u;
    /* MCP 2025-06-18, Resources: not found is -32002 */
    mcp_uri_refuse(m, c, uri, &r, MX_RPC_NO_RESOURCE);
    return NULL;
}

/* resources/read, subscribe and unsubscribe on |u|. */
static void call_resource(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                          struct mx_mcpup *u, const char *method, const char *uri)
{
    int op = strcmp(method, "resources/subscribe") == 0     ? 1
             : strcmp(method, "resources/unsubscribe") == 0 ? -1
                                                            : 0;
    bool shared = u->cfg->session == MX_SESSION_SHARED;
    /* Subscriptions live on the upstream session: with a shared one, the
     * first subscriber subscribes and the last one unsubscribes. */
    if (op > 0 && (sub_has(s, u->idx, uri) || (shared && sub_others(m, s, u->idx, uri)))) {
        sub_add(s, u->idx, uri);
        mx_call_result(c, json_object());
        return;
    }
    if (op < 0 && (!sub_has(s, u->idx, uri) || (shared && sub_others(m, s, u->idx, uri)))) {
        sub_remove(s, u->idx, uri);
        mx_call_result(c, json_object());
        return;
    }
    call_start(m, s, c, u, msg, NULL, op, uri);
}

static void route_resource(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                           const char *method, bool may_wait)
{
    const char *uri = json_string_value(json_object_get(json_object_get(msg, "params"), "uri"));
    struct mx_mcpup *u = route_uri(m, s, c, msg, uri, false, may_wait);
    if (u)
        call_resource(m, s, c, msg, u, method, uri);
}

static void route_completion(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                             bool may_wait)
{
    json_t *ref = json_object_get(json_object_get(msg, "params"), "ref");
    const char *type = json_string_value(json_object_get(ref, "type"));
    json_t *upmsg;
    if (type && strcmp(type, "ref/prompt") == 0) {
        const char *name = json_string_value(json_object_get(ref, "name"));
        const struct mx_agg_entry *e =
            name ? mx_agg_lookup(mcp_view(m, MX_AGG_PROMPTS), mx_str_cstr(name)) : NULL;
        if (e == NULL) {
            if (!park(m, s, c, msg, MX_AGG_PROMPTS, name, may_wait))
                mcp_unknown_name(m, c, MX_AGG_PROMPTS, name);
            return;
        }
        upmsg = json_copy(msg);
        json_object_set_new(mx_rpc_own(mx_rpc_own(upmsg, "params", false), "ref", false), "name",
                            json_string(e->orig));
        route_as(m, s, c, m->ups[e->src], upmsg, NULL, 0, NULL);
        return;
    }
    if (type && strcmp(type, "ref/resource") == 0) {
        const char *uri = json_string_value(json_object_get(ref, "uri"));
        struct mx_mcpup *u = route_uri(m, s, c, msg, uri, true, may_wait);
        if (u)
            call_start(m, s, c, u, msg, NULL, 0, NULL);
        return;
    }
    mx_call_error(c, 200, MX_RPC_INVALID_PARAMS,
                  "params.ref.type must be ref/prompt or ref/resource", NULL);
}

static void set_level(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg)
{
    const char *lv = json_string_value(json_object_get(json_object_get(msg, "params"), "level"));
    int level = mx_call_log_level(lv);
    if (level < 0) {
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS, "Invalid log level", NULL);
        return;
    }
    s->log_level = level;
    /* answered here: one client's level never changes what another sees */
    mx_call_result(c, json_object());
    mcp_up_levels(m, s);
}

static int list_kind(const char *method)
{
    static const char *const lists[MX_AGG_KIND_CNT] = {
        "tools/list", "prompts/list", "resources/list", "resources/templates/list"};
    for (int k = 0; k < MX_AGG_KIND_CNT; k++) {
        if (strcmp(method, lists[k]) == 0)
            return k;
    }
    return -1;
}

/* /mcp/<server>: a routed request goes to that upstream as the client sent
 * it, with its own names, unknown ones included (the upstream answers for
 * them). */
static void route_scoped(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                         const char *method)
{
    struct mx_mcpup *u = ((struct sessx *)s->owner)->scope;
    if (strncmp(method, "resources/", 10) == 0) {
        const char *uri = json_string_value(json_object_get(json_object_get(msg, "params"), "uri"));
        if (uri == NULL) {
            mx_call_error(c, 200, MX_RPC_INVALID_PARAMS, "params.uri must be a string", NULL);
            return;
        }
        call_resource(m, s, c, msg, u, method, uri);
        return;
    }
    call_start(m, s, c, u, msg, NULL, 0, NULL);
}

/* MCP 2025-11-25 tasks: a request naming a task goes to the upstream its
 * sealed id names, with that upstream's own id (tasks.h says the rest;
 * |may_wait|: its revision may be learnt first). */
static void route_task_as(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                          struct mx_mcpup *scope, bool may_wait);

static void route_task_then(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                            struct mx_mcpup *scope)
{
    route_task_as(m, s, c, msg, scope, false);
}

static void route_task_as(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                          struct mx_mcpup *scope, bool may_wait)
{
    json_t *upmsg = NULL;
    struct mx_mcpup *u = mcp_tasks25_route(m, c, msg, scope, &upmsg);
    if (u &&
        !mcp_tasks_take(m, s, c, u, msg, upmsg, scope, false, may_wait ? route_task_then : NULL))
        route_as(m, s, c, u, upmsg, NULL, 0, NULL);
}

/* tasks/list at /mcp and /mcp/<server>: the session's own tasks, from the
 * book (tasks.h), across every upstream in view. */
static void route_task_list(struct mx_mcp *m, struct mx_session *s, struct mx_call *c,
                            struct mx_mcpup *scope)
{
    json_t *caps = mcp_tasks25_caps(m, scope);
    if (caps == NULL) {
        mx_call_error(c, 200, MX_RPC_METHOD_NOT_FOUND, "Method not found: tasks/list", NULL);
        return;
    }
    json_decref(caps);
    mx_call_result(c, mcp_tasks25_list(m, scope, s->key));
}

/* |may_wait|: a name no upstream holds yet may wait for lists (once). */
static void dispatch_request(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, json_t *msg,
                             bool may_wait)
{
    json_t *params = json_object_get(msg, "params");
    const char *method = json_string_value(json_object_get(msg, "method"));
    struct mx_mcpup *scope = ((struct sessx *)s->owner)->scope;
    int kind = list_kind(method);
    if (params && !json_is_object(params)) {
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS, "params must be an object", NULL);
        return;
    }
    if (kind >= 0) {
        /* A cursor continues a list made from the catalogue as it was: no
         * fan-out then, or the positions would move under the client. */
        list_wait(m, s, c, msg, kind, json_object_get(params, "cursor") ? 0 : KIND_BIT(kind));
    } else if (strcmp(method, "ping") == 0) {
        mx_call_result(c, json_object());
    } else if (strcmp(method, "logging/setLevel") == 0) {
        set_level(m, s, c, msg);
    } else if (strcmp(method, "initialize") == 0) {
        mx_call_error(c, 400, MX_RPC_INVALID_REQUEST,
                      "Invalid Request: the session is already initialized", NULL);
    } else if (mcp_tasks25_by_id(method)) {
        route_task_as(m, s, c, msg, scope, true);
    } else if (strcmp(method, "tasks/list") == 0) {
        route_task_list(m, s, c, scope);
    } else if (scope) {
        route_scoped(m, s, c, msg, method);
    } else if (strcmp(method, "tools/call") == 0) {
        route_named(m, s, c, msg, MX_AGG_TOOLS, may_wait);
    } else if (strcmp(method, "prompts/get") == 0) {
        route_named(m, s, c, msg, MX_AGG_PROMPTS, may_wait);
    } else if (strcmp(method, "resources/read") == 0 ||
               strcmp(method, "resources/subscribe") == 0 ||
               strcmp(method, "resources/unsubscribe") == 0) {
        route_resource(m, s, c, msg, method, may_wait);
    } else if (strcmp(method, "completion/complete") == 0) {
        route_completion(m, s, c, msg, may_wait);
    } else {
        char text[160];
        snprintf(text, sizeof(text), "Method not found: %.100s", method);
        mx_call_error(c, 200, MX_RPC_METHOD_NOT_FOUND, text, NULL);
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
    const char *reason = json_string_value(json_object_get(params, "reason"));
    /* no answer follows a cancelled request: its stream ends empty */
    mx_call_cancel(e->data, reason ? reason : "cancelled by the client");
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
            if (sx->pc[i] && sx->pc[i]->v.s && (sx->scope == NULL || sx->scope->idx == i))
                m->ops->send(sx->pc[i]->v.s, msg, 0);
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
    if (m->shutting_down || u->cfg->session != MX_SESSION_SHARED || u->shared.v.s == NULL)
        return; /* a per-client upstream session ends with the client's */
    json_t *r =
        mx_rpc_error_new(e->up_id, MX_RPC_INVALID_REQUEST, "the client session ended", NULL);
    m->ops->send(u->shared.v.s, r, e->upsess);
    json_decref(r);
}

static void session_on_close(struct mx_session *s, void *data)
{
    struct mx_mcp *m = data;
    struct sessx *sx = s->owner;
    if (sx == NULL)
        return;
    mcp_wait_drop(m, s, false, NULL, MCP_WAIT_GONE);
    for (struct mx_call *c = mx_callhub_first(m->hub); c;) {
        if (c->owner != s) {
            c = c->next;
            continue;
        }
        mx_call_close(c, "the client session ended", 404, MX_RPC_SESSION_GONE, "Session not found");
        c = mx_callhub_first(m->hub);
    }
    while (sx->subs) {
        struct sub *b = sx->subs;
        struct mx_mcpup *u = m->ups[b->up];
        sx->subs = b->next;
        if (!m->shutting_down && u->cfg->session == MX_SESSION_SHARED && u->shared.v.s &&
            sub_others(m, s, b->up, b->uri) == 0)
            mcp_up_subscribe(u, "resources/unsubscribe", b->uri);
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

static struct mx_session *session_from(struct mx_mcp *m, struct mx_mcpup *scope, struct mx_call *c)
{
    const struct mx_str *sid = mx_req_header(c->req, "Mcp-Session-Id");
    if (sid == NULL) {
        /* MCP 2025-06-18, Session Management: 400 without the header */
        mx_call_error(c, 400, MX_RPC_INVALID_REQUEST,
                      "Bad Request: Mcp-Session-Id header is required", NULL);
        return NULL;
    }
    struct mx_session *s = mx_session_find(m->sessions, *sid);
    /* ... and 404 for one that is unknown, expired or deleted, or that
     * belongs to the other endpoint */
    if (s == NULL || s->owner == NULL || ((struct sessx *)s->owner)->scope != scope) {
        mx_call_error(c, 404, MX_RPC_SESSION_GONE, "Session not found", NULL);
        return NULL;
    }
    c->owner = s;
    c->trace_session = s->id;
    const struct mx_str *pv = mx_req_header(c->req, "MCP-Protocol-Version");
    if (pv) {
        char v[32];
        snprintf(v, sizeof(v), "%.*s", (int)(pv->len < 31 ? pv->len : 31), pv->p);
        if (!mx_rev_session_version_known(v)) {
            mx_call_error(c, 400, MX_RPC_INVALID_REQUEST,
                          "Bad Request: unsupported MCP-Protocol-Version", NULL);
            return NULL;
        }
    }
    return s;
}

static void initialize(struct mx_mcp *m, struct mx_mcpup *scope, struct mx_call *c, json_t *msg)
{
    json_t *params = json_object_get(msg, "params");
    if (!json_is_object(params)) {
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS,
                      "initialize needs params with protocolVersion and capabilities", NULL);
        return;
    }
    struct mx_session *s = mx_session_new(m->sessions);
    if (s == NULL) {
        static const struct mx_hdr_out retry[] = {{"Retry-After", MX_SESSION_RETRY_AFTER}};
        mx_call_json(c, 503,
                     mx_rpc_error_new(c->client_id, MX_RPC_UPSTREAM_UNAVAILABLE,
                                      "too many sessions ([listen] max_sessions); end one with "
                                      "DELETE or retry later",
                                      NULL),
                     retry, 1);
        return;
    }
    struct sessx *sx = mx_xcalloc(1, sizeof(*sx));
    sx->m = m;
    sx->scope = scope;
    s->owner = sx;
    s->init_params = json_deep_copy(params);
    c->owner = s;
    c->trace_session = s->id;
    /* MCP 2025-06-18, Lifecycle: the client's version if mcplex speaks it,
     * else mcplex's latest; independent of every upstream's version */
    const char *want = json_string_value(json_object_get(params, "protocolVersion"));
    snprintf(s->version, sizeof(s->version), "%s",
             mx_rev_session_version_known(want) ? want : mx_rev_session_versions[0]);
    mx_log_debug(SUBSYS, "session %.8s... opened (%s)%s%s", s->id, s->version,
                 scope ? " at /mcp/" : "", scope ? scope->cfg->name : "");
    list_wait(m, s, c, msg, WAIT_INIT, KINDS_ALL);
}

/* ---- HTTP ---- */

static void serve(struct mx_mcp *m, struct mx_mcpup *scope, struct mx_req *req);

static void post_element(struct mx_req *element, void *data)
{
    struct mx_session *s = data;
    struct sessx *sx = s->owner;
    serve(sx->m, sx->scope, element);
}

/* MCP 2025-03-26, Streamable HTTP: a POST may carry a JSON-RPC batch
 * (batch.h says which are taken). */
static void post_batch(struct mx_mcp *m, struct mx_mcpup *scope, struct mx_call *c, json_t *arr)
{
    struct mx_rev_hdrs h = {0};
    h.version = mx_req_header(c->req, "MCP-Protocol-Version");
    if (mx_req_header(c->req, "Mcp-Session-Id") == NULL && mx_rev_is_modern(NULL, &h)) {
        /* MCP 2026-07-28 removed batches */
        mx_call_error(c, 400, MX_RPC_INVALID_REQUEST,
                      "Invalid Request: one JSON-RPC message per POST", NULL);
        return;
    }
    struct mx_session *s = session_from(m, scope, c);
    if (s == NULL)
        return;
    const char *why = mx_batch_refusal(arr, s->version);
    if (why) {
        mx_call_error(c, 400, MX_RPC_INVALID_REQUEST, why, NULL);
        return;
    }
    struct mx_req *req = c->req;
    /* each element is a call of its own, accounted on its own */
    mx_call_handoff(c, 0);
    if (mx_batch_serve(m->loop, req, arr, SSE_OUT_CAP, post_element, s) != 0)
        mx_req_respond(req, 400, NULL, 0, NULL, NULL, 0);
}

static void post(struct mx_mcp *m, struct mx_mcpup *scope, struct mx_call *c)
{
    struct mx_str body = mx_req_body(c->req);
    /* MCP 2025-06-18, Streamable HTTP: JSON in, and the client accepts both
     * JSON and SSE out */
    struct mx_rev_error media;
    if (mx_rev_check_media(mx_req_header(c->req, "Content-Type"), mx_req_header(c->req, "Accept"),
                           &media) != 0) {
        mx_call_error(c, media.status, media.code, media.message, NULL);
        return;
    }
    json_t *msg = mx_rpc_parse(body);
    if (msg == NULL) {
        mx_call_error(c, 400, MX_RPC_PARSE_ERROR, "Parse error", NULL);
        return;
    }
    if (json_is_array(msg)) {
        post_batch(m, scope, c, msg);
        json_decref(msg);
        return;
    }
    enum mx_rpc_kind kind = mx_rpc_classify(msg);
    json_t *id = json_object_get(msg, "id");
    if (kind == MX_RPC_INVALID) {
        mx_call_note(c, NULL, json_is_string(id) || json_is_integer(id) ? id : NULL, NULL);
        mx_call_error(c, 400, MX_RPC_INVALID_REQUEST, "Invalid Request", NULL);
        json_decref(msg);
        return;
    }
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (mcp_modern_claims(c->req, msg)) {
        mcp_modern_post(m, c, msg, scope); /* MCP 2026-07-28 (stateless) */
        json_decref(msg);
        return;
    }
    mx_call_note(c, kind == MX_RPC_RESPONSE ? "response" : method,
                 kind == MX_RPC_REQUEST ? id : NULL,
                 json_object_get(json_object_get(msg, "params"), "_meta"));
    mx_call_note_target(c, json_object_get(msg, "params"), false);
    if (kind == MX_RPC_REQUEST && strcmp(method, "initialize") == 0 &&
        !mx_req_header(c->req, "Mcp-Session-Id")) {
        trace_in(m, NULL, body);
        initialize(m, scope, c, msg);
        json_decref(msg);
        return;
    }
    struct mx_session *s = session_from(m, scope, c);
    if (s == NULL) {
        json_decref(msg);
        return;
    }
    trace_in(m, s, body);
    switch (kind) {
    case MX_RPC_REQUEST:
        dispatch_request(m, s, c, msg, true);
        break;
    case MX_RPC_NOTIFICATION:
        /* MCP 2025-06-18, Streamable HTTP: an accepted notification is 202 */
        mx_call_status(c, 202);
        dispatch_notification(m, s, msg);
        break;
    case MX_RPC_RESPONSE:
        mx_call_status(c, 202);
        client_response(m, s, msg);
        break;
    case MX_RPC_INVALID:
        break;
    }
    json_decref(msg);
}

/* MCP 2025-03-26, Resumability and Redelivery: a GET with Last-Event-ID
 * resumes the stream that id names, from the event after it. */
static void resume(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, struct mx_str id)
{
    char text[400];
    uint64_t oldest = 0;
    int rc = mx_session_resume(s, NULL, id, &oldest);
    if (rc == MX_EINVAL) {
        mx_call_error(c, 400, MX_RPC_INVALID_REQUEST,
                      "Bad Request: Last-Event-ID is not an event id mcplex sent on this session; "
                      "open the GET stream without it, or send the request again",
                      NULL);
        return;
    }
    /* the id parsed: it is digits and one dash, safe to quote */
    int idlen = (int)(id.len < 48 ? id.len : 48);
    if (rc == MX_ENOTFOUND) {
        snprintf(text, sizeof(text),
                 "Bad Request: Last-Event-ID %.*s names no stream or event of this session "
                 "(a session keeps its GET stream and its last %d answer streams); send the "
                 "request again",
                 idlen, id.p, MX_SESSION_STREAMS_KEPT);
        mx_call_error(c, 400, MX_RPC_INVALID_REQUEST, text, NULL);
        return;
    }
    if (rc == MX_ELIMIT) {
        snprintf(text, sizeof(text),
                 "Bad Request: the events after Last-Event-ID %.*s are no longer kept (the "
                 "stream's buffer dropped them up to %llu; [listen] stream_buffer_events = %lld, "
                 "stream_buffer_bytes = %lld); send the request again, or raise those bounds",
                 idlen, id.p, (unsigned long long)oldest,
                 (long long)m->cfg->listen.stream_buffer_events,
                 (long long)m->cfg->listen.stream_buffer_bytes);
        mx_call_error(c, 400, MX_RPC_INVALID_REQUEST, text, NULL);
        return;
    }
    struct mx_req *req = c->req;
    mx_call_handoff(c, 200); /* the stream's from now on */
    mx_session_resume(s, req, id, &oldest);
}

/* The guard let only an SSE stream request through (mx_rev_accepts). */
static void get(struct mx_mcp *m, struct mx_mcpup *scope, struct mx_call *c)
{
    mx_call_note(c, "GET", NULL, NULL);
    struct mx_session *s = session_from(m, scope, c);
    if (s == NULL)
        return;
    const struct mx_str *last = mx_req_header(c->req, "Last-Event-ID");
    if (last) {
        resume(m, s, c, *last);
        return;
    }
    if (mx_session_has_get(s)) {
        /* one GET stream per session, as the TS SDK server does */
        mx_call_error(c, 409, MX_RPC_INVALID_REQUEST,
                      "Conflict: this session already has a GET stream", NULL);
        return;
    }
    struct mx_req *req = c->req;
    mx_call_handoff(c, 200); /* the session's stream from now on */
    mx_session_attach_get(s, req);
}

static void del(struct mx_mcp *m, struct mx_mcpup *scope, struct mx_call *c)
{
    mx_call_note(c, "DELETE", NULL, NULL);
    struct mx_session *s = session_from(m, scope, c);
    if (s == NULL)
        return;
    mx_log_debug(SUBSYS, "session %.8s... ended by the client", s->id);
    c->owner = NULL; /* it outlives the session's calls */
    mx_session_close(s);
    mx_call_status(c, 200);
}

static void serve(struct mx_mcp *m, struct mx_mcpup *scope, struct mx_req *req)
{
    static const struct mx_hdr_out allow[] = {{"Allow", "GET, POST, DELETE"}};
    struct mx_str method = mx_req_method(req);
    struct mx_call *c = mx_call_new(m->hub, req);
    if (scope)
        mx_call_account(c, scope->up);
    if (mcp_modern_refuses(m, c)) {
        /* MCP 2026-07-28: no GET stream, no DELETE */
    } else if (mx_str_eq(method, MX_STR_LIT("POST"))) {
        post(m, scope, c);
    } else if (mx_str_eq(method, MX_STR_LIT("GET"))) {
        get(m, scope, c);
    } else if (mx_str_eq(method, MX_STR_LIT("DELETE"))) {
        del(m, scope, c);
    } else {
        mx_call_json(c, 405,
                     mx_rpc_error_new(NULL, MX_RPC_INVALID_REQUEST, "Method Not Allowed", NULL),
                     allow, 1);
    }
    mx_call_release(c);
}

void mx_mcp_serve(struct mx_mcp *m, struct mx_req *req)
{
    serve(m, NULL, req);
}

void mx_mcp_serve_one(struct mx_mcp *m, struct mx_upstream *up, struct mx_req *req)
{
    struct mx_mcpup *u = up->idx < m->up_cnt ? m->ups[up->idx] : NULL;
    if (u == NULL || u->up != up || up->retired) {
        /* a reload is replacing the slot */
        json_t *e = mx_rpc_error_new(NULL, MX_RPC_INTERNAL_ERROR,
                                     "the server is being reloaded; try again", NULL);
        char *text = mx_rpc_dump(e);
        json_decref(e);
        mx_req_respond(req, 503, NULL, 0, "application/json", text, strlen(text));
        free(text);
        return;
    }
    serve(m, u, req);
}

/* ---- setup ---- */

static void hub_dropped(size_t up_idx, const char *method, const char *why, void *data)
{
    struct mx_mcp *m = data;
    if (up_idx < m->up_cnt)
        mcp_up_dropped(m->ups[up_idx], method, why);
}

/*
 * The key that seals task ids: <state_dir>/task-key when it is there, the
 * right size and readable by its owner only, else a new one kept there, so
 * a task's id outlives an mcplex restart. Without a state dir, or when the
 * file cannot be written, the key lives as long as the process.
 */
static void task_key_keep(struct mx_mcp *m, const char *state_dir)
{
    char *path = state_dir ? mx_xasprintf("%s/task-key", state_dir) : NULL;
    int fd = path ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    struct stat st;
    bool ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
              (st.st_mode & 077) == 0 && st.st_size == (off_t)sizeof(m->task_key) &&
              read(fd, m->task_key, sizeof(m->task_key)) == (ssize_t)sizeof(m->task_key);
    if (fd >= 0)
        close(fd);
    if (!ok) {
        if (RAND_bytes(m->task_key, sizeof(m->task_key)) != 1)
            mx_fatal(SUBSYS, "RAND_bytes failed");
        struct mx_diag d = {0};
        char line[1024];
        if (path && mx_file_save_private(path, m->task_key, sizeof(m->task_key), &d) != 0)
            mx_log_warn(SUBSYS, "task ids will not outlive this process: %s",
                        mx_diag_format(&d, line, sizeof(line)));
    }
    free(path);
}

struct mx_mcp *mx_mcp_new(const struct mx_front_env *env)
{
    struct mx_mcp *m = mx_xcalloc(1, sizeof(*m));
    static const struct mx_session_cbs cbs = {session_on_close};
    struct mx_callhub_cbs hcbs = {hub_dropped, m};
    m->loop = env->loop;
    m->cfg = env->cfg;
    m->uc = env->uc;
    m->hub = mx_callhub_new(env->loop, &env->hooks, env->ops, &hcbs);
    mx_callhub_set_poll(m->hub, env->cfg->listen.stream_poll_ms);
    m->ops = mx_callhub_ops(m->hub);
    m->ids = mx_callhub_ids(m->hub);
    /* cursors are good for this process only; task ids outlive it */
    if (RAND_bytes(m->cursor_key, sizeof(m->cursor_key)) != 1)
        mx_fatal(SUBSYS, "RAND_bytes failed");
    task_key_keep(m, env->cfg->proxy.state_dir);
    m->sessions = mx_session_table_new(env->loop, env->cfg->listen.session_idle_ms,
                                       (size_t)env->cfg->listen.max_sessions, &cbs, m);
    struct mx_rstream_limits lim = {(size_t)env->cfg->listen.stream_buffer_events,
                                    (size_t)env->cfg->listen.stream_buffer_bytes};
    mx_session_table_set_limits(m->sessions, &lim);
    mcp_up_init(m, env->ups, env->up_cnt);
    m->modern = mcp_modern_new(m);
    m->tasks = mcp_taskbook_new();
    return m;
}

void mx_mcp_free(struct mx_mcp *m)
{
    if (m == NULL)
        return;
    m->shutting_down = true;
    mx_callhub_stopping(m->hub);
    mcp_wait_drop(m, NULL, true, NULL, MCP_WAIT_STOPPING);
    mcp_modern_free(m->modern);
    mx_session_table_free(m->sessions);
    for (struct mx_call *c = mx_callhub_first(m->hub); c; c = mx_callhub_first(m->hub))
        mx_call_close(c, "mcplex is stopping", 503, MX_RPC_INTERNAL_ERROR, "mcplex is stopping");
    mcp_up_clear(m);
    mx_callhub_free(m->hub);
    mcp_taskbook_free(m->tasks);
    free(m);
}

void mx_mcp_slot_retired(struct mx_mcp *m, size_t idx)
{
    if (idx >= m->up_cnt)
        return;
    struct mx_mcpup *u = m->ups[idx];
    mcp_wait_drop(m, NULL, false, u, MCP_WAIT_RETIRED);
    mcp_modern_retired(m, idx);
    mcp_taskbook_retired(m->tasks, idx);
    /* the sessions of its /mcp/<server> would live on with a server that is
     * no longer configured: they end (the client opens a new one, which
     * reaches the new config), those with calls in flight once the calls
     * ended (mx_mcp_slot_gone) */
    for (struct mx_session *s = mx_session_first(m->sessions); s;) {
        struct mx_session *next = s->next;
        struct sessx *sx = s->owner;
        if (sx && sx->scope == u) {
            bool busy = false;
            for (struct mx_call *c = mx_callhub_first(m->hub); c && !busy; c = c->next)
                busy = c->owner == s;
            if (busy)
                mx_session_end_get(s);
            else
                mx_session_close(s);
        }
        s = next;
    }
    mcp_up_retired(m, idx);
}

size_t mx_mcp_inflight(const struct mx_mcp *m)
{
    return m ? mx_callhub_inflight(m->hub) : 0;
}

size_t mx_mcp_session_cnt(const struct mx_mcp *m)
{
    return m ? mx_session_cnt(m->sessions) : 0;
}
