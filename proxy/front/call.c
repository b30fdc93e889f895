/* SPDX-License-Identifier: MIT */
/*
 * The call core (call.h): one client request and the upstream request made
 * for it, with one way to answer, stream, drain, cancel and account for it,
 * whichever view it belongs to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "call.h"
#include "err.h"
#include "idmap.h"
#include "log.h"
#include "rpc.h"
#include "sse_write.h"

#define SUBSYS         "mcp"
#define SSE_OUT_CAP    (16u * 1024 * 1024)
#define WAIT_TICK_S    2.0
#define NO_SESSION_KEY (UINT64_C(1) << 63) /* session keys of calls without a session */

struct mx_callhub {
    struct ev_loop *loop;
    struct mx_front_hooks hooks;
    struct mx_call_upops ops;
    struct mx_callhub_cbs cbs;
    struct mx_idmap *ids;
    struct mx_call *calls;
    size_t inflight;
    uint64_t keys;
    double poll_s; /* mx_callhub_set_poll; 0: off */
    bool stopping;
};

static const char *const levels[] = {"debug", "info",     "notice", "warning",
                                     "error", "critical", "alert",  "emergency"};

static size_t live_cnt;

const struct mx_call_upops mx_call_upsess = {
    mx_upsess_new,         mx_upsess_close,    mx_upsess_key,       mx_upsess_is_ready,
    mx_upsess_init_result, mx_upsess_request,  mx_uprpc_cancel,     mx_uprpc_resume,
    mx_uprpc_input_key,    mx_upsess_send,     mx_upsess_env_clear, mx_uprpc_want_raw,
    mx_uprpc_raw_result,   mx_uprpc_give_text, mx_upsess_keep,      mx_upsess_session_id,
};

size_t mx_call_live_cnt(void)
{
    return live_cnt;
}

double mx_call_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int mx_call_log_level(const char *name)
{
    for (int i = 0; name && i < (int)(sizeof(levels) / sizeof(levels[0])); i++) {
        if (strcmp(name, levels[i]) == 0)
            return i;
    }
    return -1;
}

const char *mx_call_log_level_name(int level)
{
    return level >= 0 && level < (int)(sizeof(levels) / sizeof(levels[0])) ? levels[level] : "info";
}

/* ---- the hub ---- */

struct mx_callhub *mx_callhub_new(struct ev_loop *loop, const struct mx_front_hooks *hooks,
                                  const struct mx_call_upops *ops, const struct mx_callhub_cbs *cbs)
{
    struct mx_callhub *h = mx_xcalloc(1, sizeof(*h));
    h->loop = loop;
    if (hooks)
        h->hooks = *hooks;
    h->ops = ops ? *ops : mx_call_upsess;
    if (cbs)
        h->cbs = *cbs;
    h->ids = mx_idmap_new();
    return h;
}

void mx_callhub_free(struct mx_callhub *h)
{
    if (h == NULL)
        return;
    MX_ASSERT(h->calls == NULL);
    mx_idmap_free(h->ids);
    free(h);
}

void mx_callhub_stopping(struct mx_callhub *h)
{
    h->stopping = true;
}

struct mx_idmap *mx_callhub_ids(struct mx_callhub *h)
{
    return h->ids;
}

const struct mx_call_upops *mx_callhub_ops(const struct mx_callhub *h)
{
    return &h->ops;
}

const struct mx_front_hooks *mx_callhub_hooks(const struct mx_callhub *h)
{
    return &h->hooks;
}

size_t mx_callhub_inflight(const struct mx_callhub *h)
{
    return h ? h->inflight : 0;
}

struct mx_call *mx_callhub_first(struct mx_callhub *h)
{
    return h->calls;
}

uint64_t mx_callhub_key(struct mx_callhub *h)
{
    return NO_SESSION_KEY | ++h->keys;
}

void mx_callhub_trace(struct mx_callhub *h, const char *dir, const char *session, struct mx_str msg)
{
    if (h->hooks.trace)
        h->hooks.trace(dir, NULL, session, msg, h->hooks.data);
}

static void dropped(struct mx_callhub *h, size_t up_idx, const char *method, const char *why)
{
    if (h->cbs.dropped)
        h->cbs.dropped(up_idx, method, why, h->cbs.data);
}

