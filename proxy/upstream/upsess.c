/* SPDX-License-Identifier: MIT */
/*
 * Upstream MCP sessions. One struct op is one HTTP exchange with the
 * upstream (initialize, notifications/initialized, a request, a
 * fire-and-forget message, the GET stream); a struct mx_uprpc is a caller's
 * request, which waits for the session, then rides one op (two when the
 * session had expired and is re-initialized). States:
 *
 *   idle --first request--> init --[server/discover: 2025] initialize +
 *                                  initialized--> ready
 *                                  --server/discover: 2026-07-28--> ready
 *   ready --404 / 400 "session"--> idle (requests waiting re-init once)
 *   init --failure--> idle (waiting requests fail with the reason)
 *
 * Re-entrancy: callers' callbacks may cancel requests or close the session;
 * an op and the session stay allocated while any of their code is on the
 * stack (in_cb and refs) and go afterwards.
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
#include "sse.h"
#include "up2026.h"
#include "upcall.h"
#include "upmsg.h"
#include "upsess.h"
#include "upsess_sse.h"
#include "upsess_stdio.h"

#define SUBSYS "upsess"

#define JSON_BODY_CAP      (16u * 1024 * 1024) /* one JSON answer (lists can be large) */
#define SSE_EVENT_CAP      (8u * 1024 * 1024)  /* one SSE event */
#define ERR_BODY_CAP       (64u * 1024)        /* body of an error status */
#define INIT_TIMEOUT_MS    30000L
#define SEND_TIMEOUT_MS    10000L
#define BYE_TIMEOUT_MS     5000L
#define CONNECT_TIMEOUT_MS 10000L
#define GET_MAX_FAILURES   3
#define MRTR_MAX_ROUNDS    16      /* input_required results for one request */
#define MRTR_WAIT_MS       300000L /* for the answers of one round, without a request timeout */
#define RESUME_MAX         16      /* reconnections of one request's stream */
#define RESUME_DEFAULT_MS  1000L   /* before one, when the server gave no retry field */
#define RESUME_MAX_MS      30000L  /* the longest retry field followed */
#define LISTEN_MAX_FAILS   6       /* listen re-opens in a row before waiting for a request */
#define LISTEN_BACKOFF_MS  500
#define LISTEN_BACKOFF_CAP 30000
#define LISTEN_ACK_MS      30000L /* for the acknowledgement of a new listen stream */

enum upsess_state {
    US_IDLE = 0,
    US_INIT = 1,
    US_READY = 2,
    US_CLOSED = 3,
};

enum op_kind {
    OP_INIT = 0,
    OP_INITIALIZED = 1,
    OP_RPC = 2,
    OP_SEND = 3,
    OP_GET = 4,
    OP_DISCOVER = 5, /* server/discover: which revision the upstream speaks */
    OP_LISTEN = 6,   /* 2026-07-28 subscriptions/listen: list changes */
    OP_RESUME = 7,   /* GET with Last-Event-ID: a request's stream, resumed */
};

struct op {
    struct mx_upsess *s;
    enum op_kind kind;
    struct op *prev;
    struct op *next;
    struct mx_upcall *call;
    struct mx_uprpc *rpc; /* OP_RPC, OP_RESUME */
    json_t *id;           /* the id whose answer ends it (OP_RPC, OP_INIT); owned */
    uint64_t key;         /* session key when sent */
    uint64_t gen;         /* OP_LISTEN: the generation of the subscriptions it asked for */
    bool sent_sid;
    long status;
    bool is_sse;
    bool overflow; /* the answer was over JSON_BODY_CAP */
    bool answered;
    bool paused;
    bool dead; /* no more callbacks; freed once in_cb is 0 */
    int in_cb;
    long retry_ms; /* the stream's last SSE retry field, or -1 */
    char *sid;     /* Mcp-Session-Id of the answer */
    struct mx_sse_decoder sse;
    struct mx_buf body;
};

struct mx_uprpc {
    enum mx_upsess_kind kind; /* first: MX_UPSESS_HTTP here; stdio ones are upsess_stdio.c's */
    struct mx_upsess *s;
    struct mx_uprpc *prev;
    struct mx_uprpc *next;
    json_t *msg; /* NULL: connect only */
    long timeout_ms;
    struct mx_uprpc_cbs cbs;
    void *data;
    struct op *op; /* NULL while waiting for the session */
    uint64_t seq;  /* order of creation within the session */
    bool retried;
    bool in_done;
    /* MCP 2026-07-28, Multi Round-Trip Requests: the upstream's questions
     * go to the caller as requests; the request goes again with the answers */
    unsigned round;       /* input_required results so far */
    bool mrtr_wait;       /* waiting for answers (not for the session) */
    bool in_ask;          /* delivering questions: a cancel defers the free */
    bool cancelled;       /* cancelled while in_ask */
    json_t *mrtr_ask;     /* id of a question we sent -> its inputRequests key */
    json_t *mrtr_answers; /* key -> answer result */
    json_t *mrtr_state;   /* requestState to echo, or NULL */
    json_t *mrtr_error;   /* an error answer to a question: ends the request */
    ev_timer mrtr_timer;
    /* MCP 2025-11-25, Streamable HTTP, Resumability: a stream that ends
     * before the answer is reconnected with GET and Last-Event-ID */
    bool resuming;    /* waiting to reconnect (not for the session) */
    unsigned resumes; /* reconnections so far */
    char *resume_id;  /* the last event id seen on its streams */
    long resume_ms;   /* the reconnection time the server asked for, or -1 */
    ev_timer resume_timer;
    /* resources/subscribe or unsubscribe toward a 2026-07-28 upstream: waits
     * until a listen stream with subscriptions of generation sub_gen (or
     * later) is acknowledged */
    bool sub_wait;
    uint64_t sub_gen;
    ev_timer sub_timer;
};

struct mx_upsess {
    enum mx_upsess_kind kind; /* first: MX_UPSESS_HTTP here; stdio ones are upsess_stdio.c's */
    struct mx_upsess_env *env;
    ev_timer kick; /* starts waiting requests from the loop, never from a caller's call */
    uint64_t seq;  /* requests made so far */
    struct mx_upsess_cbs cbs;
    void *data;
    int refs;
    enum upsess_state state;
    uint64_t key;
    char *sid;
    char version[16];
    json_t *caps;
    json_t *init_result;
    char *trace_session;
    struct op *ops;
    struct mx_uprpc *rpcs;
    struct op *get;
    bool get_unsupported;
    unsigned get_failures;
    bool modern;       /* 2026-07-28: no session; init_result is the discover result */
    struct op *listen; /* its subscriptions/listen stream */
    unsigned listen_failures;
    bool discover_again; /* server/discover was asked again after a -32022 */
    bool idle_gap;       /* idle_close closed a stream: on_gap at the next request */
    /* MCP 2026-07-28 has no resources/subscribe: the resources subscribed
     * to are the resourceSubscriptions of the listen stream, which is
     * opened again for each change (the old one ends once the new one is
     * acknowledged, so no list change falls between them) */
    struct op *listen_next; /* opened with the latest subscriptions, not yet acknowledged */
    json_t *subs;           /* uri -> the generation that added it */
    uint64_t sub_gen;       /* changes of subs so far */
    uint64_t acked_gen;     /* the generation the upstream acknowledged last */
    bool listen_dirty;      /* subs changed while listen_next was opening */
    ev_timer listen_timer;  /* the next re-open, or the wait for listen_next's acknowledgement */
};

