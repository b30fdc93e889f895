/* SPDX-License-Identifier: MIT */
/*
 * An MCP session with one upstream, as mcplex's /mcp uses it (MCP 2025-03-26
 * to 2025-11-25, Streamable HTTP): opened lazily by the first request
 * (initialize, then notifications/initialized), its Mcp-Session-Id and
 * protocol version sent on every later request, its GET stream opened for
 * the upstream's own notifications and requests, and re-created once,
 * invisibly to the caller, when the upstream has forgotten it (404, or a 400
 * whose error says the session is unknown or not initialized, as
 * server-everything answers). Answers may come as JSON or SSE; SSE answers
 * stream message by message with backpressure.
 *
 * An upstream that lists 2026-07-28 in its server/discover answer (asked at
 * first contact, remembered in the env) gets stateless requests instead:
 * _meta and the 2026 headers on each (up2026.h), no initialize, session or
 * GET stream; the discover result is the "initialize result", list changes
 * come from its subscriptions/listen stream (on_message), and the questions
 * of an input_required result go to the request's on_message as requests,
 * whose answers (mx_upsess_send) go back in the request's next round. The
 * 2025 methods that revision lacks are bridged here: resources/subscribe
 * and unsubscribe change the resourceSubscriptions of the listen stream
 * (opened again with the new filter, the old one closed once the new one
 * is acknowledged, which answers the request {}; notifications/resources/
 * updated then come on it), and logging/setLevel is answered {} (the level
 * goes in each request's _meta instead, which the caller puts there).
 *
 * Requests go out through mx_upcall (wake-on-use, max_concurrency) with the
 * upstream's credential; this module never retries a request that may have
 * reached the upstream, except after a session answer that says it did not
 * run it. It does not rewrite ids, names or tokens: the caller does.
 */
#ifndef MX_UPSESS_H
#define MX_UPSESS_H

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "trace.h"
#include "uclient.h"
#include "upreq.h"
#include "upstream.h"

struct mx_upsess;
struct mx_uprpc;

/* What all sessions of one upstream share; borrowed, must outlive them. */
/* The revision an HTTP upstream was found to speak (MCP 2026-07-28 or
 * 2025-era sessions); learnt with server/discover at first contact. */
enum mx_upsess_era {
    MX_UPSESS_ERA_UNKNOWN = 0,
    MX_UPSESS_ERA_LEGACY = 1, /* initialize, Mcp-Session-Id, GET stream */
    MX_UPSESS_ERA_MODERN = 2, /* 2026-07-28: stateless, _meta on every request */
};

struct mx_upsess_env {
    struct ev_loop *loop;
    struct mx_uclient *uc;
    struct mx_upstream *up;
    struct mx_trace *trace;
    struct mx_upsess_bye *byes; /* DELETEs still in flight (mx_upsess_env_clear) */
    enum mx_upsess_era era;     /* what the upstream speaks; zeroed with the env */
    json_t *tool_params;        /* 2026-07-28: tool name -> its mx_up26_param_map() */
};

struct mx_upsess_cbs {
    /*
     * A message from the upstream that answers none of our requests: what it
     * sends on its GET stream (notifications, and requests such as roots/list
     * or ping). |key| is the upstream session it came from (see
     * mx_upsess_key); |msg| is borrowed for the call.
     */
    void (*on_message)(struct mx_upsess *s, uint64_t key, json_t *msg, void *data);
    /* The session is (again) initialized; |init| is the upstream's initialize
     * result, borrowed. A second call means the upstream had forgotten the
     * session (it may have restarted): its lists may have changed. */
    void (*on_ready)(struct mx_upsess *s, json_t *init, void *data);
    /* Optional: idle_close had closed the session's stream for the
     * upstream's own messages, and a request opened it again: what the
     * upstream announced meanwhile (list changes) was missed. */
    void (*on_gap)(struct mx_upsess *s, void *data);
};