int mx_callhub_progress(struct mx_callhub *h, size_t up_idx, uint64_t via_key, json_t *msg)
{
    json_t *params = json_object_get(msg, "params");
    const struct mx_idmap_call *e;
    int rc =
        mx_idmap_call_from(h->ids, up_idx, via_key, json_object_get(params, "progressToken"), &e);
    if (rc) {
        dropped(h, up_idx, "notifications/progress",
                rc == MX_EPERM ? "names a call of another upstream session"
                               : "names no call in flight");
        return rc;
    }
    /* the token of the client request the call answers now (a Multi
     * Round-Trip retry brings its own) */
    struct mx_call *c = e->data;
    if (c->token == NULL)
        return 0;
    json_t *out = json_deep_copy(msg);
    json_object_set(json_object_get(out, "params"), "progressToken", c->token);
    mx_call_send(c, out);
    json_decref(out);
    return 0;
}

/* ---- life ---- */

static void on_drain(struct mx_req *req, void *data);
static void on_abort(struct mx_req *req, void *data);
static void wait_tick_cb(struct ev_loop *loop, ev_timer *w, int revents);
static void grace_cb(struct ev_loop *loop, ev_timer *w, int revents);
static void poll_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* Whether a client still takes the answer: its request, or its
 * resumable stream (attached or not). */
static bool answering(const struct mx_call *c)
{
    return c->req != NULL || c->rs != NULL;
}

static void copy_str(char *dst, size_t cap, struct mx_str s)
{
    snprintf(dst, cap, "%.*s", (int)(s.len < cap ? s.len : cap - 1), s.p);
}

struct mx_call *mx_call_new(struct mx_callhub *h, struct mx_req *req)
{
    struct mx_call *c = mx_xcalloc(1, sizeof(*c));
    live_cnt++;
    c->hub = h;
    c->refs = 2; /* the hub's and the caller's */
    c->req = req;
    c->req_id = mx_req_id(req);
    c->t_recv = mx_call_now();
    copy_str(c->http_method, sizeof(c->http_method), mx_req_method(req));
    copy_str(c->path, sizeof(c->path), mx_req_path(req));
    ev_init(&c->wait_tick, wait_tick_cb);
    ev_init(&c->grace, grace_cb);
    ev_init(&c->poll, poll_cb);
    c->next = h->calls;
    if (h->calls)
        h->calls->prev = c;
    h->calls = c;
    mx_req_set_handler(req, on_drain, on_abort, c);
    return c;
}

void mx_call_set_view(struct mx_call *c, const struct mx_call_view *view, void *data)
{
    c->view = view;
    c->data = data;
}

void mx_call_hold(struct mx_call *c)
{
    c->refs++;
}

void mx_call_release(struct mx_call *c)
{
    if (--c->refs > 0)
        return;
    if (c->view && c->view->clear)
        c->view->clear(c);
    json_decref(c->client_id);
    json_decref(c->token);
    free(c);
    live_cnt--;
}

void mx_call_note(struct mx_call *c, const char *rpc_method, const json_t *id, const json_t *meta)
{
    snprintf(c->rpc_method, sizeof(c->rpc_method), "%s", rpc_method ? rpc_method : "");
    json_decref(c->client_id);
    c->client_id = id ? json_deep_copy(id) : NULL;
    json_t *tok = json_object_get(meta, "progressToken");
    json_decref(c->token);
    c->token = json_is_string(tok) || json_is_integer(tok) ? json_incref(tok) : NULL;
}

void mx_call_note_target(struct mx_call *c, const json_t *params, bool modern)
{
    const char *m = c->rpc_method;
    const char *name = json_string_value(json_object_get(params, "name"));
    c->modern = modern;
    c->target[0] = '\0';
    if (name && (strcmp(m, "tools/call") == 0 || strcmp(m, "prompts/get") == 0))
        snprintf(c->target, sizeof(c->target), "%s", name);
}

void mx_call_account(struct mx_call *c, struct mx_upstream *up)
{
    c->up = up;
}

void mx_call_note_fail(struct mx_call *c, const struct mx_upfail *f)
{
    c->fail = *f;
    c->failed = true;
}

static void report(struct mx_call *c)
{
    const struct mx_front_hooks *hk = &c->hub->hooks;
    if (hk->done == NULL)
        return;
    struct mx_call_report r = {c->http_method,
                               c->path,
                               c->rpc_method[0] ? c->rpc_method : NULL,
                               c->up,
                               c->status,
                               c->cancelled,
                               c->failed ? &c->fail : NULL,
                               c->t_recv,
                               c->t_up_start,
                               c->t_up_done,
                               c->req_id,
                               c->trace_session,
                               c->target[0] ? c->target : NULL,
                               c->modern};
    hk->done(&r, hk->data);
}