struct mx_upsess_bye {
    struct mx_upsess_bye *next;
    struct mx_upsess_env *env;
    struct mx_ureq *u;
};

static uint64_t next_key = 1;
static size_t live_cnt;

static void op_launch_rpc(struct mx_uprpc *r);
static void session_init(struct mx_upsess *s);
static void open_listen(struct mx_upsess *s);
static void listen_ended(struct mx_upsess *s, struct op *op);

size_t mx_upsess_live_cnt(void)
{
    return live_cnt + mx_upsess_stdio_live_cnt() + mx_upsess_sse_live_cnt() + mx_upmsg_live_cnt();
}

static const char *state_name(enum upsess_state st)
{
    switch (st) {
    case US_IDLE:
        return "idle";
    case US_INIT:
        return "init";
    case US_READY:
        return "ready";
    case US_CLOSED:
        return "closed";
    }
    return "?";
}

static void set_state(struct mx_upsess *s, enum upsess_state st)
{
    if (s->state == st)
        return;
    mx_log_debug(SUBSYS, "up:%s session %s -> %s", s->env->up->cfg->name, state_name(s->state),
                 state_name(st));
    s->state = st;
}

static const char *name(const struct mx_upsess *s)
{
    return s->env->up->cfg->name;
}

static void trace(struct mx_upsess *s, const char *dir, struct mx_str msg)
{
    mx_trace_msg(s->env->trace, dir, name(s), s->trace_session, msg);
}

/* ---- session lifetime ---- */

static void session_free(struct mx_upsess *s)
{
    json_decref(s->subs);
    json_decref(s->caps);
    json_decref(s->init_result);
    free(s->sid);
    free(s->trace_session);
    free(s);
    live_cnt--;
}

static void s_ref(struct mx_upsess *s)
{
    s->refs++;
}

static void s_unref(struct mx_upsess *s)
{
    MX_ASSERT(s->refs > 0);
    if (--s->refs == 0)
        session_free(s);
}

/* ---- ops ---- */

static void op_free(struct op *op)
{
    struct mx_upsess *s = op->s;
    if (op->prev)
        op->prev->next = op->next;
    else if (s->ops == op)
        s->ops = op->next;
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

/* No more callbacks for |op|; freed now or when its code leaves the stack. */
static void op_kill(struct op *op)
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

static void op_enter(struct op *op)
{
    op->in_cb++;
    s_ref(op->s);
}

/* Returns false when |op| is gone. */
static bool op_leave(struct op *op)
{
    struct mx_upsess *s = op->s;
    bool alive = true;
    op->in_cb--;
    if (op->dead && op->in_cb == 0) {
        op_free(op);
        alive = false;
    }
    s_unref(s);
    return alive;
}

static void on_head(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                    void *data);
static int on_data(struct mx_ureq *u, const char *p, size_t len, void *data);
static void on_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data);
static int on_sse_event(const struct mx_sse_event *ev, void *data);

static void on_wait(struct mx_upcall *c, void *data)
{
    struct op *op = data;
    (void)c;
    if (op->dead || op->rpc == NULL || op->rpc->cbs.on_wait == NULL)
        return;
    op_enter(op);
    op->rpc->cbs.on_wait(op->rpc, op->rpc->data);
    op_leave(op);
}

static const struct mx_upcall_cbs op_cbs = {{on_head, on_data, on_done}, on_wait, NULL};

/* idle_close closed the GET or listen stream (upcall.h): nothing reopens
 * it but the next request, which also looks again at what the upstream
 * may have announced meanwhile (on_gap). */
static void on_stream_idle(void *data)
{
    struct op *op = data;
    struct mx_upsess *s = op->s;
    op->call = NULL; /* gone */
    if (op->dead)
        return;
    op_enter(op);
    mx_log_debug(SUBSYS, "up:%s %s stream closed at idle_close", name(s),
                 op->kind == OP_GET ? "GET" : "listen");
    s->idle_gap = true;
    if (op->kind == OP_LISTEN)
        ev_timer_stop(s->env->loop, &s->listen_timer);
    op_kill(op);
    op_leave(op);
}

static const struct mx_upcall_cbs stream_cbs = {
    {on_head, on_data, on_done}, on_wait, on_stream_idle};

/*
 * Start an exchange. |body| NULL means GET. Returns the op, or NULL after
 * filling |fail| when it could not start.
 */
static struct op *op_start_msg(struct mx_upsess *s, enum op_kind kind, const char *body,
                               const json_t *m26, const char *last_event_id, long timeout_ms,
                               struct mx_upfail *fail)
{
    struct mx_upreq_hdrs h;
    const struct mx_server_cfg *cfg = s->env->up->cfg;
    bool is_get = body == NULL;
    bool with_session = kind != OP_INIT && s->sid != NULL;

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
        const char *tool =
            json_string_value(json_object_get(json_object_get(m26, "params"), "name"));
        json_t *pmap = tool ? json_object_get(s->env->tool_params, tool) : NULL;
        if (mx_up26_headers(m26, pmap, &h) != 0) {
            mx_upreq_hdrs_clear(&h);
            mx_upfail_proto(cfg, "a request name or argument too long for its header", fail);
            return NULL;
        }
    } else if (kind != OP_INIT && s->version[0] && strcmp(s->version, "2025-03-26") > 0) {
        mx_upreq_hdrs_add(&h, "MCP-Protocol-Version", mx_str_cstr(s->version));
    }
    mx_upreq_hdrs_auth(&h, cfg);

    struct op *op = mx_xcalloc(1, sizeof(*op));
    op->s = s;
    op->kind = kind;
    op->key = s->key;
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
    bool held = kind == OP_GET || kind == OP_LISTEN;
    int rc = mx_upcall_start(s->env->loop, s->env->uc, s->env->up, &o, held ? &stream_cbs : &op_cbs,
                             op, &op->call);
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
    op->next = s->ops;
    if (s->ops)
        s->ops->prev = op;
    s->ops = op;
    if (body)
        trace(s, "c2s", mx_str_cstr(body));
    return op;
}

static struct op *op_start(struct mx_upsess *s, enum op_kind kind, const char *body,
                           long timeout_ms, struct mx_upfail *fail)
{
    return op_start_msg(s, kind, body, NULL, NULL, timeout_ms, fail);
}

/* Start |msg| (a 2026-07-28 request, shaped) as |kind|; its id ends it. */
static struct op *op_start26(struct mx_upsess *s, enum op_kind kind, json_t *msg, long timeout_ms,
                             struct mx_upfail *fail)
{
    char *body = mx_rpc_dump(msg);
    struct op *op = op_start_msg(s, kind, body, msg, NULL, timeout_ms, fail);
    free(body);
    if (op)
        op->id = json_incref(json_object_get(msg, "id"));
    return op;
}

/* ---- requests ---- */

static void rpc_unlink(struct mx_uprpc *r)
{
    struct mx_upsess *s = r->s;
    if (r->prev)
        r->prev->next = r->next;
    else if (s->rpcs == r)
        s->rpcs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
}

static void rpc_free(struct mx_uprpc *r)
{
    ev_timer_stop(r->s->env->loop, &r->mrtr_timer);
    ev_timer_stop(r->s->env->loop, &r->resume_timer);
    free(r->resume_id);
    ev_timer_stop(r->s->env->loop, &r->sub_timer);
    json_decref(r->mrtr_ask);
    json_decref(r->mrtr_answers);
    json_decref(r->mrtr_state);
    json_decref(r->mrtr_error);
    json_decref(r->msg);
    free(r);
    live_cnt--;
}

