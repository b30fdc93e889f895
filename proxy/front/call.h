/* SPDX-License-Identifier: MIT */
/*
 * The client-facing call: one client request at an MCP endpoint (/mcp,
 * /mcp/<server>, mcplex stdio) from its arrival to its answer, and, when it
 * is routed, the upstream request made for it. The core owns the call's
 * life (references; freed when no code of it is on the stack), the answer
 * (JSON, or SSE from the first message that must come before it, with the
 * send cap and the drain that resumes the upstream stream), the upstream
 * side (the hold on the upstream, the id and progress token it gets there
 * and their way back, the in-flight count, the "still waking" progress,
 * cancellation), and what is told about it: the trace, and the done hook
 * that records per-method metrics and the access line of every call. The
 * views (2025 sessions, MCP 2026-07-28 stateless requests, merged or scoped
 * to one upstream) are tables of callbacks over it. The upstream-session
 * functions it calls are a table as well (struct mx_call_upops), so that
 * tests drive it without sockets. It does not parse requests, route them
 * or keep sessions: the views do.
 */
#ifndef MX_CALL_H
#define MX_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "req.h"
#include "rstream.h"
#include "upsess.h"

struct mx_call;
struct mx_callhub;
struct mx_idmap;

/* ---- what the front is given at creation (by ops, or by a test) ---- */

/*
 * The upstream-session functions of upsess.h the front calls, with their
 * contracts; mx_call_upsess holds the real ones. A test passes a table of
 * fakes instead.
 */
struct mx_call_upops {
    struct mx_upsess *(*open)(struct mx_upsess_env *env, const json_t *caps,
                              const char *trace_session, const struct mx_upsess_cbs *cbs,
                              void *data);
    void (*close)(struct mx_upsess *s);
    uint64_t (*key)(const struct mx_upsess *s);
    bool (*is_ready)(const struct mx_upsess *s);
    json_t *(*init_result)(const struct mx_upsess *s);
    int (*request)(struct mx_upsess *s, json_t *msg, long timeout_ms,
                   const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out);
    void (*cancel)(struct mx_uprpc *r);
    void (*resume)(struct mx_uprpc *r);
    const char *(*input_key)(const struct mx_uprpc *r, const json_t *id);
    void (*send)(struct mx_upsess *s, json_t *msg, uint64_t key);
    void (*env_clear)(struct mx_upsess_env *env);
    /* results as bytes (mx_uprpc_want_raw); both may be NULL: never */
    void (*want_raw)(struct mx_uprpc *r);
    struct mx_str (*raw_result)(const struct mx_uprpc *r);
    /* the request's bytes (mx_uprpc_give_text); NULL: never given */
    void (*give_text)(struct mx_uprpc *r, char *text, size_t len);
    /* mx_upsess_keep and mx_upsess_session_id; NULL: no session is kept */
    void (*keep)(struct mx_upsess *s, bool on, const char *sid, const char *version,
                 const json_t *init);
    const char *(*session_id)(const struct mx_upsess *s, const char **version);
};

extern const struct mx_call_upops mx_call_upsess;

/* How one client request ended, for the done hook (all borrowed, valid
 * during the call). */
struct mx_call_report {
    const char *http_method;      /* "POST", "GET", "DELETE", ... */
    const char *path;             /* "/mcp", "/mcp/<server>" */
    const char *rpc_method;       /* the JSON-RPC method, "response", "GET", "DELETE"; NULL: none */
    struct mx_upstream *up;       /* the upstream it went to or the endpoint serves; NULL: none */
    int status;                   /* HTTP status the client got; 0: none (it went away) */
    bool cancelled;               /* the client went away or cancelled before the answer */
    const struct mx_upfail *fail; /* why the upstream could not answer; NULL: it did, or
                                   * mcplex answered by itself */
    /* monotonic seconds (mx_call_now): the request was complete, the
     * upstream side began (routed, or waiting for upstreams' lists), and it
     * ended; 0 for what did not happen */
    double t_recv, t_up_start, t_up_done;
    unsigned long req_id;
    const char *session; /* the client session's id (2025 sessions); NULL: none */
    const char *target;  /* the tool or prompt name asked for; NULL: none */
    bool modern;         /* a 2026-07-28 request (stateless) */
};

