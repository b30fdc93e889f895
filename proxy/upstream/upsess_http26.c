/* SPDX-License-Identifier: MIT */
/*
 * The 2026-07-28 mode of the Streamable HTTP transport (upsess_http.c): an
 * upstream that lists 2026-07-28 in its server/discover answer (asked at
 * first contact, remembered in the env) gets stateless requests: _meta and
 * the 2026 headers on each (up2026.h), no initialize, session or GET
 * stream; the discover result is the "initialize result", list changes
 * come from its subscriptions/listen stream (on_message), and the
 * questions of an input_required result go to the request's on_message as
 * requests, whose answers (mx_upsess_send) go back in the request's next
 * round (Multi Round-Trip Requests). The 2025 methods that revision lacks
 * are bridged here: resources/subscribe and unsubscribe change the
 * resourceSubscriptions of the listen stream (opened again with the new
 * filter, the old one closed once the new one is acknowledged, which
 * answers the request {}; notifications/resources/updated then come on
 * it), and logging/setLevel is answered {} (the level goes in each
 * request's _meta instead, which the caller puts there). The exchanges
 * themselves, and what a 2025 session does, are upsess_http.c's; the pure
 * shapes of requests and answers are up2026.c's.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "backoff.h"
#include "err.h"
#include "log.h"
#include "rand.h"
#include "revision.h"
#include "rpc.h"
#include "up2026.h"
#include "upsess_http_int.h"

#define SUBSYS "upsess"

#define MRTR_MAX_ROUNDS    16      /* input_required results for one request */
#define MRTR_WAIT_MS       300000L /* for the answers of one round, without a request timeout */
#define LISTEN_MAX_FAILS   6       /* listen re-opens in a row before waiting for a request */
#define LISTEN_BACKOFF_MS  500
#define LISTEN_BACKOFF_CAP 30000
#define LISTEN_ACK_MS      30000L /* for the acknowledgement of a new listen stream */

static const struct mx_uph_rpc *CHR(const struct mx_uprpc *pub)
{
    return (const struct mx_uph_rpc *)(const void *)((const char *)pub -
                                                     offsetof(struct mx_uph_rpc, base));
}

int mx_uph26_headers(struct mx_uph_sess *s, const json_t *m26, struct mx_upreq_hdrs *h)
{
    const char *tool = json_string_value(json_object_get(json_object_get(m26, "params"), "name"));
    json_t *pmap = tool ? json_object_get(s->base.env->tool_params, tool) : NULL;
    return mx_up26_headers(m26, pmap, h);
}

/* Start |msg| (a 2026-07-28 request, shaped) as |kind|; its id ends it. */
static struct mx_uph_op *op_start26(struct mx_uph_sess *s, enum mx_uph_op_kind kind, json_t *msg,
                                    long timeout_ms, struct mx_upfail *fail)
{
    char *body = mx_rpc_dump(msg);
    struct mx_uph_op *op = mx_uph_op_start(s, kind, body, msg, NULL, timeout_ms, fail);
    free(body);
    if (op)
        op->id = json_incref(json_object_get(msg, "id"));
    return op;
}

/* The request of |r| as a 2026-07-28 upstream gets it: _meta, and in a
 * later round a new id, the answers and the requestState. */
static json_t *rpc_shape26(struct mx_uph_rpc *r)
{
    json_t *msg = mx_up26_request(r->msg, r->s->base.caps);
    if (r->round == 0)
        return msg;
    /* MCP 2026-07-28, Multi Round-Trip Requests: the same method and
     * params with a new id, the answers, the state echoed as it came */
    char id[80];
    json_t *orig = json_object_get(r->msg, "id");
    if (json_is_string(orig))
        snprintf(id, sizeof(id), "%.60s~%u", json_string_value(orig), r->round);
    else
        snprintf(id, sizeof(id), "%" JSON_INTEGER_FORMAT "~%u", json_integer_value(orig), r->round);
    json_object_set_new(msg, "id", json_string(id));
    json_t *params = json_object_get(msg, "params");
    if (r->mrtr_answers && json_object_size(r->mrtr_answers))
        json_object_set(params, "inputResponses", r->mrtr_answers);
    if (r->mrtr_state)
        json_object_set(params, "requestState", r->mrtr_state);
    return msg;
}

