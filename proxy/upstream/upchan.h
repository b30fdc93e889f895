/* SPDX-License-Identifier: MIT */
/*
 * The session core of the transports that carry every JSON-RPC message on a
 * channel of their own (upsess_stdio.c: a child process; upsess_sse.c: the
 * legacy HTTP+SSE stream and its POSTs). It owns what such a session is
 * whatever the channel: its states and their log lines, its refs, the timer
 * that starts its work from the loop, the bound on starting, initialize and
 * initialized (and server/discover after an initialize refused for
 * 2026-07-28, for a transport that asks it), the backoff after failed
 * starts, a channel that ends under a ready session, the dispatch of what
 * the upstream sends (answers, its requests, notifications, batches), and
 * the close, request and send ops of upsess_int.h. Each transport fills one
 * struct mx_upchan_ops with what is its own: opening the channel, writing
 * one message, ending it, and the few log lines that name it. The request
 * table is upmsg.c's.
 *
 *   idle --a request waits--> opening (a transport that has one) --> init
 *        (initialize sent) --answer + initialized--> ready
 *   init --initialize refused with -32022 naming 2026-07-28
 *        (ops->discover)--> init (server/discover sent) --a result listing
 *        2026-07-28--> ready (modern: no initialized, each request carries
 *        the 2026-07-28 _meta); --another answer--> idle (failure);
 *        --no answer by the next bound--> initialize again
 *   opening, init --failure, no answer in time--> idle (waiting requests
 *        fail; the next start waits out a backoff)
 *   ready --the channel ends--> idle (sent requests fail, waiting ones start
 *        a new channel)
 *   any --close--> closed
 *
 * Re-entrancy: callers' callbacks may cancel requests or close the session;
 * a request and the session stay allocated while their code is on the stack
 * (refs) and go afterwards.
 */
#ifndef MX_UPCHAN_H
#define MX_UPCHAN_H

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "model.h"
#include "str.h"
#include "upmsg.h"
#include "upsess_int.h"

enum mx_upchan_state {
    MX_UPCHAN_IDLE = 0,
    MX_UPCHAN_OPENING = 1, /* the channel opens; nothing can be written yet */
    MX_UPCHAN_INIT = 2,    /* initialize is written, its answer awaited */
    MX_UPCHAN_READY = 3,
    MX_UPCHAN_CLOSED = 4,
};
#define MX_UPCHAN_STATES 5

/* What a message mcplex writes is, for the transport's write op. */
enum mx_upchan_msg {
    MX_UPCHAN_INITIALIZE = 0,
    MX_UPCHAN_INITIALIZED = 1,
    MX_UPCHAN_NOTE = 2, /* mcplex's own: a ping's answer, a cancellation */
    MX_UPCHAN_SEND = 3, /* the caller's (mx_upsess_send) */
};

/* What came on the channel that is no message, for the junk op. */
enum mx_upchan_junk {
    MX_UPCHAN_JUNK_TEXT = 0, /* not a JSON object or array */
    MX_UPCHAN_JUNK_JSON = 1, /* JSON that is not JSON-RPC */
    MX_UPCHAN_JUNK_ITEM = 2, /* a batch item that is not an object */
};

struct mx_upchan;

/* One transport's part. Every function gets a session of that transport
 * that is not closed, unless it says otherwise. */
struct mx_upchan_ops {
    const struct mx_upsess_ops *transport; /* its row (upsess_int.h) */
    const char *subsys;                    /* its log subsystem */
    /* The states as its log lines name them; NULL: never entered. */
    const char *state_names[MX_UPCHAN_STATES];
    uint64_t key_bit;   /* set in each of its session keys: no other transport's */
    uint64_t *next_key; /* its count of sessions made ready, from 1 */
    /* How a ready session goes on once its channel ended ("up:<name>
     * <how>; " comes first). */
    const char *lost_then;
    /*
     * Ready: initialized counts as taken once written (a pipe); false: the
     * transport calls mx_upchan_ready once the upstream accepted it.
     */
    bool ready_on_write;
    /* An initialize refused the way a server that speaks only MCP
     * 2026-07-28 refuses it (-32022, data.supported naming it) goes on with
     * server/discover and, when that lists 2026-07-28, stateless requests.
     * A 2025 server never sees a server/discover. */
    bool discover;
    /* Open a channel: idle, requests wait, conn and started_at are new. It
     * sets the state, arms the bound (mx_upchan_wait_init) or calls
     * mx_upchan_start_failed. */
    void (*start)(struct mx_upchan *c);
    /* Write |msg| (borrowed), which is |what|: 0 once it went, or a negative
     * mx_err after doing what such a failure does on this transport
     * (logging it, failing the start). */
    int (*write)(struct mx_upchan *c, enum mx_upchan_msg what, const json_t *msg);
    /* Send the waiting request |r| (ready, r->msg set): r->sent and r->key
     * once it went, or finish it. Returns false to send no more for now. */
    bool (*launch)(struct mx_upchan *c, struct mx_upmsg_rpc *r);
    /* Drop the channel (also for a closed session); the requests stay. */
    void (*end)(struct mx_upchan *c);
    /* Optional: the session closes (after end): drop what outlives a
     * channel. */
    void (*close)(struct mx_upchan *c);
    /* Read the channel again: no request pauses it any more. */
    void (*resume)(struct mx_upchan *c);
    /* Optional: |r| leaves the table: drop what links to it. */
    void (*forget)(struct mx_upchan *c, struct mx_upmsg_rpc *r);
    /* The bound on starting fired (opening or init): true after filling |f|
     * to fail the start, false when the transport waits on (it armed the
     * bound again). */
    bool (*init_wait)(struct mx_upchan *c, struct mx_upfail *f);
    /* The session is ready (key, ready_at and init_result are new): say so. */
    void (*ready)(struct mx_upchan *c);
    /* A start failed with |f|; the next is |ms| away (retry_at): say so. */
    void (*failed)(struct mx_upchan *c, const struct mx_upfail *f, int64_t ms);
    /* Optional: when there is more to say of the timeout of |r| than how
     * long it was, true after filling |f|. */
    bool (*timed_out)(struct mx_upchan *c, struct mx_upmsg_rpc *r, struct mx_upfail *f);
    /* |what| came on the channel and was ignored: say so, or not. */
    void (*junk)(struct mx_upchan *c, enum mx_upchan_junk what);
    /* The last ref went (closed or never used): free the transport's parts
     * and the object. */
    void (*free)(struct mx_upchan *c);
};

