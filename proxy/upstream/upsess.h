/* SPDX-License-Identifier: MIT */
/*
 * An MCP session with one upstream, as mcplex's /mcp uses it, whatever the
 * transport: opened lazily by the first request (initialize, then
 * notifications/initialized, or what the transport's revision asks), its
 * requests matched to their answers, the upstream's own notifications and
 * requests passed on (on_message), and re-created, invisibly to the caller,
 * when the upstream has lost it. This header is the callers' whole view;
 * the transport is the server's `transport` config value, picked from the
 * table in upsess.c, and each is one file behind upsess_int.h:
 * upsess_http.c (Streamable HTTP, MCP 2025-03-26 to 2025-11-25) with its
 * 2026-07-28 mode in upsess_http26.c, upsess_sse.c (legacy HTTP+SSE, MCP
 * 2024-11-05) and upsess_stdio.c (a child process). What differs between
 * transports and matters to callers is asked with mx_upsess_caps(), never
 * by testing which transport a server uses.
 *
 * Requests over HTTP go out through mx_upcall (wake-on-use,
 * max_concurrency) with the upstream's credential; no transport retries a
 * request that may have reached the upstream, except after an answer that
 * says it did not run it. Nothing here rewrites ids, names or tokens: the
 * caller does.
 */
#ifndef MX_UPSESS_H
#define MX_UPSESS_H

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "model.h"
#include "str.h"
#include "uclient.h"
#include "upreq.h"
#include "upstream.h"

struct mx_upsess;
struct mx_uprpc;

/* The revision an HTTP or stdio upstream was found to speak (MCP 2026-07-28
 * or 2025-era sessions); learnt with server/discover at first contact. */
enum mx_upsess_era {
    MX_UPSESS_ERA_UNKNOWN = 0,
    MX_UPSESS_ERA_LEGACY = 1, /* initialize, Mcp-Session-Id, GET stream */
    MX_UPSESS_ERA_MODERN = 2, /* 2026-07-28: stateless, _meta on every request */
};

/* What all sessions of one upstream share; borrowed, must outlive them.
 * Messages are traced through the upstream's observer (upstream.h). */
struct mx_upsess_env {
    struct ev_loop *loop;
    struct mx_uclient *uc;
    struct mx_upstream *up;
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
/*
 * Keep upstream session |s| beyond this process (|on|; false: it is ended
 * as usual again): it is not ended (no DELETE) when closed, so the next
 * run can take it up. With |sid| (and its
 * revision |version|), a session an earlier run kept: |s|, not started yet,
 * goes on in it instead of initializing, with the initialize result it had
 * (|init|, the catalogue's); an upstream that forgot it (404) gets a new
 * one. Only Streamable HTTP sessions of 2025 upstreams have one; others
 * ignore this.
 */
void mx_upsess_keep(struct mx_upsess *s, bool on, const char *sid, const char *version,
                    const json_t *init);
/* The upstream session id of ready |s| and its revision (|*version|), or
 * NULL when it has none. */
const char *mx_upsess_session_id(const struct mx_upsess *s, const char **version);
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
/*
 * The caller can take a plain result as the bytes that came. A transport
 * that supports it may then deliver, to on_done, a |resp| with "jsonrpc"
 * and "id" but no "result", and the result in mx_uprpc_raw_result(): one
 * JSON value the full parser accepts, holding no CR or LF, and (an object)
 * with none of the members a 2025 answer drops (resultType, ttlMs,
 * cacheScope, _meta). Anything else comes parsed, as without this.
 */
void mx_uprpc_want_raw(struct mx_uprpc *r);
/* During on_done: the result as bytes, or {NULL, 0} when |resp| has it. */
struct mx_str mx_uprpc_raw_result(const struct mx_uprpc *r);
/*
 * Right after mx_upsess_request, before control returns to the loop:
 * |text| (NUL-terminated, |len| bytes, taken; free()) is the request's
 * message as it encodes, the client's own bytes with mcplex's edits. A
 * transport that sends JSON text sends these instead of encoding the
 * message again, where it would send the message unchanged.
 */
void mx_uprpc_give_text(struct mx_uprpc *r, char *text, size_t len);
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

/* What the transport of a server offers, where transports differ (bits of
 * mx_upsess_caps). */
enum mx_upsess_cap {
    /* Its url speaks Streamable HTTP, so an HTTP client can measure it
     * directly beside the path through mcplex (mcplex bench). */
    MX_UPSESS_CAP_DIRECT = 1u << 0,
    /* It may speak MCP 2026-07-28, whose requests carry the client's log
     * level in _meta (logLevel); the others drop it. */
    MX_UPSESS_CAP_META_LOG_LEVEL = 1u << 1,
    /* A hosted server that may sleep: its lists are kept in the catalogue
     * on disk and answered from at start (catalogue.h). */
    MX_UPSESS_CAP_CATALOGUE = 1u << 2,
};

/* The enum mx_upsess_cap bits of |cfg|'s transport. */
unsigned mx_upsess_caps(const struct mx_server_cfg *cfg);
/* Its transport in a few words for people ("Streamable HTTP", "legacy
 * HTTP+SSE", "stdio"); a static string. */
const char *mx_upsess_transport_label(const struct mx_server_cfg *cfg);

#endif