static void call_end(struct mx_call *c);

/* The answer's resumable stream has its last event. */
static void end_stream(struct mx_call *c)
{
    if (c->rs == NULL)
        return;
    ev_timer_stop(c->hub->loop, &c->grace);
    ev_timer_stop(c->hub->loop, &c->poll);
    mx_rstream_set_producer(c->rs, NULL, NULL);
    mx_rstream_end(c->rs);
    c->rs = NULL;
}

/*
 * The client request is over (answered with |status|, or gone): the
 * report, then the call ends unless its upstream request goes on or an
 * answer was kept for a later request.
 */
static void finish(struct mx_call *c, int status, bool with_report)
{
    c->req = NULL;
    c->status = status;
    if (with_report)
        report(c);
    c->cancelled = false;
    c->t_recv = 0;
    if (c->rpc == NULL && !c->kept && c->on_gone == NULL)
        call_end(c);
}

/* The client request, taken off the call (its handler cleared). */
static struct mx_req *take_req(struct mx_call *c)
{
    struct mx_req *req = c->req;
    c->req = NULL;
    if (req)
        mx_req_set_handler(req, NULL, NULL, NULL);
    return req;
}

static void call_end(struct mx_call *c)
{
    struct mx_callhub *h = c->hub;
    if (c->ended)
        return;
    c->ended = true;
    ev_timer_stop(h->loop, &c->wait_tick);
    if (c->rs) {
        /* its stream ends without an answer */
        end_stream(c);
        c->status = 200;
        report(c);
    } else if (c->req) {
        /* nobody answered it: the client is told, not left waiting */
        struct mx_req *req = take_req(c);
        if (c->sse) {
            mx_req_end(req);
        } else {
            json_t *e = mx_rpc_error_new(c->client_id, MX_RPC_INTERNAL_ERROR,
                                         "Internal error: the request ended unanswered", NULL);
            char *text = mx_rpc_dump(e);
            json_decref(e);
            mx_req_respond(req, 500, NULL, 0, "application/json", text, strlen(text));
            free(text);
        }
        c->status = c->sse ? 200 : 500;
        report(c);
    }
    if (c->rpc) {
        h->ops.cancel(c->rpc);
        c->rpc = NULL;
    }
    if (c->mapped) {
        mx_idmap_call_remove(h->ids, c->up_id);
        c->mapped = false;
    }
    if (c->counted) {
        c->counted = false;
        h->inflight--;
    }
    if (c->held) {
        mx_upstream_release(c->held);
        c->held = NULL;
    }
    if (c->prev)
        c->prev->next = c->next;
    else if (h->calls == c)
        h->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    if (c->view && c->view->ended)
        c->view->ended(c);
    mx_call_release(c); /* the hub's */
}

void mx_call_end(struct mx_call *c)
{
    call_end(c);
}

/* The client went away (abort, or a write found it gone). */
static void client_gone(struct mx_call *c)
{
    mx_call_hold(c);
    c->cancelled = true;
    if (c->on_gone) {
        mx_call_gone_cb cb = c->on_gone;
        c->on_gone = NULL;
        cb(c, c->gone_data);
    }
    int status = c->sse ? 200 : 0;
    bool upstream = c->rpc != NULL;
    finish(c, status, true);
    if (upstream && !c->ended) {
        const char *why =
            c->view && c->view->gone_reason ? c->view->gone_reason : "the client went away";
        mx_log_debug(SUBSYS, "up:%s client of call %llu went away; cancelling",
                     c->up ? c->up->cfg->name : "-", (unsigned long long)c->up_id);
        mx_call_cancel(c, why);
    }
    mx_call_release(c);
}

static void on_abort(struct mx_req *req, void *data)
{
    struct mx_call *c = data;
    (void)req;
    c->req = NULL;
    client_gone(c);
}

static void on_drain(struct mx_req *req, void *data)
{
    struct mx_call *c = data;
    (void)req;
    c->blocked = false;
    if (c->rpc)
        c->hub->ops.resume(c->rpc);
}

/* ---- answers ---- */