/* Forget |r| without callbacks; freed now or after the questions it is
 * delivering. */
static void rpc_drop(struct mx_uprpc *r)
{
    if (r->op)
        op_kill(r->op);
    rpc_unlink(r);
    ev_timer_stop(r->s->env->loop, &r->mrtr_timer);
    ev_timer_stop(r->s->env->loop, &r->resume_timer);
    ev_timer_stop(r->s->env->loop, &r->sub_timer);
    if (r->in_ask)
        r->cancelled = true;
    else
        rpc_free(r);
}

/* Deliver on_done and free. */
static void rpc_finish(struct mx_uprpc *r, json_t *resp, const struct mx_upfail *fail)
{
    struct mx_upsess *s = r->s;
    if (r->op) {
        struct op *op = r->op;
        op->rpc = NULL;
        r->op = NULL;
        /* the transfer may still be running (an SSE stream after its answer):
         * let it end by itself so the connection stays reusable; a resumed
         * stream is a GET that may go on with other messages: close it */
        if (op->answered == false || op->kind == OP_RESUME)
            op_kill(op);
    }
    rpc_unlink(r);
    s_ref(s);
    r->in_done = true;
    r->cbs.on_done(r, resp, fail, r->data);
    rpc_free(r);
    s_unref(s);
}

static struct mx_uprpc *first_waiting(struct mx_upsess *s, uint64_t max_seq)
{
    for (struct mx_uprpc *r = s->rpcs; r; r = r->next) {
        if (r->op == NULL && !r->mrtr_wait && !r->resuming && !r->sub_wait && r->seq <= max_seq)
            return r;
    }
    return NULL;
}

/* Requests waiting for the session: fail them with |fail|. One at a time,
 * looking again after each callback (it may cancel others or add new
 * ones; the new ones wait for the next attempt). */
static void fail_waiting(struct mx_upsess *s, const struct mx_upfail *fail)
{
    uint64_t max_seq = s->seq;
    struct mx_uprpc *r;
    s_ref(s);
    while ((r = first_waiting(s, max_seq)) != NULL)
        rpc_finish(r, NULL, fail);
    s_unref(s);
}

static void launch_waiting(struct mx_upsess *s)
{
    struct mx_uprpc *r;
    s_ref(s);
    while (s->state == US_READY && (r = first_waiting(s, UINT64_MAX)) != NULL)
        op_launch_rpc(r);
    s_unref(s);
}

static void open_get(struct mx_upsess *s)
{
    struct mx_upfail fail;
    if (s->state != US_READY || s->get || s->get_unsupported || s->sid == NULL ||
        s->get_failures >= GET_MAX_FAILURES)
        return;
    /* MCP 2025-06-18, Streamable HTTP: GET opens the stream on which the
     * server sends what belongs to no request; no time limit on it. */
    s->get = op_start(s, OP_GET, NULL, 0, &fail);
    if (s->get == NULL)
        mx_log_debug(SUBSYS, "up:%s cannot open the GET stream: %s", name(s), fail.message);
}

/* The request of |r| as a 2026-07-28 upstream gets it: _meta, and in a
 * later round a new id, the answers and the requestState. */
static json_t *rpc_shape26(struct mx_uprpc *r)
{
    json_t *msg = mx_up26_request(r->msg, r->s->caps);
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

static bool bridge26(struct mx_uprpc *r);

static void op_launch_rpc(struct mx_uprpc *r)
{
    struct mx_upsess *s = r->s;
    struct mx_upfail fail;
    if (r->msg == NULL) {
        rpc_finish(r, NULL, NULL);
        return;
    }
    if (s->modern && bridge26(r))
        return;
    if (r->mrtr_error) {
        /* a question was answered with an error: that ends the request */
        json_t *resp = json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id",
                                 json_object_get(r->msg, "id"), "error", r->mrtr_error);
        rpc_finish(r, resp, NULL);
        json_decref(resp);
        return;
    }
    struct op *op;
    if (s->modern) {
        json_t *msg = rpc_shape26(r);
        op = op_start26(s, OP_RPC, msg, r->timeout_ms, &fail);
        json_decref(msg);
    } else {
        json_t *msg = mx_up26_strip(r->msg); /* no 2026 keys for a 2025 session */
        char *body = mx_rpc_dump(msg);
        json_decref(msg);
        op = op_start(s, OP_RPC, body, r->timeout_ms, &fail);
        free(body);
        if (op)
            op->id = json_incref(json_object_get(r->msg, "id"));
    }
    if (op == NULL) {
        rpc_finish(r, NULL, &fail);
        return;
    }
    op->rpc = r;
    r->op = op;
    open_get(s);
    if (s->modern && (s->listen_failures > LISTEN_MAX_FAILS || s->idle_gap) && s->listen == NULL &&
        s->listen_next == NULL) {
        /* it had given up re-opening, or idle_close closed it: a request
         * is a fresh chance */
        s->listen_failures = 0;
        open_listen(s);
    }
    if (s->idle_gap) {
        /* what the upstream announced while no stream was open is lost */
        s->idle_gap = false;
        if (s->cbs.on_gap)
            s->cbs.on_gap(s, s->data);
    }
}

/* ---- session state ---- */

static void session_ready(struct mx_upsess *s)
{
    s->key = next_key++;
    s->get_failures = 0;
    set_state(s, US_READY);
    mx_log_debug(SUBSYS, "up:%s session ready (%s)", name(s), s->version);
    s_ref(s);
    launch_waiting(s);
    if (s->state == US_READY && s->cbs.on_ready)
        s->cbs.on_ready(s, s->init_result, s->data);
    open_get(s);
    s->listen_failures = 0;
    open_listen(s);
    s_unref(s);
}

static void session_init_failed(struct mx_upsess *s, const struct mx_upfail *fail)
{
    if (s->state == US_CLOSED)
        return;
    mx_log_debug(SUBSYS, "up:%s initialize failed: %s", name(s), fail->message);
    free(s->sid);
    s->sid = NULL;
    s->key = 0;
    set_state(s, US_IDLE);
    fail_waiting(s, fail);
}

/* The upstream forgot the session with key |key|: start over (lazily). */
static void session_forget(struct mx_upsess *s, uint64_t key)
{
    if (s->state != US_READY || s->key != key)
        return;
    if (s->modern)
        mx_log_info(SUBSYS, "up:%s refused the revision it had announced; learning it again",
                    name(s));
    else
        mx_log_info(SUBSYS, "up:%s forgot our session (expired or restarted); opening a new one",
                    name(s));
    s->modern = false;
    if (s->listen)
        op_kill(s->listen);
    s->listen = NULL;
    if (s->listen_next)
        op_kill(s->listen_next);
    s->listen_next = NULL;
    s->listen_dirty = false;
    ev_timer_stop(s->env->loop, &s->listen_timer);
    /* subscriptions waiting for an acknowledgement go again once the
     * revision is known (as resources/subscribe to a 2025 session) */
    bool again = false;
    for (struct mx_uprpc *r = s->rpcs; r; r = r->next) {
        if (r->sub_wait) {
            r->sub_wait = false;
            ev_timer_stop(s->env->loop, &r->sub_timer);
            again = true;
        }
    }
    if (again && !ev_is_active(&s->kick))
        ev_timer_start(s->env->loop, &s->kick);
    free(s->sid);
    s->sid = NULL;
    s->key = 0;
    s->version[0] = '\0';
    set_state(s, US_IDLE);
    if (s->get)
        op_kill(s->get);
    s->get = NULL;
}