struct mx_uprpc_cbs {
    /*
     * A message on the stream of this request that is not its answer:
     * progress, logging, or a request from the upstream (sampling,
     * elicitation, roots, ping) that the caller should answer with
     * mx_upsess_send() and |key|, the upstream session that asked. Return 0,
     * or MX_EAGAIN to stop reading this stream
     * until mx_uprpc_resume(). May cancel the request.
     */
    int (*on_message)(struct mx_uprpc *r, uint64_t key, json_t *msg, void *data);
    /*
     * Exactly once unless cancelled first: |resp| is the upstream's JSON-RPC
     * response (result or error; borrowed) and |fail| NULL, or |resp| NULL and
     * |fail| what went wrong. For a connect-only request (|msg| NULL) |resp|
     * is NULL on success too. The request is freed after this returns.
     */
    void (*on_done)(struct mx_uprpc *r, json_t *resp, const struct mx_upfail *fail, void *data);
    /* Optional: the request waits for the upstream to wake (wake-on-use);
     * at most once per attempt. */
    void (*on_wait)(struct mx_uprpc *r, void *data);
};

/*
 * A session for the upstream of |env|, declaring |caps| (copied) as its
 * client capabilities. |trace_session| (may be NULL, copied) labels its
 * trace lines. Nothing is sent until the first request.
 */
struct mx_upsess *mx_upsess_new(struct mx_upsess_env *env, const json_t *caps,
                                const char *trace_session, const struct mx_upsess_cbs *cbs,
                                void *data);
/*
 * End the session: requests still waiting or running are dropped without
 * callbacks, the GET stream closes, and an initialized session is ended
 * upstream with DELETE (not waited for). Safe inside this session's
 * callbacks; the memory goes once no callback of it is running. Accepts NULL.
 */
void mx_upsess_close(struct mx_upsess *s);

/* A key of the current upstream session: new at every (re)initialize, never 0
 * once initialized, 0 before. Answers to the upstream's requests must go to
 * the session that asked them: compare keys. */
uint64_t mx_upsess_key(const struct mx_upsess *s);
bool mx_upsess_is_ready(const struct mx_upsess *s);
/* The last initialize result (borrowed), or NULL. */
json_t *mx_upsess_init_result(const struct mx_upsess *s);

/*
 * Send request |msg| (borrowed; it must carry an "id") once the session is
 * ready, initializing it first when needed; with |msg| NULL only make sure
 * the session is ready. |timeout_ms| bounds each attempt (0: none).
 * Returns 0 and |*out| (valid until on_done returns or mx_uprpc_cancel),
 * or MX_EINVAL; callbacks never run from inside this function.
 */
int mx_upsess_request(struct mx_upsess *s, json_t *msg, long timeout_ms,
                      const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out);
/* Drop the request: no callback after this. Safe inside its callbacks. */
void mx_uprpc_cancel(struct mx_uprpc *r);
/* Read its stream again after on_message returned MX_EAGAIN. */
void mx_uprpc_resume(struct mx_uprpc *r);
/* For a question of a 2026-07-28 upstream's input_required result, which
 * the request delivered to on_message with id |id|: the upstream's key for
 * it (borrowed, valid while the question is open), else NULL. */
const char *mx_uprpc_input_key(const struct mx_uprpc *r, const json_t *id);

/*
 * Send a notification or a response (borrowed) on the current upstream
 * session; nothing comes back. Dropped when the session is not ready, or
 * when |key| is not 0 and not the current session's key (an answer for a
 * session that is gone).
 */
void mx_upsess_send(struct mx_upsess *s, json_t *msg, uint64_t key);

/* Cancel the DELETEs still in flight (at shutdown, before freeing env->uc)
 * and forget what the upstream's tool list said. */
void mx_upsess_env_clear(struct mx_upsess_env *env);

/* Live sessions and requests, for tests and /health. */
size_t mx_upsess_live_cnt(void);

#endif
