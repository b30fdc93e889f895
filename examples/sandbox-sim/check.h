/* SPDX-License-Identifier: MIT */
/*
 * Pure checks on request header values: the media types of Accept and
 * Content-Type, and the credential in Authorization or Cookie. Values are
 * slices of wire bytes; nothing here allocates or logs.
 */
#ifndef MX_SIM_CHECK_H
#define MX_SIM_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "str.h"

/* True if the Accept value |accept| lists |type| ("text/event-stream") as a
 * media range of its own (parameters ignored, case-insensitive, no wildcards). */
bool mx_sim_accept_has(struct mx_str accept, const char *type);

/* True if the Content-Type value |ctype| is |type|, parameters ignored. */
bool mx_sim_ctype_is(struct mx_str ctype, const char *type);

/* Equal length and equal bytes, in time independent of the bytes. */
bool mx_sim_secret_eq(struct mx_str got, const unsigned char *want, size_t want_len);

/* True if the Authorization value |authz| is "Bearer <want>". */
bool mx_sim_bearer_ok(struct mx_str authz, const unsigned char *want, size_t want_len);

/* True if the Cookie value |cookies| ("a=1; b=2") holds |name|=<want>;
 * a value in double quotes (RFC 6265 §4.1.1) is compared without them. */
bool mx_sim_cookie_ok(struct mx_str cookies, const char *name, const unsigned char *want,
                      size_t want_len);

/* True if |host| (NULL: absent) names the loopback and |origin| (NULL:
 * absent) is absent or an http(s) origin on the loopback. */
bool mx_sim_host_origin_ok(const struct mx_str *host, const struct mx_str *origin);

#endif