/* Open a 2025 session: initialize (the state is US_INIT). */
static void session_initialize(struct mx_upsess *s)
{
    struct mx_upfail fail;
    json_t *msg =
        json_pack("{s:s, s:i, s:s, s:{s:s, s:O, s:{s:s, s:s}}}", "jsonrpc", "2.0", "id", 0,
                  "method", "initialize", "params", "protocolVersion", mx_rev_session_versions[0],
                  "capabilities", s->caps, "clientInfo", "name", "mcplex", "version", MX_VERSION);
    char *body = mx_rpc_dump(msg);
    json_decref(msg);
    struct op *op = op_start(s, OP_INIT, body, INIT_TIMEOUT_MS, &fail);
    free(body);
    if (op == NULL) {
        session_init_failed(s, &fail);
        return;
    }
    op->id = json_integer(0);
}

static void send_discover(struct mx_upsess *s)
{
    struct mx_upfail fail;
    json_t *id = json_string(s->discover_again ? "mcplex-discover-2" : "mcplex-discover");
    json_t *msg = mx_up26_discover(id, s->caps);
    json_decref(id);
    struct op *op = op_start26(s, OP_DISCOVER, msg, INIT_TIMEOUT_MS, &fail);
    json_decref(msg);
    if (op == NULL)
        session_init_failed(s, &fail);
}

/* Make the session ready: with an upstream of unknown revision, ask it
 * first (MCP 2026-07-28, server/discover); a 2025 one gets initialize. */
static void session_init(struct mx_upsess *s)
{
    if (s->state != US_IDLE)
        return;
    set_state(s, US_INIT);
    if (s->env->era == MX_UPSESS_ERA_LEGACY) {
        session_initialize(s);
        return;
    }
    s->discover_again = false;
    send_discover(s);
}

/* What server/discover said: HTTP |status| and its JSON-RPC |answer| (or
 * NULL). */
static void discover_decided(struct mx_upsess *s, long status, const json_t *answer)
{
    const struct mx_server_cfg *cfg = s->env->up->cfg;
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
        session_init_failed(s, &fail);
        return;
    }
    enum mx_upsess_era era = v == MX_UP26_MODERN ? MX_UPSESS_ERA_MODERN : MX_UPSESS_ERA_LEGACY;
    if (s->env->era != era) {
        if (era == MX_UPSESS_ERA_MODERN)
            mx_log_info(SUBSYS, "up:%s speaks MCP %s: stateless requests, no session", name(s),
                        MX_UP26_VERSION);
        else
            mx_log_info(SUBSYS,
                        "up:%s does not speak MCP %s (server/discover: HTTP %ld); "
                        "using 2025 sessions",
                        name(s), MX_UP26_VERSION, status);
        s->env->era = era;
    }
    if (era == MX_UPSESS_ERA_LEGACY) {
        session_initialize(s);
        return;
    }
    s->modern = true;
    snprintf(s->version, sizeof(s->version), "%s", MX_UP26_VERSION);
    json_decref(s->init_result);
    s->init_result = mx_up26_init_result(json_object_get(answer, "result"));
    session_ready(s);
}

/* Answer |r| with an empty result, as the 2025 methods bridged here do. */
static void rpc_reply_empty(struct mx_uprpc *r)
{
    json_t *resp = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id",
                             json_object_get(r->msg, "id"), "result");
    rpc_finish(r, resp, NULL);
    json_decref(resp);
}

/* The waiting resources/subscribe and unsubscribe requests of generation
 * |gen| or older: answered {} (MCP 2025-06-18, Resources), or a subscribe
 * with |error| (borrowed) when not NULL. One at a time, looking again
 * after each callback. */
static void subs_answer(struct mx_upsess *s, uint64_t gen, json_t *error)
{
    s_ref(s);
    for (;;) {
        struct mx_uprpc *r = s->rpcs;
        while (r && !(r->sub_wait && r->sub_gen <= gen))
            r = r->next;
        if (r == NULL || s->state == US_CLOSED)
            break;
        const char *m = json_string_value(json_object_get(r->msg, "method"));
        if (error == NULL || strcmp(m, "resources/subscribe") != 0) {
            rpc_reply_empty(r);
            continue;
        }
        json_t *resp = json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id",
                                 json_object_get(r->msg, "id"), "error", error);
        rpc_finish(r, resp, NULL);
        json_decref(resp);
    }
    s_unref(s);
}

/* The upstream answered the listen stream opened for newer subscriptions
 * with an error: the resources it added leave the filter and their
 * subscribe requests get the error; the acknowledged ones stay, on the
 * current stream and the next. */
static void listen_refused(struct op *op, json_t *msg)
{
    struct mx_upsess *s = op->s;
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
static void listen_later(struct mx_upsess *s)
{
    if (!s->modern || s->state != US_READY || s->listen_next ||
        s->listen_failures > LISTEN_MAX_FAILS)
        return;
    int64_t ms = s->listen_failures <= 1
                     ? 0
                     : mx_backoff_ms(s->listen_failures - 2, LISTEN_BACKOFF_MS, LISTEN_BACKOFF_CAP,
                                     mx_rand_below(1u << 20));
    ev_timer_stop(s->env->loop, &s->listen_timer);
    ev_timer_set(&s->listen_timer, (double)ms / 1000.0, 0.0);
    ev_timer_start(s->env->loop, &s->listen_timer);
}

/*
 * MCP 2026-07-28, subscriptions/listen: the list changes of the kinds the
 * upstream announces and the resources subscribed to, on one long stream.
 * A new one replaces the current one once acknowledged (make before
 * break: the spec has no way to change the filter of an open stream).
 */
static void open_listen(struct mx_upsess *s)
{
    struct mx_upfail fail;
    if (!s->modern || s->state != US_READY)
        return;
    if (s->listen_next) {
        /* again once this one is acknowledged, when it asked for less */
        if (s->listen_next->gen != s->sub_gen)
            s->listen_dirty = true;
        return;
    }
    ev_timer_stop(s->env->loop, &s->listen_timer);
    char buf[48];
    snprintf(buf, sizeof(buf), "mcplex-listen-%llu-%llu", (unsigned long long)s->key,
             (unsigned long long)s->sub_gen);
    json_t *id = json_string(buf);
    json_t *msg =
        mx_up26_listen(id, json_object_get(s->init_result, "capabilities"), s->subs, s->caps);
    json_decref(id);
    if (msg == NULL) {
        /* nothing to listen to (the last subscription went) */
        if (s->listen)
            op_kill(s->listen);
        s->listen = NULL;
        s->acked_gen = s->sub_gen;
        subs_answer(s, s->acked_gen, NULL);
        return;
    }
    s->listen_next = op_start26(s, OP_LISTEN, msg, 0, &fail);
    json_decref(msg);
    if (s->listen_next == NULL) {
        mx_log_debug(SUBSYS, "up:%s cannot open subscriptions/listen: %s", name(s), fail.message);
        s->listen_failures++;
        listen_later(s);
        return;
    }
    s->listen_next->gen = s->sub_gen;
    ev_timer_set(&s->listen_timer, (double)LISTEN_ACK_MS / 1000.0, 0.0);
    ev_timer_start(s->env->loop, &s->listen_timer);
}

static void listen_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_upsess *s = mx_container_of(w, struct mx_upsess, listen_timer);
    (void)loop;
    (void)revents;
    if (s->state == US_CLOSED)
        return;
    s_ref(s);
    if (s->listen_next) {
        mx_log_debug(SUBSYS, "up:%s did not acknowledge subscriptions/listen in time", name(s));
        struct op *op = s->listen_next;
        op_kill(op);
        s->listen_next = NULL;
        s->listen_failures++;
        listen_later(s);
    } else {
        open_listen(s);
    }
    s_unref(s);
}

