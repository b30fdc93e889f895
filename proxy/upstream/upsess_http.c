/* SPDX-License-Identifier: MIT */
/*
 * The Streamable HTTP transport of upstream sessions (MCP 2025-03-26 to
 * 2025-11-25), the row of `transport = "streamable-http"` (mx_upsess_http_ops):
 * a session is opened lazily by the first request (initialize, then
 * notifications/initialized), its Mcp-Session-Id and protocol version go
 * on every later request, its GET stream is opened for the upstream's own
 * notifications and requests, and it is re-created once, invisibly to the
 * caller, when the upstream has forgotten it (404, or a 400 whose error
 * says the session is unknown or not initialized, as server-everything
 * answers). Answers may come as JSON or SSE; SSE answers stream message by
 * message with backpressure, and a request's stream that ends before its
 * answer is resumed with Last-Event-ID (2025-11-25). At close, a session is
 * ended upstream with DELETE. An upstream that speaks 2026-07-28 is the
 * same transport in another mode, whose parts are upsess_http26.c's.
 *
 * One struct mx_uph_op is one HTTP exchange with the upstream (initialize,
 * notifications/initialized, a request, a fire-and-forget message, the GET
 * stream); a struct mx_uph_rpc is a caller's request, which waits for the
 * session, then rides one exchange (two when the session had expired and
 * is re-initialized). States:
 *
 *   idle --first request--> init --[server/discover: 2025] initialize +
 *                                  initialized--> ready
 *                                  --server/discover: 2026-07-28--> ready
 *   ready --404 / 400 "session"--> idle (requests waiting re-init once)
 *   init --failure--> idle (waiting requests fail with the reason)
 *
 * Re-entrancy: callers' callbacks may cancel requests or close the session;
 * an exchange and the session stay allocated while any of their code is on
 * the stack (in_cb and refs) and go afterwards.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "err.h"
#include "jscan.h"
#include "log.h"
#include "rpc.h"
#include "up2026.h"
#include "upmsg.h"
#include "upsess_http_int.h"

#define SUBSYS "upsess"

#define JSON_BODY_CAP      (16u * 1024 * 1024) /* one JSON answer (lists can be large) */
#define SSE_EVENT_CAP      (8u * 1024 * 1024)  /* one SSE event */
#define ERR_BODY_CAP       (64u * 1024)        /* body of an error status */
#define SEND_TIMEOUT_MS    10000L
#define BYE_TIMEOUT_MS     5000L
#define CONNECT_TIMEOUT_MS 10000L
#define GET_MAX_FAILURES   3
#define RESUME_MAX         16     /* reconnections of one request's stream */
#define RESUME_DEFAULT_MS  1000L  /* before one, when the server gave no retry field */
#define RESUME_MAX_MS      30000L /* the longest retry field followed */

static void op_launch_rpc(struct mx_uph_rpc *r);
static void session_init(struct mx_uph_sess *s);

static struct mx_uph_sess *HS(struct mx_upsess *pub)
{
    return mx_container_of(pub, struct mx_uph_sess, base);
}

static struct mx_uph_rpc *HR(struct mx_uprpc *pub)
{
    return mx_container_of(pub, struct mx_uph_rpc, base);
}

struct mx_upsess_bye {
    struct mx_upsess_bye *next;
    struct mx_upsess_env *env;
    struct mx_ureq *u;
};

static uint64_t next_key = 1;

static const char *state_name(enum mx_uph_state st)
{
    switch (st) {
    case MX_UPH_IDLE:
        return "idle";
    case MX_UPH_INIT:
        return "init";
    case MX_UPH_READY:
        return "ready";
    case MX_UPH_CLOSED:
        return "closed";
    }
    return "?";
}

static void set_state(struct mx_uph_sess *s, enum mx_uph_state st)
{
    if (s->state == st)
        return;
    mx_log_debug(SUBSYS, "up:%s session %s -> %s", mx_uph_name(s), state_name(s->state),
                 state_name(st));
    s->state = st;
    s->base.ready = st == MX_UPH_READY;
}

/* ---- session lifetime ---- */

static void session_free(struct mx_uph_sess *s)
{
    json_decref(s->subs);
    json_decref(s->task_subs);
    free(s->sid);
    free(s->resume_sid);
    mx_upsess_base_clear(&s->base);
    free(s);
}

void mx_uph_ref(struct mx_uph_sess *s)
{
    s->refs++;
}

void mx_uph_unref(struct mx_uph_sess *s)
{
    MX_ASSERT(s->refs > 0);
    if (--s->refs == 0)
        session_free(s);
}

/* ---- exchanges ---- */

static void op_free(struct mx_uph_op *op)
{
    struct mx_uph_sess *s = op->s;
    if (op->prev)
        op->prev->next = op->next;
    else if (s->op_head == op)
        s->op_head = op->next;
    if (op->next)
        op->next->prev = op->prev;
    if (s->get == op)
        s->get = NULL;
    if (s->listen == op)
        s->listen = NULL;
    if (s->listen_next == op)
        s->listen_next = NULL;
    json_decref(op->id);
    free(op->sid);
    mx_sse_decoder_clear(&op->sse);
    mx_buf_clear(&op->body);
    free(op);
}

void mx_uph_op_kill(struct mx_uph_op *op)
{
    if (op->dead)
        return;
    op->dead = true;
    if (op->call) {
        mx_upcall_cancel(op->call);
        op->call = NULL;
    }
    if (op->rpc) {
        op->rpc->op = NULL;
        op->rpc = NULL;
    }
    if (op->in_cb == 0)
        op_free(op);
}

static void op_enter(struct mx_uph_op *op)
{
    op->in_cb++;
    mx_uph_ref(op->s);
}

/* Returns false when |op| is gone. */
static bool op_leave(struct mx_uph_op *op)
{
    struct mx_uph_sess *s = op->s;
    bool alive = true;
    op->in_cb--;
    if (op->dead && op->in_cb == 0) {
        op_free(op);
        alive = false;
    }
    mx_uph_unref(s);
    return alive;
}

static void on_head(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                    void *data);

static int on_data(struct mx_ureq *u, const char *p, size_t len, void *data);

static void on_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data);

static int on_sse_event(const struct mx_sse_event *ev, void *data);

