/* SPDX-License-Identifier: MIT */
/*
 * The session core of the message-channel transports (upchan.h): states and
 * refs, the kick and the bound on starting, initialize, the backoff, a lost
 * channel, and the dispatch of what the upstream sends. What a channel is
 * (a child process; an event stream and its POSTs) stays with the
 * transports, behind struct mx_upchan_ops.
 */
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
#include "upchan.h"

#define STABLE_S        10.0 /* ready this long: a later end is no restart loop */
#define BACKOFF_BASE_MS 500
#define BACKOFF_CAP_MS  30000

static struct mx_upchan *CHAN(struct mx_upsess *s)
{
    return mx_container_of(s, struct mx_upchan, base);
}

static const char *name(const struct mx_upchan *c)
{
    return c->cfg->name;
}

static const char *state_name(const struct mx_upchan *c, enum mx_upchan_state st)
{
    const char *n = c->ops->state_names[st];
    return n ? n : "?";
}

void mx_upchan_set_state(struct mx_upchan *c, enum mx_upchan_state st)
{
    if (c->state == st)
        return;
    mx_log_debug(c->ops->subsys, "up:%s session %s -> %s", name(c), state_name(c, c->state),
                 state_name(c, st));
    c->state = st;
    c->base.ready = st == MX_UPCHAN_READY;
}

/* ---- lifetimes ---- */

void mx_upchan_ref(struct mx_upchan *c)
{
    c->refs++;
}

void mx_upchan_unref(struct mx_upchan *c)
{
    MX_ASSERT(c->refs > 0);
    if (--c->refs > 0)
        return;
    json_decref(c->init_ids);
    c->init_ids = NULL;
    json_decref(c->discover_ids);
    c->discover_ids = NULL;
    mx_upsess_base_clear(&c->base);
    c->ops->free(c);
}

static void q_forget(struct mx_upmsg_rpc *r, void *owner)
{
    struct mx_upchan *c = owner;
    if (c->ops->forget)
        c->ops->forget(c, r);
}

static void q_resume(void *owner)
{
    struct mx_upchan *c = owner;
    c->ops->resume(c);
}

static void q_hold(void *owner)
{
    mx_upchan_ref(owner);
}

static void q_release(void *owner)
{
    mx_upchan_unref(owner);
}

static void rpc_timeout(struct mx_upmsg_rpc *r, void *owner);

static const struct mx_upmsg_q_ops q_ops = {q_forget, q_resume, rpc_timeout, q_hold, q_release};

/* ---- the timers ---- */

static struct mx_upmsg_rpc *first_waiting(struct mx_upchan *c)
{
    return mx_upmsg_first(&c->q, false, UINT64_MAX);
}

/* MCP 2026-07-28 has no logging/setLevel: the level goes in each request's
 * _meta instead (MX_UPSESS_CAP_META_LOG_LEVEL), so setting one is answered
 * here. Returns true when |r| was taken. */
static bool set_level(struct mx_upmsg_rpc *r)
{
    if (strcmp(r->method, "logging/setLevel") != 0)
        return false;
    json_t *resp = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", r->id, "result");
    mx_upmsg_finish(r, resp, NULL);
    json_decref(resp);
    return true;
}

static void launch_waiting(struct mx_upchan *c)
{
    struct mx_upmsg_rpc *r;
    mx_upchan_ref(c);
    while (c->state == MX_UPCHAN_READY && (r = first_waiting(c)) != NULL) {
        if (r->msg == NULL) {
            mx_upmsg_finish(r, NULL, NULL); /* connect only: done */
            continue;
        }
        if (c->modern && set_level(r))
            continue;
        if (!c->ops->launch(c, r))
            break;
    }
    mx_upchan_unref(c);
}

static void kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_upchan *c = mx_container_of(w, struct mx_upchan, kick);
    (void)revents;
    if (c->state == MX_UPCHAN_CLOSED)
        return;
    mx_upchan_ref(c);
    if (c->state == MX_UPCHAN_READY) {
        launch_waiting(c);
    } else if (c->state == MX_UPCHAN_IDLE && first_waiting(c)) {
        ev_tstamp now = ev_now(loop);
        if (now < c->retry_at) {
            mx_upchan_kick(c, c->retry_at - now);
        } else {
            c->conn++;
            c->started_at = now;
            json_array_clear(c->init_ids);
            json_array_clear(c->discover_ids);
            c->discovering = false;
            c->modern = false;
            c->ops->start(c);
        }
    }
    mx_upchan_unref(c);
}