static void send_discover(struct mx_uph_sess *s)
{
    struct mx_upfail fail;
    json_t *id = json_string(s->discover_again ? "mcplex-discover-2" : "mcplex-discover");
    json_t *msg = mx_up26_discover(id, s->base.caps);
    json_decref(id);
    struct mx_uph_op *op = op_start26(s, MX_UPH_OP_DISCOVER, msg, MX_UPH_INIT_TIMEOUT_MS, &fail);
    json_decref(msg);
    if (op == NULL)
        mx_uph_init_failed(s, &fail);
}

void mx_uph26_decided(struct mx_uph_sess *s, long status, const json_t *answer)
{
    const struct mx_server_cfg *cfg = s->base.env->up->cfg;
    struct mx_upfail fail;
    enum mx_up26_verdict v = mx_up26_verdict(status, answer);
    if (v == MX_UP26_RETRY && !s->discover_again) {
        /* MCP 2026-07-28, Versioning: once more with a version it supports */
        s->discover_again = true;
        send_discover(s);
        return;
    }
    if (v == MX_UP26_UNKNOWN || v == MX_UP26_RETRY) {
        /* a refused credential or a 5xx says nothing about the revision */
        if (status >= 200 && status < 300)
            mx_upfail_proto(cfg, "server/discover answered without a response", &fail);
        else
            mx_upfail_status(cfg, status, &fail);
        mx_uph_init_failed(s, &fail);
        return;
    }
    enum mx_upsess_era era = v == MX_UP26_MODERN ? MX_UPSESS_ERA_MODERN : MX_UPSESS_ERA_LEGACY;
    if (s->base.env->era != era) {
        if (era == MX_UPSESS_ERA_MODERN)
            mx_log_info(SUBSYS, "up:%s speaks MCP %s: stateless requests, no session",
                        mx_uph_name(s), MX_UP26_VERSION);
        else
            mx_log_info(SUBSYS,
                        "up:%s does not speak MCP %s (server/discover: HTTP %ld); "
                        "using 2025 sessions",
                        mx_uph_name(s), MX_UP26_VERSION, status);
        s->base.env->era = era;
    }
    if (era == MX_UPSESS_ERA_LEGACY) {
        mx_uph_initialize(s);
        return;
    }
    s->modern = true;
    snprintf(s->version, sizeof(s->version), "%s", MX_UP26_VERSION);
    json_decref(s->base.init_result);
    s->base.init_result = mx_up26_init_result(json_object_get(answer, "result"));
    mx_uph_session_ready(s);
}

/* Answer |r| with an empty result, as the 2025 methods bridged here do. */
static void rpc_reply_empty(struct mx_uph_rpc *r)
{
    json_t *resp = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id",
                             json_object_get(r->msg, "id"), "result");
    mx_uph_rpc_finish(r, resp, NULL);
    json_decref(resp);
}

/* The waiting resources/subscribe and unsubscribe requests of generation
 * |gen| or older: answered {} (MCP 2025-06-18, Resources), or a subscribe
 * with |error| (borrowed) when not NULL. One at a time, looking again
 * after each callback. */
static void subs_answer(struct mx_uph_sess *s, uint64_t gen, json_t *error)
{
    mx_uph_ref(s);
    for (;;) {
        struct mx_uph_rpc *r = s->rpcs;
        while (r && !(r->sub_wait && r->sub_gen <= gen))
            r = r->next;
        if (r == NULL || s->state == MX_UPH_CLOSED)
            break;
        const char *m = json_string_value(json_object_get(r->msg, "method"));
        if (error == NULL || strcmp(m, "resources/subscribe") != 0) {
            rpc_reply_empty(r);
            continue;
        }
        json_t *resp = json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id",
                                 json_object_get(r->msg, "id"), "error", error);
        mx_uph_rpc_finish(r, resp, NULL);
        json_decref(resp);
    }
    mx_uph_unref(s);
}

/* The upstream answered the listen stream opened for newer subscriptions
 * with an error: the resources it added leave the filter and their
 * subscribe requests get the error; the acknowledged ones stay, on the
 * current stream and the next. */
