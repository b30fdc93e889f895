/* SPDX-License-Identifier: MIT */
/*
 * What the upstream transports share beyond upsess_int.h (see upmsg.h):
 * the messages mcplex writes itself, and the request table of the stdio
 * and HTTP+SSE sessions.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "err.h"
#include "log.h"
#include "revision.h"
#include "rpc.h"
#include "upmsg.h"

json_t *mx_upmsg_initialize(const json_t *caps, json_t *id)
{
    return json_pack("{s:s, s:O, s:s, s:{s:s, s:O, s:{s:s, s:s}}}", "jsonrpc", "2.0", "id", id,
                     "method", "initialize", "params", "protocolVersion",
                     mx_rev_session_versions[0], "capabilities", caps, "clientInfo", "name",
                     "mcplex", "version", MX_VERSION);
}

json_t *mx_upmsg_initialized(void)
{
    return json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
}

json_t *mx_upmsg_ping_answer(const json_t *req)
{
    return json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", json_object_get(req, "id"),
                     "result");
}

json_t *mx_upmsg_cancelled(const json_t *id, const char *reason)
{
    return json_pack("{s:s, s:s, s:{s:O, s:s}}", "jsonrpc", "2.0", "method",
                     "notifications/cancelled", "params", "requestId", id, "reason", reason);
}

bool mx_upmsg_init_ok(const struct mx_server_cfg *cfg, const json_t *msg, struct mx_upfail *f)
{
    json_t *result = json_object_get(msg, "result");
    const char *v = json_string_value(json_object_get(result, "protocolVersion"));
    if (json_is_object(result) && v != NULL && mx_rev_session_version_known(v))
        return true;
    const char *m = json_string_value(json_object_get(json_object_get(msg, "error"), "message"));
    if (!json_is_object(result))
        mx_upmsg_fail(cfg, MX_RPC_UPSTREAM_HTTP, "protocol-error", f,
                      "broke the protocol: initialize failed: %.150s", m ? m : "no result");
    else
        mx_upmsg_fail(cfg, MX_RPC_UPSTREAM_HTTP, "protocol-error", f,
                      "broke the protocol: initialize answered protocol version %.40s, which "
                      "mcplex does not speak",
                      v ? v : "(none)");
    return false;
}

bool mx_upmsg_may_ask(const char *method)
{
    static const char *const quiet[] = {"initialize",
                                        "ping",
                                        "logging/setLevel",
                                        "completion/complete",
                                        "resources/subscribe",
                                        "resources/unsubscribe",
                                        NULL};
    size_t n = method ? strlen(method) : 0;
    if (n == 0 || (n >= 5 && strcmp(method + n - 5, "/list") == 0))
        return false;
    for (size_t i = 0; quiet[i]; i++) {
        if (strcmp(method, quiet[i]) == 0)
            return false;
    }
    return true;
}

void mx_upmsg_fail(const struct mx_server_cfg *cfg, int code, const char *reason,
                   struct mx_upfail *f, const char *fmt, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    memset(f, 0, sizeof(*f));
    f->code = code;
    f->reason = reason;
    snprintf(f->message, sizeof(f->message), "upstream '%s' %s", cfg->name, what);
}

/* ---- the request table ---- */

#define CANCEL_GRACE_S 2.0 /* a cancelled request's answer may still come this long */

static struct mx_upmsg_rpc *RPC(struct mx_uprpc *pub)
{
    return mx_container_of(pub, struct mx_upmsg_rpc, base);
}

