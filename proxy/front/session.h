/* SPDX-License-Identifier: MIT */
/*
 * Client sessions of /mcp and /mcp/<server> (MCP 2025-03-26 to 2025-11-25, Session
 * Management): mcplex's own Mcp-Session-Id (128 random bits), the client's
 * initialize parameters, the negotiated version and log level, expiry after
 * idle time, and the session's GET stream, on which notifications and
 * requests that belong to no client request are written as SSE (queued,
 * bounded, while the stream is absent or slow). The table owns the
 * sessions; closing one tells the owner (who ends what hangs off it) and
 * frees it from the loop, never inside a caller's stack.
 *
 * A session is one place client state lives, not the only one: everything
 * the aggregate needs of a client is in this struct, so a stateless request
 * (MCP 2026-07-28) can be served with a session made for that request.
 */
#ifndef MX_SESSION_H
#define MX_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ev.h>
#include <jansson.h>

#include "req.h"
#include "str.h"

#define MX_SESSION_ID_LEN      32 /* hex characters */
#define MX_SESSION_QUEUE_MAX   256
#define MX_SESSION_QUEUE_BYTES (4u * 1024 * 1024)
#define MX_SESSION_KEEPALIVE_S 25.0
/* Retry-After (seconds) on a 503 for an initialize over [listen] max_sessions. */
#define MX_SESSION_RETRY_AFTER "10"

struct mx_session_table;
struct mx_session_qmsg;

struct mx_session {
    char id[MX_SESSION_ID_LEN + 1];
    uint64_t key; /* unique, never 0: names the session in id maps */
    struct mx_session_table *t;
    struct mx_session *prev;
    struct mx_session *next;

    json_t *init_params; /* the client's initialize params (owned) */
    char version[16];    /* negotiated protocol version */
    bool answered;       /* initialize was answered: notifications may flow */
    bool closed;
    int log_level; /* index into the MCP levels; -1: none asked */
    unsigned busy; /* requests in flight: the session is not idle meanwhile */

    ev_timer idle;
    ev_timer keepalive;

    struct mx_req *get; /* the GET stream, or NULL */
    bool get_blocked;   /* its output is above the watermark */
    struct mx_session_qmsg *q_head;
    struct mx_session_qmsg *q_tail;
    size_t q_cnt;
    size_t q_bytes;

    void *owner; /* the aggregate's per-session state */
};

struct mx_session_cbs {
    /* |s| is closing (DELETE, expiry, shutdown): end what hangs off it. It is
     * freed later; do not keep the pointer. */
    void (*on_close)(struct mx_session *s, void *data);
};

/* Sessions expire after |idle_ms| without a request (and without a GET
 * stream); at most |max| live at once. */
struct mx_session_table *mx_session_table_new(struct ev_loop *loop, int64_t idle_ms, size_t max,
                                              const struct mx_session_cbs *cbs, void *data);
/* Closes every session (on_close for each) and frees; accepts NULL. */
void mx_session_table_free(struct mx_session_table *t);

/* A new session, or NULL when |max| are live (logged once per quiet
 * period, limit.h; the caller answers 503 with MX_SESSION_RETRY_AFTER). */
struct mx_session *mx_session_new(struct mx_session_table *t);
/* Sessions refused because |max| were live, since the table was made. */
uint64_t mx_session_refused_cnt(const struct mx_session_table *t);
/* The live session with |id|, or NULL; restarts its idle timer. */
struct mx_session *mx_session_find(struct mx_session_table *t, struct mx_str id);
/* The live session with |key|, or NULL. */
struct mx_session *mx_session_by_key(struct mx_session_table *t, uint64_t key);
/* First live session; continue with s->next. */
struct mx_session *mx_session_first(struct mx_session_table *t);
size_t mx_session_cnt(const struct mx_session_table *t);

/* Close |s|: on_close runs now, the memory goes from the loop. Idempotent. */
void mx_session_close(struct mx_session *s);

/*
 * Make |req| the session's GET stream: starts an SSE response on it and
 * writes what was queued. Returns 0, MX_EEXIST (one is open already) or
 * MX_ECLOSED (|req| is gone; forget it).
 */
int mx_session_attach_get(struct mx_session *s, struct mx_req *req);
/* End the GET stream, if any (shutdown). */
void mx_session_end_get(struct mx_session *s);

/* Send |msg| (borrowed) on the GET stream, or queue it until one opens; the
 * oldest queued messages go when the queue is over its bounds. */
void mx_session_push(struct mx_session *s, const json_t *msg);

/* Live session objects, for leak checks. */
size_t mx_session_live_cnt(void);

#endif
