/* SPDX-License-Identifier: MIT */
/*
 * The one pure part of the legacy HTTP+SSE transport (upsess_sse.c, MCP
 * 2024-11-05): where a server's `endpoint` event tells mcplex to POST,
 * checked to be on the configured url's origin so that a server cannot
 * send the credential elsewhere. The transport itself is reached only
 * through upsess.h.
 */
#ifndef MX_UPSESS_SSE_H
#define MX_UPSESS_SSE_H

#include "str.h"

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