/* What the front needs of the gateway, passed in at creation. */
struct mx_front_hooks {
    /* every client request, once, when it ended (answered or gone) */
    void (*done)(const struct mx_call_report *r, void *data);
    /* one JSON-RPC message between a client and mcplex (|dir| "c2s", "s2c") */
    void (*trace)(const char *dir, const char *server, const char *session, struct mx_str msg,
                  void *data);
    /* upstream |up| sent a notification naming a request it was not sent */
    void (*dropped)(struct mx_upstream *up, void *data);
    void *data;
};

/* CLOCK_MONOTONIC in seconds: the clock of struct mx_call_report. */
double mx_call_now(void);

/* ---- the hub: what every call of one front shares ---- */

/* The callbacks of the front that owns the hub. */
struct mx_callhub_cbs {
    /* a progress notification of upstream slot |up_idx| named no call of it
     * (|why|); may be NULL */
    void (*dropped)(size_t up_idx, const char *method, const char *why, void *data);
    void *data;
};

/* A new hub on |loop|; |hooks| and |ops| are copied (|ops| NULL: upsess.h's). */
struct mx_callhub *mx_callhub_new(struct ev_loop *loop, const struct mx_front_hooks *hooks,
                                  const struct mx_call_upops *ops,
                                  const struct mx_callhub_cbs *cbs);
/* Every call must have ended; accepts NULL. */
void mx_callhub_free(struct mx_callhub *h);
/* From now on no cancellation goes upstream (shutdown). */
void mx_callhub_stopping(struct mx_callhub *h);
/*
 * MCP 2025-11-25, Streamable HTTP (SEP-1699 polling): a call whose answer
 * became a resumable stream that primes, and has not ended |poll_ms| after
 * that, ends the client's POST that carries it; the call goes on, and the
 * client comes back with GET and Last-Event-ID within
 * MX_CALL_RESUME_GRACE_S. A stream the client resumed stays open to its end.
 * 0 (the default): never.
 */
void mx_callhub_set_poll(struct mx_callhub *h, int64_t poll_ms);
/* The id tables (idmap.h) of every call and upstream request of the hub. */
struct mx_idmap *mx_callhub_ids(struct mx_callhub *h);
const struct mx_call_upops *mx_callhub_ops(const struct mx_callhub *h);
const struct mx_front_hooks *mx_callhub_hooks(const struct mx_callhub *h);
/* Routed calls with a client request attached: what a drain waits for. */
size_t mx_callhub_inflight(const struct mx_callhub *h);
/* The first live call (continue with ->next), to end the calls of a
 * session or of a retired upstream. */
struct mx_call *mx_callhub_first(struct mx_callhub *h);
/* A session key of no client session, for a call that has none (MCP
 * 2026-07-28): its ids never meet another call's in the id tables. */
uint64_t mx_callhub_key(struct mx_callhub *h);
/* Trace |msg| (|dir| "c2s" or "s2c") under |session| (may be NULL). */
void mx_callhub_trace(struct mx_callhub *h, const char *dir, const char *session,
                      struct mx_str msg);
/*
 * A notifications/progress |msg| from upstream slot |up_idx| on its
 * session |via_key|: to the call that owns the token, with the client's
 * token, when that call went over that session (MCP 2025-06-18, Progress:
 * only for requests still active; MCP checklist §8: two upstreams never
 * cross). Returns 0, MX_ENOTFOUND (no call in flight asked for it) or
 * MX_EPERM (a call of another upstream session); the hub's dropped
 * callback has been told then.
 */
int mx_callhub_progress(struct mx_callhub *h, size_t up_idx, uint64_t via_key, json_t *msg);

/* ---- the call ---- */

/* An upstream session as calls see it; the view keeps it alive while calls
 * use it. */
struct mx_call_via {
    struct mx_upsess *s; /* NULL once closed */
    uint64_t key;        /* stable across its re-initializations; names it in the id tables */
};

