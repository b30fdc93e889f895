/* SPDX-License-Identifier: MIT */
/*
 * Which upstream a resource URI belongs to. Resource URIs pass /mcp
 * untouched (they are identifiers a model copies around), so routing learns
 * them: first the exact URIs the upstreams listed, then their URI templates
 * (RFC 6570: level 1 "{var}" matches one or more characters other than
 * '/', '?' and '#'; "{+var}" and "{#var}" any characters; "{/var}", "{.var}"
 * and "{;var}" their prefix then a segment; "{?var}" and "{&var}" an
 * optional query). Several upstreams holding a URI make it ambiguous, by
 * listing or by template alike, and the caller names them in its error. Pure: JSON lists in,
 * indexes out.
 */
#ifndef MX_URIROUTE_H
#define MX_URIROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "str.h"

/* Longest URI matched against templates; longer ones match none. */
#define MX_URITPL_MAX_URI 8192
/* Most candidates reported. */
#define MX_URIROUTE_MAX_CANDS 32

struct mx_uri_source {
    json_t *resources; /* array of resources ({"uri": ...}), borrowed, may be NULL */
    json_t *templates; /* array of templates ({"uriTemplate": ...}), borrowed, may be NULL */
};

enum mx_uriroute_how {
    MX_URIROUTE_NONE = 0,     /* no upstream holds it */
    MX_URIROUTE_EXACT = 1,    /* listed as is */
    MX_URIROUTE_TEMPLATE = 2, /* matched by a template */
};

struct mx_uriroute_result {
    enum mx_uriroute_how how;
    size_t cnt;                          /* distinct upstreams; 1 means routable */
    size_t cands[MX_URIROUTE_MAX_CANDS]; /* their indexes, increasing */
};

struct mx_uriroute;

/* Index |cnt| sources (copies what it needs). Returns the router. */
struct mx_uriroute *mx_uriroute_new(const struct mx_uri_source *srcs, size_t cnt);
void mx_uriroute_free(struct mx_uriroute *r);

/* Upstreams holding |uri|: those that list it and those with a template
 * matching it, together (|how| is EXACT when any lists it). */
void mx_uriroute_find(const struct mx_uriroute *r, struct mx_str uri,
                      struct mx_uriroute_result *out);
/* Upstreams that listed the template text |tpl| itself (completion refs). */
void mx_uriroute_find_template(const struct mx_uriroute *r, struct mx_str tpl,
                               struct mx_uriroute_result *out);

/* Whether |uri| is an expansion of |tpl| (rules above). A malformed
 * template matches nothing. */
bool mx_uritpl_match(struct mx_str tpl, struct mx_str uri);

#endif
