/* SPDX-License-Identifier: MIT */
/*
 * The upstream HTTP client: libcurl's multi interface driven by the libev
 * loop through CURLMOPT_SOCKETFUNCTION/TIMERFUNCTION (nothing blocks the
 * loop, connections are reused, HTTP/2 multiplexing where offered).
 * Responses stream: head once, then body chunks as they arrive.
 *
 * A request body is sent through a read callback, and a rewind request from
 * libcurl (it wants to re-send on a reused connection that turned out to be
 * dead) is refused unless the caller said the request may be repeated: a
 * request that may have reached the server is never sent twice behind the
 * caller's back.
 */
#ifndef MX_UCLIENT_H
#define MX_UCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <ev.h>

#include "req.h"

struct mx_uclient;
struct mx_ureq;
struct mx_upool;

struct mx_ureq_info {
    bool body_sent;        /* the whole request body left this process */
    bool response_started; /* at least one byte of a response arrived */
    long http_status;      /* 0 if no response head */
    double connect_s;      /* timings from libcurl, seconds; 0 if not known */
    double appconnect_s;
    double starttransfer_s;
    double total_s;
    bool reused;       /* the connection was reused */
    bool wake_timeout; /* set by upcall.c: the upstream did not wake in time */
    /* no connection could be made: refused or unreachable, the host does
     * not resolve, or (|tls|) the TLS handshake or the server's certificate
     * failed; |cause| says which and where ("connection refused at
     * 127.0.0.1:9999", "certificate verify failed at https://127.0.0.1:8443
     * (SSL certificate problem: ...)"): hosts and ports, never userinfo,
     * path or query; "" when the failure was another */
    bool no_connection;
    bool tls;
    char cause[200];
    /* set by upcall.c: the upstream asked (Retry-After on |http_status|)
     * to wait this many seconds, past what the call may wait; 0: not */
    int64_t retry_after_s;
    /* set by upcall.c: the upstream is gone (it answered 410), and the
     * call was not sent again */
    bool gone;
};

struct mx_ureq_cbs {
    /* The final response head (1xx skipped); called at most once. */
    void (*on_head)(struct mx_ureq *u, long status, const struct mx_header *hdrs, size_t cnt,
                    void *data);
    /*
     * Body bytes as they arrive. Return 0 to continue or MX_EAGAIN to pause
     * the transfer (the bytes passed were consumed); resume with
     * mx_ureq_resume(). on_done may still come while paused (the response
     * ended or failed); the request is gone after it, so do not resume it.
     */
    int (*on_data)(struct mx_ureq *u, const char *p, size_t len, void *data);
    /*
     * Exactly once, unless mx_ureq_cancel() was called first. |err| is 0
     * (the response completed; any status), MX_ETIMEDOUT, MX_ECLOSED
     * (connection refused, reset or closed early), MX_EPROTO (a response
     * header value held a control byte, mx_guard_header_value_ok: the
     * answer was refused before on_head), MX_EUPSTREAM (other transport
     * failure). |info| tells what was sent and received. The
     * request is freed after on_done returns.
     */
    void (*on_done)(struct mx_ureq *u, int err, const struct mx_ureq_info *info, void *data);
};

struct mx_ureq_opts {
    const char *method; /* "POST", "GET", "DELETE" */
    const char *url;
    const char *const *headers; /* "Name: value" lines; may hold secrets: */
    size_t header_cnt;          /* copies are wiped after the transfer */
    const void *body;           /* copied; may be NULL */
    size_t body_len;
    long timeout_ms;         /* whole transfer; 0: none */
    long connect_timeout_ms; /* 0: libcurl default */
    bool may_repeat;         /* allow libcurl to re-send the body (idempotent) */
    const char *ca_file;     /* extra CA bundle for https upstreams; NULL: system */
    long idle_close_ms;      /* don't reuse a connection idle longer; 0: libcurl default */
    struct mx_upool *pool;   /* connect through this pool only; NULL: the common one */
    bool stream;             /* a stream kept open for the server's own messages: once its
                                head came it is held, not use of the pool */
};

/* Returns NULL only on libcurl initialisation failure. */
struct mx_uclient *mx_uclient_new(struct ev_loop *loop);
/* Cancels every transfer without callbacks and frees; accepts NULL. Not
 * from inside a callback of this client. */
void mx_uclient_free(struct mx_uclient *c);

/*
 * Start a request. Returns 0 and |*out| (borrowed: valid until on_done
 * returns or mx_ureq_cancel()), or MX_EINVAL / MX_EUPSTREAM, in which case no
 * callback is called. Callbacks never run from inside mx_ureq_start().
 */
int mx_ureq_start(struct mx_uclient *c, const struct mx_ureq_opts *opts,
                  const struct mx_ureq_cbs *cbs, void *data, struct mx_ureq **out);

/* Abort the transfer; no callback runs afterwards. Safe inside callbacks. */
void mx_ureq_cancel(struct mx_ureq *u);

/* Resume a transfer paused by on_data returning MX_EAGAIN. */
void mx_ureq_resume(struct mx_ureq *u);

/* Number of live transfers (for tests and /health). */
size_t mx_uclient_active(const struct mx_uclient *c);
/* Finished easy handles kept for reuse (for tests). */
size_t mx_uclient_spare(const struct mx_uclient *c);
/*
 * Plain http:// to an IP literal (or localhost) goes through mcplex's own
 * HTTP/1.1 client (keep-alive connections, one sendmsg per request, no
 * liveness check before reuse); everything else, and everything after
 * mx_uclient_own_h1(c, false), through libcurl. Both keep this contract.
 */
void mx_uclient_own_h1(struct mx_uclient *c, bool on);

/*
 * A pool: the connections of one upstream, kept apart from every other's (a
 * libcurl share of the connection cache), so that they can be closed when
 * it is idle. The pool is in use while a transfer started with it runs,
 * except a stream (opts.stream) once its head arrived, which is only held.
 * After |idle_ms| without use, on_idle runs: it returns false to say the
 * owner is still busy (the clock starts again), or true after cancelling
 * its streams; the pool then closes every connection, at once or as soon as
 * the last transfer using it has gone, unless a new one starts first.
 */
struct mx_upool_cbs {
    bool (*on_idle)(struct mx_upool *p, void *data);
};

/* What a pool holds open, for /health. */
struct mx_upool_info {
    size_t conns;       /* sockets open */
    size_t streams;     /* streams held (head arrived, still open) */
    time_t held_since;  /* wall clock since anything is open; 0 when nothing is */
    time_t idle_closed; /* wall clock of the last close for idleness; 0: never */
};

/* |idle_ms| 0: never idle. Never NULL. */
struct mx_upool *mx_upool_new(struct mx_uclient *c, long idle_ms, const struct mx_upool_cbs *cbs,
                              void *data);
/* No callback after this. Connections close once no transfer uses them;
 * the memory goes then (or with the client). Accepts NULL. */
void mx_upool_free(struct mx_upool *p);
void mx_upool_info(const struct mx_upool *p, struct mx_upool_info *out);

#endif
