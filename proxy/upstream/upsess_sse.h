/* SPDX-License-Identifier: MIT */
/*
 * The legacy HTTP+SSE transport (MCP 2024-11-05, Transports) behind
 * upsess.h, for `transport = "sse"` servers: the client opens a GET on the
 * configured url and keeps it; the server's first event, `endpoint`, names
 * the URI to which every client message is POSTed (the POST answers 202 and
 * carries no JSON-RPC), and every server message, answers included, comes
 * as a `message` event on the GET stream. Callers use the mx_upsess_*
 * functions unchanged; upsess.c hands objects made here to the functions
 * below (enum mx_upsess_kind, upsess_stdio.h).
 *
 * Semantics, beyond upsess.h:
 * - the stream opens at the first request (or connect-only request);
 *   requests wait, in order, until the endpoint is known, initialize is
 *   answered and notifications/initialized was accepted;
 * - the upstream's credential goes on the GET and on every POST; the
 *   endpoint must have the configured url's origin (scheme, host, port) or
 *   it is refused, so a server cannot send the credential elsewhere;
 * - answers are matched to requests by id; progress notifications go to the
 *   request whose progress token they carry; a request from the server goes
 *   to the one request in flight that can cause one when there is exactly
 *   one, else to the session's on_message (as for stdio: the stream carries
 *   no other hint);
 * - a stream that breaks ends the upstream's session: requests POSTed on it
 *   fail (their outcome is unknown; never re-sent), the ones not yet POSTed
 *   wait, and a new stream opens for them (or the next request), after a
 *   backoff when it keeps breaking; on_ready fires again after the new
 *   initialize.
 *
 * Session keys of these sessions have bit 62 set (stdio ones bit 63), so
 * they never equal another kind's.
 */
#ifndef MX_UPSESS_SSE_H
#define MX_UPSESS_SSE_H

#include <stdbool.h>
#include <stdint.h>

#include "str.h"
#include "upsess.h"
#include "upsess_stdio.h"

/* Whether |obj| (a struct mx_upsess or mx_uprpc, or NULL) was made here. */
static inline bool mx_upsess_is_sse(const void *obj)
{
    return obj != NULL && *(const enum mx_upsess_kind *)obj == MX_UPSESS_SSE;
}

/* As the mx_upsess_* and mx_uprpc_* functions of the same names. */
struct mx_upsess *mx_upsess_sse_new(struct mx_upsess_env *env, const json_t *caps,
                                    const char *trace_session, const struct mx_upsess_cbs *cbs,
                                    void *data);
void mx_upsess_sse_close(struct mx_upsess *s);
uint64_t mx_upsess_sse_key(const struct mx_upsess *s);
bool mx_upsess_sse_is_ready(const struct mx_upsess *s);
json_t *mx_upsess_sse_init_result(const struct mx_upsess *s);
int mx_upsess_sse_request(struct mx_upsess *s, json_t *msg, long timeout_ms,
                          const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out);
void mx_uprpc_sse_cancel(struct mx_uprpc *r);
void mx_uprpc_sse_resume(struct mx_uprpc *r);
void mx_upsess_sse_send(struct mx_upsess *s, json_t *msg, uint64_t key);
size_t mx_upsess_sse_live_cnt(void);

/*
 * The URL to POST to, from the data of an `endpoint` event |ref| (a URI
 * reference, relative or absolute; RFC 3986 section 5.2 resolution, the
 * fragment dropped) and the configured stream url |base| (http or https).
 * Pure. Returns 0 and |*out| (caller frees), MX_EINVAL (empty, spaces or
 * control characters, not a URI mcplex can use) or MX_EPERM (another
 * origin than |base|: scheme, host or port differ, or it names a user);
 * on failure |*why| says why in a few words (a fixed string).
 */
int mx_sse_endpoint_resolve(const char *base, struct mx_str ref, char **out, const char **why);

#endif
