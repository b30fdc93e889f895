/* SPDX-License-Identifier: MIT */
/*
 * Client sessions of /mcp and /mcp/<server> (MCP 2025-03-26 to 2025-11-25, Session
 * Management): mcplex's own Mcp-Session-Id (128 random bits), the client's
 * initialize parameters, the negotiated version and log level, expiry after
 * idle time, and the session's SSE streams (rstream.h): the GET stream, on
 * which notifications and requests that belong to no client request are
 * written (kept, bounded, while the stream is absent or slow), and the
 * answer streams of its POSTs, which a client resumes with GET and
 * Last-Event-ID (MCP 2025-03-26, Resumability and Redelivery). The table owns the
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
#include "rstream.h"
#include "str.h"

#define MX_SESSION_ID_LEN 32 /* hex characters */
/* What each stream keeps for a resume unless the table is told otherwise
 * ([listen] stream_buffer_events and stream_buffer_bytes). */
#define MX_SESSION_QUEUE_MAX   256
#define MX_SESSION_QUEUE_BYTES (4u * 1024 * 1024)
/* Ended answer streams a session keeps for a resume; the oldest goes. */
#define MX_SESSION_STREAMS_KEPT 16
#define MX_SESSION_KEEPALIVE_S  25.0
/* Retry-After (seconds) on a 503 for an initialize over [listen] max_sessions. */
#define MX_SESSION_RETRY_AFTER "10"

struct mx_session_table;

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

    /* its SSE streams (rstream.h), newest first: number 0 is the GET
     * stream, made on first use; the others carry answers to POSTs */
    struct mx_rstream *get;
    struct mx_session_stream *streams;
    size_t stream_cnt;
    uint64_t stream_nos; /* the last stream number handed out */

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
/* Each stream of the table's sessions keeps what |lim| says (default
 * MX_SESSION_QUEUE_MAX events, MX_SESSION_QUEUE_BYTES bytes). */
void mx_session_table_set_limits(struct mx_session_table *t, const struct mx_rstream_limits *lim);
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
/* Whether a client request carries the GET stream now. */
bool mx_session_has_get(const struct mx_session *s);
/* End the GET stream's request, if any (shutdown, a retired server). */
void mx_session_end_get(struct mx_session *s);

/*
 * A GET with Last-Event-ID |id|: |req| carries the stream that id names
 * from the event after it (rstream.h, mx_rstream_attach). Returns 0,
 * MX_EINVAL (not an id mcplex gave), MX_ENOTFOUND (no such stream or
 * event in this session), MX_ELIMIT (events after it were dropped; the
 * oldest it may name in |*oldest|) or MX_ECLOSED (|req| is gone). With
 * |req| NULL only the checks are made.
 */
int mx_session_resume(struct mx_session *s, struct mx_req *req, struct mx_str id, uint64_t *oldest);

/* Whether the session's streams start with a priming event (MCP
 * 2025-11-25 and later). */
bool mx_session_primes(const struct mx_session *s);
/* A new stream for the answer to a POST (the session keeps it for a
 * resume after it ended, MX_SESSION_STREAMS_KEPT at most). */
struct mx_rstream *mx_session_stream_new(struct mx_session *s);

/* Send |msg| (borrowed) on the GET stream, or keep it until one opens; the
 * oldest go when the stream's buffer is over its bounds. */
void mx_session_push(struct mx_session *s, const json_t *msg);

/* Live session objects, for leak checks. */
size_t mx_session_live_cnt(void);

#endif