void mx_uph26_listen_refused(struct mx_uph_op *op, json_t *msg)
{
    struct mx_uph_sess *s = op->s;
    json_t *error = json_object_get(msg, "error");
    if (op != s->listen_next || !json_is_object(error))
        return;
    const char *uri;
    void *tmp;
    json_t *v;
    json_object_foreach_safe(s->subs, tmp, uri, v)
    {
        uint64_t g = (uint64_t)json_integer_value(v);
        if (g > s->acked_gen && g <= op->gen)
            json_object_del(s->subs, uri);
    }
    subs_answer(s, op->gen, error);
}

/* Open the listen stream again later: at once after one that worked, then
 * with backoff; after LISTEN_MAX_FAILS in a row, at the next request. */
static void listen_later(struct mx_uph_sess *s)
{
    if (!s->modern || s->state != MX_UPH_READY || s->listen_next ||
        s->listen_failures > LISTEN_MAX_FAILS)
        return;
    int64_t ms = s->listen_failures <= 1
                     ? 0
                     : mx_backoff_ms(s->listen_failures - 2, LISTEN_BACKOFF_MS, LISTEN_BACKOFF_CAP,
                                     mx_rand_below(1u << 20));
    ev_timer_stop(s->base.env->loop, &s->listen_timer);
    ev_timer_set(&s->listen_timer, (double)ms / 1000.0, 0.0);
    ev_timer_start(s->base.env->loop, &s->listen_timer);
}

/*
 * MCP 2026-07-28, subscriptions/listen: the list changes of the kinds the
 * upstream announces and the resources subscribed to, on one long stream.
 * A new one replaces the current one once acknowledged (make before
 * break: the spec has no way to change the filter of an open stream).
 */
static void open_listen(struct mx_uph_sess *s)
{
    struct mx_upfail fail;
    if (!s->modern || s->state != MX_UPH_READY)
        return;
    if (s->listen_next) {
        /* again once this one is acknowledged, when it asked for less */
        if (s->listen_next->gen != s->sub_gen)
            s->listen_dirty = true;
        return;
    }
    ev_timer_stop(s->base.env->loop, &s->listen_timer);
    char buf[48];
    snprintf(buf, sizeof(buf), "mcplex-listen-%llu-%llu", (unsigned long long)s->base.key,
             (unsigned long long)s->sub_gen);
    json_t *id = json_string(buf);
    json_t *msg = mx_up26_listen(id, json_object_get(s->base.init_result, "capabilities"), s->subs,
                                 s->task_subs, s->base.caps);
    json_decref(id);
    if (msg == NULL) {
        /* nothing to listen to (the last subscription went) */
        if (s->listen)
            mx_uph_op_kill(s->listen);
        s->listen = NULL;
        s->acked_gen = s->sub_gen;
        subs_answer(s, s->acked_gen, NULL);
        return;
    }
    s->listen_next = op_start26(s, MX_UPH_OP_LISTEN, msg, 0, &fail);
    json_decref(msg);
    if (s->listen_next == NULL) {
        mx_log_debug(SUBSYS, "up:%s cannot open subscriptions/listen: %s", mx_uph_name(s),
                     fail.message);
        s->listen_failures++;
        listen_later(s);
        return;
    }
    s->listen_next->gen = s->sub_gen;
    ev_timer_set(&s->listen_timer, (double)LISTEN_ACK_MS / 1000.0, 0.0);
    ev_timer_start(s->base.env->loop, &s->listen_timer);
}

void mx_uph26_listen_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_uph_sess *s = mx_container_of(w, struct mx_uph_sess, listen_timer);
    (void)loop;
    (void)revents;
    if (s->state == MX_UPH_CLOSED)
        return;
    mx_uph_ref(s);
    if (s->listen_next) {
        mx_log_debug(SUBSYS, "up:%s did not acknowledge subscriptions/listen in time",
                     mx_uph_name(s));
        struct mx_uph_op *op = s->listen_next;
        mx_uph_op_kill(op);
        s->listen_next = NULL;
        s->listen_failures++;
        listen_later(s);
    } else {
        open_listen(s);
    }
    mx_uph_unref(s);
}

