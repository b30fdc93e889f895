/* SPDX-License-Identifier: MIT */
/* The revisions the sim speaks, and negotiation for initialize. */
#include <string.h>

#include "rev.h"

static const char *const revisions[] = {"2025-03-26", "2025-06-18", "2025-11-25"};

#define REV_CNT (sizeof(revisions) / sizeof(revisions[0]))

bool mx_sim_rev_is_supported(struct mx_str v)
{
    for (size_t i = 0; i < REV_CNT; i++) {
        if (mx_str_eq(v, mx_str_cstr(revisions[i])))
            return true;
    }
    return false;
}

const char *mx_sim_rev_negotiate(const char *requested)
{
    /* MCP 2025-06-18, Lifecycle: echo a supported version, else offer ours. */
    for (size_t i = 0; requested && i < REV_CNT; i++) {
        if (strcmp(requested, revisions[i]) == 0)
            return revisions[i];
    }
    return MX_SIM_REV_DEFAULT;
}

bool mx_sim_rev_header_ok(const struct mx_str *hdr, const char *negotiated)
{
    (void)negotiated;
    /* MCP 2025-06-18, Transports: only an invalid or unsupported version is
     * a 400; a supported one other than the session's is not (conformance
     * 0.1.16 sends 2025-03-26 on a session of 2025-11-25) */
    return hdr == NULL || mx_sim_rev_is_supported(*hdr);
}

bool mx_sim_rev_has_tasks(const char *revision)
{
    /* MCP 2025-11-25 introduced tasks; the older revisions have none. */
    return strcmp(revision, "2025-11-25") == 0;
}
