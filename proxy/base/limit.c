/* SPDX-License-Identifier: MIT */
/* Rate of limit lines in the log (limit.h). */
#include <stdio.h>

#include "limit.h"

bool mx_limit_log_due(struct mx_limit_log *l, double now, uint64_t *suppressed)
{
    l->total++;
    if (l->logged && now < l->next_at) {
        l->suppressed++;
        return false;
    }
    *suppressed = l->suppressed;
    l->suppressed = 0;
    l->logged = true;
    l->next_at = now + MX_LIMIT_LOG_QUIET_S;
    return true;
}

const char *mx_limit_log_note(uint64_t suppressed, char *buf, size_t cap)
{
    if (suppressed == 0 || cap == 0)
        return "";
    snprintf(buf, cap, " (%llu more since the last such line)", (unsigned long long)suppressed);
    return buf;
}