/* notifications/subscriptions/acknowledged, first on |op|'s stream. */
static void listen_acked(struct op *op, json_t *msg)
{
    struct mx_upsess *s = op->s;
    if (op != s->listen_next)
        return;
    ev_timer_stop(s->env->loop, &s->listen_timer);
    if (s->listen)
        op_kill(s->listen);
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
            mx_log_info(SUBSYS, "up:%s does not honour a subscription to %.200s", name(s), uri);
    }
    if (op->gen > s->acked_gen)
        s->acked_gen = op->gen;
    if (s->listen_dirty) {
        s->listen_dirty = false;
        open_listen(s);
    }
    subs_answer(s, s->acked_gen, NULL);
}

/* |op|, a listen stream, ended. */
static void listen_ended(struct mx_upsess *s, struct op *op)
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

static void sub_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_uprpc *r = mx_container_of(w, struct mx_uprpc, sub_timer);
    struct mx_upsess *s = r->s;
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
    s_ref(s);
    r->sub_wait = false;
    mx_upfail_proto(s->env->up->cfg,
                    "it did not acknowledge the subscription (subscriptions/listen) in time",
                    &fail);
    rpc_finish(r, NULL, &fail);
    if (drop && s->state != US_CLOSED) {
        json_object_del(s->subs, drop);
        s->sub_gen++;
        open_listen(s);
    }
    free(drop);
    s_unref(s);
}

/*
 * MCP 2026-07-28 has neither resources/subscribe and unsubscribe nor
 * logging/setLevel: a subscription changes the resourceSubscriptions of
 * the listen stream and is answered once the upstream acknowledges it; a
 * level travels in the _meta of each request instead, so setting one is
 * answered here. Returns true when |r| was taken here.
 */
static bool bridge26(struct mx_uprpc *r)
{
    struct mx_upsess *s = r->s;
    const char *method = json_string_value(json_object_get(r->msg, "method"));
    bool on = method && strcmp(method, "resources/subscribe") == 0;
    if (method && strcmp(method, "logging/setLevel") == 0) {
        rpc_reply_empty(r);
        return true;
    }
    if (!on && (method == NULL || strcmp(method, "resources/unsubscribe") != 0))
        return false;
    const char *uri = json_string_value(json_object_get(json_object_get(r->msg, "params"), "uri"));
    if (uri == NULL) {
        json_t *resp = mx_rpc_error_new(json_object_get(r->msg, "id"), MX_RPC_INVALID_PARAMS,
                                        "Invalid params: params.uri must be a string", NULL);
        rpc_finish(r, resp, NULL);
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
    ev_timer_start(s->env->loop, &r->sub_timer);
    if (changed)
        open_listen(s); /* last: it may answer |r| at once */
    return true;
}

/* ---- MCP 2026-07-28, Multi Round-Trip Requests ---- */

static void mrtr_ready(struct mx_uprpc *r)
{
    struct mx_upsess *s = r->s;
    r->mrtr_wait = false;
    ev_timer_stop(s->env->loop, &r->mrtr_timer);
    /* from the loop: the caller may be inside mx_upsess_send */
    if (!ev_is_active(&s->kick))
        ev_timer_start(s->env->loop, &s->kick);
}

static void mrtr_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_uprpc *r = mx_container_of(w, struct mx_uprpc, mrtr_timer);
    struct mx_upfail fail;
    (void)loop;
    (void)revents;
    mx_upfail_proto(r->s->env->up->cfg, "its questions (input_required) were not answered in time",
                    &fail);
    rpc_finish(r, NULL, &fail);
}

static bool relayable(const char *m)
{
    return m && (strcmp(m, "sampling/createMessage") == 0 || strcmp(m, "elicitation/create") == 0 ||
                 strcmp(m, "roots/list") == 0);
}

/*
 * The answer |msg| to |op|'s request: when it is an input_required result,
 * take it here — each question goes to the caller as a request on the
 * request's on_message, and the request waits for the answers through
 * mx_upsess_send — and return true.
 */
static bool mrtr_begin(struct op *op, json_t *msg)
{
    struct mx_upsess *s = op->s;
    struct mx_uprpc *r = op->rpc;
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
        if (why == NULL && (!relayable(json_string_value(json_object_get(q, "method"))) ||
                            (p && !json_is_object(p))))
            why = "an input_required result asking what mcplex cannot relay";
    }
    if (why) {
        mx_upfail_proto(s->env->up->cfg, why, &fail);
        rpc_finish(r, NULL, &fail);
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
    ev_timer_start(s->env->loop, &r->mrtr_timer);
    if (json_array_size(asks) == 0) {
        mrtr_ready(r); /* only a requestState: go again at once */
    } else {
        r->in_ask = true;
        json_array_foreach(asks, i, q)
        {
            if (r->cancelled || r->cbs.on_message == NULL)
                break;
            (void)r->cbs.on_message(r, op->key, q, r->data);
        }
        r->in_ask = false;
        if (r->cancelled)
            rpc_free(r);
    }
    json_decref(asks);
    return true;
}

/* The caller's answer |msg| to one of the questions of an input_required
 * result. */
