/* SPDX-License-Identifier: MIT */
/*
 * Tasks at /mcp and /mcp/<server>, 2026-07-28 tasks extension (SEP-2663):
 * which requests are the extension's, whether a request declared it, the
 * routing of tasks/get, tasks/update and tasks/cancel by the sealed task id
 * (taskid.h) to the upstream that made the task, the task ids in answers
 * sealed for the client, and the extension in server/discover when an
 * upstream in view offers it. The calls themselves are mcp_2026.c's.
 */
#ifndef MX_FRONT_TASKS_H
#define MX_FRONT_TASKS_H

#include <stdbool.h>

#include <jansson.h>

#include "revision.h"

struct mx_call;
struct mx_mcp;
struct mx_mcpup;

#define MCP_TASKS_EXT MX_REV_EXT_TASKS

/* tasks/get, tasks/update, tasks/cancel. */
bool mcp_tasks_method(const char *method);

/* Whether |msg|'s _meta clientCapabilities declare the extension. */
bool mcp_tasks_declared(const json_t *msg);

/*
 * The upstream task request |msg| goes to, with |*upmsg| set to a new copy of
 * |msg| carrying that upstream's own task id; or NULL after answering |c|:
 * -32021 (HTTP 400) when |msg| does not declare the extension, -32602 for a
 * task id mcplex did not seal or whose upstream is not in |scope| (NULL:
 * every upstream), -32603 naming the upstream when it is gone from the
 * configuration.
 */
struct mx_mcpup *mcp_tasks_route(struct mx_mcp *m, struct mx_call *c, const json_t *msg,
                                 struct mx_mcpup *scope, json_t **upmsg);

/* Seal the taskId of |result| (from |u|, for |method|) for the client: a
 * tools/call answered with a task, and tasks/get. Other results are left. */
void mcp_tasks_seal(struct mx_mcp *m, const struct mx_mcpup *u, const char *method, json_t *result);

/* MCP 2025-11-25 experimental tasks: tasks/get, tasks/result, tasks/cancel
 * (the requests that name a task). */
bool mcp_tasks25_by_id(const char *method);
/* Whether request |msg| (|method|) is a task request or task-augmented (its
 * params.task): its answer carries task ids to seal. */
bool mcp_tasks25_involved(const char *method, const json_t *msg);
/* As mcp_tasks_route, for a 2025 session's request (no extension to
 * declare). */
struct mx_mcpup *mcp_tasks25_route(struct mx_mcp *m, struct mx_call *c, const json_t *msg,
                                   struct mx_mcpup *scope, json_t **upmsg);
/* Seal the task ids of |result| from |u|: its taskId (a Task), task.taskId
 * (a CreateTaskResult), _meta's related-task, and each of tasks[] (a task
 * whose id is too long to seal is left out). Returns false when one of the
 * first three could not be sealed; the caller answers with an error. */
bool mcp_tasks25_seal(struct mx_mcp *m, const struct mx_mcpup *u, json_t *result);
/* The upstream that lists tasks (capabilities.tasks.list), with |*cnt| set
 * to how many do; NULL when none does. */
struct mx_mcpup *mcp_tasks25_lister(struct mx_mcp *m, size_t *cnt);

/* Add the extension to |caps| (server/discover) when an upstream in |scope|
 * (NULL: all) offers it. */
void mcp_tasks_caps(struct mx_mcp *m, const struct mx_mcpup *scope, json_t *caps);

#endif