static void on_wait(struct mx_upcall *c, void *data)
{
    struct mx_uph_op *op = data;
    (void)c;
    if (op->dead || op->rpc == NULL || op->rpc->cbs.on_wait == NULL)
        return;
    op_enter(op);
    op->rpc->cbs.on_wait(&op->rpc->base, op->rpc->data);
    op_leave(op);
}

static const struct mx_upcall_cbs op_cbs = {{on_head, on_data, on_done}, on_wait, NULL};

/* idle_close closed the GET or listen stream (upcall.h): nothing reopens
 * it but the next request, which also looks again at what the upstream
 * may have announced meanwhile (on_gap). */
static void on_stream_idle(void *data)
{
    struct mx_uph_op *op = data;
    struct mx_uph_sess *s = op->s;
    op->call = NULL; /* gone */
    if (op->dead)
        return;
    op_enter(op);
    mx_log_debug(SUBSYS, "up:%s %s stream closed at idle_close", mx_uph_name(s),
                 op->kind == MX_UPH_OP_GET ? "GET" : "listen");
    s->idle_gap = true;
    if (op->kind == MX_UPH_OP_LISTEN)
        ev_timer_stop(s->base.env->loop, &s->listen_timer);
    mx_uph_op_kill(op);
    op_leave(op);
}

static const struct mx_upcall_cbs stream_cbs = {
    {on_head, on_data, on_done}, on_wait, on_stream_idle};

struct mx_uph_op *mx_uph_op_start(struct mx_uph_sess *s, enum mx_uph_op_kind kind, const char *body,
                                  const json_t *m26, const char *last_event_id, long timeout_ms,
                                  struct mx_upfail *fail)
{
    struct mx_upreq_hdrs h;
    const struct mx_server_cfg *cfg = s->base.env->up->cfg;
    bool is_get = body == NULL;
    bool with_session = kind != MX_UPH_OP_INIT && s->sid != NULL;

    mx_upreq_hdrs_init(&h);
    if (is_get) {
        mx_upreq_hdrs_add(&h, "Accept", MX_STR_LIT("text/event-stream"));
    } else {
        mx_upreq_hdrs_add(&h, "Content-Type", MX_STR_LIT("application/json"));
        /* MCP 2025-06-18, Streamable HTTP: the client accepts both. */
        mx_upreq_hdrs_add(&h, "Accept", MX_STR_LIT("application/json, text/event-stream"));
    }
    if (with_session)
        mx_upreq_hdrs_add(&h, "Mcp-Session-Id", mx_str_cstr(s->sid));
    if (last_event_id)
        mx_upreq_hdrs_add(&h, "Last-Event-ID", mx_str_cstr(last_event_id));
    /* MCP 2025-06-18, Transports: the negotiated version on every request
     * after initialize; 2025-03-26 servers predate the header. MCP
     * 2026-07-28: the version, method and name of each request. */
    if (m26) {
        if (mx_uph26_headers(s, m26, &h) != 0) {
            mx_upreq_hdrs_clear(&h);
            mx_upfail_proto(cfg, "a request name or argument too long for its header", fail);
            return NULL;
        }
    } else if (kind != MX_UPH_OP_INIT && s->version[0] && strcmp(s->version, "2025-03-26") > 0) {
        mx_upreq_hdrs_add(&h, "MCP-Protocol-Version", mx_str_cstr(s->version));
    }
    /* the credential: mx_upcall_start adds it to each attempt */

    struct mx_uph_op *op = mx_xcalloc(1, sizeof(*op));
    op->s = s;
    op->kind = kind;
    op->key = s->base.key;
    op->sent_sid = with_session;
    op->retry_ms = -1;
    mx_sse_decoder_init(&op->sse, SSE_EVENT_CAP, on_sse_event, op);
    mx_buf_init(&op->body, JSON_BODY_CAP);

    struct mx_ureq_opts o;
    memset(&o, 0, sizeof(o));
    o.method = is_get ? "GET" : "POST";
    o.url = cfg->url;
    o.headers = h.lines;
    o.header_cnt = h.cnt;
    o.body = body;
    o.body_len = body ? strlen(body) : 0;
    o.timeout_ms = timeout_ms;
    o.connect_timeout_ms = CONNECT_TIMEOUT_MS;
    o.idle_close_ms = (long)cfg->idle_close_ms;
    o.ca_file = cfg->ca;
    /* A POST may have run upstream once it left: never let it be re-sent. */
    o.may_repeat = is_get;
    bool held = kind == MX_UPH_OP_GET || kind == MX_UPH_OP_LISTEN;
    int rc = mx_upcall_start(s->base.env->loop, s->base.env->uc, s->base.env->up, &o,
                             held ? &stream_cbs : &op_cbs, op, &op->call);
    mx_upreq_hdrs_clear(&h);
    if (rc) {
        struct mx_ureq_info info;
        memset(&info, 0, sizeof(info));
        mx_upfail_transport(cfg, rc, &info, fail);
        json_decref(op->id);
        mx_sse_decoder_clear(&op->sse);
        mx_buf_clear(&op->body);
        free(op);
        return NULL;
    }
    op->next = s->op_head;
    if (s->op_head)
        s->op_head->prev = op;
    s->op_head = op;
    if (body)
        mx_upsess_trace(&s->base, "c2s", mx_str_cstr(body));
    return op;
}

static struct mx_uph_op *op_start(struct mx_uph_sess *s, enum mx_uph_op_kind kind, const char *body,
                                  long timeout_ms, struct mx_upfail *fail)
{
    return mx_uph_op_start(s, kind, body, NULL, NULL, timeout_ms, fail);
}

/* ---- requests ---- */

static void rpc_unlink(struct mx_uph_rpc *r)
{
    struct mx_uph_sess *s = r->s;
    if (r->prev)
        r->prev->next = r->next;
    else if (s->rpcs == r)
        s->rpcs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else if (s->rpcs_tail == r)
        s->rpcs_tail = r->prev;
    r->prev = r->next = NULL;
    s->unlinks++;
}