/* notifications/subscriptions/acknowledged, first on |op|'s stream. */
static void listen_acked(struct mx_uph_op *op, json_t *msg)
{
    struct mx_uph_sess *s = op->s;
    if (op != s->listen_next)
        return;
    ev_timer_stop(s->base.env->loop, &s->listen_timer);
    if (s->listen)
        mx_uph_op_kill(s->listen);
    s->listen = op;
    s->listen_next = NULL;
    /* the ones this stream added that the upstream does not honour: it
     * will send no updates for them (the client's subscribe still stands,
     * as with a 2025 server that never sends one) */
    const char *uri;
    json_t *v;
    json_object_foreach(s->subs, uri, v)
    {
        uint64_t g = (uint64_t)json_integer_value(v);
        if (g > s->acked_gen && g <= op->gen && !mx_up26_honoured(msg, uri))
            mx_log_info(SUBSYS, "up:%s does not honour a subscription to %.200s", mx_uph_name(s),
                        uri);
    }
    if (op->gen > s->acked_gen)
        s->acked_gen = op->gen;
    if (s->listen_dirty) {
        s->listen_dirty = false;
        open_listen(s);
    }
    subs_answer(s, s->acked_gen, NULL);
}

void mx_uph26_listen_ended(struct mx_uph_sess *s, struct mx_uph_op *op)
{
    if (op == s->listen_next)
        s->listen_next = NULL; /* before its acknowledgement */
    else if (op == s->listen)
        s->listen = NULL;
    else
        return; /* one replaced by a newer stream */
    if (s->listen_next)
        return;
    s->listen_failures++;
    listen_later(s);
}

void mx_uph26_sub_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_uph_rpc *r = mx_container_of(w, struct mx_uph_rpc, sub_timer);
    struct mx_uph_sess *s = r->s;
    struct mx_upfail fail;
    (void)loop;
    (void)revents;
    const char *method = json_string_value(json_object_get(r->msg, "method"));
    const char *uri = json_string_value(json_object_get(json_object_get(r->msg, "params"), "uri"));
    json_t *g = uri ? json_object_get(s->subs, uri) : NULL;
    /* a subscription the client is told failed is not kept */
    char *drop = strcmp(method, "resources/subscribe") == 0 && g &&
                         (uint64_t)json_integer_value(g) > s->acked_gen
                     ? mx_xstrdup(uri)
                     : NULL;
    mx_uph_ref(s);
    r->sub_wait = false;
    mx_upfail_proto(s->base.env->up->cfg,
                    "it did not acknowledge the subscription (subscriptions/listen) in time",
                    &fail);
    mx_uph_rpc_finish(r, NULL, &fail);
    if (drop && s->state != MX_UPH_CLOSED) {
        json_object_del(s->subs, drop);
        s->sub_gen++;
        open_listen(s);
    }
    free(drop);
    mx_uph_unref(s);
}

/* Follow a task on the listen stream, or stop: the stream opens again with
 * the new taskIds (SEP-2663: notifications/tasks). Answered at once: a
 * status notification is a hint, tasks/get the truth. */
static void watch_task(struct mx_uph_sess *s, struct mx_uph_rpc *r)
{
    bool on = strcmp(json_string_value(json_object_get(r->msg, "method")), MX_UP26_TASK_WATCH) == 0;
    const char *id =
        json_string_value(json_object_get(json_object_get(r->msg, "params"), "taskId"));
    if (s->task_subs == NULL)
        s->task_subs = json_object();
    bool has = id && json_object_get(s->task_subs, id) != NULL;
    bool room = json_object_size(s->task_subs) < MX_UP26_TASK_WATCH_MAX;
    bool change = id && on != has && (!on || room);
    if (change && on)
        json_object_set_new(s->task_subs, id, json_true());
    else if (change)
        json_object_del(s->task_subs, id);
    rpc_reply_empty(r); /* |id| is |r|'s: not used after this */
    if (change) {
        s->sub_gen++;
        open_listen(s);
    }
}

/*
 * MCP 2026-07-28 has neither resources/subscribe and unsubscribe nor
 * logging/setLevel: a subscription changes the resourceSubscriptions of
 * the listen stream and is answered once the upstream acknowledges it; a
 * level travels in the _meta of each request instead, so setting one is
 * answered here. Returns true when |r| was taken here.
 */