static void mrtr_answer(struct mx_upsess *s, json_t *msg)
{
    const char *id = json_string_value(json_object_get(msg, "id"));
    if (id == NULL || json_object_get(msg, "method")) {
        mx_log_debug(SUBSYS, "up:%s speaks %s, which has no client notifications; dropped", name(s),
                     MX_UP26_VERSION);
        return;
    }
    for (struct mx_uprpc *r = s->rpcs; r; r = r->next) {
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
    mx_log_debug(SUBSYS, "up:%s answer to no open question; dropped", name(s));
}

/* The answer to initialize. */
static void init_answered(struct op *op, json_t *msg)
{
    struct mx_upsess *s = op->s;
    struct mx_upfail fail;
    json_t *result = json_object_get(msg, "result");
    const char *v = json_string_value(json_object_get(result, "protocolVersion"));
    if (!json_is_object(result)) {
        const char *m =
            json_string_value(json_object_get(json_object_get(msg, "error"), "message"));
        char what[200];
        snprintf(what, sizeof(what), "initialize failed: %.150s", m ? m : "no result");
        mx_upfail_proto(s->env->up->cfg, what, &fail);
        session_init_failed(s, &fail);
        return;
    }
    if (v == NULL || !mx_rev_session_version_known(v)) {
        char what[200];
        snprintf(what, sizeof(what),
                 "initialize answered protocol version %.40s, which mcplex "
                 "does not speak",
                 v ? v : "(none)");
        mx_upfail_proto(s->env->up->cfg, what, &fail);
        session_init_failed(s, &fail);
        return;
    }
    snprintf(s->version, sizeof(s->version), "%s", v);
    free(s->sid);
    s->sid = op->sid ? mx_xstrdup(op->sid) : NULL;
    json_decref(s->init_result);
    s->init_result = json_incref(result);
    /* MCP 2025-06-18, Lifecycle: the client confirms with initialized before
     * anything else; some servers (server-everything) add tools then. */
    const char *note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
    if (op_start(s, OP_INITIALIZED, note, SEND_TIMEOUT_MS, &fail) == NULL)
        session_init_failed(s, &fail);
}

/* ---- message dispatch ---- */

static bool is_answer(struct op *op, json_t *msg)
{
    if (op->id == NULL || mx_rpc_classify(msg) != MX_RPC_RESPONSE)
        return false;
    return json_equal(json_object_get(msg, "id"), op->id);
}

/* MCP 2026-07-28, Tools, x-mcp-header: what a tools/list answer |msg| to
 * |r| says about each tool's Mcp-Param-* headers is kept for its calls, and
 * a tool whose annotations are invalid is left out (the specification says
 * clients exclude it). Returns the answer to pass on (new reference), or
 * NULL when |msg| is none of this. */
static json_t *tools_seen(struct mx_upsess *s, struct mx_uprpc *r, json_t *msg)
{
    const char *m = json_string_value(json_object_get(r->msg, "method"));
    json_t *result = json_object_get(msg, "result");
    if (m == NULL || strcmp(m, "tools/list") != 0 ||
        !json_is_array(json_object_get(result, "tools")))
        return NULL;
    if (s->env->tool_params == NULL)
        s->env->tool_params = json_object();
    json_t *dropped = json_array();
    json_t *out = json_copy(msg);
    json_object_set_new(out, "result", mx_up26_tools_seen(result, s->env->tool_params, dropped));
    size_t i;
    json_t *n;
    json_array_foreach(dropped, i, n)
    {
        mx_log_warn(SUBSYS, "up:%s tool '%.80s' left out: its x-mcp-header annotations are invalid",
                    name(s), json_string_value(n));
    }
    json_decref(dropped);
    return out;
}

/*
 * The one request in flight on |s|, or NULL when there are none or several.
 * MCP 2025-11-25, Streamable HTTP: a server SHOULD send what belongs to a
 * request on that request's stream, but SDK servers asking "from the
 * server" (not from the handler) put their sampling or elicitation on the
 * GET stream; while one request runs, that is what they belong to.
 */
static struct mx_uprpc *sole_rpc(struct mx_upsess *s)
{
    struct mx_uprpc *only = NULL;
    for (struct mx_uprpc *r = s->rpcs; r; r = r->next) {
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
static void handle_msg(struct op *op, json_t *msg)
{
    struct mx_upsess *s = op->s;
    if (op->answered && op->kind != OP_GET)
        return; /* after the answer nothing more belongs to the request */
    if (is_answer(op, msg)) {
        op->answered = true;
        if (op->kind == OP_INIT) {
            init_answered(op, msg);
        } else if (op->kind == OP_DISCOVER) {
            discover_decided(s, op->status, msg);
        } else if (op->kind == OP_LISTEN) {
            listen_refused(op, msg);
        } else if (op->rpc && !mrtr_begin(op, msg)) {
            struct mx_uprpc *r = op->rpc;
            json_t *seen = s->modern ? tools_seen(s, r, msg) : NULL;
            json_t *ans = seen ? seen : msg;
            if (r->round == 0) {
                rpc_finish(r, ans, NULL);
            } else {
                /* the caller's id, not the one of the last round */
                json_t *copy = json_copy(ans);
                json_object_set(copy, "id", json_object_get(r->msg, "id"));
                rpc_finish(r, copy, NULL);
                json_decref(copy);
            }
            json_decref(seen);
        }
        return;
    }
    if (op->kind == OP_LISTEN) {
        const char *m = json_string_value(json_object_get(msg, "method"));
        if (m && strcmp(m, "notifications/subscriptions/acknowledged") == 0) {
            listen_acked(op, msg);
            return;
        }
        s->listen_failures = 0;
        /* the subscription id is the stream's, not for mcplex's clients */
        json_t *params = json_object_get(msg, "params");
        json_t *meta = json_object_get(params, "_meta");
        json_object_del(meta, MX_REV_META_SUBSCRIPTION_ID);
        if (json_is_object(meta) && json_object_size(meta) == 0)
            json_object_del(params, "_meta");
    }
    if ((op->kind == OP_RPC || op->kind == OP_RESUME) && op->rpc) {
        struct mx_uprpc *r = op->rpc;
        int rc = r->cbs.on_message ? r->cbs.on_message(r, op->key, msg, r->data) : 0;
        if (!op->dead && rc == MX_EAGAIN)
            op->paused = true;
        return;
    }
    if (op->kind == OP_GET && mx_rpc_classify(msg) == MX_RPC_REQUEST &&
        relayable(json_string_value(json_object_get(msg, "method")))) {
        struct mx_uprpc *r = sole_rpc(s);
        if (r) {
            (void)r->cbs.on_message(r, op->key, msg, r->data);
            return;
        }
    }
    if (s->state != US_CLOSED && s->cbs.on_message)
        s->cbs.on_message(s, op->key, msg, s->data);
}

static void handle_text(struct op *op, struct mx_str text)
{
    json_t *msg = mx_rpc_parse(text);
    if (msg == NULL) {
        mx_log_debug(SUBSYS, "up:%s sent a message that is not JSON; ignored", name(op->s));
        return;
    }
    trace(op->s, "s2c", text);
    if (json_is_object(msg))
        handle_msg(op, msg);
    json_decref(msg);
}

static int on_sse_event(const struct mx_sse_event *ev, void *data)
{
    struct op *op = data;
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
    struct op *op = data;
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
    if (op->kind == OP_GET && is_2xx(status) && op->is_sse)
        op->s->get_failures = 0;
}

static int on_data(struct mx_ureq *u, const char *p, size_t len, void *data)
{
    struct op *op = data;
    (void)u;
    if (op->dead)
        return 0;
    if (!is_2xx(op->status) || !op->is_sse) {
        if (mx_buf_append(&op->body, p, len) && is_2xx(op->status) && !op->overflow) {
            mx_log_warn(SUBSYS, "up:%s answer over %u bytes; dropped", name(op->s), JSON_BODY_CAP);
            op->overflow = true;
        }
        return 0;
    }
    op_enter(op);
    int rc = mx_sse_decode(&op->sse, p, len);
    if (rc == MX_ELIMIT && !op->dead)
        mx_log_warn(SUBSYS, "up:%s SSE event over %u bytes; dropped", name(op->s), SSE_EVENT_CAP);
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

static void op_failed(struct op *op, const struct mx_upfail *fail)
{
    struct mx_upsess *s = op->s;
    switch (op->kind) {
    case OP_INIT:
    case OP_INITIALIZED:
    case OP_DISCOVER:
        session_init_failed(s, fail);
        break;
    case OP_LISTEN:
        mx_log_debug(SUBSYS, "up:%s subscriptions/listen ended: %s", name(s), fail->message);
        break;
    case OP_RPC:
    case OP_RESUME:
        if (op->rpc)
            rpc_finish(op->rpc, NULL, fail);
        break;
    case OP_GET:
        s->get_failures++;
        mx_log_debug(SUBSYS, "up:%s GET stream ended: %s", name(s), fail->message);
        break;
    case OP_SEND:
        mx_log_debug(SUBSYS, "up:%s message not delivered: %s", name(s), fail->message);
        break;
    }
}

/* The upstream says the session we used is gone. */
static void op_expired(struct op *op)
{
    struct mx_upsess *s = op->s;
    if (s->modern && op->key == s->key)
        s->env->era = MX_UPSESS_ERA_UNKNOWN; /* ask it again with server/discover */
    session_forget(s, op->key);
    if (op->kind == OP_RPC && op->rpc) {
        struct mx_uprpc *r = op->rpc;
        struct mx_upfail fail;
        op->rpc = NULL;
        r->op = NULL;
        if (r->retried) {
            mx_upfail_proto(s->env->up->cfg, "it forgot a session it had just opened", &fail);
            rpc_finish(r, NULL, &fail);
            return;
        }
        /* MCP 2025-06-18, Session Management: a 404 means the request was not
         * processed, so it may go again on a new session. */
        r->retried = true;
        if (s->state == US_READY)
            op_launch_rpc(r);
        else
            session_init(s);
    } else if (op->kind == OP_GET) {
        /* nothing waits on it; the next request re-initializes */
    }
}

/* MCP 2025-11-25, Streamable HTTP, Resumability and Redelivery: a 2025
 * session's stream that ended (closed, or broken) before the answer, after
 * an event with an id, is not a cancel: the request may have run, so it is
 * not sent again; its stream is reconnected with GET and Last-Event-ID once
 * the server's retry time has passed. Returns true when that is under way. */
static bool resume_later(struct op *op, int err)
{
    struct mx_upsess *s = op->s;
    struct mx_uprpc *r = op->rpc;
    struct mx_str id = mx_buf_str(&op->sse.id);
    if (s->modern || r == NULL || op->answered || !op->is_sse || !is_2xx(op->status) ||
        (op->kind != OP_RPC && op->kind != OP_RESUME) || err == MX_ETIMEDOUT ||
        r->resumes >= RESUME_MAX || s->state != US_READY || op->key != s->key ||
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
                 name(s), wait);
    ev_timer_set(&r->resume_timer, (double)wait / 1000.0, 0.0);
    ev_timer_start(s->env->loop, &r->resume_timer);
    return true;
}

static void resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_uprpc *r = mx_container_of(w, struct mx_uprpc, resume_timer);
    struct mx_upsess *s = r->s;
    struct mx_upfail fail;
    (void)loop;
    (void)revents;
    r->resuming = false;
    if (s->state != US_READY) {
        mx_upfail_proto(s->env->up->cfg, "its session ended while a request's stream was resumed",
                        &fail);
        fail.code = MX_RPC_OUTCOME_UNKNOWN;
        rpc_finish(r, NULL, &fail);
        return;
    }
    struct op *op = op_start_msg(s, OP_RESUME, NULL, NULL, r->resume_id, r->timeout_ms, &fail);
    if (op == NULL) {
        rpc_finish(r, NULL, &fail);
        return;
    }
    r->resumes++;
    op->id = json_incref(json_object_get(r->msg, "id"));
    op->rpc = r;
    r->op = op;
}

static void on_done(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data)
{
    struct op *op = data;
    struct mx_upsess *s = op->s;
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
            mx_upfail_transport(s->env->up->cfg, err, info, &fail);
            op_failed(op, &fail);
        }
        goto out;
    }
    if (op->kind == OP_RESUME && !is_2xx(op->status)) {
        /* the request went out before: whatever the session says now, its
         * outcome is unknown, and it is not sent again */
        mx_upfail_status(s->env->up->cfg, op->status, &fail);
        fail.code = MX_RPC_OUTCOME_UNKNOWN;
        op_failed(op, &fail);
        goto out;
    }
    if (op->kind == OP_GET && op->status == 405) {
        /* MCP 2025-06-18 allows a server without a GET stream */
        s->get_unsupported = true;
        goto out;
    }
    /* MCP 2025-06-18, Session Management: 404 to a request with a session
     * id means the session is gone; server-everything says it with 400. */
    if (op->kind == OP_DISCOVER && !is_2xx(op->status)) {
        json_t *m = mx_rpc_parse(mx_buf_str(&op->body));
        if (m)
            trace(s, "s2c", mx_buf_str(&op->body));
        discover_decided(s, op->status, json_is_object(m) ? m : NULL);
        json_decref(m);
        goto out;
    }
    if (op->kind == OP_INIT && (op->status == 400 || op->status == 404 || op->status == 405))
        s->env->era = MX_UPSESS_ERA_UNKNOWN; /* perhaps a 2026-only server now */
    bool expired =
        op->sent_sid && op->kind != OP_INITIALIZED &&
        (op->status == 404 || (op->status == 400 && says_no_session(mx_buf_str(&op->body))));
    /* MCP 2026-07-28: -32022 says the version is not (or no longer)
     * spoken, a session error that the upstream is a 2025 one now; the
     * request did not run, so it may go again once the revision is known */
    if (s->modern && op->kind == OP_RPC && (op->status == 400 || op->status == 404)) {
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
            mx_upfail_proto(s->env->up->cfg, "an answer over the size limit", &fail);
            op_failed(op, &fail);
            goto out;
        }
        if (!op->is_sse && mx_buf_len(&op->body))
            handle_text(op, mx_buf_str(&op->body));
        if (op->dead || op->answered)
            goto out;
        if (op->kind == OP_INITIALIZED) {
            session_ready(s);
        } else if (op->kind == OP_RPC || op->kind == OP_RESUME || op->kind == OP_INIT ||
                   op->kind == OP_DISCOVER) {
            mx_upfail_proto(s->env->up->cfg,
                            op->is_sse ? "its stream ended before the answer"
                                       : "it answered a request without a response",
                            &fail);
            if (op->is_sse)
                fail.code = MX_RPC_OUTCOME_UNKNOWN;
            op_failed(op, &fail);
        } else if (op->kind == OP_GET) {
            s->get_failures++;
        }
        goto out;
    }
    /* An error status: a JSON-RPC error answering our request passes through
     * as the answer (a 400 for invalid params, a 500 with an error object). */
    if ((op->kind == OP_RPC || op->kind == OP_LISTEN) && op->id) {
        json_t *m = mx_rpc_parse(mx_buf_str(&op->body));
        if (m && is_answer(op, m) && json_object_get(m, "error")) {
            trace(s, "s2c", mx_buf_str(&op->body));
            handle_msg(op, m);
            json_decref(m);
            goto out;
        }
        json_decref(m);
    }
    mx_upfail_status(s->env->up->cfg, op->status, &fail);
    if (op->status == 401 || op->status == 403)
        mx_log_warn(SUBSYS, "up:%s answered %ld: credential refused", name(s), op->status);
    op_failed(op, &fail);
out:
    if (!op->dead)
        op_kill(op);
    if (op->kind == OP_LISTEN)
        listen_ended(s, op);
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
static void send_bye(struct mx_upsess *s)
{
    struct mx_upreq_hdrs h;
    struct mx_upsess_env *env = s->env;
    mx_upreq_hdrs_init(&h);
    mx_upreq_hdrs_add(&h, "Mcp-Session-Id", mx_str_cstr(s->sid));
    if (s->version[0] && strcmp(s->version, "2025-03-26") > 0)
        mx_upreq_hdrs_add(&h, "MCP-Protocol-Version", mx_str_cstr(s->version));
    mx_upreq_hdrs_auth(&h, s->env->up->cfg);
    struct mx_ureq_opts o;
    memset(&o, 0, sizeof(o));
    o.method = "DELETE";
    o.url = s->env->up->cfg->url;
    o.headers = h.lines;
    o.header_cnt = h.cnt;
    o.timeout_ms = BYE_TIMEOUT_MS;
    o.connect_timeout_ms = BYE_TIMEOUT_MS;
    o.may_repeat = true;
    o.ca_file = s->env->up->cfg->ca;
    o.pool = s->env->up->pool; /* its connection is closed at idle too */
    struct mx_upsess_bye *b = mx_xcalloc(1, sizeof(*b));
    b->env = env;
    if (mx_ureq_start(s->env->uc, &o, &bye_cbs, b, &b->u) == 0) {
        b->next = env->byes;
        env->byes = b;
    } else {
        free(b);
    }
    mx_upreq_hdrs_clear(&h);
}

void mx_upsess_env_clear(struct mx_upsess_env *env)
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

/* ---- public ---- */

static bool has_waiting(const struct mx_upsess *s)
{
    for (const struct mx_uprpc *r = s->rpcs; r; r = r->next) {
        if (r->op == NULL && !r->mrtr_wait && !r->resuming && !r->sub_wait)
            return true;
    }
    return false;
}

static void kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_upsess *s = mx_container_of(w, struct mx_upsess, kick);
    (void)loop;
    (void)revents;
    if (s->state == US_CLOSED)
        return;
    s_ref(s);
    if (s->state == US_READY)
        launch_waiting(s);
    else if (s->state == US_IDLE && has_waiting(s))
        session_init(s);
    s_unref(s);
}