void mx_uph_rpc_free(struct mx_uph_rpc *r)
{
    ev_timer_stop(r->s->base.env->loop, &r->mrtr_timer);
    ev_timer_stop(r->s->base.env->loop, &r->resume_timer);
    free(r->resume_id);
    ev_timer_stop(r->s->base.env->loop, &r->sub_timer);
    json_decref(r->mrtr_ask);
    json_decref(r->mrtr_answers);
    json_decref(r->mrtr_state);
    json_decref(r->mrtr_error);
    json_decref(r->msg);
    mx_uprpc_base_clear(&r->base);
    free(r);
    mx_upsess_live_dec();
}

/* Forget |r| without callbacks; freed now or after the questions it is
 * delivering. */
static void rpc_drop(struct mx_uph_rpc *r)
{
    if (r->op)
        mx_uph_op_kill(r->op);
    rpc_unlink(r);
    ev_timer_stop(r->s->base.env->loop, &r->mrtr_timer);
    ev_timer_stop(r->s->base.env->loop, &r->resume_timer);
    ev_timer_stop(r->s->base.env->loop, &r->sub_timer);
    if (r->in_ask)
        r->cancelled = true;
    else
        mx_uph_rpc_free(r);
}

void mx_uph_rpc_finish(struct mx_uph_rpc *r, json_t *resp, const struct mx_upfail *fail)
{
    struct mx_uph_sess *s = r->s;
    if (r->op) {
        struct mx_uph_op *op = r->op;
        op->rpc = NULL;
        r->op = NULL;
        /* the transfer may still be running (an SSE stream after its answer):
         * let it end by itself so the connection stays reusable; a resumed
         * stream is a GET that may go on with other messages: close it */
        if (op->answered == false || op->kind == MX_UPH_OP_RESUME)
            mx_uph_op_kill(op);
    }
    rpc_unlink(r);
    mx_uph_ref(s);
    r->in_done = true;
    r->cbs.on_done(&r->base, resp, fail, r->data);
    mx_uph_rpc_free(r);
    mx_uph_unref(s);
}

static bool is_waiting(const struct mx_uph_rpc *r, uint64_t max_seq)
{
    return r->op == NULL && !r->mrtr_wait && !r->resuming && !r->sub_wait && r->seq <= max_seq;
}

static struct mx_uph_rpc *first_waiting_from(struct mx_uph_rpc *r, uint64_t max_seq)
{
    for (; r; r = r->next) {
        if (is_waiting(r, max_seq))
            return r;
    }
    return NULL;
}

static struct mx_uph_rpc *first_waiting(struct mx_uph_sess *s, uint64_t max_seq)
{
    return first_waiting_from(s->rpcs, max_seq);
}

/* Requests waiting for the session: fail them with |fail|. One at a time,
 * looking again after each callback (it may cancel others or add new
 * ones; the new ones wait for the next attempt). */
static void fail_waiting(struct mx_uph_sess *s, const struct mx_upfail *fail)
{
    uint64_t max_seq = s->seq;
    struct mx_uph_rpc *r;
    mx_uph_ref(s);
    while ((r = first_waiting(s, max_seq)) != NULL)
        mx_uph_rpc_finish(r, NULL, fail);
    mx_uph_unref(s);
}

/* In order. The scan goes on from the request after the one launched,
 * unless a launch took requests off the list (a failure's callbacks may):
 * then from the head again. */
static void launch_waiting(struct mx_uph_sess *s)
{
    mx_uph_ref(s);
    struct mx_uph_rpc *r = first_waiting(s, UINT64_MAX);
    while (s->state == MX_UPH_READY && r != NULL) {
        struct mx_uph_rpc *next = r->next;
        uint64_t unlinks = s->unlinks;
        op_launch_rpc(r);
        r = first_waiting_from(s->unlinks == unlinks ? next : s->rpcs, UINT64_MAX);
    }
    mx_uph_unref(s);
}

static void open_get(struct mx_uph_sess *s)
{
    struct mx_upfail fail;
    if (s->state != MX_UPH_READY || s->get || s->get_unsupported || s->sid == NULL ||
        s->get_failures >= GET_MAX_FAILURES)
        return;
    /* MCP 2025-06-18, Streamable HTTP: GET opens the stream on which the
     * server sends what belongs to no request; no time limit on it. */
    s->get = op_start(s, MX_UPH_OP_GET, NULL, 0, &fail);
    if (s->get == NULL)
        mx_log_debug(SUBSYS, "up:%s cannot open the GET stream: %s", mx_uph_name(s), fail.message);
}

static void op_launch_rpc(struct mx_uph_rpc *r)
{
    struct mx_uph_sess *s = r->s;
    struct mx_upfail fail;
    if (r->msg == NULL) {
        mx_uph_rpc_finish(r, NULL, NULL);
        return;
    }
    if (mx_uph26_take(r))
        return;
    struct mx_uph_op *op;
    if (s->modern) {
        op = mx_uph26_start(r, &fail);
    } else {
        json_t *msg = mx_up26_strip(r->msg); /* no 2026 keys for a 2025 session */
        /* the caller's bytes where the message goes as it is */
        char *body = msg == r->msg && r->base.text ? NULL : mx_rpc_dump(msg);
        json_decref(msg);
        op = op_start(s, MX_UPH_OP_RPC, body ? body : r->base.text, r->timeout_ms, &fail);
        free(body);
        if (op)
            op->id = json_incref(json_object_get(r->msg, "id"));
    }
    if (op == NULL) {
        mx_uph_rpc_finish(r, NULL, &fail);
        return;
    }
    op->rpc = r;
    r->op = op;
    open_get(s);
    mx_uph26_launched(s);
    if (s->idle_gap) {
        /* what the upstream announced while no stream was open is lost */
        s->idle_gap = false;
        if (s->base.cbs.on_gap)
            s->base.cbs.on_gap(&s->base, s->base.data);
    }
}

/* ---- session state ---- */

void mx_uph_session_ready(struct mx_uph_sess *s)
{
    s->base.key = next_key++;
    s->get_failures = 0;
    set_state(s, MX_UPH_READY);
    mx_log_debug(SUBSYS, "up:%s session ready (%s)", mx_uph_name(s), s->version);
    mx_uph_ref(s);
    launch_waiting(s);
    if (s->state == MX_UPH_READY && s->base.cbs.on_ready)
        s->base.cbs.on_ready(&s->base, s->base.init_result, s->base.data);
    open_get(s);
    mx_uph26_ready(s);
    mx_uph_unref(s);
}

