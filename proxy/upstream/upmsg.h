/* SPDX-License-Identifier: MIT */
/*
 * What the upstream transports share beyond upsess_int.h. Every transport
 * that opens MCP sessions (upsess_http.c, upsess_sse.c, upsess_stdio.c):
 * the messages mcplex writes itself (initialize, initialized, a ping's
 * answer, a cancellation) and the check of an initialize answer. The
 * transports that carry every JSON-RPC message on a channel of their own
 * (stdio, the legacy HTTP+SSE stream): which requests may make a server ask
 * the client something, failure messages naming the server, and the table
 * of a session's requests: made in order, waiting until sent, matched to
 * answers by id and to progress by token, paused and resumed, timed out,
 * cancelled, failed together when the channel breaks. Their sessions
 * themselves are upchan.c's.
 *
 * Re-entrancy: callers' callbacks may cancel requests or close the session;
 * a request stays allocated while its code is on the stack (refs), and the
 * session while the table holds it (ops->hold/release).
 */
#ifndef MX_UPMSG_H
#define MX_UPMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "model.h"
#include "upreq.h"
#include "upsess_int.h"

/* The initialize request with id |id| (borrowed), offering |caps| (new
 * reference). */
json_t *mx_upmsg_initialize(const json_t *caps, json_t *id);
/* notifications/initialized (new reference). */
json_t *mx_upmsg_initialized(void);
/* The empty answer to the ping request |req| (new reference). */
json_t *mx_upmsg_ping_answer(const json_t *req);
/* notifications/cancelled for request |id| because of |reason| (new
 * reference). */
json_t *mx_upmsg_cancelled(const json_t *id, const char *reason);

/* Whether the answer |msg| to initialize opens a session mcplex can use:
 * returns true, or false after filling |f| (a protocol error). */
bool mx_upmsg_init_ok(const struct mx_server_cfg *cfg, const json_t *msg, struct mx_upfail *f);

/* Can a request of |method| make the server ask the client something
 * (sampling, elicitation, roots)? Lists, pings and the like cannot. */
bool mx_upmsg_may_ask(const char *method);

/* Fill |f|: |code|, |reason| and "upstream '<name>' " + the formatted rest. */
void mx_upmsg_fail(const struct mx_server_cfg *cfg, int code, const char *reason,
                   struct mx_upfail *f, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

struct mx_upmsg_q;

/* A request of such a session. */
struct mx_upmsg_rpc {
    struct mx_uprpc base; /* first (upsess_int.h): its session's transport */
    struct mx_upmsg_q *q;
    struct mx_upmsg_rpc *prev;
    struct mx_upmsg_rpc *next;
    json_t *msg;   /* NULL: connect only */
    json_t *id;    /* borrowed from msg */
    json_t *token; /* params._meta.progressToken, borrowed from msg */
    const char *method;
    long timeout_ms;
    ev_timer timer;
    struct mx_uprpc_cbs cbs;
    void *data;
    void *link;   /* the transport's own (upsess_sse.c: the POST carrying it) */
    uint64_t key; /* session key it was sent under; 0: waiting */
    uint64_t seq; /* order of creation within the session */
    int refs;
    bool sent;
    bool cancelled; /* notifications/cancelled went for it */
    bool paused;
    bool dead; /* cancelled or finished: no more callbacks */
};

struct mx_upmsg_q_ops {
    /* |r| leaves the table: drop what links to it (optional). */
    void (*forget)(struct mx_upmsg_rpc *r, void *owner);
    /* No request pauses the channel any more: read it again. */
    void (*resume)(void *owner);
    /* The timer of |r| fired (a cancelled request's grace is handled here). */
    void (*timeout)(struct mx_upmsg_rpc *r, void *owner);
    /* Keep the session allocated while callbacks run, and let it go. */
    void (*hold)(void *owner);
    void (*release)(void *owner);
};

struct mx_upmsg_q {
    struct ev_loop *loop;
    const struct mx_upsess_ops *transport; /* of the session, for its requests */
    const struct mx_server_cfg *cfg;
    const struct mx_upmsg_q_ops *ops;
    void *owner;
    struct mx_upmsg_rpc *head; /* every request, in the order made */
    struct mx_upmsg_rpc *tail;
    uint64_t seq; /* requests made so far */
    size_t paused_cnt;
};

void mx_upmsg_q_init(struct mx_upmsg_q *q, struct ev_loop *loop,
                     const struct mx_upsess_ops *transport, const struct mx_server_cfg *cfg,
                     const struct mx_upmsg_q_ops *ops, void *owner);

/* A new request at the tail, waiting, its timer running, in |*out| (as
 * mx_upsess_request, which has checked the arguments). */
void mx_upmsg_add(struct mx_upmsg_q *q, json_t *msg, long timeout_ms,
                  const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out);
void mx_upmsg_ref(struct mx_upmsg_rpc *r);
void mx_upmsg_unref(struct mx_upmsg_rpc *r);
/* Out of the table, no timer, no callbacks; freed when unused. */
void mx_upmsg_kill(struct mx_upmsg_rpc *r);
/* As mx_uprpc_cancel and mx_uprpc_resume, for the ops of the transports
 * whose requests these are. */
void mx_upmsg_cancel(struct mx_uprpc *pub);
void mx_upmsg_resume(struct mx_uprpc *pub);
/* Deliver on_done once and forget the request. */
void mx_upmsg_finish(struct mx_upmsg_rpc *r, json_t *resp, const struct mx_upfail *fail);
/* Every request gone without callbacks (the session closes). */
void mx_upmsg_kill_all(struct mx_upmsg_q *q);

/* The first request sent (|sent|) or waiting, made no later than |max_seq|. */
struct mx_upmsg_rpc *mx_upmsg_first(struct mx_upmsg_q *q, bool sent, uint64_t max_seq);
/* Fail every request sent (|sent|) or waiting with |f|, one at a time,
 * looking again after each callback: it may cancel others or add new ones
 * (those wait for the next attempt). */
void mx_upmsg_fail_all(struct mx_upmsg_q *q, bool sent, const struct mx_upfail *f);
/* The channel is gone: nothing pauses it any more. */
void mx_upmsg_unpause_all(struct mx_upmsg_q *q);

/* The request sent with id |id|, or NULL. */
struct mx_upmsg_rpc *mx_upmsg_by_id(struct mx_upmsg_q *q, const json_t *id);
/*
 * Route |msg| (a notification or a request from a ready session |key|)
 * to the request it belongs to: progress by its token; a server's request
 * to the one request in flight that may ask (the channel carries no other
 * hint) when there is exactly one. Returns true when a request took it;
 * false: it is the session's (on_message).
 */
bool mx_upmsg_route(struct mx_upmsg_q *q, json_t *msg, uint64_t key);
/* |msg| was sent on session |key|: when it is notifications/cancelled for a
 * request of ours, that request gets a short grace for its answer instead
 * of its timeout (MCP 2025-06-18, Cancellation: none is due). */
void mx_upmsg_sent(struct mx_upmsg_q *q, const json_t *msg, uint64_t key);

#endif
