/* SPDX-License-Identifier: MIT */
/* What the limits of /mcp refused, for /health and /metrics (mcp.h). */
#include "front_int.h"
#include "mcp.h"

uint64_t mx_mcp_sessions_refused(const struct mx_mcp *m)
{
    return m ? mx_session_refused_cnt(m->sessions) : 0;
}