void mx_uph_init_failed(struct mx_uph_sess *s, const struct mx_upfail *fail)
{
    if (s->state == MX_UPH_CLOSED)
        return;
    mx_log_debug(SUBSYS, "up:%s initialize failed: %s", mx_uph_name(s), fail->message);
    free(s->sid);
    s->sid = NULL;
    s->base.key = 0;
    set_state(s, MX_UPH_IDLE);
    fail_waiting(s, fail);
}

/* The upstream forgot the session with key |key|: start over (lazily). */
static void session_forget(struct mx_uph_sess *s, uint64_t key)
{
    if (s->state != MX_UPH_READY || s->base.key != key)
        return;
    if (s->modern)
        mx_log_info(SUBSYS, "up:%s refused the revision it had announced; learning it again",
                    mx_uph_name(s));
    else
        mx_log_info(SUBSYS, "up:%s forgot our session (expired or restarted); opening a new one",
                    mx_uph_name(s));
    s->modern = false;
    mx_uph26_forget(s);
    free(s->sid);
    s->sid = NULL;
    s->base.key = 0;
    s->version[0] = '\0';
    set_state(s, MX_UPH_IDLE);
    if (s->get)
        mx_uph_op_kill(s->get);
    s->get = NULL;
}

void mx_uph_initialize(struct mx_uph_sess *s)
{
    struct mx_upfail fail;
    json_t *id = json_integer(0);
    json_t *msg = mx_upmsg_initialize(s->base.caps, id);
    char *body = mx_rpc_dump(msg);
    json_decref(msg);
    struct mx_uph_op *op = op_start(s, MX_UPH_OP_INIT, body, MX_UPH_INIT_TIMEOUT_MS, &fail);
    free(body);
    if (op == NULL) {
        json_decref(id);
        mx_uph_init_failed(s, &fail);
        return;
    }
    op->id = id;
}

/* Make the session ready: with an upstream of unknown revision, ask it
 * first (MCP 2026-07-28, server/discover); a 2025 one gets initialize. */
static void session_init(struct mx_uph_sess *s)
{
    if (s->state != MX_UPH_IDLE)
        return;
    set_state(s, MX_UPH_INIT);
    if (s->resume_sid && s->base.init_result) {
        /* an earlier run's session: on in it (a 404 starts a new one) */
        s->sid = s->resume_sid;
        s->resume_sid = NULL;
        s->base.env->era = MX_UPSESS_ERA_LEGACY;
        mx_log_debug(SUBSYS, "up:%s going on in the session an earlier run kept", mx_uph_name(s));
        mx_uph_session_ready(s);
        return;
    }
    if (s->base.env->era == MX_UPSESS_ERA_LEGACY) {
        mx_uph_initialize(s);
        return;
    }
    mx_uph26_discover(s);
}

/* The answer to initialize. */
static void init_answered(struct mx_uph_op *op, json_t *msg)
{
    struct mx_uph_sess *s = op->s;
    struct mx_upfail fail;
    json_t *result = json_object_get(msg, "result");
    if (!mx_upmsg_init_ok(s->base.env->up->cfg, msg, &fail)) {
        mx_uph_init_failed(s, &fail);
        return;
    }
    const char *v = json_string_value(json_object_get(result, "protocolVersion"));
    snprintf(s->version, sizeof(s->version), "%s", v);
    free(s->sid);
    s->sid = op->sid ? mx_xstrdup(op->sid) : NULL;
    json_decref(s->base.init_result);
    s->base.init_result = json_incref(result);
    /* MCP 2025-06-18, Lifecycle: the client confirms with initialized before
     * anything else; some servers (server-everything) add tools then. */
    json_t *note = mx_upmsg_initialized();
    char *body = mx_rpc_dump(note);
    json_decref(note);
    if (op_start(s, MX_UPH_OP_INITIALIZED, body, SEND_TIMEOUT_MS, &fail) == NULL)
        mx_uph_init_failed(s, &fail);
    free(body);
}

/* ---- message dispatch ---- */

static bool is_answer(struct mx_uph_op *op, json_t *msg)
{
    if (op->id == NULL || mx_rpc_classify(msg) != MX_RPC_RESPONSE)
        return false;
    return json_equal(json_object_get(msg, "id"), op->id);
}

/*
 * The one request in flight on |s|, or NULL when there are none or several.
 * MCP 2025-11-25, Streamable HTTP: a server SHOULD send what belongs to a
 * request on that request's stream, but SDK servers asking "from the
 * server" (not from the handler) put their sampling or elicitation on the
 * GET stream; while one request runs, that is what they belong to.
 */
static struct mx_uph_rpc *sole_rpc(struct mx_uph_sess *s)
{
    struct mx_uph_rpc *only = NULL;
    for (struct mx_uph_rpc *r = s->rpcs; r; r = r->next) {
        bool running = r->resuming || r->mrtr_wait || (r->op && !r->op->answered);
        if (!running)
            continue;
        if (only || r->op == NULL || r->cbs.on_message == NULL)
            return NULL;
        only = r;
    }
    return only;
}

/* One JSON-RPC message from the upstream on |op|'s stream. */
static void handle_msg(struct mx_uph_op *op, json_t *msg)
{
    struct mx_uph_sess *s = op->s;
    if (op->answered && op->kind != MX_UPH_OP_GET)
        return; /* after the answer nothing more belongs to the request */
    if (is_answer(op, msg)) {
        op->answered = true;
        if (op->kind == MX_UPH_OP_INIT) {
            init_answered(op, msg);
        } else if (op->kind == MX_UPH_OP_DISCOVER) {
            mx_uph26_decided(s, op->status, msg);
        } else if (op->kind == MX_UPH_OP_LISTEN) {
            mx_uph26_listen_refused(op, msg);
        } else if (op->rpc && !mx_uph26_mrtr_begin(op, msg)) {
            json_t *ans = mx_uph26_answer(op->rpc, msg);
            mx_uph_rpc_finish(op->rpc, ans, NULL);
            json_decref(ans);
        }
        return;
    }
    if (op->kind == MX_UPH_OP_LISTEN && mx_uph26_listen_msg(op, msg))
        return;
    if ((op->kind == MX_UPH_OP_RPC || op->kind == MX_UPH_OP_RESUME) && op->rpc) {
        struct mx_uph_rpc *r = op->rpc;
        int rc = r->cbs.on_message ? r->cbs.on_message(&r->base, op->key, msg, r->data) : 0;
        if (!op->dead && rc == MX_EAGAIN)
            op->paused = true;
        return;
    }
    if (op->kind == MX_UPH_OP_GET && mx_rpc_classify(msg) == MX_RPC_REQUEST &&
        mx_uph_relayable(json_string_value(json_object_get(msg, "method")))) {
        struct mx_uph_rpc *r = sole_rpc(s);
        if (r) {
            (void)r->cbs.on_message(&r->base, op->key, msg, r->data);
            return;
        }
    }
    if (s->state != MX_UPH_CLOSED && s->base.cbs.on_message)
        s->base.cbs.on_message(&s->base, op->key, msg, s->base.data);
}