static bool bridge26(struct mx_uph_rpc *r)
{
    struct mx_uph_sess *s = r->s;
    const char *method = json_string_value(json_object_get(r->msg, "method"));
    bool on = method && strcmp(method, "resources/subscribe") == 0;
    if (method && strcmp(method, "logging/setLevel") == 0) {
        rpc_reply_empty(r);
        return true;
    }
    if (method &&
        (strcmp(method, MX_UP26_TASK_WATCH) == 0 || strcmp(method, MX_UP26_TASK_UNWATCH) == 0)) {
        watch_task(s, r);
        return true;
    }
    if (!on && (method == NULL || strcmp(method, "resources/unsubscribe") != 0))
        return false;
    const char *uri = json_string_value(json_object_get(json_object_get(r->msg, "params"), "uri"));
    if (uri == NULL) {
        json_t *resp = mx_rpc_error_new(json_object_get(r->msg, "id"), MX_RPC_INVALID_PARAMS,
                                        "Invalid params: params.uri must be a string", NULL);
        mx_uph_rpc_finish(r, resp, NULL);
        json_decref(resp);
        return true;
    }
    if (s->subs == NULL)
        s->subs = json_object();
    bool changed = on != json_is_integer(json_object_get(s->subs, uri));
    if (changed) {
        s->sub_gen++;
        if (on)
            json_object_set_new(s->subs, uri, json_integer((json_int_t)s->sub_gen));
        else
            json_object_del(s->subs, uri);
    }
    /* a subscription already asked for waits for the same acknowledgement */
    json_t *g = on ? json_object_get(s->subs, uri) : NULL;
    r->sub_gen = g ? (uint64_t)json_integer_value(g) : changed ? s->sub_gen : 0;
    if (r->sub_gen <= s->acked_gen) {
        rpc_reply_empty(r);
        return true;
    }
    r->sub_wait = true;
    long wait = r->timeout_ms > 0 ? r->timeout_ms : LISTEN_ACK_MS;
    ev_timer_set(&r->sub_timer, (double)wait / 1000.0, 0.0);
    ev_timer_start(s->base.env->loop, &r->sub_timer);
    if (changed)
        open_listen(s); /* last: it may answer |r| at once */
    return true;
}

/* ---- MCP 2026-07-28, Multi Round-Trip Requests ---- */

static void mrtr_ready(struct mx_uph_rpc *r)
{
    struct mx_uph_sess *s = r->s;
    r->mrtr_wait = false;
    ev_timer_stop(s->base.env->loop, &r->mrtr_timer);
    /* from the loop: the caller may be inside mx_upsess_send */
    mx_uph_kick(s);
}

void mx_uph26_mrtr_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_uph_rpc *r = mx_container_of(w, struct mx_uph_rpc, mrtr_timer);
    struct mx_upfail fail;
    (void)loop;
    (void)revents;
    mx_upfail_proto(r->s->base.env->up->cfg,
                    "its questions (input_required) were not answered in time", &fail);
    mx_uph_rpc_finish(r, NULL, &fail);
}

/*
 * An input_required result is taken here: each question goes to the caller
 * as a request on the request's on_message, and the request waits for the
 * answers through mx_upsess_send.
 */