/* Answer with the JSON |text| (the request is attached). */
static void respond_text(struct mx_call *c, int status, const struct mx_hdr_out *hdrs, size_t n,
                         struct mx_str text)
{
    mx_callhub_trace(c->hub, "s2c", c->trace_session, text);
    struct mx_req *req = take_req(c);
    mx_call_hold(c);
    mx_req_respond(req, status, hdrs, n, "application/json", text.p, text.len);
    finish(c, status, true);
    mx_call_release(c);
}

void mx_call_json(struct mx_call *c, int status, json_t *body, const struct mx_hdr_out *hdrs,
                  size_t n)
{
    if (c->req == NULL) {
        json_decref(body);
        return;
    }
    char *text = mx_rpc_dump(body);
    json_decref(body);
    respond_text(c, status, hdrs, n, mx_str_cstr(text));
    free(text);
}

void mx_call_result(struct mx_call *c, json_t *result)
{
    json_t *r =
        json_pack("{s:s, s:O?, s:o}", "jsonrpc", "2.0", "id", c->client_id, "result", result);
    mx_call_json(c, 200, r, NULL, 0);
}

void mx_call_error(struct mx_call *c, int status, int code, const char *msg, json_t *data)
{
    mx_call_json(c, status, mx_rpc_error_new(c->client_id, code, msg, data), NULL, 0);
}

void mx_call_status(struct mx_call *c, int status)
{
    struct mx_req *req = take_req(c);
    if (req == NULL)
        return;
    mx_call_hold(c);
    mx_req_respond(req, status, NULL, 0, NULL, NULL, 0);
    finish(c, status, true);
    mx_call_release(c);
}

void mx_call_end_empty(struct mx_call *c)
{
    bool sse = c->sse;
    bool streamed = c->rs != NULL;
    struct mx_req *req = take_req(c);
    if (req == NULL && !streamed)
        return;
    mx_call_hold(c);
    end_stream(c);
    if (req && (sse || mx_sse_start(req) == 0))
        mx_req_end(req);
    c->cancelled = true;
    finish(c, 200, true);
    mx_call_release(c);
}

void mx_call_handoff(struct mx_call *c, int status)
{
    take_req(c);
    mx_call_hold(c);
    finish(c, status, status != 0);
    mx_call_release(c);
}

/* Send the JSON |text| (one line) as an event of the call's answer, which
 * becomes SSE. As mx_call_send. */
static int send_text(struct mx_call *c, struct mx_str text)
{
    if (c->ended || !answering(c))
        return MX_ECLOSED;
    if (!c->sse && mx_call_stream(c) != 0)
        return MX_ECLOSED;
    mx_callhub_trace(c->hub, "s2c", c->trace_session, text);
    int rc = c->rs ? mx_rstream_send(c->rs, text, SSE_OUT_CAP)
                   : mx_sse_write_event(c->req, text, SSE_OUT_CAP);
    if (rc == MX_ELIMIT) {
        mx_log_warn(SUBSYS, "a message over %u bytes for a client was dropped", SSE_OUT_CAP);
        rc = 0;
    } else if (rc == MX_EAGAIN) {
        c->blocked = true;
    } else if (rc) {
        c->req = NULL;
        client_gone(c);
        rc = MX_ECLOSED;
    }
    return rc;
}

/* The client left the resumable stream, drained it or came back. */
static void stream_event(struct mx_rstream *rs, void *data)
{
    struct mx_call *c = data;
    struct ev_loop *loop = c->hub->loop;
    if (!mx_rstream_attached(rs)) {
        ev_timer_stop(loop, &c->poll);
        /* MCP 2025-06-18, Streamable HTTP: a disconnect is not a
         * cancellation; the events wait in the stream for a resume */
        if (!ev_is_active(&c->grace)) {
            ev_timer_set(&c->grace, MX_CALL_RESUME_GRACE_S, 0.0);
            ev_timer_start(loop, &c->grace);
        }
    } else {
        ev_timer_stop(loop, &c->grace);
    }
    c->blocked = false;
    if (c->rpc)
        c->hub->ops.resume(c->rpc);
}

static void grace_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_call *c = mx_container_of(w, struct mx_call, grace);
    (void)loop;
    (void)revents;
    if (c->rs == NULL || mx_rstream_attached(c->rs))
        return;
    mx_log_debug(SUBSYS, "call %llu: its client did not resume the stream within %.0f s",
                 (unsigned long long)c->up_id, MX_CALL_RESUME_GRACE_S);
    client_gone(c);
}

/* MCP 2025-11-25, Streamable HTTP: "the server MAY close the connection"
 * after the priming event, and the client polls with GET and Last-Event-ID
 * (SEP-1699); a long call then holds no POST. */