/*
 * The answer of a plain request whose caller takes results as bytes
 * (mx_uprpc_want_raw), checked without a tree: handed on as {"jsonrpc",
 * "id"} with the result's bytes beside it. False: |text| is anything else,
 * or undecided; it is parsed in full.
 */
static bool raw_answer(struct mx_uph_op *op, struct mx_str text)
{
    static const char *const keys[] = {"jsonrpc", "id", "result", "error", "method"};
    static const char *const dropped[] = {"resultType", "ttlMs", "cacheScope", "_meta"};
    struct mx_str v[5], d[4];
    struct mx_uph_rpc *r = op->rpc;
    char id[24];
    if (op->kind != MX_UPH_OP_RPC || op->answered || r == NULL || !r->base.want_raw ||
        op->s->modern || r->round != 0 || !json_is_integer(op->id))
        return false;
    if (!mx_jscan_object(text, keys, 5, v) || v[2].p == NULL || v[3].p || v[4].p ||
        !mx_str_eq(v[0], MX_STR_LIT("\"2.0\"")))
        return false;
    int n = snprintf(id, sizeof(id), "%" JSON_INTEGER_FORMAT, json_integer_value(op->id));
    if (!mx_str_eq(v[1], mx_str_make(id, (size_t)n)) || mx_jscan_has_newline(v[2]))
        return false;
    if (v[2].p[0] == '{' &&
        (!mx_jscan_object(v[2], dropped, 4, d) || d[0].p || d[1].p || d[2].p || d[3].p))
        return false;
    mx_upsess_trace(&op->s->base, "s2c", text);
    json_t *msg = json_pack("{s:s, s:O}", "jsonrpc", "2.0", "id", op->id);
    op->answered = true;
    r->base.raw = v[2];
    mx_uph_rpc_finish(r, msg, NULL);
    json_decref(msg);
    return true;
}

static void handle_text(struct mx_uph_op *op, struct mx_str text)
{
    if (raw_answer(op, text))
        return;
    json_t *msg = mx_rpc_parse(text);
    if (msg == NULL) {
        mx_log_debug(SUBSYS, "up:%s sent a message that is not JSON; ignored", mx_uph_name(op->s));
        return;
    }
    mx_upsess_trace(&op->s->base, "s2c", text);
    if (json_is_object(msg))
        handle_msg(op, msg);
    json_decref(msg);
}

static int on_sse_event(const struct mx_sse_event *ev, void *data)
{
    struct mx_uph_op *op = data;
    if (ev->retry_ms >= 0)
        op->retry_ms = ev->retry_ms;
    if (ev->event.len && !mx_str_eq(ev->event, MX_STR_LIT("message")))
        return 0;
    if (mx_str_trim(ev->data).len == 0)
        return 0; /* MCP 2025-11-25: a priming event carries an id and no data */
    handle_text(op, ev->data);
    return op->dead ? MX_ECLOSED : 0;
}

static bool is_2xx(long st)
{
    return st >= 200 && st < 300;
}

static void on_head(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                    void *data)
{
    struct mx_uph_op *op = data;
    (void)u;
    op->status = status;
    for (size_t i = 0; i < cnt; i++) {
        if (mx_str_caseeq_cstr(hdrs[i].name, "Content-Type"))
            op->is_sse = mx_str_has_prefix(hdrs[i].value, MX_STR_LIT("text/event-stream"));
        else if (mx_str_caseeq_cstr(hdrs[i].name, "Mcp-Session-Id") && op->sid == NULL &&
                 hdrs[i].value.len && hdrs[i].value.len < 256)
            op->sid = mx_xstrndup(hdrs[i].value.p, hdrs[i].value.len);
    }
    if (!is_2xx(status))
        op->body.cap = ERR_BODY_CAP;
    if (op->kind == MX_UPH_OP_GET && is_2xx(status) && op->is_sse)
        op->s->get_failures = 0;
}

static int on_data(struct mx_ureq *u, const char *p, size_t len, void *data)
{
    struct mx_uph_op *op = data;
    (void)u;
    if (op->dead)
        return 0;
    if (!is_2xx(op->status) || !op->is_sse) {
        if (mx_buf_append(&op->body, p, len) && is_2xx(op->status) && !op->overflow) {
            mx_log_warn(SUBSYS, "up:%s answer over %u bytes; dropped", mx_uph_name(op->s),
                        JSON_BODY_CAP);
            op->overflow = true;
        }
        return 0;
    }
    op_enter(op);
    int rc = mx_sse_decode(&op->sse, p, len);
    if (rc == MX_ELIMIT && !op->dead)
        mx_log_warn(SUBSYS, "up:%s SSE event over %u bytes; dropped", mx_uph_name(op->s),
                    SSE_EVENT_CAP);
    bool paused = !op->dead && op->paused;
    op_leave(op);
    return paused ? MX_EAGAIN : 0;
}

/* Does this error body say the session is unknown (server-everything's 400
 * "Bad Request: No valid session ID provided", the SDK's "Session not
 * found", "Server not initialized")? */
static bool says_no_session(struct mx_str body)
{
    json_t *m = mx_rpc_parse(body);
    const char *msg = json_string_value(json_object_get(json_object_get(m, "error"), "message"));
    bool yes = false;
    if (msg) {
        char low[256];
        size_t n = strlen(msg) < sizeof(low) - 1 ? strlen(msg) : sizeof(low) - 1;
        for (size_t i = 0; i < n; i++)
            low[i] = (char)((msg[i] >= 'A' && msg[i] <= 'Z') ? msg[i] + 32 : msg[i]);
        low[n] = '\0';
        yes = (strstr(low, "session") &&
               (strstr(low, "not found") || strstr(low, "no valid") || strstr(low, "unknown") ||
                strstr(low, "invalid") || strstr(low, "expired"))) ||
              strstr(low, "not initialized") != NULL;
    }
    json_decref(m);
    return yes;
}