void mx_upmsg_q_init(struct mx_upmsg_q *q, struct ev_loop *loop,
                     const struct mx_upsess_ops *transport, const struct mx_server_cfg *cfg,
                     const struct mx_upmsg_q_ops *ops, void *owner)
{
    memset(q, 0, sizeof(*q));
    q->loop = loop;
    q->transport = transport;
    q->cfg = cfg;
    q->ops = ops;
    q->owner = owner;
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_upmsg_rpc *r = mx_container_of(w, struct mx_upmsg_rpc, timer);
    struct mx_upfail f;
    (void)loop;
    (void)revents;
    if (r->dead)
        return;
    if (r->cancelled) {
        mx_upmsg_fail(r->q->cfg, MX_RPC_OUTCOME_UNKNOWN, "outcome-unknown", &f,
                      "did not answer a request that was cancelled");
        mx_upmsg_finish(r, NULL, &f);
        return;
    }
    r->q->ops->timeout(r, r->q->owner);
}

void mx_upmsg_add(struct mx_upmsg_q *q, json_t *msg, long timeout_ms,
                  const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out)
{
    struct mx_upmsg_rpc *r = mx_xcalloc(1, sizeof(*r));
    r->base.ops = q->transport;
    r->q = q;
    r->refs = 1;
    if (msg) {
        r->msg = json_incref(msg);
        r->id = json_object_get(msg, "id");
        r->method = json_string_value(json_object_get(msg, "method"));
        r->token = json_object_get(json_object_get(json_object_get(msg, "params"), "_meta"),
                                   "progressToken");
    }
    r->timeout_ms = timeout_ms;
    r->seq = ++q->seq;
    r->cbs = *cbs;
    r->data = data;
    ev_init(&r->timer, timer_cb);
    if (timeout_ms > 0) {
        ev_timer_set(&r->timer, (double)timeout_ms / 1000.0, 0.0);
        ev_timer_start(q->loop, &r->timer);
    }
    /* at the tail: waiting requests go out in the order they came */
    r->prev = q->tail;
    if (q->tail)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
    mx_upsess_live_inc();
    *out = &r->base;
}

void mx_upmsg_ref(struct mx_upmsg_rpc *r)
{
    r->refs++;
}

void mx_upmsg_unref(struct mx_upmsg_rpc *r)
{
    MX_ASSERT(r->refs > 0);
    if (--r->refs > 0)
        return;
    json_decref(r->msg);
    mx_uprpc_base_clear(&r->base);
    free(r);
    mx_upsess_live_dec();
}

void mx_upmsg_kill(struct mx_upmsg_rpc *r)
{
    struct mx_upmsg_q *q = r->q;
    if (r->dead)
        return;
    r->dead = true;
    ev_timer_stop(q->loop, &r->timer);
    if (q->ops->forget)
        q->ops->forget(r, q->owner);
    if (r->prev)
        r->prev->next = r->next;
    else
        q->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        q->tail = r->prev;
    r->prev = r->next = NULL;
    if (r->paused) {
        r->paused = false;
        if (--q->paused_cnt == 0)
            q->ops->resume(q->owner);
    }
    mx_upmsg_unref(r);
}

void mx_upmsg_finish(struct mx_upmsg_rpc *r, json_t *resp, const struct mx_upfail *fail)
{
    struct mx_upmsg_q *q = r->q;
    void *owner = q->owner;
    const struct mx_upmsg_q_ops *ops = q->ops;
    if (r->dead)
        return;
    mx_upmsg_ref(r);
    ops->hold(owner);
    mx_upmsg_kill(r);
    r->cbs.on_done(&r->base, resp, fail, r->data);
    ops->release(owner);
    mx_upmsg_unref(r);
}

void mx_upmsg_kill_all(struct mx_upmsg_q *q)
{
    while (q->head)
        mx_upmsg_kill(q->head);
}

struct mx_upmsg_rpc *mx_upmsg_first(struct mx_upmsg_q *q, bool sent, uint64_t max_seq)
{
    for (struct mx_upmsg_rpc *r = q->head; r; r = r->next) {
        if (r->sent == sent && r->seq <= max_seq)
            return r;
    }
    return NULL;
}

