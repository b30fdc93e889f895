/* SPDX-License-Identifier: MIT */
/*
 * MCP protocol revisions: which ones the sim speaks and how it answers a
 * client's choice. Every revision decision of the sim goes through here, so a
 * later stateless revision has one place to hook in. Pure.
 */
#ifndef MX_SIM_REV_H
#define MX_SIM_REV_H

#include <stdbool.h>

#include "str.h"

/* The revision the sim prefers and falls back to. */
#define MX_SIM_REV_DEFAULT "2025-06-18"

/* True if |v| is a revision the sim speaks (2025-03-26, 2025-06-18, 2025-11-25). */
bool mx_sim_rev_is_supported(struct mx_str v);

/*
 * The revision to answer initialize with: the client's |requested| one
 * (NULL if absent) when supported, else MX_SIM_REV_DEFAULT. Returns a static
 * string.
 */
const char *mx_sim_rev_negotiate(const char *requested);

/*
 * Check the MCP-Protocol-Version header of a request after initialize
 * (|hdr| NULL when absent) against the session's |negotiated| revision.
 * MCP 2025-06-18, Transports: absent is allowed (assume the negotiated one);
 * an unsupported value is a 400, a supported one other than |negotiated|
 * is allowed. Returns true if fine.
 */
bool mx_sim_rev_header_ok(const struct mx_str *hdr, const char *negotiated);

/* True if a session of |revision| has the experimental tasks (2025-11-25). */
bool mx_sim_rev_has_tasks(const char *revision);

#endif
