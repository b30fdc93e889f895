/* SPDX-License-Identifier: MIT */
/* What the limits of /mcp refused, for /health and /metrics (mcp.h). */
#include "mcp_int.h"

uint64_t mx_mcp_sessions_refused(const struct mx_mcp *m)
{
    return m ? mx_session_refused_cnt(m->sessions) : 0;
}
