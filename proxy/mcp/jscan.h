/* SPDX-License-Identifier: MIT */
/*
 * A cheap, allocation-free check of a JSON text that finds the values of
 * an object's members by name without building a tree, so that a value can
 * pass through as the bytes that came (an upstream's result, its id
 * rewritten around it) instead of being parsed and encoded again.
 *
 * The check is never more lenient than the full parser (mx_rpc_parse:
 * jansson with duplicate keys refused): a text it accepts, jansson
 * accepts. Where deciding would take more than a bounded scan (deep
 * nesting, many keys in one object, escaped keys, numbers that may not fit)
 * it says so, and the caller parses in full as before.
 */
#ifndef MX_JSCAN_H
#define MX_JSCAN_H

#include <stdbool.h>
#include <stddef.h>

#include "str.h"

/* Containers deeper than this are left to the full parser. */
#define MX_JSCAN_MAX_DEPTH 64
/* Keys alive at once (an object's and its enclosing objects') beyond which
 * duplicate detection is left to the full parser. */
#define MX_JSCAN_MAX_KEYS 256

/*
 * Whether |text| is one JSON object (whitespace around it allowed) that
 * the full parser accepts. When true, |vals[i]| is the value of its member
 * named |keys[i]| (a plain name, compared byte for byte), exactly the bytes
 * of the value, or {NULL, 0} when it has none. False: not valid, or not
 * decided cheaply; nothing is said about |vals| then.
 */
bool mx_jscan_object(struct mx_str text, const char *const *keys, size_t n, struct mx_str *vals);

/* Whether |text| holds a CR or LF (outside strings these are whitespace;
 * inside they cannot appear), which an SSE data line cannot carry. */
bool mx_jscan_has_newline(struct mx_str text);

#endif