static void poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_call *c = mx_container_of(w, struct mx_call, poll);
    (void)loop;
    (void)revents;
    if (c->rs == NULL || !mx_rstream_attached(c->rs))
        return;
    mx_log_debug(SUBSYS, "call %llu: still running after [listen] stream_poll; its POST ends",
                 (unsigned long long)c->up_id);
    mx_call_hold(c);
    mx_rstream_end_req(c->rs);
    stream_event(c->rs, c);
    mx_call_release(c);
}

void mx_callhub_set_poll(struct mx_callhub *h, int64_t poll_ms)
{
    h->poll_s = poll_ms > 0 ? (double)poll_ms / 1000.0 : 0.0;
}

int mx_call_stream(struct mx_call *c)
{
    if (c->ended || !answering(c))
        return MX_ECLOSED;
    if (c->sse)
        return 0;
    struct mx_rstream *rs = c->view && c->view->stream ? c->view->stream(c) : NULL;
    if (rs) {
        struct mx_req *req = take_req(c);
        c->rs = rs;
        c->sse = true;
        mx_rstream_set_producer(rs, stream_event, c);
        if (mx_rstream_attach(rs, req, false, false, 0) != 0) {
            end_stream(c); /* gone before it began: nothing to resume */
            client_gone(c);
            return MX_ECLOSED;
        }
        if (c->hub->poll_s > 0 && mx_rstream_primes(rs) && mx_rstream_attached(rs)) {
            ev_timer_set(&c->poll, c->hub->poll_s, 0.0);
            ev_timer_start(c->hub->loop, &c->poll);
        }
        return 0;
    }
    if (mx_sse_start(c->req) != 0) {
        c->req = NULL; /* gone: on_abort will not come */
        client_gone(c);
        return MX_ECLOSED;
    }
    c->sse = true;
    return 0;
}

int mx_call_send(struct mx_call *c, const json_t *msg)
{
    if (c->ended || !answering(c))
        return MX_ECLOSED;
    mx_call_hold(c);
    char *text = mx_rpc_dump(msg);
    int rc = send_text(c, mx_str_cstr(text));
    free(text);
    mx_call_release(c);
    return rc;
}

/* The final answer |text|: the last event of an SSE answer, else JSON
 * with |status|. */
static void reply_text(struct mx_call *c, struct mx_str text, int status)
{
    mx_call_hold(c);
    if (!c->sse) {
        respond_text(c, status, NULL, 0, text);
    } else if (c->rs) {
        if (send_text(c, text) != MX_ECLOSED && c->rs) {
            end_stream(c);
            finish(c, 200, true);
        }
    } else if (send_text(c, text) != MX_ECLOSED && c->req) {
        struct mx_req *req = take_req(c);
        mx_req_end(req);
        finish(c, 200, true);
    }
    mx_call_release(c);
}

void mx_call_reply(struct mx_call *c, json_t *payload, bool is_error, int status)
{
    if (!answering(c))
        return;
    json_t *r = json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id",
                          c->client_id ? c->client_id : json_null(), is_error ? "error" : "result",
                          payload);
    char *text = mx_rpc_dump(r);
    json_decref(r);
    reply_text(c, mx_str_cstr(text), status);
    free(text);
}

void mx_call_result_text(struct mx_call *c, struct mx_str raw)
{
    if (!answering(c))
        return;
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":", mid[] = ",\"result\":";
    char *id = c->client_id ? mx_rpc_dump(c->client_id) : NULL;
    struct mx_str ids = id ? mx_str_cstr(id) : MX_STR_LIT("null");
    size_t len = sizeof(head) - 1 + ids.len + sizeof(mid) - 1 + raw.len + 1;
    char *text = mx_xmalloc(len), *w = text;
    memcpy(w, head, sizeof(head) - 1);
    w += sizeof(head) - 1;
    memcpy(w, ids.p, ids.len);
    w += ids.len;
    memcpy(w, mid, sizeof(mid) - 1);
    w += sizeof(mid) - 1;
    memcpy(w, raw.p, raw.len);
    w[raw.len] = '}';
    free(id);
    reply_text(c, mx_str_make(text, len), 200);
    free(text);
}

/* ---- the upstream side ---- */