void mx_upchan_kick(struct mx_upchan *c, double after_s)
{
    struct ev_loop *loop = c->base.env->loop;
    if (ev_is_active(&c->kick)) {
        if (after_s > 0.0)
            return; /* already due, sooner or as soon */
        ev_timer_stop(loop, &c->kick);
    }
    ev_timer_set(&c->kick, after_s, 0.0);
    ev_timer_start(loop, &c->kick);
}

static void init_wait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_upchan *c = mx_container_of(w, struct mx_upchan, init_wait);
    struct mx_upfail f;
    (void)loop;
    (void)revents;
    if (c->state != MX_UPCHAN_OPENING && c->state != MX_UPCHAN_INIT)
        return;
    if (c->ops->init_wait(c, &f))
        mx_upchan_start_failed(c, &f);
}

void mx_upchan_wait_init(struct mx_upchan *c, double after_s)
{
    struct ev_loop *loop = c->base.env->loop;
    ev_timer_stop(loop, &c->init_wait);
    ev_timer_set(&c->init_wait, after_s, 0.0);
    ev_timer_start(loop, &c->init_wait);
}

/* ---- starting and ending ---- */

/* Write |msg| (an opening request with id |id|; both given) and keep |id|
 * in |ids| once it went: returns what ops->write returned. */
static int write_opening(struct mx_upchan *c, json_t *msg, json_t *id, json_t *ids)
{
    int rc = c->ops->write(c, MX_UPCHAN_INITIALIZE, msg);
    if (rc == 0)
        json_array_append(ids, id);
    json_decref(msg);
    json_decref(id);
    return rc;
}

int mx_upchan_send_initialize(struct mx_upchan *c, unsigned long long n)
{
    char buf[48];
    snprintf(buf, sizeof(buf), "mcplex-init-%llu", n);
    json_t *id = json_string(buf);
    return write_opening(c, mx_upmsg_initialize(c->base.caps, id), id, c->init_ids);
}

static int send_discover(struct mx_upchan *c)
{
    char buf[48];
    snprintf(buf, sizeof(buf), "mcplex-discover-%zu", json_array_size(c->discover_ids) + 1);
    json_t *id = json_string(buf);
    return write_opening(c, mx_up26_discover(id, c->base.caps), id, c->discover_ids);
}

int mx_upchan_send_again(struct mx_upchan *c)
{
    if (c->discovering) {
        c->discovering = false;
        mx_log_info(c->ops->subsys,
                    "up:%s has not answered server/discover after %.0f s; sending initialize again",
                    name(c), ev_now(c->base.env->loop) - c->started_at);
    }
    return mx_upchan_send_initialize(c, json_array_size(c->init_ids) + 1);
}

json_t *mx_upchan_shape(const struct mx_upchan *c, const struct mx_upmsg_rpc *r)
{
    return c->modern ? mx_up26_request(r->msg, c->base.caps) : mx_up26_strip(r->msg);
}

static bool has_id(const json_t *ids, const json_t *id)
{
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v)
    {
        if (json_equal(v, id))
            return true;
    }
    return false;
}

static bool is_init_answer(const struct mx_upchan *c, const json_t *id)
{
    return c->state == MX_UPCHAN_INIT && has_id(c->init_ids, id);
}

static bool is_discover_answer(const struct mx_upchan *c, const json_t *id)
{
    return c->state == MX_UPCHAN_INIT && has_id(c->discover_ids, id);
}

/* The answer to the server/discover asked after a refused initialize (MCP
 * 2026-07-28, Lifecycle): a result listing 2026-07-28 makes the session
 * modern and ready at once (no initialize, no initialized); anything else
 * contradicts the refusal, and the start fails saying so. */
