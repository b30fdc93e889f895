/* SPDX-License-Identifier: MIT */
/*
 * The tasks of sandbox-sim --conformance in 2026-07-28 (the tasks extension,
 * SEP-2663): a bounded table of tasks that a task-supporting tool created,
 * whose status follows from the clock (a task "runs" until its due time) and
 * from what tasks/update and tasks/cancel told it. No loop and no sockets:
 * the status is worked out when a client asks.
 */
#ifndef MX_SIM_TASKS_H
#define MX_SIM_TASKS_H

#include <stdint.h>

#include <jansson.h>

struct mx_sim_reply;
struct mx_sim_tasks;

/* The extension's name in capabilities.extensions (SEP-2663). */
#define MX_SIM_TASKS_EXT "io.modelcontextprotocol/tasks"

/* Most tasks kept; past it the oldest finished task goes, and a table full
 * of running tasks refuses a new one. */
#define MX_SIM_TASKS_MAX 512

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

#endif