static void op_failed(struct mx_uph_op *op, const struct mx_upfail *fail)
{
    struct mx_uph_sess *s = op->s;
    switch (op->kind) {
    case MX_UPH_OP_INIT:
    case MX_UPH_OP_INITIALIZED:
    case MX_UPH_OP_DISCOVER:
        mx_uph_init_failed(s, fail);
        break;
    case MX_UPH_OP_LISTEN:
        mx_log_debug(SUBSYS, "up:%s subscriptions/listen ended: %s", mx_uph_name(s), fail->message);
        break;
    case MX_UPH_OP_RPC:
    case MX_UPH_OP_RESUME:
        if (op->rpc)
            mx_uph_rpc_finish(op->rpc, NULL, fail);
        break;
    case MX_UPH_OP_GET:
        s->get_failures++;
        mx_log_debug(SUBSYS, "up:%s GET stream ended: %s", mx_uph_name(s), fail->message);
        break;
    case MX_UPH_OP_SEND:
        mx_log_debug(SUBSYS, "up:%s message not delivered: %s", mx_uph_name(s), fail->message);
        break;
    }
}

/* The upstream says the session we used is gone. */
static void op_expired(struct mx_uph_op *op)
{
    struct mx_uph_sess *s = op->s;
    if (s->modern && op->key == s->base.key)
        s->base.env->era = MX_UPSESS_ERA_UNKNOWN; /* ask it again with server/discover */
    session_forget(s, op->key);
    if (op->kind == MX_UPH_OP_RPC && op->rpc) {
        struct mx_uph_rpc *r = op->rpc;
        struct mx_upfail fail;
        op->rpc = NULL;
        r->op = NULL;
        if (r->retried) {
            mx_upfail_proto(s->base.env->up->cfg, "it forgot a session it had just opened", &fail);
            mx_uph_rpc_finish(r, NULL, &fail);
            return;
        }
        /* MCP 2025-06-18, Session Management: a 404 means the request was not
         * processed, so it may go again on a new session. */
        r->retried = true;
        if (s->state == MX_UPH_READY)
            op_launch_rpc(r);
        else
            session_init(s);
    } else if (op->kind == MX_UPH_OP_GET) {
        /* nothing waits on it; the next request re-initializes */
    }
}

/* MCP 2025-11-25, Streamable HTTP, Resumability and Redelivery: a 2025
 * session's stream that ended (closed, or broken) before the answer, after
 * an event with an id, is not a cancel: the request may have run, so it is
 * not sent again; its stream is reconnected with GET and Last-Event-ID once
 * the server's retry time has passed. Returns true when that is under way. */
static bool resume_later(struct mx_uph_op *op, int err)
{
    struct mx_uph_sess *s = op->s;
    struct mx_uph_rpc *r = op->rpc;
    struct mx_str id = mx_buf_str(&op->sse.id);
    if (s->modern || r == NULL || op->answered || !op->is_sse || !is_2xx(op->status) ||
        (op->kind != MX_UPH_OP_RPC && op->kind != MX_UPH_OP_RESUME) || err == MX_ETIMEDOUT ||
        r->resumes >= RESUME_MAX || s->state != MX_UPH_READY || op->key != s->base.key ||
        (id.len == 0 && r->resume_id == NULL))
        return false;
    if (id.len) {
        free(r->resume_id);
        r->resume_id = mx_xstrndup(id.p, id.len);
    }
    /* a retry field sets the reconnection time until another one comes */
    long retry = op->retry_ms >= 0 ? op->retry_ms : op->sse.retry_ms;
    if (retry >= 0)
        r->resume_ms = retry < RESUME_MAX_MS ? retry : RESUME_MAX_MS;
    op->rpc = NULL;
    r->op = NULL;
    r->resuming = true;
    long wait = r->resume_ms >= 0 ? r->resume_ms : RESUME_DEFAULT_MS;
    mx_log_debug(SUBSYS, "up:%s a request's stream ended before its answer; resuming in %ld ms",
                 mx_uph_name(s), wait);
    ev_timer_set(&r->resume_timer, (double)wait / 1000.0, 0.0);
    ev_timer_start(s->base.env->loop, &r->resume_timer);
    return true;
}

static void resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_uph_rpc *r = mx_container_of(w, struct mx_uph_rpc, resume_timer);
    struct mx_uph_sess *s = r->s;
    struct mx_upfail fail;
    (void)loop;
    (void)revents;
    r->resuming = false;
    if (s->state != MX_UPH_READY) {
        mx_upfail_proto(s->base.env->up->cfg,
                        "its session ended while a request's stream was resumed", &fail);
        fail.code = MX_RPC_OUTCOME_UNKNOWN;
        mx_uph_rpc_finish(r, NULL, &fail);
        return;
    }
    struct mx_uph_op *op =
        mx_uph_op_start(s, MX_UPH_OP_RESUME, NULL, NULL, r->resume_id, r->timeout_ms, &fail);
    if (op == NULL) {
        mx_uph_rpc_finish(r, NULL, &fail);
        return;
    }
    r->resumes++;
    op->id = json_incref(json_object_get(r->msg, "id"));
    op->rpc = r;
    r->op = op;
}