/* The first member of a transport's session object. */
struct mx_upchan {
    struct mx_upsess base; /* first (upsess_int.h) */
    const struct mx_upchan_ops *ops;
    const struct mx_server_cfg *cfg;
    int refs;
    enum mx_upchan_state state;
    uint64_t conn;        /* channels started so far; the current one's number */
    json_t *init_ids;     /* ids of the initialize requests written, unanswered */
    json_t *discover_ids; /* ids of the server/discover requests written, unanswered */
    bool discovering;     /* the start waits for server/discover, no initialize yet */
    bool modern;          /* the channel speaks MCP 2026-07-28: stateless requests */
    ev_timer kick;        /* starts and launches from the loop, never from a caller's call */
    ev_timer init_wait;   /* bounds starting (ops->init_wait) */
    ev_tstamp started_at; /* the current channel started */
    ev_tstamp ready_at;   /* it became ready */
    ev_tstamp retry_at;   /* no start before this */
    unsigned failures;    /* starts in a row that did not last */
    bool no_channel;      /* nothing to open (no url): requests are refused */
    struct mx_upmsg_q q;  /* the requests */
};

/* Fill |c|, a new idle session of |ops| (as the open op of upsess_int.h
 * gets its arguments), holding one ref: the close op's. */
void mx_upchan_init(struct mx_upchan *c, const struct mx_upchan_ops *ops, struct mx_upsess_env *env,
                    const json_t *caps, const char *trace_session, const struct mx_upsess_cbs *cbs,
                    void *data);

void mx_upchan_ref(struct mx_upchan *c);
/* May free |c| (ops->free). */
void mx_upchan_unref(struct mx_upchan *c);

/* Go to |st|, logging the change at debug level. */
void mx_upchan_set_state(struct mx_upchan *c, enum mx_upchan_state st);

/* Run the session's work from the loop after |after_s| (or sooner, if it is
 * due sooner already): start a channel for waiting requests, or send them. */
void mx_upchan_kick(struct mx_upchan *c, double after_s);

/* (Re)arm the bound on starting to fire after |after_s|. */
void mx_upchan_wait_init(struct mx_upchan *c, double after_s);

/* Write initialize with id "mcplex-init-<n>", offering the session's
 * capabilities, and expect its answer: returns what ops->write returned. */
int mx_upchan_send_initialize(struct mx_upchan *c, unsigned long long n);

/* No answer yet to the initialize (or the server/discover after its
 * refusal) by a bound: initialize again (the first line may have been lost;
 * a refusal asks server/discover again, and a late discover answer listing
 * 2026-07-28 still makes the session modern). Returns what ops->write
 * returned. */
int mx_upchan_send_again(struct mx_upchan *c);

/* The message to write for the request |r| (new reference): with the
 * 2026-07-28 _meta on a modern channel (up2026.h), else without the keys
 * only 2026-07-28 has. */
json_t *mx_upchan_shape(const struct mx_upchan *c, const struct mx_upmsg_rpc *r);

/* Initialized was taken: the session is ready; waiting requests go and
 * on_ready runs. */
void mx_upchan_ready(struct mx_upchan *c);

/* End the channel (ops->end) and what hangs on it: the bound on starting,
 * the key, the paused reads. The session is idle; its requests stay. */
void mx_upchan_end(struct mx_upchan *c);

/* Starting failed with |f|: the channel ends, the next start waits out a
 * backoff, and the waiting requests fail with |f|. Nothing on a closed
 * session. */
void mx_upchan_start_failed(struct mx_upchan *c, const struct mx_upfail *f);

/* The channel of a ready session ended (|how|: what happened, for the log
 * and the failures): the upstream's session is gone, the sent requests fail
 * (their outcome is unknown), and the waiting ones start a new channel.
 * Nothing on a closed session. */
void mx_upchan_lost(struct mx_upchan *c, const char *how);

/*
 * |text| came on the channel: one JSON-RPC message or a batch of them,
 * traced and dispatched: initialize's answer, answers to the requests,
 * pings before the session is ready, what mx_upmsg_route gives a request,
 * and the rest to the session's on_message. Returns MX_EAGAIN when a
 * request asked to stop reading the channel (its on_message returned
 * MX_EAGAIN), else 0.
 */
int mx_upchan_input(struct mx_upchan *c, struct mx_str text);

/* The ops of upsess_int.h of the same names, for sessions of these
 * transports. */
void mx_upchan_close(struct mx_upsess *s);
int mx_upchan_request(struct mx_upsess *s, json_t *msg, long timeout_ms,
                      const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out);
void mx_upchan_send(struct mx_upsess *s, json_t *msg);

#endif
