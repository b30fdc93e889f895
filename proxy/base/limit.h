/* SPDX-License-Identifier: MIT */
/*
 * The log side of a limit: a refused client is told why by a status, but
 * the log must not grow with a flood of refusals. A struct mx_limit_log
 * per cause lets the first refusal write a line, counts the ones that
 * follow within MX_LIMIT_LOG_QUIET_S, and has the next line after that
 * quiet period say how many went unlogged. Pure: the caller passes the time.
 */
#ifndef MX_LIMIT_H
#define MX_LIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MX_LIMIT_LOG_QUIET_S 60.0

struct mx_limit_log {
    double next_at;      /* no line before this time */
    uint64_t suppressed; /* refusals since the last line */
    uint64_t total;      /* refusals ever */
    bool logged;         /* a line was written */
};

/*
 * Count one refusal at |now| (seconds, any monotonic origin). Returns true
 * when the caller should log it now; *|suppressed| then holds how many
 * refusals were not logged since the previous line.
 */
bool mx_limit_log_due(struct mx_limit_log *l, double now, uint64_t *suppressed);

/* "" for |suppressed| 0, else " (N more since the last such line)", in
 * |buf|; returns the text to append to the log line. */
const char *mx_limit_log_note(uint64_t suppressed, char *buf, size_t cap);

#endif