static void on_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data)
{
    struct mx_uph_op *op = data;
    struct mx_uph_sess *s = op->s;
    struct mx_upfail fail;
    (void)u;
    op->call = NULL; /* gone after this callback */
    if (op->dead)
        return;
    op_enter(op);
    if (resume_later(op, err))
        goto out;
    if (err) {
        if (!op->answered) {
            mx_upfail_transport(s->base.env->up->cfg, err, info, &fail);
            op_failed(op, &fail);
        }
        goto out;
    }
    if (op->kind == MX_UPH_OP_RESUME && !is_2xx(op->status)) {
        /* the request went out before: whatever the session says now, its
         * outcome is unknown, and it is not sent again */
        mx_upfail_status(s->base.env->up->cfg, op->status, &fail);
        fail.code = MX_RPC_OUTCOME_UNKNOWN;
        op_failed(op, &fail);
        goto out;
    }
    if (op->kind == MX_UPH_OP_GET && op->status == 405) {
        /* MCP 2025-06-18 allows a server without a GET stream */
        s->get_unsupported = true;
        goto out;
    }
    /* MCP 2025-06-18, Session Management: 404 to a request with a session
     * id means the session is gone; server-everything says it with 400. */
    if (op->kind == MX_UPH_OP_DISCOVER && !is_2xx(op->status)) {
        json_t *m = mx_rpc_parse(mx_buf_str(&op->body));
        if (m)
            mx_upsess_trace(&s->base, "s2c", mx_buf_str(&op->body));
        mx_uph26_decided(s, op->status, json_is_object(m) ? m : NULL);
        json_decref(m);
        goto out;
    }
    if (op->kind == MX_UPH_OP_INIT && (op->status == 400 || op->status == 404 || op->status == 405))
        s->base.env->era = MX_UPSESS_ERA_UNKNOWN; /* perhaps a 2026-only server now */
    bool expired =
        op->sent_sid && op->kind != MX_UPH_OP_INITIALIZED &&
        (op->status == 404 || (op->status == 400 && says_no_session(mx_buf_str(&op->body))));
    /* MCP 2026-07-28: -32022 says the version is not (or no longer)
     * spoken, a session error that the upstream is a 2025 one now; the
     * request did not run, so it may go again once the revision is known */
    if (s->modern && op->kind == MX_UPH_OP_RPC && (op->status == 400 || op->status == 404)) {
        json_t *m = mx_rpc_parse(mx_buf_str(&op->body));
        expired = mx_up26_wrong_version(m) || says_no_session(mx_buf_str(&op->body));
        json_decref(m);
    }
    if (expired) {
        op_expired(op);
        goto out;
    }
    if (is_2xx(op->status)) {
        if (op->overflow) {
            mx_upfail_proto(s->base.env->up->cfg, "an answer over the size limit", &fail);
            op_failed(op, &fail);
            goto out;
        }
        if (!op->is_sse && mx_buf_len(&op->body))
            handle_text(op, mx_buf_str(&op->body));
        if (op->dead || op->answered)
            goto out;
        if (op->kind == MX_UPH_OP_INITIALIZED) {
            mx_uph_session_ready(s);
        } else if (op->kind == MX_UPH_OP_RPC || op->kind == MX_UPH_OP_RESUME ||
                   op->kind == MX_UPH_OP_INIT || op->kind == MX_UPH_OP_DISCOVER) {
            mx_upfail_proto(s->base.env->up->cfg,
                            op->is_sse ? "its stream ended before the answer"
                                       : "it answered a request without a response",
                            &fail);
            if (op->is_sse)
                fail.code = MX_RPC_OUTCOME_UNKNOWN;
            op_failed(op, &fail);
        } else if (op->kind == MX_UPH_OP_GET) {
            s->get_failures++;
        }
        goto out;
    }
    /* An error status: a JSON-RPC error answering our request passes through
     * as the answer (a 400 for invalid params, a 500 with an error object). */
    if ((op->kind == MX_UPH_OP_RPC || op->kind == MX_UPH_OP_LISTEN) && op->id) {
        json_t *m = mx_rpc_parse(mx_buf_str(&op->body));
        if (m && is_answer(op, m) && json_object_get(m, "error")) {
            mx_upsess_trace(&s->base, "s2c", mx_buf_str(&op->body));
            handle_msg(op, m);
            json_decref(m);
            goto out;
        }
        json_decref(m);
    }
    mx_upfail_status(s->base.env->up->cfg, op->status, &fail);
    if (op->status == 401 || op->status == 403)
        mx_log_warn(SUBSYS, "up:%s answered %ld: credential refused", mx_uph_name(s), op->status);
    op_failed(op, &fail);
out:
    if (!op->dead)
        mx_uph_op_kill(op);
    if (op->kind == MX_UPH_OP_LISTEN)
        mx_uph26_listen_ended(s, op);
    op_leave(op);
}

/* ---- DELETE at close ---- */

static void bye_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data)
{
    struct mx_upsess_bye *b = data;
    (void)u;
    (void)err;
    (void)info;
    for (struct mx_upsess_bye **pp = &b->env->byes; *pp; pp = &(*pp)->next) {
        if (*pp == b) {
            *pp = b->next;
            break;
        }
    }
    free(b);
}

static void bye_head(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                     void *data)
{
    (void)u;
    (void)status;
    (void)hdrs;
    (void)cnt;
    (void)data;
}

static int bye_data(struct mx_ureq *u, const char *p, size_t len, void *data)
{
    (void)u;
    (void)p;
    (void)len;
    (void)data;
    return 0;
}

static const struct mx_ureq_cbs bye_cbs = {bye_head, bye_data, bye_done};

/* MCP 2025-06-18, Session Management: a client that no longer needs the
 * session SHOULD DELETE it. Plain uclient: a goodbye must not wake a
 * sandbox that went to sleep, so it is not a wake-on-use call. */
static void send_bye(struct mx_uph_sess *s)
{
    struct mx_upreq_hdrs h;
    struct mx_upsess_env *env = s->base.env;
    mx_upreq_hdrs_init(&h);
    mx_upreq_hdrs_add(&h, "Mcp-Session-Id", mx_str_cstr(s->sid));
    if (s->version[0] && strcmp(s->version, "2025-03-26") > 0)
        mx_upreq_hdrs_add(&h, "MCP-Protocol-Version", mx_str_cstr(s->version));
    mx_upreq_hdrs_auth(&h, s->base.env->up);
    struct mx_ureq_opts o;
    memset(&o, 0, sizeof(o));
    o.method = "DELETE";
    o.url = s->base.env->up->cfg->url;
    o.headers = h.lines;
    o.header_cnt = h.cnt;
    o.timeout_ms = BYE_TIMEOUT_MS;
    o.connect_timeout_ms = BYE_TIMEOUT_MS;
    o.may_repeat = true;
    o.ca_file = s->base.env->up->cfg->ca;
    o.pool = s->base.env->up->pool; /* its connection is closed at idle too */
    struct mx_upsess_bye *b = mx_xcalloc(1, sizeof(*b));
    b->env = env;
    if (mx_ureq_start(s->base.env->uc, &o, &bye_cbs, b, &b->u) == 0) {
        b->next = env->byes;
        env->byes = b;
    } else {
        free(b);
    }
    mx_upreq_hdrs_clear(&h);
}

