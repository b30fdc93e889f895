/* SPDX-License-Identifier: MIT */
/*
 * The stdio transport behind upsess.h: an upstream session with a `command`
 * server is one child process (child.h) speaking newline-delimited
 * JSON-RPC (MCP 2025-06-18, Transports, stdio). Callers use the mx_upsess_*
 * functions unchanged; upsess.c hands a session or request made here to
 * the functions below, telling the two apart by the first member both kinds
 * of object start with (enum mx_upsess_kind; C11 6.7.2.1p15: a pointer to
 * a struct, converted, points to its first member).
 *
 * Semantics, beyond upsess.h:
 * - the process starts at the first request (or connect-only request) and
 *   requests wait, in order, while it starts; initialize goes first, is
 *   sent again when the process has not answered within a bound (an
 *   installer such as `npx -y pkg` may take long and may re-exec, losing
 *   the first line), and nothing else is written before the answer and
 *   notifications/initialized;
 * - a process that exits fails the requests written to it (their outcome
 *   is unknown; never re-sent), keeps the ones not yet written waiting, and
 *   is started again for them (or the next request), after a backoff when
 *   it keeps failing; on_ready fires again after the new initialize;
 * - the stdin queue has a cap: above a watermark requests wait for it to
 *   drain, and a message that cannot fit fails;
 * - progress notifications go to the request whose progress token they
 *   carry; a request from the server goes to the one request in flight that
 *   can cause one (tools/call, prompts/get, ...) when there is exactly one,
 *   else to the session's on_message (stdio carries no other hint);
 * - stderr goes to the log, never to the protocol (child.h).
 *
 * Session keys of stdio sessions have the top bit set, so they never equal
 * the key of an HTTP session.
 */
#ifndef MX_UPSESS_STDIO_H
#define MX_UPSESS_STDIO_H

#include <stdbool.h>
#include <stdint.h>

#include "upsess.h"

/* The first member of every session and request object of either kind. */
enum mx_upsess_kind {
    MX_UPSESS_HTTP = 0, /* upsess.c (its objects are zeroed at allocation) */
    MX_UPSESS_STDIO = 1,
    MX_UPSESS_SSE = 2, /* upsess_sse.c */
};

/* Whether |obj| (a struct mx_upsess or mx_uprpc, or NULL) was made here. */
static inline bool mx_upsess_is_stdio(const void *obj)
{
    return obj != NULL && *(const enum mx_upsess_kind *)obj == MX_UPSESS_STDIO;
}

/* As the mx_upsess_* and mx_uprpc_* functions of the same names. */
struct mx_upsess *mx_upsess_stdio_new(struct mx_upsess_env *env, const json_t *caps,
                                      const char *trace_session, const struct mx_upsess_cbs *cbs,
                                      void *data);
void mx_upsess_stdio_close(struct mx_upsess *s);
uint64_t mx_upsess_stdio_key(const struct mx_upsess *s);
bool mx_upsess_stdio_is_ready(const struct mx_upsess *s);
json_t *mx_upsess_stdio_init_result(const struct mx_upsess *s);
int mx_upsess_stdio_request(struct mx_upsess *s, json_t *msg, long timeout_ms,
                            const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out);
void mx_uprpc_stdio_cancel(struct mx_uprpc *r);
void mx_uprpc_stdio_resume(struct mx_uprpc *r);
void mx_upsess_stdio_send(struct mx_upsess *s, json_t *msg, uint64_t key);
size_t mx_upsess_stdio_live_cnt(void);

/* The pid of the session's process, or 0 when none runs; for /health and
 * tests. */
int mx_upsess_stdio_pid(const struct mx_upsess *s);

#endif