/* What a view does with its calls; every member may be NULL. */
struct mx_call_view {
    /* A request from the upstream on the call's stream (ping is answered
     * by the core, and so is anything for an orphaned call). */
    void (*question)(struct mx_call *c, uint64_t key, json_t *msg);
    /* notifications/cancelled from the upstream on the call's stream: it
     * withdrew a question. */
    void (*withdrawn)(struct mx_call *c, uint64_t key, json_t *msg);
    /* list_changed or resources/updated on the call's stream: about
     * everyone, not this call. */
    void (*broadcast)(struct mx_call *c, uint64_t key, json_t *msg);
    /* Whether an upstream log message at |level| (-1: unknown) reaches the
     * client; NULL: none does. */
    bool (*wants_log)(struct mx_call *c, int level);
    /* The upstream's answer |resp| (or |fail|, the other one NULL): the
     * error or result member to answer with (new reference), |*is_error|,
     * and the HTTP status of a JSON answer in |*status| (200 when left). */
    json_t *(*answer)(struct mx_call *c, json_t *resp, const struct mx_upfail *fail, bool *is_error,
                      int *status);
    /* The upstream's result came as bytes that can go to the client as
     * they are (struct mx_call_upops.raw_result): do what answer() does for
     * a result and return true, or return false (nothing done) and the
     * result is parsed and given to answer(). NULL: results always come
     * parsed. */
    bool (*answer_raw)(struct mx_call *c);
    /* The answer came while no client request waits (mx_call_detach):
     * keep |payload| (borrowed) for the next one and return true, or return
     * false and the call ends. */
    bool (*keep)(struct mx_call *c, json_t *payload, bool is_error);
    /* The call was orphaned (mx_call_cancel): stop what waits for the client. */
    void (*orphaned)(struct mx_call *c, const char *reason);
    /* The call ended: nothing of it runs after this but clear. */
    void (*ended)(struct mx_call *c);
    /* The last reference went: free |c->data|. */
    void (*clear)(struct mx_call *c);
    /* The answer becomes SSE: a resumable stream to carry it (kept by the
     * view's session), or NULL for a plain one. A client that leaves a
     * resumable stream has MX_CALL_RESUME_GRACE_S to come back with GET and
     * Last-Event-ID before the call is cancelled; meanwhile it goes on. */
    struct mx_rstream *(*stream)(struct mx_call *c);
    /* other notifications on the call's stream go to the client */
    bool pass_other;
    /* the reason upstream hears when the client goes away */
    const char *gone_reason;
};

typedef void (*mx_call_gone_cb)(struct mx_call *c, void *data);

/* How long a call whose client left its resumable stream goes on. */
#define MX_CALL_RESUME_GRACE_S 5.0

/*
 * Fields marked (ro) may be read by views; the rest is the core's.
 */
struct mx_call {
    struct mx_callhub *hub; /* (ro) */
    struct mx_call *next;   /* (ro) the hub's live calls */
    struct mx_call *prev;
    const struct mx_call_view *view; /* (ro) mx_call_set_view() */
    void *data;                      /* the view's; freed by view->clear */
    void *owner;                     /* the view's: the client session, or NULL */
    struct mx_req *req;    /* (ro) the client request being answered; NULL once answered or gone */
    struct mx_rstream *rs; /* (ro) the resumable stream the SSE answer goes to, which carries
                            * |req| from then on (NULL in |req|); NULL: none */
    json_t *client_id;     /* (ro) its JSON-RPC id; NULL: none known */
    json_t *token;         /* (ro) its progress token, or NULL */
    const char *trace_session; /* borrowed: the client session's id for the trace */
    struct mx_upstream *up;    /* (ro) accounted to it: where it went, or the endpoint's */
    const char *log_prefix;    /* logger prefix of upstream log messages, or NULL */
    struct mx_call_via *via;   /* (ro) the upstream session it went over */
    struct mx_uprpc *rpc;      /* (ro) its upstream request while it runs */
    size_t up_idx;             /* (ro) upstream slot */
    uint64_t up_id;            /* (ro) id and progress token upstream; 0: not routed */
    bool sse;                  /* (ro) the answer is an SSE stream */
    bool orphan;               /* (ro) cancelled: waits for the upstream to end it */
    bool ended;                /* (ro) */
    int refs;
    bool blocked;
    bool counted;             /* in the hub's in-flight count */
    bool mapped;              /* in the id tables */
    bool kept;                /* the view kept an answer for the next client request */
    bool cancelled;           /* the current client request went away or was cancelled */
    struct mx_upstream *held; /* mx_upstream_hold() while routed */
    bool failed;
    struct mx_upfail fail;
    mx_call_gone_cb on_gone;
    void *gone_data;
    ev_timer wait_tick;
    ev_timer grace; /* the client left |rs|: it has this long to resume it */
    ev_timer poll;  /* mx_callhub_set_poll: the POST carrying |rs| ends after this long */
    int wait_n;
    int status;
    unsigned long req_id;
    double t_recv, t_up_start, t_up_done;
    char http_method[12];
    char path[80];
    char rpc_method[64];
    char target[64]; /* tools/call and prompts/get: the name asked for, cut */
    bool modern;     /* a 2026-07-28 request */
};