static void send_wait_progress(struct mx_call *c)
{
    char text[160];
    snprintf(text, sizeof(text), "waiting for sandbox '%s' to wake (%d s)",
             c->up ? c->up->cfg->name : "?", c->wait_n * 2);
    json_t *n = json_pack("{s:s, s:s, s:{s:O, s:i, s:s}}", "jsonrpc", "2.0", "method",
                          "notifications/progress", "params", "progressToken", c->token, "progress",
                          c->wait_n, "message", text);
    c->wait_n++;
    mx_call_send(c, n);
    json_decref(n);
}

static void wait_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_call *c = mx_container_of(w, struct mx_call, wait_tick);
    (void)revents;
    if (c->token == NULL || !answering(c) || c->orphan) {
        ev_timer_stop(loop, w);
        return;
    }
    mx_call_hold(c);
    send_wait_progress(c);
    mx_call_release(c);
}

/*
 * The upstream is waking (wake-on-use) and the client asked for progress:
 * say so every 2 s until the upstream answers, so the client sees why the
 * call takes longer (MCP 2025-06-18, Progress; DESIGN.md, Wake-on-use).
 */
static void rpc_wait(struct mx_uprpc *rpc, void *data)
{
    struct mx_call *c = data;
    (void)rpc;
    if (c->token == NULL || !answering(c) || c->orphan || ev_is_active(&c->wait_tick))
        return;
    mx_call_hold(c);
    send_wait_progress(c);
    if (!c->ended && !c->orphan && answering(c)) {
        ev_timer_set(&c->wait_tick, WAIT_TICK_S, WAIT_TICK_S);
        ev_timer_start(c->hub->loop, &c->wait_tick);
    }
    mx_call_release(c);
}

void mx_call_upstream_reply(struct mx_call *c, uint64_t key, const json_t *id, json_t *result,
                            int code, const char *msg)
{
    json_t *r;
    if (result)
        r = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
    else
        r = mx_rpc_error_new(id, code, msg, NULL);
    if (c->via && c->via->s)
        c->hub->ops.send(c->via->s, r, key);
    json_decref(r);
}

static bool is_broadcast(const char *method)
{
    return strstr(method, "list_changed") || strcmp(method, "notifications/resources/updated") == 0;
}

/* An upstream log message for the client: the logger names the upstream
 * where several share the endpoint. */
static void log_message(struct mx_call *c, json_t *msg)
{
    json_t *params = json_object_get(msg, "params");
    int level = mx_call_log_level(json_string_value(json_object_get(params, "level")));
    if (c->view == NULL || c->view->wants_log == NULL || !c->view->wants_log(c, level))
        return;
    json_t *out = json_deep_copy(msg);
    if (c->log_prefix && json_is_object(json_object_get(out, "params"))) {
        const char *logger = json_string_value(json_object_get(params, "logger"));
        char *name =
            logger ? mx_xasprintf("%s/%s", c->log_prefix, logger) : mx_xstrdup(c->log_prefix);
        json_object_set_new(json_object_get(out, "params"), "logger", json_string(name));
        free(name);
    }
    mx_call_send(c, out);
    json_decref(out);
}

static int rpc_message(struct mx_uprpc *rpc, uint64_t key, json_t *msg, void *data)
{
    struct mx_call *c = data;
    const struct mx_call_view *v = c->view;
    (void)rpc;
    ev_timer_stop(c->hub->loop, &c->wait_tick); /* it is awake */
    mx_call_hold(c);
    enum mx_rpc_kind kind = mx_rpc_classify(msg);
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *id = json_object_get(msg, "id");
    if (kind == MX_RPC_REQUEST) {
        /* MCP 2025-06-18, Ping: either side may ping; mcplex answers for itself */
        if (strcmp(method, "ping") == 0)
            mx_call_upstream_reply(c, key, id, json_object(), 0, NULL);
        else if (c->orphan || v == NULL || v->question == NULL)
            mx_call_upstream_reply(c, key, id, NULL, MX_RPC_INVALID_REQUEST,
                                   "the request this belongs to was cancelled");
        else
            v->question(c, key, msg);
    } else if (kind == MX_RPC_NOTIFICATION) {
        if (is_broadcast(method)) {
            if (v && v->broadcast)
                v->broadcast(c, key, msg);
        } else if (strcmp(method, "notifications/cancelled") == 0) {
            if (v && v->withdrawn)
                v->withdrawn(c, key, msg);
        } else if (c->orphan) {
            /* progress and logs of a call nobody waits for */
        } else if (strcmp(method, "notifications/progress") == 0) {
            /* only from the upstream session the call went over */
            mx_callhub_progress(c->hub, c->up_idx, c->via ? c->via->key : 0, msg);
        } else if (strcmp(method, "notifications/message") == 0) {
            log_message(c, msg);
        } else if (v && v->pass_other) {
            mx_call_send(c, msg);
        }
    }
    int rc = !c->ended && c->blocked ? MX_EAGAIN : 0;
    mx_call_release(c);
    return rc;
}

