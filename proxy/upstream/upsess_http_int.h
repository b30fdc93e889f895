/* SPDX-License-Identifier: MIT */
/*
 * Inside the Streamable HTTP transport: what its two files share. The
 * exchanges, 2025 sessions and the transport's ops are upsess_http.c's;
 * what MCP 2026-07-28 changes (server/discover, stateless requests, the
 * subscriptions/listen stream, Multi Round-Trip Requests, the bridges for
 * the 2025 methods it lacks) is upsess_http26.c's. Both see the same
 * session, request and exchange objects, defined here, and call each other
 * through the functions declared here: mx_uph_* are upsess_http.c's,
 * mx_uph26_* upsess_http26.c's. Only for those two files.
 */
#ifndef MX_UPSESS_HTTP_INT_H
#define MX_UPSESS_HTTP_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ev.h>
#include <jansson.h>

#include "evsoon.h"
#include "buf.h"
#include "sse.h"
#include "upcall.h"
#include "upsess_int.h"

#define MX_UPH_INIT_TIMEOUT_MS 30000L /* initialize, server/discover */

enum mx_uph_state {
    MX_UPH_IDLE = 0,
    MX_UPH_INIT = 1,
    MX_UPH_READY = 2,
    MX_UPH_CLOSED = 3,
};

enum mx_uph_op_kind {
    MX_UPH_OP_INIT = 0,
    MX_UPH_OP_INITIALIZED = 1,
    MX_UPH_OP_RPC = 2,
    MX_UPH_OP_SEND = 3,
    MX_UPH_OP_GET = 4,
    MX_UPH_OP_DISCOVER = 5, /* server/discover: which revision the upstream speaks */
    MX_UPH_OP_LISTEN = 6,   /* 2026-07-28 subscriptions/listen: list changes */
    MX_UPH_OP_RESUME = 7,   /* GET with Last-Event-ID: a request's stream, resumed */
};