static void discover_answered(struct mx_upchan *c, json_t *msg)
{
    struct mx_upfail f;
    json_array_clear(c->discover_ids);
    c->discovering = false;
    if (mx_up26_verdict(200, msg) != MX_UP26_MODERN) {
        mx_upmsg_fail(c->cfg, MX_RPC_UPSTREAM_HTTP, "protocol-error", &f,
                      "broke the protocol: it refused initialize naming MCP %s as the version it "
                      "supports, yet its server/discover answer does not list %s; check that the "
                      "command starts the MCP server meant",
                      MX_UP26_VERSION, MX_UP26_VERSION);
        mx_upchan_start_failed(c, &f);
        return;
    }
    if (c->base.env->era != MX_UPSESS_ERA_MODERN)
        mx_log_info(c->ops->subsys, "up:%s speaks MCP %s: stateless requests, no session", name(c),
                    MX_UP26_VERSION);
    c->base.env->era = MX_UPSESS_ERA_MODERN;
    c->modern = true;
    /* initializes sent again while discover was on its way are answered to
     * nobody */
    json_array_clear(c->init_ids);
    json_decref(c->base.init_result);
    c->base.init_result = mx_up26_init_result(json_object_get(msg, "result"));
    mx_upchan_ready(c);
}

/* A modern upstream's input_required result (Multi Round-Trip Requests)
 * asks the client questions that this channel does not relay: the request
 * fails saying so, rather than passing on a result a client cannot use. */
static bool input_required(struct mx_upchan *c, struct mx_upmsg_rpc *r, json_t *msg)
{
    struct mx_upfail f;
    if (!c->modern || !mx_up26_input_required(json_object_get(msg, "result")))
        return false;
    mx_upmsg_fail(c->cfg, MX_RPC_UPSTREAM_HTTP, "protocol-error", &f,
                  "asked for the client's input (input_required result of MCP %s), which mcplex "
                  "does not relay from a %s upstream",
                  MX_UP26_VERSION, c->ops->transport->label);
    mx_upmsg_finish(r, NULL, &f);
    return true;
}

/* MCP 2026-07-28, Versioning: the initialize was refused with an
 * unsupported-version error (-32022) whose data.supported names 2026-07-28,
 * which is how a server that speaks only 2026-07-28 answers a 2025 client
 * (the TypeScript SDK v2's, for one): this start goes on with
 * server/discover. Any other refusal is no such evidence. Returns true when
 * |msg| was that refusal. */
static bool refused_for_2026(struct mx_upchan *c, json_t *msg)
{
    if (!c->ops->discover || mx_up26_verdict(200, msg) != MX_UP26_RETRY)
        return false;
    if (c->discovering)
        return true; /* a repeated initialize refused: one discover is on its way */
    if (c->base.env->era != MX_UPSESS_ERA_MODERN)
        mx_log_info(c->ops->subsys,
                    "up:%s refused initialize and named MCP %s (error %d); asking "
                    "server/discover",
                    name(c), MX_UP26_VERSION, MX_REV_UNSUPPORTED_VERSION);
    c->discovering = true;
    send_discover(c);
    return true;
}

static void init_answered(struct mx_upchan *c, json_t *msg)
{
    struct mx_upfail f;
    if (refused_for_2026(c, msg))
        return;
    if (!mx_upmsg_init_ok(c->cfg, msg, &f)) {
        mx_upchan_start_failed(c, &f);
        return;
    }
    if (c->ops->discover)
        c->base.env->era = MX_UPSESS_ERA_LEGACY;
    json_decref(c->base.init_result);
    c->base.init_result = json_incref(json_object_get(msg, "result"));
    json_array_clear(c->init_ids);
    /* MCP 2024-11-05 and 2025-06-18, Lifecycle: initialized before anything
     * else; requests go once the server took it */
    json_t *note = mx_upmsg_initialized();
    c->ops->write(c, MX_UPCHAN_INITIALIZED, note);
    json_decref(note);
    if (c->ops->ready_on_write)
        mx_upchan_ready(c);
}

void mx_upchan_ready(struct mx_upchan *c)
{
    ev_timer_stop(c->base.env->loop, &c->init_wait);
    c->base.key = c->ops->key_bit | (*c->ops->next_key)++;
    c->ready_at = ev_now(c->base.env->loop);
    mx_upchan_set_state(c, MX_UPCHAN_READY);
    c->ops->ready(c);
    mx_upchan_ref(c);
    launch_waiting(c);
    if (c->state == MX_UPCHAN_READY && c->base.cbs.on_ready)
        c->base.cbs.on_ready(&c->base, c->base.init_result, c->base.data);
    mx_upchan_unref(c);
}

static void drop_channel(struct mx_upchan *c)
{
    ev_timer_stop(c->base.env->loop, &c->init_wait);
    c->ops->end(c);
    c->base.key = 0;
    mx_upmsg_unpause_all(&c->q);
}