void mx_upmsg_fail_all(struct mx_upmsg_q *q, bool sent, const struct mx_upfail *f)
{
    struct mx_upmsg_rpc *r;
    uint64_t max_seq = q->seq;
    void *owner = q->owner;
    const struct mx_upmsg_q_ops *ops = q->ops;
    ops->hold(owner);
    /* a session closed by a callback has emptied its table */
    while ((r = mx_upmsg_first(q, sent, max_seq)) != NULL)
        mx_upmsg_finish(r, NULL, f);
    ops->release(owner);
}

void mx_upmsg_unpause_all(struct mx_upmsg_q *q)
{
    q->paused_cnt = 0;
    for (struct mx_upmsg_rpc *r = q->head; r; r = r->next)
        r->paused = false;
}

struct mx_upmsg_rpc *mx_upmsg_by_id(struct mx_upmsg_q *q, const json_t *id)
{
    for (struct mx_upmsg_rpc *r = q->head; r; r = r->next) {
        if (r->sent && r->id && json_equal(r->id, id))
            return r;
    }
    return NULL;
}

static struct mx_upmsg_rpc *by_token(struct mx_upmsg_q *q, const json_t *token)
{
    for (struct mx_upmsg_rpc *r = q->head; r; r = r->next) {
        if (r->sent && r->token && json_equal(r->token, token))
            return r;
    }
    return NULL;
}

static struct mx_upmsg_rpc *asking(struct mx_upmsg_q *q)
{
    struct mx_upmsg_rpc *found = NULL;
    for (struct mx_upmsg_rpc *r = q->head; r; r = r->next) {
        if (!r->sent || !mx_upmsg_may_ask(r->method))
            continue;
        if (found)
            return NULL;
        found = r;
    }
    return found;
}

bool mx_upmsg_route(struct mx_upmsg_q *q, json_t *msg, uint64_t key)
{
    struct mx_upmsg_rpc *r = NULL;
    const char *method = json_string_value(json_object_get(msg, "method"));
    switch (mx_rpc_classify(msg)) {
    case MX_RPC_NOTIFICATION:
        if (method && strcmp(method, "notifications/progress") == 0) {
            json_t *token = json_object_get(json_object_get(msg, "params"), "progressToken");
            r = token ? by_token(q, token) : NULL;
        }
        break;
    case MX_RPC_REQUEST:
        r = asking(q);
        break;
    case MX_RPC_RESPONSE:
    case MX_RPC_INVALID:
        break;
    }
    if (r == NULL || r->cbs.on_message == NULL)
        return false;
    mx_upmsg_ref(r);
    int rc = r->cbs.on_message(&r->base, key, msg, r->data);
    if (rc == MX_EAGAIN && !r->dead && !r->paused) {
        r->paused = true;
        q->paused_cnt++;
    }
    mx_upmsg_unref(r);
    return true;
}

void mx_upmsg_cancel(struct mx_uprpc *pub)
{
    mx_upmsg_kill(RPC(pub));
}

void mx_upmsg_resume(struct mx_uprpc *pub)
{
    struct mx_upmsg_rpc *r = RPC(pub);
    if (r->dead || !r->paused)
        return;
    r->paused = false;
    if (--r->q->paused_cnt == 0)
        r->q->ops->resume(r->q->owner);
}

void mx_upmsg_sent(struct mx_upmsg_q *q, const json_t *msg, uint64_t key)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (method == NULL || strcmp(method, "notifications/cancelled") != 0)
        return;
    json_t *rid = json_object_get(json_object_get(msg, "params"), "requestId");
    struct mx_upmsg_rpc *r = rid ? mx_upmsg_by_id(q, rid) : NULL;
    if (r && !r->cancelled && r->key == key) {
        r->cancelled = true;
        ev_timer_stop(q->loop, &r->timer);
        ev_timer_set(&r->timer, CANCEL_GRACE_S, 0.0);
        ev_timer_start(q->loop, &r->timer);
    }
}