bool mx_uph26_mrtr_begin(struct mx_uph_op *op, json_t *msg)
{
    struct mx_uph_sess *s = op->s;
    struct mx_uph_rpc *r = op->rpc;
    struct mx_upfail fail;
    json_t *result = json_object_get(msg, "result");
    if (!s->modern || !mx_up26_input_required(result))
        return false;
    json_t *reqs = json_object_get(result, "inputRequests");
    json_t *state = json_object_get(result, "requestState");
    const char *why = NULL;
    const char *k;
    json_t *q;
    if (r->round >= MRTR_MAX_ROUNDS)
        why = "more input_required rounds than mcplex follows";
    else if ((reqs && !json_is_object(reqs)) || (state && !json_is_string(state)) ||
             (json_object_size(reqs) == 0 && state == NULL))
        why = "an input_required result without inputRequests or requestState";
    json_object_foreach(reqs, k, q)
    {
        json_t *p = json_object_get(q, "params");
        if (why == NULL && (!mx_uph_relayable(json_string_value(json_object_get(q, "method"))) ||
                            (p && !json_is_object(p))))
            why = "an input_required result asking what mcplex cannot relay";
    }
    if (why) {
        mx_upfail_proto(s->base.env->up->cfg, why, &fail);
        mx_uph_rpc_finish(r, NULL, &fail);
        return true;
    }
    op->rpc = NULL;
    r->op = NULL;
    r->round++;
    r->mrtr_wait = true;
    json_decref(r->mrtr_state);
    r->mrtr_state = state ? json_incref(state) : NULL;
    json_decref(r->mrtr_answers);
    r->mrtr_answers = json_object();
    json_decref(r->mrtr_ask);
    r->mrtr_ask = json_object();
    json_t *asks = json_array();
    size_t i = 0;
    json_object_foreach(reqs, k, q)
    {
        char id[80];
        snprintf(id, sizeof(id), "mcplex-input-%llu-%u-%zu", (unsigned long long)r->seq, r->round,
                 i++);
        json_object_set_new(r->mrtr_ask, id, json_string(k));
        json_t *p = json_object_get(q, "params");
        json_array_append_new(asks, json_pack("{s:s, s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id,
                                              "method", json_object_get(q, "method"), "params",
                                              p ? json_incref(p) : json_object()));
    }
    long wait = r->timeout_ms > 0 ? r->timeout_ms : MRTR_WAIT_MS;
    ev_timer_set(&r->mrtr_timer, (double)wait / 1000.0, 0.0);
    ev_timer_start(s->base.env->loop, &r->mrtr_timer);
    if (json_array_size(asks) == 0) {
        mrtr_ready(r); /* only a requestState: go again at once */
    } else {
        r->in_ask = true;
        json_array_foreach(asks, i, q)
        {
            if (r->cancelled || r->cbs.on_message == NULL)
                break;
            (void)r->cbs.on_message(&r->base, op->key, q, r->data);
        }
        r->in_ask = false;
        if (r->cancelled)
            mx_uph_rpc_free(r);
    }
    json_decref(asks);
    return true;
}

void mx_uph26_send(struct mx_uph_sess *s, json_t *msg)
{
    const char *id = json_string_value(json_object_get(msg, "id"));
    if (id == NULL || json_object_get(msg, "method")) {
        mx_log_debug(SUBSYS, "up:%s speaks %s, which has no client notifications; dropped",
                     mx_uph_name(s), MX_UP26_VERSION);
        return;
    }
    for (struct mx_uph_rpc *r = s->rpcs; r; r = r->next) {
        json_t *key = r->mrtr_wait ? json_object_get(r->mrtr_ask, id) : NULL;
        if (key == NULL)
            continue;
        json_t *result = json_object_get(msg, "result");
        if (json_is_object(result)) {
            json_object_set(r->mrtr_answers, json_string_value(key), result);
        } else {
            json_t *err = json_object_get(msg, "error");
            json_decref(r->mrtr_error);
            r->mrtr_error = json_is_object(err)
                                ? json_incref(err)
                                : json_pack("{s:i, s:s}", "code", MX_RPC_INTERNAL_ERROR, "message",
                                            "the client's answer to a question was not valid");
        }
        json_object_del(r->mrtr_ask, id);
        if (json_object_size(r->mrtr_ask) == 0 || r->mrtr_error)
            mrtr_ready(r);
        return;
    }
    mx_log_debug(SUBSYS, "up:%s answer to no open question; dropped", mx_uph_name(s));
}

/* MCP 2026-07-28, Tools, x-mcp-header: what a tools/list answer |msg| to
 * |r| says about each tool's Mcp-Param-* headers is kept for its calls, and
 * a tool whose annotations are invalid is left out (the specification says
 * clients exclude it). Returns the answer to pass on (new reference), or
 * NULL when |msg| is none of this. */
static json_t *tools_seen(struct mx_uph_sess *s, struct mx_uph_rpc *r, json_t *msg)
{
    const char *m = json_string_value(json_object_get(r->msg, "method"));
    json_t *result = json_object_get(msg, "result");
    if (m == NULL || strcmp(m, "tools/list") != 0 ||
        !json_is_array(json_object_get(result, "tools")))
        return NULL;
    if (s->base.env->tool_params == NULL)
        s->base.env->tool_params = json_object();
    json_t *dropped = json_array();
    json_t *out = json_copy(msg);
    json_object_set_new(out, "result",
                        mx_up26_tools_seen(result, s->base.env->tool_params, dropped));
    size_t i;
    json_t *n;
    json_array_foreach(dropped, i, n)
    {
        mx_log_warn(SUBSYS, "up:%s tool '%.80s' left out: its x-mcp-header annotations are invalid",
                    mx_uph_name(s), json_string_value(n));
    }
    json_decref(dropped);
    return out;
}