struct mx_upsess *mx_upsess_new(struct mx_upsess_env *env, const json_t *caps,
                                const char *trace_session, const struct mx_upsess_cbs *cbs,
                                void *data)
{
    if (env->up->cfg->transport == MX_TRANSPORT_STDIO)
        return mx_upsess_stdio_new(env, caps, trace_session, cbs, data);
    if (env->up->cfg->transport == MX_TRANSPORT_SSE)
        return mx_upsess_sse_new(env, caps, trace_session, cbs, data); /* upsess_sse.h */
    struct mx_upsess *s = mx_xcalloc(1, sizeof(*s));
    s->env = env;
    s->cbs = *cbs;
    s->data = data;
    s->refs = 1;
    s->state = US_IDLE;
    s->caps = caps ? json_deep_copy(caps) : json_object();
    s->trace_session = trace_session ? mx_xstrdup(trace_session) : NULL;
    ev_timer_init(&s->kick, kick_cb, 0.0, 0.0);
    ev_timer_init(&s->listen_timer, listen_timer_cb, 0.0, 0.0);
    live_cnt++;
    return s;
}

void mx_upsess_close(struct mx_upsess *s)
{
    if (mx_upsess_is_stdio(s)) {
        mx_upsess_stdio_close(s);
        return;
    }
    if (mx_upsess_is_sse(s)) {
        mx_upsess_sse_close(s);
        return;
    }
    if (s == NULL || s->state == US_CLOSED)
        return;
    bool had_session = s->state == US_READY && s->sid;
    set_state(s, US_CLOSED);
    ev_timer_stop(s->env->loop, &s->kick);
    ev_timer_stop(s->env->loop, &s->listen_timer);
    while (s->rpcs)
        rpc_drop(s->rpcs);
    for (struct op *op = s->ops, *n; op; op = n) {
        n = op->next;
        op_kill(op);
    }
    if (had_session)
        send_bye(s);
    s_unref(s);
}