void mx_upchan_end(struct mx_upchan *c)
{
    drop_channel(c);
    mx_upchan_set_state(c, MX_UPCHAN_IDLE);
}

/* One more start that did not last: the next waits out a backoff. */
static int64_t backoff(struct mx_upchan *c)
{
    c->failures++;
    int64_t ms =
        mx_backoff_ms(c->failures - 1, BACKOFF_BASE_MS, BACKOFF_CAP_MS, mx_rand_below(UINT64_MAX));
    c->retry_at = ev_now(c->base.env->loop) + (double)ms / 1000.0;
    return ms;
}

void mx_upchan_start_failed(struct mx_upchan *c, const struct mx_upfail *f)
{
    if (c->state == MX_UPCHAN_CLOSED)
        return;
    mx_upchan_ref(c);
    mx_upchan_end(c);
    c->ops->failed(c, f, backoff(c));
    mx_upmsg_fail_all(&c->q, false, f);
    /* requests made by those callbacks wait for the next attempt */
    if (c->state == MX_UPCHAN_IDLE && first_waiting(c))
        mx_upchan_kick(c, c->retry_at - ev_now(c->base.env->loop));
    mx_upchan_unref(c);
}

void mx_upchan_lost(struct mx_upchan *c, const char *how)
{
    struct mx_upfail f;
    if (c->state == MX_UPCHAN_CLOSED)
        return;
    mx_upchan_ref(c);
    mx_upchan_end(c);
    if (ev_now(c->base.env->loop) - c->ready_at >= STABLE_S)
        c->failures = 0;
    else
        backoff(c);
    mx_log_warn(c->ops->subsys, "up:%s %s; %s", name(c), how, c->ops->lost_then);
    /* what was written (MCP 2025-06-18, stdio) or POSTed may have run: never
     * sent twice */
    mx_upmsg_fail(c->cfg, MX_RPC_OUTCOME_UNKNOWN, "outcome-unknown", &f,
                  "%s before it answered; the request was not repeated", how);
    mx_upmsg_fail_all(&c->q, true, &f);
    if (c->state == MX_UPCHAN_IDLE && first_waiting(c))
        mx_upchan_kick(c, 0.0);
    mx_upchan_unref(c);
}

static void rpc_timeout(struct mx_upmsg_rpc *r, void *owner)
{
    struct mx_upchan *c = owner;
    struct mx_upfail f;
    if (r->sent && r->key == c->base.key && c->state == MX_UPCHAN_READY) {
        /* MCP 2024-11-05 and 2025-06-18, Cancellation: tell it to stop
         * working on it */
        json_t *note = mx_upmsg_cancelled(r->id, "timed out in mcplex");
        c->ops->write(c, MX_UPCHAN_NOTE, note);
        json_decref(note);
    }
    if (c->ops->timed_out == NULL || !c->ops->timed_out(c, r, &f))
        mx_upmsg_fail(c->cfg, MX_RPC_UPSTREAM_TIMEOUT, "timed-out", &f, "timed out after %ld s%s",
                      (r->timeout_ms + 999) / 1000,
                      r->sent ? "" : " before the request could be sent");
    mx_upmsg_finish(r, NULL, &f);
}

/* ---- reading ---- */

static void reply_ping(struct mx_upchan *c, json_t *msg)
{
    json_t *a = mx_upmsg_ping_answer(msg);
    c->ops->write(c, MX_UPCHAN_NOTE, a);
    json_decref(a);
}

static void handle_msg(struct mx_upchan *c, json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    switch (mx_rpc_classify(msg)) {
    case MX_RPC_RESPONSE: {
        json_t *id = json_object_get(msg, "id");
        if (is_init_answer(c, id)) {
            init_answered(c, msg);
            return;
        }
        if (is_discover_answer(c, id)) {
            discover_answered(c, msg);
            return;
        }
        struct mx_upmsg_rpc *r = c->state == MX_UPCHAN_READY ? mx_upmsg_by_id(&c->q, id) : NULL;
        if (r && !input_required(c, r, msg))
            mx_upmsg_finish(r, msg, NULL);
        else
            mx_log_debug(c->ops->subsys, "up:%s answered a request nobody waits for; dropped",
                         name(c));
        return;
    }
    case MX_RPC_NOTIFICATION:
    case MX_RPC_REQUEST:
        if (c->state != MX_UPCHAN_READY) {
            /* a ping is answered once there is somewhere to write
             * (HTTP+SSE: the endpoint is known) */
            if (strcmp(method, "ping") == 0 && c->state == MX_UPCHAN_INIT)
                reply_ping(c, msg);
            else
                mx_log_debug(c->ops->subsys, "up:%s %s before initialized; dropped", name(c),
                             method);
            return;
        }
        /* neither stdio nor the HTTP+SSE stream says which request a
         * server's request belongs to: mx_upmsg_route guesses only when one
         * request can have asked */
        if (mx_upmsg_route(&c->q, msg, c->base.key))
            return;
        break;
    case MX_RPC_INVALID:
        c->ops->junk(c, MX_UPCHAN_JUNK_JSON);
        return;
    }
    if (c->base.cbs.on_message)
        c->base.cbs.on_message(&c->base, c->base.key, msg, c->base.data);
}