json_t *mx_uph26_answer(struct mx_uph_rpc *r, json_t *msg)
{
    struct mx_uph_sess *s = r->s;
    json_t *seen = s->modern ? tools_seen(s, r, msg) : NULL;
    json_t *ans = seen ? seen : json_incref(msg);
    if (r->round == 0)
        return ans;
    /* the caller's id, not the one of the last round */
    json_t *copy = json_copy(ans);
    json_object_set(copy, "id", json_object_get(r->msg, "id"));
    json_decref(ans);
    return copy;
}

const char *mx_uph26_input_key(const struct mx_uprpc *pub, const json_t *id)
{
    const struct mx_uph_rpc *r = CHR(pub);
    if (!r->mrtr_wait || !json_is_string(id))
        return NULL;
    return json_string_value(json_object_get(r->mrtr_ask, json_string_value(id)));
}

/* ---- the session's life ---- */

void mx_uph26_discover(struct mx_uph_sess *s)
{
    s->discover_again = false;
    send_discover(s);
}

void mx_uph26_ready(struct mx_uph_sess *s)
{
    s->listen_failures = 0;
    open_listen(s);
}

void mx_uph26_forget(struct mx_uph_sess *s)
{
    if (s->listen)
        mx_uph_op_kill(s->listen);
    s->listen = NULL;
    if (s->listen_next)
        mx_uph_op_kill(s->listen_next);
    s->listen_next = NULL;
    s->listen_dirty = false;
    ev_timer_stop(s->base.env->loop, &s->listen_timer);
    /* subscriptions waiting for an acknowledgement go again once the
     * revision is known (as resources/subscribe to a 2025 session) */
    bool again = false;
    for (struct mx_uph_rpc *r = s->rpcs; r; r = r->next) {
        if (r->sub_wait) {
            r->sub_wait = false;
            ev_timer_stop(s->base.env->loop, &r->sub_timer);
            again = true;
        }
    }
    if (again)
        mx_uph_kick(s);
}

bool mx_uph26_take(struct mx_uph_rpc *r)
{
    if (r->s->modern && bridge26(r))
        return true;
    if (r->mrtr_error) {
        /* a question was answered with an error: that ends the request */
        json_t *resp = json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id",
                                 json_object_get(r->msg, "id"), "error", r->mrtr_error);
        mx_uph_rpc_finish(r, resp, NULL);
        json_decref(resp);
        return true;
    }
    return false;
}

struct mx_uph_op *mx_uph26_start(struct mx_uph_rpc *r, struct mx_upfail *fail)
{
    json_t *msg = rpc_shape26(r);
    struct mx_uph_op *op = op_start26(r->s, MX_UPH_OP_RPC, msg, r->timeout_ms, fail);
    json_decref(msg);
    return op;
}

void mx_uph26_launched(struct mx_uph_sess *s)
{
    if (s->modern && (s->listen_failures > LISTEN_MAX_FAILS || s->idle_gap) && s->listen == NULL &&
        s->listen_next == NULL) {
        /* it had given up re-opening, or idle_close closed it: a request
         * is a fresh chance */
        s->listen_failures = 0;
        open_listen(s);
    }
}

bool mx_uph26_listen_msg(struct mx_uph_op *op, json_t *msg)
{
    struct mx_uph_sess *s = op->s;
    const char *m = json_string_value(json_object_get(msg, "method"));
    if (m && strcmp(m, "notifications/subscriptions/acknowledged") == 0) {
        listen_acked(op, msg);
        return true;
    }
    s->listen_failures = 0;
    /* the subscription id is the stream's, not for mcplex's clients */
    json_t *params = json_object_get(msg, "params");
    json_t *meta = json_object_get(params, "_meta");
    json_object_del(meta, MX_REV_META_SUBSCRIPTION_ID);
    if (json_is_object(meta) && json_object_size(meta) == 0)
        json_object_del(params, "_meta");
    return false;
}