/*
 * The call for client request |req|: its handler is the core's from now
 * on (drain, abort). It has no view until mx_call_set_view(). The hub holds
 * one reference until the call ends, and the caller gets one more, which it
 * gives back with mx_call_release() when it no longer uses the pointer. A
 * call ends by itself once its client request is answered (or gone) while
 * no upstream request runs for it and nothing waits on it.
 */
struct mx_call *mx_call_new(struct mx_callhub *h, struct mx_req *req);
void mx_call_set_view(struct mx_call *c, const struct mx_call_view *view, void *data);
void mx_call_hold(struct mx_call *c);
void mx_call_release(struct mx_call *c);

/* The JSON-RPC method (copied; NULL: none) and id (borrowed, kept; NULL:
 * none) of the client request, for the answer and the report; with |meta|
 * (the request's params._meta) its progress token too. */
void mx_call_note(struct mx_call *c, const char *rpc_method, const json_t *id, const json_t *meta);
/* For the report: the name a tools/call or prompts/get asks for (from
 * |params|, the request's params; nothing for other methods), and whether
 * the request is a 2026-07-28 one. Never its arguments. */
void mx_call_note_target(struct mx_call *c, const json_t *params, bool modern);
/* Account the call to |up| (may be NULL). */
void mx_call_account(struct mx_call *c, struct mx_upstream *up);
/* The upstream could not give what the answer needed (copied, for the
 * report). */
void mx_call_note_fail(struct mx_call *c, const struct mx_upfail *f);

/* ---- answers: each ends the client request (nothing when it is gone) ---- */

/* |body| (stolen) with |status| and |n| extra headers, as JSON. */
void mx_call_json(struct mx_call *c, int status, json_t *body, const struct mx_hdr_out *hdrs,
                  size_t n);
/* {"jsonrpc","id","result": |result| (stolen)} with 200. */
void mx_call_result(struct mx_call *c, json_t *result);
/* The same with the result as encoded JSON (one value, no CR or LF:
 * it may go as an SSE event), copied. */
void mx_call_result_text(struct mx_call *c, struct mx_str result);
/* A JSON-RPC error for the request's id (|data| stolen, may be NULL). */
void mx_call_error(struct mx_call *c, int status, int code, const char *msg, json_t *data);
/* |status| with no body (202: a notification or a response was taken). */
void mx_call_status(struct mx_call *c, int status);
/* The |payload| (borrowed) as result or error: the last event of an SSE
 * answer, else JSON with |status|. */
void mx_call_reply(struct mx_call *c, json_t *payload, bool is_error, int status);
/* No answer follows (a cancelled request, MCP 2025-06-18, Cancellation):
 * an SSE answer ends, else an empty one is sent. */
void mx_call_end_empty(struct mx_call *c);
/* The request is someone else's now (a batch, a GET stream): the call
 * forgets it, its handler cleared (hand it over after this); accounted
 * with |status|, or not at all with 0. */
