/* SPDX-License-Identifier: MIT */
/*
 * The request engine of `mcplex bench`: one "side" is one way to reach an
 * MCP server (direct to the upstream with its credential, or through the
 * gateway with the client token), with its own MCP session and its own
 * libcurl multi handle and connection pool. A batch sends N requests of one
 * kind at a concurrency C (C easy handles, each sending its next request when
 * its last one is done) and records each request's time as libcurl measured
 * it (CURLINFO_*_TIME_T) into an mx_benchstat. A command-line tool, so it
 * blocks; every request has a timeout.
 *
 * The side owns the credential header it is given and wipes it; nothing here
 * prints a header, a URL's userinfo or a response body.
 */
#ifndef MX_BENCHRUN_H
#define MX_BENCHRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "benchstat.h"

enum mx_bench_kind {
    MX_BENCH_CONNECT = 0, /* a ping on a fresh connection: TCP connect and TLS handshake */
    MX_BENCH_INITIALIZE = 1,
    MX_BENCH_PING = 2,
    MX_BENCH_TOOLS_LIST = 3,
    MX_BENCH_TOOLS_CALL = 4,
};

struct mx_bench_side;

/* Called now and then while a batch runs: |done| of |total| requests. */
typedef void (*mx_bench_progress_cb)(void *ud, uint64_t done, uint64_t total);

/*
 * A side for |url|. |ca_file| (copied; NULL: the system store) verifies an
 * https URL. |auth_header| is a header line ("Authorization: Bearer …") the
 * side takes ownership of and wipes when freed; NULL sends none. |http1|
 * forces HTTP/1.1 (else h2 is offered by ALPN on https). |timeout_ms| bounds
 * each request.
 */
struct mx_bench_side *mx_bench_side_new(const char *url, const char *ca_file, char *auth_header,
                                        bool http1, long timeout_ms);
/* DELETEs the sessions the side opened, then frees; accepts NULL. */
void mx_bench_side_free(struct mx_bench_side *s);

/*
 * initialize + notifications/initialized: the session every later request of
 * this side carries. Returns 0, or MX_EUPSTREAM with |err| (cap |errcap|)
 * saying what failed: a transport error, the HTTP status, or a JSON-RPC error.
 */
int mx_bench_side_open(struct mx_bench_side *s, char *err, size_t errcap);

/*
 * tools/list on the side's session; *|out| is the result object (caller
 * json_decref()s). Returns 0 or MX_EUPSTREAM with |err|.
 */
int mx_bench_side_tools(struct mx_bench_side *s, json_t **out, char *err, size_t errcap);

/*
 * The tools/call a TOOLS_CALL batch sends: |tool| with |args| (an object,
 * borrowed and copied).
 */
void mx_bench_side_set_call(struct mx_bench_side *s, const char *tool, const json_t *args);

/*
 * Send |count| requests of |kind| at |conc| at a time. Each success adds its
 * time to |st| (for MX_BENCH_CONNECT: the TCP connect time, and the TLS
 * handshake to |tls| when not NULL and the URL is https); each failure
 * (transport error, HTTP status other than 200, no JSON-RPC result with the
 * request's id, a tool result with isError) counts as an error. |*wall_us|
 * gets the batch's wall time. |progress| may be NULL.
 */
void mx_bench_side_run(struct mx_bench_side *s, enum mx_bench_kind kind, size_t count, size_t conc,
                       struct mx_benchstat *st, struct mx_benchstat *tls, int64_t *wall_us,
                       mx_bench_progress_cb progress, void *ud);

/* Why the side's last failed request failed ("" when none failed): a
 * transport error, the HTTP status, or a missing result. Never a body. */
const char *mx_bench_side_last_error(const struct mx_bench_side *s);

/* Whether the side's URL is https. */
bool mx_bench_side_is_tls(const struct mx_bench_side *s);
/* The HTTP version the side's last request used: "1.1", "2" or "?". */
const char *mx_bench_side_http_version(const struct mx_bench_side *s);

/*
 * Whether |p|,|len| (a JSON body, or an SSE stream of JSON-RPC messages)
 * holds the JSON-RPC response with id |id| and a "result" (for tools/call,
 * one whose isError is not true). Pure; exposed for the unit test.
 */
bool mx_bench_rpc_ok(const char *p, size_t len, int64_t id);

#endif