uint64_t mx_upsess_key(const struct mx_upsess *s)
{
    if (mx_upsess_is_stdio(s))
        return mx_upsess_stdio_key(s);
    if (mx_upsess_is_sse(s))
        return mx_upsess_sse_key(s);
    return s && s->state == US_READY ? s->key : 0;
}

bool mx_upsess_is_ready(const struct mx_upsess *s)
{
    if (mx_upsess_is_stdio(s))
        return mx_upsess_stdio_is_ready(s);
    if (mx_upsess_is_sse(s))
        return mx_upsess_sse_is_ready(s);
    return s && s->state == US_READY;
}

json_t *mx_upsess_init_result(const struct mx_upsess *s)
{
    if (mx_upsess_is_stdio(s))
        return mx_upsess_stdio_init_result(s);
    if (mx_upsess_is_sse(s))
        return mx_upsess_sse_init_result(s);
    return s ? s->init_result : NULL;
}

int mx_upsess_request(struct mx_upsess *s, json_t *msg, long timeout_ms,
                      const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out)
{
    if (mx_upsess_is_stdio(s))
        return mx_upsess_stdio_request(s, msg, timeout_ms, cbs, data, out);
    if (mx_upsess_is_sse(s))
        return mx_upsess_sse_request(s, msg, timeout_ms, cbs, data, out);
    *out = NULL;
    if (s == NULL || s->state == US_CLOSED || cbs == NULL || cbs->on_done == NULL ||
        (msg && json_object_get(msg, "id") == NULL) || s->env->up->cfg->url == NULL)
        return MX_EINVAL;
    struct mx_uprpc *r = mx_xcalloc(1, sizeof(*r));
    r->s = s;
    r->msg = msg ? json_incref(msg) : NULL;
    r->timeout_ms = timeout_ms;
    r->cbs = *cbs;
    r->data = data;
    r->seq = ++s->seq;
    ev_init(&r->mrtr_timer, mrtr_timeout);
    ev_init(&r->resume_timer, resume_cb);
    r->resume_ms = -1;
    ev_init(&r->sub_timer, sub_timeout);
    /* at the tail: waiting requests go out in the order they came */
    struct mx_uprpc **pp = &s->rpcs;
    struct mx_uprpc *last = NULL;
    while (*pp) {
        last = *pp;
        pp = &(*pp)->next;
    }
    r->prev = last;
    *pp = r;
    live_cnt++;
    *out = r;
    /* started from the loop: no callback may run from inside this call */
    if (!ev_is_active(&s->kick))
        ev_timer_start(s->env->loop, &s->kick);
    return 0;
}

void mx_uprpc_cancel(struct mx_uprpc *r)
{
    if (mx_upsess_is_stdio(r)) {
        mx_uprpc_stdio_cancel(r);
        return;
    }
    if (mx_upsess_is_sse(r)) {
        mx_uprpc_sse_cancel(r);
        return;
    }
    if (r == NULL || r->in_done || r->cancelled)
        return;
    rpc_drop(r);
}

void mx_uprpc_resume(struct mx_uprpc *r)
{
    if (mx_upsess_is_stdio(r)) {
        mx_uprpc_stdio_resume(r);
        return;
    }
    if (mx_upsess_is_sse(r)) {
        mx_uprpc_sse_resume(r);
        return;
    }
    if (r == NULL || r->op == NULL || !r->op->paused)
        return;
    r->op->paused = false;
    if (r->op->call)
        mx_upcall_resume(r->op->call);
}

const char *mx_uprpc_input_key(const struct mx_uprpc *r, const json_t *id)
{
    if (r == NULL || mx_upsess_is_stdio(r) || mx_upsess_is_sse(r) || !r->mrtr_wait ||
        !json_is_string(id))
        return NULL;
    return json_string_value(json_object_get(r->mrtr_ask, json_string_value(id)));
}

void mx_upsess_send(struct mx_upsess *s, json_t *msg, uint64_t key)
{
    if (mx_upsess_is_stdio(s)) {
        mx_upsess_stdio_send(s, msg, key);
        return;
    }
    if (mx_upsess_is_sse(s)) {
        mx_upsess_sse_send(s, msg, key);
        return;
    }
    struct mx_upfail fail;
    if (s == NULL || s->state != US_READY || (key && key != s->key)) {
        if (s)
            mx_log_debug(SUBSYS, "up:%s message for a session that is gone; dropped", name(s));
        return;
    }
    if (s->modern) {
        mrtr_answer(s, msg);
        return;
    }
    char *body = mx_rpc_dump(msg);
    if (op_start(s, OP_SEND, body, SEND_TIMEOUT_MS, &fail) == NULL)
        mx_log_debug(SUBSYS, "up:%s message not sent: %s", name(s), fail.message);
    free(body);
}