/* One HTTP exchange with the upstream. */
struct mx_uph_op {
    struct mx_uph_sess *s;
    enum mx_uph_op_kind kind;
    struct mx_uph_op *prev;
    struct mx_uph_op *next;
    struct mx_upcall *call;
    struct mx_uph_rpc *rpc; /* MX_UPH_OP_RPC, MX_UPH_OP_RESUME */
    json_t *id;             /* the id whose answer ends it (MX_UPH_OP_RPC, MX_UPH_OP_INIT); owned */
    uint64_t key;           /* session key when sent */
    uint64_t gen;           /* MX_UPH_OP_LISTEN: the generation of the subscriptions it asked for */
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

/* A caller's request: waits for the session, then rides one exchange (two
 * when the session had expired and is re-initialized). */
struct mx_uph_rpc {
    struct mx_uprpc base; /* first (upsess_int.h) */
    struct mx_uph_sess *s;
    struct mx_uph_rpc *prev;
    struct mx_uph_rpc *next;
    json_t *msg; /* NULL: connect only */
    long timeout_ms;
    struct mx_uprpc_cbs cbs;
    void *data;
    struct mx_uph_op *op; /* NULL while waiting for the session */
    uint64_t seq;         /* order of creation within the session */
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

struct mx_uph_sess {
    struct mx_upsess base; /* first (upsess_int.h) */
    ev_timer kick;         /* starts waiting requests from the loop, never from a caller's call */
    uint64_t seq;          /* requests made so far */
    int refs;
    enum mx_uph_state state;
    char *sid;
    char version[16];
    bool keep;                 /* not ended at close: the next run takes it up (mx_upsess_keep) */
    char *resume_sid;          /* an earlier run's session to go on in, before the first request */
    struct mx_uph_op *op_head; /* every exchange not yet freed */
    struct mx_uph_rpc *rpcs;
    struct mx_uph_rpc *rpcs_tail; /* where new requests go: in the order they came */
    uint64_t unlinks;             /* requests taken off the list, ever */
    struct mx_uph_op *get;
    bool get_unsupported;
    unsigned get_failures;
    bool modern;              /* 2026-07-28: no session; init_result is the discover result */
    struct mx_uph_op *listen; /* its subscriptions/listen stream */
    unsigned listen_failures;
    bool discover_again; /* server/discover was asked again after a -32022 */
    bool idle_gap;       /* idle_close closed a stream: on_gap at the next request */
    /* MCP 2026-07-28 has no resources/subscribe: the resources subscribed
     * to are the resourceSubscriptions of the listen stream, which is
     * opened again for each change (the old one ends once the new one is
     * acknowledged, so no list change falls between them) */
    struct mx_uph_op *listen_next; /* opened with the latest subscriptions, not yet acknowledged */
    json_t *subs;                  /* uri -> the generation that added it */
    json_t *task_subs;             /* task ids followed on the listen stream -> true */
    uint64_t sub_gen;              /* changes of subs so far */
    uint64_t acked_gen;            /* the generation the upstream acknowledged last */
    bool listen_dirty;             /* subs changed while listen_next was opening */
    ev_timer listen_timer; /* the next re-open, or the wait for listen_next's acknowledgement */
};

static inline const char *mx_uph_name(const struct mx_uph_sess *s)
{
    return s->base.env->up->cfg->name;
}

/* Start the waiting requests from the loop (never from a caller's call). */
static inline void mx_uph_kick(struct mx_uph_sess *s)
{
    mx_ev_soon(s->base.env->loop, &s->kick);
}

/* A server's request that mcplex relays to its client: sampling,
 * elicitation, roots. */
static inline bool mx_uph_relayable(const char *m)
{
    return m && (strcmp(m, "sampling/createMessage") == 0 || strcmp(m, "elicitation/create") == 0 ||
                 strcmp(m, "roots/list") == 0);
}

/* ---- upsess_http.c ---- */

void mx_uph_ref(struct mx_uph_sess *s);
void mx_uph_unref(struct mx_uph_sess *s);
/* No more callbacks for |op|; freed now or when its code leaves the stack. */
void mx_uph_op_kill(struct mx_uph_op *op);
/*
 * Start an exchange of |kind|: a POST of |body|, or a GET when |body| is
 * NULL (with Last-Event-ID |last_event_id| when not NULL). |m26| (may be
 * NULL) is the shaped 2026-07-28 request |body| carries, for its headers.
 * Returns the exchange, or NULL after filling |fail| when it could not start.
 */
struct mx_uph_op *mx_uph_op_start(struct mx_uph_sess *s, enum mx_uph_op_kind kind, const char *body,
                                  const json_t *m26, const char *last_event_id, long timeout_ms,
                                  struct mx_upfail *fail);
/* Deliver on_done and free |r|. */
void mx_uph_rpc_finish(struct mx_uph_rpc *r, json_t *resp, const struct mx_upfail *fail);
void mx_uph_rpc_free(struct mx_uph_rpc *r);
/* The session is ready (a new key): waiting requests go, on_ready. */
void mx_uph_session_ready(struct mx_uph_sess *s);
/* Making the session ready failed: back to idle, waiting requests fail. */
void mx_uph_init_failed(struct mx_uph_sess *s, const struct mx_upfail *fail);
/* Open a 2025 session: initialize (the state is MX_UPH_INIT). */
void mx_uph_initialize(struct mx_uph_sess *s);

/* ---- upsess_http26.c ---- */

/* Add the MCP 2026-07-28 headers of the shaped request |m26| to |h|.
 * Returns 0, or MX_ELIMIT / MX_EINVAL (mx_up26_headers). */
int mx_uph26_headers(struct mx_uph_sess *s, const json_t *m26, struct mx_upreq_hdrs *h);
/* Ask the upstream which revision it speaks (server/discover). */
void mx_uph26_discover(struct mx_uph_sess *s);
/* What server/discover said: HTTP |status| and its JSON-RPC |answer| (or
 * NULL). */
void mx_uph26_decided(struct mx_uph_sess *s, long status, const json_t *answer);
/* The session became ready; a modern one opens its listen stream. */
void mx_uph26_ready(struct mx_uph_sess *s);
/* The session is forgotten: its listen streams go; subscriptions waiting
 * for an acknowledgement wait for the session again. */
void mx_uph26_forget(struct mx_uph_sess *s);
/* Before |r| goes out: true when it was taken here instead (a bridged 2025
 * method, or a question answered with an error, which ends it). */
bool mx_uph26_take(struct mx_uph_rpc *r);
/* Start |r| on a modern session, shaped; NULL after filling |fail|. */
struct mx_uph_op *mx_uph26_start(struct mx_uph_rpc *r, struct mx_upfail *fail);
/* A request went out on |s|: a listen stream given up on, or closed at
 * idle_close, is opened again. */
void mx_uph26_launched(struct mx_uph_sess *s);
/* The answer |msg| to |op|'s request: true when it is an input_required
 * result, taken here (the questions go to the caller). */
bool mx_uph26_mrtr_begin(struct mx_uph_op *op, json_t *msg);
/* The answer to |r| as its caller gets it (new reference): |msg| itself,
 * or a tools/list without the tools 2026-07-28 excludes, with the caller's
 * id after later rounds. */
json_t *mx_uph26_answer(struct mx_uph_rpc *r, json_t *msg);
/* The answer |msg| to the listen stream |op|: an error refuses its
 * subscriptions. */
void mx_uph26_listen_refused(struct mx_uph_op *op, json_t *msg);
/* Another message on the listen stream |op|: true when it was its
 * acknowledgement, taken here; else it is passed on (without the
 * subscription id). */
bool mx_uph26_listen_msg(struct mx_uph_op *op, json_t *msg);
/* The listen stream |op| ended. */
void mx_uph26_listen_ended(struct mx_uph_sess *s, struct mx_uph_op *op);
/* The caller's answer |msg| to a question of an input_required result. */
void mx_uph26_send(struct mx_uph_sess *s, json_t *msg);
/* As mx_uprpc_input_key. */
const char *mx_uph26_input_key(const struct mx_uprpc *pub, const json_t *id);
/* Timer callbacks: the listen stream's (s->listen_timer), and a request's
 * wait for answers (r->mrtr_timer) and for an acknowledgement (r->sub_timer). */
void mx_uph26_listen_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);
void mx_uph26_mrtr_timeout(struct ev_loop *loop, ev_timer *w, int revents);
void mx_uph26_sub_timeout(struct ev_loop *loop, ev_timer *w, int revents);

#endif
