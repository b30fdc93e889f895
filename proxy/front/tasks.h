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
#include "taskid.h"

struct mcp_taskbook;
struct mx_call;
struct mx_mcp;
struct mx_mcpup;
struct mx_session;

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

/* The upstream in |scope| (NULL: any) that sealed task id |id| names, with
 * its own task id in |t|; NULL when |id| is none of mcplex's or names no
 * such upstream. */
struct mx_mcpup *mcp_tasks_upstream(struct mx_mcp *m, const char *id, const struct mx_mcpup *scope,
                                    struct mx_taskid *t);

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
/* Seal the task ids of |result| from |u| (answering client session
 * |owner|): its taskId (a Task), task.taskId (a CreateTaskResult), _meta's
 * related-task, and each of tasks[] (a task whose id is too long to seal
 * is left out); the Tasks in it are noted in the book. Returns false when
 * one of the first three could not be sealed; the caller answers with an
 * error. */
bool mcp_tasks25_seal(struct mx_mcp *m, const struct mx_mcpup *u, uint64_t owner, json_t *result);

/* Add the extension to |caps| (server/discover) when an upstream in |scope|
 * (NULL: all) offers it (or runs 2025 tasks a 2026 client reaches bridged);
 * the 2025-11-25 capabilities.tasks slot is taken out. */
void mcp_tasks_caps(struct mx_mcp *m, const struct mx_mcpup *scope, json_t *caps);

/*
 * The book of tasks: what mcplex last heard of each task it sealed (its
 * status as the client sees it, when, which client session made it), so
 * that a sleeping sandbox is not woken to be asked a status, notifications
 * of a task reach the client that made it, and a 2025 tasks/list is the
 * caller's tasks across every upstream. Bounded in entries
 * (MCP_TASKS_BOOK_MAX, least recently heard of goes first) and bytes; an
 * entry goes when its upstream is retired or its ttl has passed. Memory
 * only: after a restart the ids still work (they are sealed), the book
 * fills again as tasks are asked about.
 */
#define MCP_TASKS_BOOK_MAX   1024
#define MCP_TASKS_BOOK_BYTES (4u << 20)
#define MCP_TASKS_ENTRY_MAX  (16u << 10) /* a status bigger than this is not kept */
/* How old a status of a running task may be when it is answered without
 * asking a sandbox that may be asleep; older, the sandbox is asked. */
#define MCP_TASKS_STALE_S 300.0

struct mcp_taskbook *mcp_taskbook_new(void);
void mcp_taskbook_free(struct mcp_taskbook *b);
/* Slot |idx| was retired: its tasks are forgotten. */
void mcp_taskbook_retired(struct mcp_taskbook *b, size_t idx);

/* Note |task| (a Task object with its sealed taskId, borrowed; a 2026-07-28
 * one when |modern|, else 2025-11-25) as |u|'s latest word on it, made by
 * client session |owner| (0: unknown, keeps the one noted before). */
void mcp_tasks_note(struct mx_mcp *m, const struct mx_mcpup *u, const json_t *task, uint64_t owner,
                    bool modern);

/*
 * The answer to task request |msg| (routed to |u|) from the book, or NULL
 * when it must go to the upstream. Only tasks/get is answered here: a task
 * in a terminal status always (it never changes again), a running one
 * only while |u| may be asleep (mx_upstream_may_sleep) and its status is
 * at most MCP_TASKS_STALE_S old; |modern|: a 2026-07-28 client's request,
 * answered only with what such a client was told. A new reference.
 */
json_t *mcp_tasks_known(struct mx_mcp *m, const struct mx_mcpup *u, const json_t *msg, bool modern);

/* A 2025 tasks/list result: the tasks client session |owner| made, of
 * |scope| (NULL: every upstream), most recently heard of first, each with
 * the status last heard. A new reference. */
json_t *mcp_tasks25_list(struct mx_mcp *m, const struct mx_mcpup *scope, uint64_t owner);

/* MCP 2025-11-25 tasks: the capability of /mcp (|scope| NULL) or
 * /mcp/<server>, as mcplex offers it: list (answered here), cancel and the
 * task-augmented requests when an upstream in view offers them (a
 * 2026-07-28 one through the extension, bridged); NULL when none does. A
 * new reference. */
