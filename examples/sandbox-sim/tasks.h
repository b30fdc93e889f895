/* SPDX-License-Identifier: MIT */
/*
 * The sim's tasks, in two eras that share one table and one status rule:
 * the 2026-07-28 tasks extension of --conformance (SEP-2663) and the
 * experimental tasks of MCP 2025-11-25 in the normal mode (the slow tool).
 * A task's status follows from the clock (a task "runs" until its due time)
 * and from what tasks/update and tasks/cancel told it; only the envelopes
 * differ by era. No loop and no sockets: the status is worked out when a
 * client asks.
 */
#ifndef MX_SIM_TASKS_H
#define MX_SIM_TASKS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

struct mx_sim_reply;
struct mx_sim_tasks;

/* The extension's name in capabilities.extensions (SEP-2663). */
#define MX_SIM_TASKS_EXT "io.modelcontextprotocol/tasks"

/* Most tasks kept; past it the oldest finished task goes, and a table full
 * of running tasks refuses a new one. */
#define MX_SIM_TASKS_MAX 512

/* 2025-11-25: the ttl a task has when the request names none, the most it
 * may ask for, and the least it is given (a receiver may override, MCP
 * 2025-11-25, Tasks, TTL and Resource Management); tasks/list page size. */
#define MX_SIM_TASKS_TTL_DEFAULT_MS 600000
#define MX_SIM_TASKS_TTL_MAX_MS     86400000
#define MX_SIM_TASKS_TTL_MIN_MS     1000
#define MX_SIM_TASKS_PAGE           50

/* How a task ends once its time has run out. */
enum mx_sim_task_end {
    MX_SIM_TASK_RESULT = 0, /* completed with |text| */
    MX_SIM_TASK_TOOL_ERROR, /* completed with |text| and isError (a tool error) */
    MX_SIM_TASK_PROTOCOL,   /* failed with a JSON-RPC error */
};

struct mx_sim_tasks *mx_sim_tasks_new(void);
void mx_sim_tasks_free(struct mx_sim_tasks *t);

/*
 * Create a task that ends as |end| with |text| after |run_ms| milliseconds,
 * or, when |inputs| (an object of inputRequests by key, stolen; NULL: none)
 * is not empty, once tasks/update answered every key, and make |out| its
 * CreateTaskResult. A full table makes |out| a -32603 error.
 */
void mx_sim_tasks_create(struct mx_sim_tasks *t, enum mx_sim_task_end end, const char *text,
                         int64_t run_ms, json_t *inputs, struct mx_sim_reply *out);

/* tasks/get, tasks/update and tasks/cancel with |params| (borrowed): an
 * unknown taskId is -32602. */
void mx_sim_tasks_get(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out);
void mx_sim_tasks_update(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out);
void mx_sim_tasks_cancel(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out);

/* Most task ids one subscriptions/listen looks at in its taskIds filter
 * (SEP-2663); the strings past them are ignored. */
#define MX_SIM_TASKS_FOLLOW_MAX 64

/*
 * The taskIds filter of a subscriptions/listen: the strings among the first
 * MX_SIM_TASKS_FOLLOW_MAX strings of |ids| (borrowed; anything but an array
 * counts as empty) that name a task of this extension in the table, each
 * once, in the order given. Non-strings are skipped. Returns a new array,
 * the acknowledgement's notifications.taskIds.
 */
json_t *mx_sim_tasks_known(struct mx_sim_tasks *t, json_t *ids);

/*
 * Task |id| as tasks/get answers it (the DetailedTask, no resultType): the
 * body of a notifications/tasks. Returns a new object, or NULL for an
 * unknown or expired id. |*due_in_ms| is how long until the clock changes
 * its status (a working task), or -1 when only a request can (input
 * required) or nothing will (terminal, unknown).
 */
json_t *mx_sim_tasks_detail(struct mx_sim_tasks *t, const char *id, int64_t *due_in_ms);

/* Whether |status| is a terminal one (completed, failed, cancelled). */
bool mx_sim_tasks_is_terminal(const char *status);

/* ---- MCP 2025-11-25 (experimental tasks) ---- */

/*
 * Create a task that completes with the tool result |text| (isError when
 * |is_error|) after |run_ms| milliseconds, for a request whose params.task
 * is |task| (borrowed; an object with an optional ttl in ms), and make |out|
 * the CreateTaskResult {task: {...}}. A bad |task| is -32602, a full table
 * -32603.
 */
void mx_sim_tasks_create_2025(struct mx_sim_tasks *t, const char *text, bool is_error,
                              int64_t run_ms, json_t *task, struct mx_sim_reply *out);

/* tasks/get and tasks/cancel with |params| (borrowed): the Task; an unknown
 * or expired taskId, and the cancel of a task in a terminal status, are
 * -32602. */
void mx_sim_tasks_get_2025(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out);
void mx_sim_tasks_cancel_2025(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out);

/*
 * tasks/result: a finished task's CallToolResult with the related-task
 * _meta; a cancelled one is -32602. A task still working sets
 * |out->task_wait|, |out->wait_ms| (until it is due) and |out->task_id|, and
 * nothing else: the caller holds the request and asks again then.
 */
void mx_sim_tasks_result_2025(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out);

/* tasks/list with an optional params.cursor: the 2025 tasks, newest first,
 * MX_SIM_TASKS_PAGE at a time with an opaque nextCursor; a bad cursor is
 * -32602. */
void mx_sim_tasks_list_2025(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out);

#endif