/* The upstream answered |resp| (its result as bytes in |raw| when
 * raw.p) or failed with |fail|. */
static void deliver(struct mx_call *c, json_t *resp, struct mx_str raw,
                    const struct mx_upfail *fail)
{
    const struct mx_call_view *v = c->view;
    ev_timer_stop(c->hub->loop, &c->wait_tick);
    c->t_up_done = mx_call_now();
    if (fail)
        mx_call_note_fail(c, fail);
    mx_call_hold(c);
    if (c->orphan) {
        call_end(c);
        mx_call_release(c);
        return;
    }
    if (raw.p && answering(c) && v && v->answer_raw && v->answer_raw(c)) {
        mx_call_result_text(c, raw);
        mx_call_release(c);
        return;
    }
    json_t *full = NULL;
    if (raw.p) {
        /* it goes the parsed way after all */
        json_t *result = json_loadb(raw.p, raw.len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        full = json_copy(resp);
        json_object_set_new(full, "result", result ? result : json_object());
        resp = full;
    }
    bool is_error = false;
    int status = 200;
    json_t *payload;
    if (v && v->answer) {
        payload = v->answer(c, resp, fail, &is_error, &status);
    } else if (resp) {
        is_error = json_object_get(resp, "error") != NULL;
        payload = json_incref(json_object_get(resp, is_error ? "error" : "result"));
        if (payload == NULL)
            payload = json_object();
    } else {
        is_error = true;
        payload = mx_upfail_error(c->up->cfg, fail);
    }
    if (answering(c)) {
        mx_call_reply(c, payload, is_error, status);
    } else if (v && v->keep && v->keep(c, payload, is_error)) {
        c->kept = true;
    } else {
        call_end(c);
    }
    json_decref(payload);
    json_decref(full);
    mx_call_release(c);
}

static void rpc_done(struct mx_uprpc *rpc, json_t *resp, const struct mx_upfail *fail, void *data)
{
    struct mx_call *c = data;
    const struct mx_call_upops *ops = &c->hub->ops;
    struct mx_str raw = resp && ops->raw_result ? ops->raw_result(rpc) : mx_str_make(NULL, 0);
    c->rpc = NULL;
    deliver(c, resp, raw, fail);
}

static const struct mx_uprpc_cbs rpc_cbs = {rpc_message, rpc_done, rpc_wait};

int mx_call_route(struct mx_call *c, struct mx_call_via *via, size_t up_idx, struct mx_upstream *up,
                  json_t *upmsg, const struct mx_call_text *text, uint64_t session_key,
                  long timeout_ms)
{
    struct mx_callhub *h = c->hub;
    const struct mx_idmap_call *e;
    mx_call_account(c, up);
    int rc =
        mx_idmap_call_add(h->ids, session_key, c->client_id, c->token, up_idx, via->key, c, &e);
    if (rc) {
        json_decref(upmsg);
        mx_call_error(c, 200, MX_RPC_INVALID_REQUEST,
                      rc == MX_EEXIST ? "a request with this id is already in flight"
                                      : "too many requests in flight",
                      NULL);
        return rc;
    }
    c->mapped = true;
    c->up_id = e->up_id;
    c->up_idx = up_idx;
    c->via = via;
    c->held = up;
    mx_upstream_hold(up);
    if (!c->counted) {
        c->counted = true;
        h->inflight++;
    }
    /* MCP checklist §8: the upstream sees mcplex's ids and tokens only */
    json_object_set_new(upmsg, "id", json_integer((json_int_t)c->up_id));
    json_t *params = json_object_get(upmsg, "params");
    bool token = c->token && json_is_object(json_object_get(params, "_meta"));
    if (token) {
        json_t *meta = mx_rpc_own(mx_rpc_own(upmsg, "params", false), "_meta", false);
        json_object_set_new(meta, "progressToken", json_integer((json_int_t)c->up_id));
    }
    if (c->t_up_start == 0)
        c->t_up_start = mx_call_now();
    rc = via->s ? h->ops.request(via->s, upmsg, timeout_ms, &rpc_cbs, c, &c->rpc) : MX_ECLOSED;
    json_decref(upmsg);
    if (rc == 0 && text && text->text.p && h->ops.give_text) {
        struct mx_rpc_edits ed = {c->up_id, token, text->name};
        size_t len;
        char *bytes = mx_rpc_splice(text->text, &ed, &len);
        if (bytes)
            h->ops.give_text(c->rpc, bytes, len);
    }
    if (rc) {
        struct mx_upfail fail;
        c->rpc = NULL;
        mx_upfail_proto(up->cfg, "its session is closed", &fail);
        deliver(c, NULL, mx_str_make(NULL, 0), &fail);
    } else if (c->view && c->view->answer_raw && h->ops.want_raw) {
        h->ops.want_raw(c->rpc);
    }
    return rc;
}

/* MCP 2025-06-18, Cancellation: tell the upstream it may stop. */
static void cancel_note(struct mx_call *c, const char *reason)
{
    if (c->rpc == NULL || c->hub->stopping || c->via == NULL || c->via->s == NULL)
        return;
    json_t *note =
        json_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method", "notifications/cancelled",
                  "params", "requestId", (json_int_t)c->up_id, "reason", reason);
    c->hub->ops.send(c->via->s, note, 0);
    json_decref(note);
}