json_t *mcp_tasks25_caps(struct mx_mcp *m, const struct mx_mcpup *scope);

/* notifications/tasks/status |msg| from |u| (borrowed), heard on an
 * upstream session of client session |session| (NULL: shared): noted, and
 * passed on with the sealed id to the client session that made the task. */
void mcp_tasks25_status(struct mx_mcp *m, struct mx_mcpup *u, struct mx_session *session,
                        const json_t *msg);
/* notifications/tasks |msg| (SEP-2663) from 2026-07-28 upstream |u|,
 * heard on its listen stream: noted, and passed on with the sealed id to
 * the 2026 listen streams that follow the task. A 2025 server's
 * notifications/tasks/status reach them the same way. */
void mcp_tasks26_status(struct mx_mcp *m, struct mx_mcpup *u, const json_t *msg);

/*
 * Tasks between eras: a client of one revision and a task on an upstream
 * of the other. Toward a 2026-07-28 upstream a 2025 client's task requests
 * declare the extension with the session's capabilities, and the answers
 * are put in 2025-11-25 form; toward a 2025 upstream a 2026 client's call
 * of a tool that requires a task carries params.task, and the answers are
 * put in SEP-2663 form. What one era asks in one request and the other in
 * several is relayed in steps (tasks.c).
 */
/* Error |err| (owned) of |u| about its task |up_id|, with that id replaced
 * by the sealed one wherever it appears (a server's "Task not found: <its
 * id>"): the client never sees an upstream's task id. Returns |err| or
 * its replacement. */
json_t *mcp_tasks_scrub(struct mx_mcp *m, const struct mx_mcpup *u, const char *up_id, json_t *err);
/* Whether |u| speaks 2026-07-28. */
bool mcp_tasks_modern(const struct mx_mcpup *u);
/* 2025 session |s|'s task request |upmsg| to a 2026-07-28 upstream:
 * declares the extension (and drops the 2025 params.task hint). */
void mcp_tasks25_declare(json_t *upmsg, const struct mx_session *s);
/* The 2026-07-28 |*result| (replaced) of 2025 request |method| (its task
 * id upstream |up_id| for tasks/cancel, may be NULL) as 2025-11-25 says it:
 * a CreateTaskResult, a Task; a cancel's acknowledgement becomes the Task. */
void mcp_tasks25_from26(struct mx_mcp *m, const struct mx_mcpup *u, const char *method,
                        const char *up_id, json_t **result);
/* Whether a 2026 client's tools/call |msg| of |tool| (|u|'s own name) on a
 * 2025 upstream |u| goes as a task: the client declared the extension and
 * the tool requires one (execution.taskSupport). */
bool mcp_tasks26_wanted(const struct mx_mcpup *u, const json_t *msg, const char *tool);
/* The 2025 |*result| (replaced) of 2026 request |method| as SEP-2663 says
 * it: a flat CreateTaskResult, a cancel's acknowledgement. */
void mcp_tasks26_from25(const char *method, json_t **result);
/*
 * What is the same for a task request of either era, routed to |u| as
 * |upmsg| (owned) by a 2026-07-28 client (|modern|) or a 2025 session |s|:
 * - the revision |u| speaks decides how it goes, and it is learnt on first
 *   contact (after a restart, say): while it is unknown the upstream
 *   session is made ready first, call |c| waiting, then |then| runs with
 *   the same arguments (the revision known, or the contact failed); |then|
 *   NULL: no waiting (the second time);
 * - tasks/get from the book (mcp_tasks_known);
 * - what one era asks in one request and the other in several, answered
 *   in steps of mcplex's own requests: a 2025 client's tasks/result of a
 *   2026-07-28 upstream's task (which has no tasks/result) follows
 *   tasks/get to the end; a 2026 client's tasks/get of a 2025 upstream's
 *   task asks tasks/result too once the task has ended, and inlines it.
 * Returns true when |c| was taken so; false: the caller routes |upmsg|.
 */
typedef void (*mcp_tasks_then)(struct mx_mcp *m, struct mx_session *s, struct mx_call *c,
                               json_t *msg, struct mx_mcpup *scope);
bool mcp_tasks_take(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, struct mx_mcpup *u,
                    json_t *msg, json_t *upmsg, struct mx_mcpup *scope, bool modern,
                    mcp_tasks_then then);

#endif
