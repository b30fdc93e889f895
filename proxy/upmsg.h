/* SPDX-License-Identifier: MIT */
/*
 * What the upstream transports that carry every JSON-RPC message on a
 * channel of their own share (stdio in upsess_stdio.c, the legacy HTTP+SSE
 * stream in upsess_sse.c): the versions mcplex speaks, the messages it
 * writes itself (initialize, initialized, a ping's answer, a cancellation),
 * the check of an initialize answer, which requests may make a server ask
 * the client something, and failure messages naming the server.
 */
#ifndef MX_UPMSG_H
#define MX_UPMSG_H

#include <stdbool.h>

#include <jansson.h>

#include "model.h"
#include "upreq.h"

/* Newest first, NULL-terminated (MCP 2025-11-25, Lifecycle). */
extern const char *const mx_upmsg_versions[];

/* The initialize request with id |id|, offering |caps| (new reference). */
json_t *mx_upmsg_initialize(const json_t *caps, const char *id);
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

#endif