/* The channel |conn| ended, was replaced, or the session closed. */
static bool gone(const struct mx_upchan *c, uint64_t conn)
{
    return c->state == MX_UPCHAN_IDLE || c->state == MX_UPCHAN_CLOSED || c->conn != conn;
}

int mx_upchan_input(struct mx_upchan *c, struct mx_str text)
{
    json_t *msg = mx_rpc_parse(text);
    if (msg == NULL || (!json_is_object(msg) && !json_is_array(msg))) {
        json_decref(msg);
        c->ops->junk(c, MX_UPCHAN_JUNK_TEXT);
        return 0;
    }
    mx_upsess_trace(&c->base, "s2c", text);
    uint64_t conn = c->conn;
    mx_upchan_ref(c);
    if (json_is_object(msg)) {
        handle_msg(c, msg);
    } else {
        /* a JSON-RPC batch (MCP 2025-03-26) */
        size_t i;
        json_t *v;
        json_array_foreach(msg, i, v)
        {
            if (gone(c, conn))
                break;
            if (json_is_object(v))
                handle_msg(c, v);
            else
                c->ops->junk(c, MX_UPCHAN_JUNK_ITEM);
        }
    }
    json_decref(msg);
    int rc = c->state == MX_UPCHAN_READY && c->q.paused_cnt > 0 ? MX_EAGAIN : 0;
    mx_upchan_unref(c);
    return rc;
}

/* ---- the ops (upsess_int.h) ---- */

void mx_upchan_init(struct mx_upchan *c, const struct mx_upchan_ops *ops, struct mx_upsess_env *env,
                    const json_t *caps, const char *trace_session, const struct mx_upsess_cbs *cbs,
                    void *data)
{
    mx_upsess_base_init(&c->base, ops->transport, env, caps, trace_session, cbs, data);
    c->ops = ops;
    c->cfg = env->up->cfg;
    c->refs = 1;
    c->state = MX_UPCHAN_IDLE;
    c->init_ids = json_array();
    c->discover_ids = json_array();
    ev_init(&c->kick, kick_cb);
    ev_init(&c->init_wait, init_wait_cb);
    mx_upmsg_q_init(&c->q, env->loop, ops->transport, c->cfg, &q_ops, c);
}

void mx_upchan_close(struct mx_upsess *s)
{
    struct mx_upchan *c = CHAN(s);
    if (c->state == MX_UPCHAN_CLOSED)
        return;
    mx_upchan_set_state(c, MX_UPCHAN_CLOSED);
    ev_timer_stop(c->base.env->loop, &c->kick);
    drop_channel(c);
    if (c->ops->close)
        c->ops->close(c);
    mx_upmsg_kill_all(&c->q);
    mx_upchan_unref(c);
}

int mx_upchan_request(struct mx_upsess *s, json_t *msg, long timeout_ms,
                      const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out)
{
    struct mx_upchan *c = CHAN(s);
    if (c->state == MX_UPCHAN_CLOSED || c->no_channel)
        return MX_EINVAL;
    mx_upmsg_add(&c->q, msg, timeout_ms, cbs, data, out);
    /* from the loop: no callback may run from inside this call */
    mx_upchan_kick(c, 0.0);
    return 0;
}

void mx_upchan_send(struct mx_upsess *s, json_t *msg)
{
    struct mx_upchan *c = CHAN(s);
    if (c->ops->write(c, MX_UPCHAN_SEND, msg) != 0)
        return; /* the transport said why */
    mx_upmsg_sent(&c->q, msg, c->base.key);
}