void mx_call_handoff(struct mx_call *c, int status);

/* The answer becomes SSE now (the view's resumable stream, which primes
 * it, when the view gives one), before any message. Returns 0 or
 * MX_ECLOSED (no client request). */
int mx_call_stream(struct mx_call *c);

/*
 * Send |msg| (borrowed) on the call's answer, which becomes SSE. Returns 0,
 * MX_EAGAIN (sent; the client is slow: the upstream stream pauses until it
 * drains) or MX_ECLOSED (no client request: dropped).
 */
int mx_call_send(struct mx_call *c, const json_t *msg);

/* ---- the upstream side ---- */

/*
 * What |upmsg| of mx_call_route is as text: the client request's bytes
 * |text|, with params.name |name| (or unchanged, NULL) and no other change
 * than the id and token the call core makes.
 */
struct mx_call_text {
    struct mx_str text;
    const char *name;
};

/*
 * Route the call to upstream slot |up_idx| (|up|, held until the call
 * ends) over |via| as |upmsg| (owned; a shallow copy of the client's
 * message is enough, the members changed here are copied first):
 * registered in the id tables under |session_key| with the client's id
 * and token, the id and progress token rewritten to the call's own up_id,
 * counted in flight, sent with |timeout_ms|. With |text| (may be NULL) the
 * upstream request goes as the client's bytes with those edits
 * (mx_rpc_splice) where the transport can. Returns 0, or a negative mx_err
 * after answering the client (a duplicate id, too many calls, a closed
 * session); the call has ended then.
 */
int mx_call_route(struct mx_call *c, struct mx_call_via *via, size_t up_idx, struct mx_upstream *up,
                  json_t *upmsg, const struct mx_call_text *text, uint64_t session_key,
                  long timeout_ms);
/* Answer a request of the upstream on the call's session (|key| as given
 * with it). */
void mx_call_upstream_reply(struct mx_call *c, uint64_t key, const json_t *id, json_t *result,
                            int code, const char *msg);
/*
 * The one cancellation rule. The client no longer wants the answer (it
 * cancelled, went away, or never retried): the upstream hears
 * notifications/cancelled, and the call waits for the upstream to end its
 * stream, reading it to its end; its progress goes nowhere. Closing the
 * stream at once would race with the cancellation (MCP 2025-06-18: a
 * disconnect is not a cancel), and the upstream could see only the
 * disconnect. An attached client request gets no answer (mx_call_end_empty).
 * A call with no upstream request ends at once.
 */
void mx_call_cancel(struct mx_call *c, const char *reason);
/*
 * The call ends now (its session closed, mcplex stops, its upstream left):
 * the upstream hears notifications/cancelled (|reason|) unless the call
 * was orphaned or the hub is stopping, and its stream is dropped; a client
 * request still attached gets the end of its SSE answer, or |status| with
 * the JSON-RPC error |code| and |msg|.
 */
void mx_call_close(struct mx_call *c, const char *reason, int status, int code, const char *msg);
/* The client request was answered but the upstream request goes on (MCP
 * 2026-07-28, Multi Round-Trip: the call waits for the client's retry): no
 * longer counted in flight. */
void mx_call_detach(struct mx_call *c);
/* The client request of |from| (a new call, just made) continues |c|,
 * which has none: its request, id, token and times move to |c|, and |from|
 * ends without a report of its own. */
void mx_call_adopt(struct mx_call *c, struct mx_call *from);

/* A wait (for upstreams' lists) holds the call: when the client goes away,
 * |gone| is called (once) instead of anything else, and the call ends. */
void mx_call_wait(struct mx_call *c, mx_call_gone_cb gone, void *data);
void mx_call_unwait(struct mx_call *c);

/* End a call that has no upstream request (its answer was given). */
void mx_call_end(struct mx_call *c);

/* The index of an MCP log level "debug" .. "emergency" (RFC 5424, least
 * severe first), or -1; and back ("info" for an unknown index). */
int mx_call_log_level(const char *name);
const char *mx_call_log_level_name(int level);

/* Live call objects, for leak checks. */
size_t mx_call_live_cnt(void);

#endif