static void http_env_clear(struct mx_upsess_env *env)
{
    json_decref(env->tool_params);
    env->tool_params = NULL;
    while (env->byes) {
        struct mx_upsess_bye *b = env->byes;
        env->byes = b->next;
        mx_ureq_cancel(b->u);
        free(b);
    }
}

/* ---- the ops (upsess_int.h) ---- */

static void kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_uph_sess *s = mx_container_of(w, struct mx_uph_sess, kick);
    (void)loop;
    (void)revents;
    if (s->state == MX_UPH_CLOSED)
        return;
    mx_uph_ref(s);
    if (s->state == MX_UPH_READY)
        launch_waiting(s);
    else if (s->state == MX_UPH_IDLE && first_waiting(s, UINT64_MAX))
        session_init(s);
    mx_uph_unref(s);
}

static struct mx_upsess *http_open(struct mx_upsess_env *env, const json_t *caps,
                                   const char *trace_session, const struct mx_upsess_cbs *cbs,
                                   void *data)
{
    struct mx_uph_sess *s = mx_xcalloc(1, sizeof(*s));
    mx_upsess_base_init(&s->base, &mx_upsess_http_ops, env, caps, trace_session, cbs, data);
    s->refs = 1;
    s->state = MX_UPH_IDLE;
    ev_timer_init(&s->kick, kick_cb, 0.0, 0.0);
    ev_timer_init(&s->listen_timer, mx_uph26_listen_timer_cb, 0.0, 0.0);
    return &s->base;
}

static void http_close(struct mx_upsess *pub)
{
    struct mx_uph_sess *s = HS(pub);
    if (s->state == MX_UPH_CLOSED)
        return;
    bool had_session = s->state == MX_UPH_READY && s->sid;
    set_state(s, MX_UPH_CLOSED);
    ev_timer_stop(s->base.env->loop, &s->kick);
    ev_timer_stop(s->base.env->loop, &s->listen_timer);
    while (s->rpcs)
        rpc_drop(s->rpcs);
    for (struct mx_uph_op *op = s->op_head, *n; op; op = n) {
        n = op->next;
        mx_uph_op_kill(op);
    }
    if (had_session && !s->keep)
        send_bye(s);
    mx_uph_unref(s);
}

static void http_keep(struct mx_upsess *pub, bool on, const char *sid, const char *version,
                      const json_t *init)
{
    struct mx_uph_sess *s = HS(pub);
    s->keep = on;
    if (sid == NULL || !json_is_object(init) || s->state != MX_UPH_IDLE || s->sid)
        return;
    free(s->resume_sid);
    s->resume_sid = mx_xstrdup(sid);
    snprintf(s->version, sizeof(s->version), "%s", version ? version : "");
    json_decref(s->base.init_result);
    s->base.init_result = json_deep_copy(init);
}

static const char *http_session_id(const struct mx_upsess *pub, const char **version)
{
    const struct mx_uph_sess *s = (const struct mx_uph_sess *)pub;
    if (s->modern || s->sid == NULL)
        return NULL;
    *version = s->version;
    return s->sid;
}

static int http_request(struct mx_upsess *pub, json_t *msg, long timeout_ms,
                        const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out)
{
    struct mx_uph_sess *s = HS(pub);
    if (s->state == MX_UPH_CLOSED || s->base.env->up->cfg->url == NULL)
        return MX_EINVAL;
    struct mx_uph_rpc *r = mx_xcalloc(1, sizeof(*r));
    r->base.ops = &mx_upsess_http_ops;
    r->s = s;
    r->msg = msg ? json_incref(msg) : NULL;
    r->timeout_ms = timeout_ms;
    r->cbs = *cbs;
    r->data = data;
    r->seq = ++s->seq;
    ev_init(&r->mrtr_timer, mx_uph26_mrtr_timeout);
    ev_init(&r->resume_timer, resume_cb);
    r->resume_ms = -1;
    ev_init(&r->sub_timer, mx_uph26_sub_timeout);
    /* at the tail: waiting requests go out in the order they came */
    r->prev = s->rpcs_tail;
    if (s->rpcs_tail)
        s->rpcs_tail->next = r;
    else
        s->rpcs = r;
    s->rpcs_tail = r;
    mx_upsess_live_inc();
    *out = &r->base;
    /* started from the loop: no callback may run from inside this call */
    mx_uph_kick(s);
    return 0;
}

static void http_cancel(struct mx_uprpc *pub)
{
    struct mx_uph_rpc *r = HR(pub);
    if (r->in_done || r->cancelled)
        return;
    rpc_drop(r);
}

static void http_resume(struct mx_uprpc *pub)
{
    struct mx_uph_rpc *r = HR(pub);
    if (r->op == NULL || !r->op->paused)
        return;
    r->op->paused = false;
    if (r->op->call)
        mx_upcall_resume(r->op->call);
}

static void http_send(struct mx_upsess *pub, json_t *msg)
{
    struct mx_uph_sess *s = HS(pub);
    struct mx_upfail fail;
    if (s->modern) {
        mx_uph26_send(s, msg);
        return;
    }
    char *body = mx_rpc_dump(msg);
    if (op_start(s, MX_UPH_OP_SEND, body, SEND_TIMEOUT_MS, &fail) == NULL)
        mx_log_debug(SUBSYS, "up:%s message not sent: %s", mx_uph_name(s), fail.message);
    free(body);
}

const struct mx_upsess_ops mx_upsess_http_ops = {
    .label = "Streamable HTTP",
    .subsys = SUBSYS,
    .caps = MX_UPSESS_CAP_DIRECT | MX_UPSESS_CAP_META_LOG_LEVEL | MX_UPSESS_CAP_CATALOGUE,
    .open = http_open,
    .close = http_close,
    .request = http_request,
    .send = http_send,
    .cancel = http_cancel,
    .resume = http_resume,
    .input_key = mx_uph26_input_key,
    .env_clear = http_env_clear,
    .keep = http_keep,
    .session_id = http_session_id,
};