void mx_call_cancel(struct mx_call *c, const char *reason)
{
    struct mx_callhub *h = c->hub;
    if (c->orphan || c->ended)
        return;
    mx_call_hold(c);
    c->orphan = true;
    ev_timer_stop(h->loop, &c->wait_tick);
    if (c->view && c->view->orphaned)
        c->view->orphaned(c, reason);
    if (c->mapped) {
        mx_idmap_call_remove(h->ids, c->up_id); /* its progress goes nowhere now */
        c->mapped = false;
    }
    c->kept = false;
    if (answering(c)) {
        mx_call_end_empty(c);
    }
    if (!c->ended) {
        if (c->rpc == NULL) {
            call_end(c);
        } else {
            cancel_note(c, reason);
            c->blocked = false;
            h->ops.resume(c->rpc); /* nobody will drain it: read it to its end */
        }
    }
    mx_call_release(c);
}

void mx_call_close(struct mx_call *c, const char *reason, int status, int code, const char *msg)
{
    if (c->ended)
        return;
    mx_call_hold(c);
    if (!c->orphan)
        cancel_note(c, reason);
    c->kept = false;
    if (c->rs) {
        c->cancelled = true;
        end_stream(c);
        finish(c, 200, true);
    } else if (c->req) {
        c->cancelled = true;
        if (c->sse) {
            struct mx_req *req = take_req(c);
            mx_req_end(req);
            finish(c, 200, true);
        } else {
            mx_call_error(c, status, code, msg, NULL);
        }
    }
    call_end(c);
    mx_call_release(c);
}

void mx_call_detach(struct mx_call *c)
{
    if (c->counted) {
        c->counted = false;
        c->hub->inflight--;
    }
}

void mx_call_adopt(struct mx_call *c, struct mx_call *from)
{
    MX_ASSERT(c->req == NULL && from->req != NULL);
    struct mx_req *req = take_req(from);
    c->req = req;
    mx_req_set_handler(req, on_drain, on_abort, c);
    json_decref(c->client_id);
    json_decref(c->token);
    c->client_id = from->client_id;
    c->token = from->token;
    from->client_id = NULL;
    from->token = NULL;
    c->t_recv = from->t_recv;
    c->req_id = from->req_id;
    memcpy(c->http_method, from->http_method, sizeof(c->http_method));
    memcpy(c->path, from->path, sizeof(c->path));
    memcpy(c->rpc_method, from->rpc_method, sizeof(c->rpc_method));
    c->sse = false;
    c->blocked = false;
    c->cancelled = false;
    c->status = 0;
    if (!c->counted) {
        c->counted = true;
        c->hub->inflight++;
    }
    mx_call_hold(from);
    finish(from, 0, false);
    mx_call_release(from);
}

void mx_call_wait(struct mx_call *c, mx_call_gone_cb gone, void *data)
{
    c->on_gone = gone;
    c->gone_data = data;
    if (c->t_up_start == 0)
        c->t_up_start = mx_call_now();
}

void mx_call_unwait(struct mx_call *c)
{
    c->on_gone = NULL;
    c->gone_data = NULL;
    c->t_up_done = mx_call_now();
}
