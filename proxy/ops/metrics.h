/* SPDX-License-Identifier: MIT */
/*
 * The gateway's counters and histograms, and their rendering for GET
 * /metrics (served by health.c): the Prometheus text exposition format
 * 0.0.4. Per upstream server: calls by JSON-RPC method
 * and outcome, upstream and gateway-added latency, wakes and their durations,
 * retries, body bytes both ways, and a short ring of recent latencies for
 * /health's p50. Process-wide gauges (connections, in-flight requests,
 * sessions, upstream states) are not kept here: they are read from the
 * gateway when rendering. Labels are server names, method names from a fixed
 * list and fixed words, so the series count stays bounded and no secret,
 * URL or header value can reach the output.
 */
#ifndef MX_METRICS_H
#define MX_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "uclient.h"
#include "upreq.h"
#include "upstream.h"

struct mx_metrics;

/* How one call to an upstream ended, from the client's side. */
enum mx_metrics_outcome {
    MX_METRICS_OK = 0,              /* the upstream answered (HTTP < 400) */
    MX_METRICS_ERROR = 1,           /* it answered an HTTP error, or the call could not start */
    MX_METRICS_AUTH_FAILED = 2,     /* 401 or 403: the credential was refused */
    MX_METRICS_UNREACHABLE = 3,     /* refused, reset or closed before the request left */
    MX_METRICS_TIMEOUT = 4,         /* request_timeout passed */
    MX_METRICS_WAKE_TIMEOUT = 5,    /* the sandbox did not wake within wake_timeout */
    MX_METRICS_OUTCOME_UNKNOWN = 6, /* lost after the request left: maybe run, not repeated */
    MX_METRICS_CANCELLED = 7,       /* the client went away first */
    MX_METRICS_OUTCOME_CNT = 8,
};

/* Which way a wake ended (mcplex_upstream_wake_duration_seconds{result}). */
enum mx_metrics_wake_result {
    MX_METRICS_WOKE = 0,    /* the sandbox answered */
    MX_METRICS_NO_WAKE = 1, /* it went down instead (wake_timeout, unreachable) */
};

/* "ok", "error", "auth_failed", ... (the label values). */
const char *mx_metrics_outcome_name(enum mx_metrics_outcome o);

/*
 * The outcome of an upstream exchange from uclient/upcall's on_done |err|
 * and |info| (may be NULL): the same cases, in the same order, as
 * mx_upfail_transport() and mx_upstream_classify_status() use, so the
 * metrics say what the client was told.
 */
enum mx_metrics_outcome mx_metrics_outcome_of(int err, const struct mx_ureq_info *info);

/*
 * The outcome of a call whose upstream side failed with |f| (upreq.h): the
 * same words as mx_metrics_outcome_of() for the same cases (a wake that
 * never came is a wake timeout; an HTTP error or a broken protocol an
 * error).
 */
enum mx_metrics_outcome mx_metrics_outcome_of_fail(const struct mx_upfail *f);

/*
 * The method label for |name|: a JSON-RPC method of MCP (2025-03-26 to
 * 2026-07-28), "GET" (the server-to-client SSE stream), "DELETE" (session
 * end) or "response" (a client's answer to a server request) is kept as is;
 * anything else, NULL included, is "other". The result is a static string.
 */
const char *mx_metrics_method_label(const char *name);

/*
 * A new, empty set. |clock| returns monotonic seconds (for the latency ring;
 * NULL: CLOCK_MONOTONIC); tests inject their own. Caller frees with
 * mx_metrics_free (accepts NULL).
 */
struct mx_metrics *mx_metrics_new(double (*clock)(void));
void mx_metrics_free(struct mx_metrics *m);

/* CLOCK_MONOTONIC in seconds: the clock latencies are measured with. */
double mx_metrics_now(void);

/*
 * The slot of server |name|: found, or added with zero counters. A slot
 * lives as long as |m|, so a server that leaves and comes back (a reload)
 * keeps counting where it was; counters never go backwards.
 */
size_t mx_metrics_server_slot(struct mx_metrics *m, const char *name);

/*
 * Every function below accepts |m| NULL and then does nothing, so code
 * that runs without a gateway (unit tests, sandbox-sim) needs no checks.
 * |slot| comes from mx_metrics_server_slot().
 */

/*
 * One finished call to an upstream on behalf of a client. |method| as for
 * mx_metrics_method_label(). |upstream_s|: from handing the call to the
 * upstream layer (mx_upcall_start) to its on_done, waits for a wake or a
 * concurrency slot included; |added_s|: the time the gateway itself spent
 * on the request (client request complete → upstream call started, plus
 * upstream call done → client response ended). A negative value is not
 * observed (unknown, e.g. the client went away). Streams (GET,
 * subscriptions/listen) are counted but never timed: they last as long as
 * the client listens.
 */
void mx_metrics_upstream_call(struct mx_metrics *m, size_t slot, const char *method,
                              enum mx_metrics_outcome outcome, double upstream_s, double added_s);

/* An attempt failed before it reached the sandbox and will be sent again. */
void mx_metrics_upstream_retry(struct mx_metrics *m, size_t slot);
/* A notification from the upstream dropped for naming no request of its own
 * in flight (progress for another upstream's call, or for none). */
void mx_metrics_upstream_dropped(struct mx_metrics *m, size_t slot);
/* Body bytes sent to / received from the upstream (every attempt). */
void mx_metrics_upstream_bytes(struct mx_metrics *m, size_t slot, uint64_t sent, uint64_t received);
/* A wake began (the upstream entered the waking state). */
void mx_metrics_wake_start(struct mx_metrics *m, size_t slot);
/* A wake ended after |duration_s|. */
void mx_metrics_wake_end(struct mx_metrics *m, size_t slot, double duration_s,
                         enum mx_metrics_wake_result result);

/*
 * Median upstream latency of the calls that ended "ok" within the last
 * |window_s| seconds (a ring of the last 256 such calls per server). Returns
 * 0 and |*out_s|, or MX_ENOTFOUND when there was none.
 */
int mx_metrics_p50(const struct mx_metrics *m, size_t slot, double window_s, double *out_s);
/* The same for the quantile |q| in (0, 1] (nearest rank): 0.99 for p99. */
int mx_metrics_quantile(const struct mx_metrics *m, size_t slot, double window_s, double q,
                        double *out_s);

/* What the gateway knows at render time (read, not kept, by this module). */
struct mx_procstat;

struct mx_metrics_gauges {
    double start_time_s; /* wall clock (time_t) the process started */
    uint64_t connections;
    uint64_t inflight;
    uint64_t refused;
    long long sessions;             /* open /mcp client sessions; < 0: not known, left out */
    struct mx_upstream *const *ups; /* slots; retired ones are skipped */
    size_t up_cnt;
    uint64_t reloads_ok; /* config reloads applied and refused */
    uint64_t reloads_failed;
    uint64_t refused_connections;   /* closed at accept: max_connections */
    uint64_t refused_per_client;    /* closed at accept: max_connections_per_client */
    uint64_t refused_sessions;      /* initialize refused: max_sessions */
    const struct mx_procstat *proc; /* the process_* series; NULL: none */
};

/*
 * Append the exposition text to |out| (text/plain; version=0.0.4). Returns 0
 * or MX_ELIMIT (|out|'s cap was reached; its contents are then partial).
 */
int mx_metrics_render(const struct mx_metrics *m, const struct mx_metrics_gauges *g,
                      struct mx_buf *out);

#endif
