/* SPDX-License-Identifier: MIT */
/*
 * Task ids between clients and upstreams (SEP-2663): a client sees only
 * sealed ids (taskid.h) naming the upstream by alias, so a merged /mcp can
 * route tasks/get, update and cancel without a table, an id made for one upstream never reaches
 * another, and /mcp/<server> refuses ids of other upstreams. The alias, not
 * the slot, is sealed: slots move on reload, aliases do not. The
 * experimental tasks of MCP 2025-11-25 (tasks/get, result, cancel, list and
 * task-augmented requests) get the same sealed ids.
 */
#include <stdio.h>
#include <string.h>

#include "front_int.h"
#include "revision.h"
#include "rpc.h"
#include "taskid.h"
#include "tasks.h"

/* MCP 2025-11-25, Tasks: the _meta member naming the task a message is of. */
#define RELATED_TASK "io.modelcontextprotocol/related-task"

bool mcp_tasks_method(const char *method)
{
    return method && (strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/update") == 0 ||
                      strcmp(method, "tasks/cancel") == 0);
}

bool mcp_tasks_declared(const json_t *msg)
{
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    json_t *ext = json_object_get(json_object_get(meta, MX_REV_META_CAPS), "extensions");
    return json_is_object(json_object_get(ext, MCP_TASKS_EXT));
}

static bool offers(const struct mx_mcpup *u)
{
    json_t *ext = json_object_get(json_object_get(u->init, "capabilities"), "extensions");
    return !u->up->retired && json_is_object(json_object_get(ext, MCP_TASKS_EXT));
}

/* The upstream the sealed params.taskId of |msg| names, as mcp_tasks_route
 * says, the extension's declaration aside. */
static struct mx_mcpup *route_id(struct mx_mcp *m, struct mx_call *c, const json_t *msg,
                                 struct mx_mcpup *scope, json_t **upmsg)
{
    json_t *id = json_object_get(json_object_get(msg, "params"), "taskId");
    struct mx_taskid t;
    char text[160];

    if (!json_is_string(id) ||
        mx_taskid_decode(mx_str_make(json_string_value(id), json_string_length(id)), m->task_key,
                         &t) != 0) {
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS,
                      "Invalid params: unknown taskId (not one this gateway gave out, or from "
                      "before its task key changed); start the task again",
                      NULL);
        return NULL;
    }
    struct mx_mcpup *u = NULL;
    for (size_t i = 0; i < m->up_cnt && u == NULL; i++) {
        if (strcmp(m->ups[i]->cfg->alias, t.alias) == 0 && !m->ups[i]->up->retired)
            u = m->ups[i];
    }
    if (scope && u != scope) {
        mx_call_error(c, 200, MX_RPC_INVALID_PARAMS,
                      "Invalid params: unknown taskId (this task belongs to another server; ask "
                      "at /mcp or that server's endpoint)",
                      NULL);
        return NULL;
    }
    if (u == NULL) {
        snprintf(text, sizeof(text),
                 "the server '%.60s' that ran this task is no longer configured; its task is "
                 "lost",
                 t.alias);
        mx_call_error(c, 200, MX_RPC_INTERNAL_ERROR, text, NULL);
        return NULL;
    }
    *upmsg = json_deep_copy(msg);
    json_object_set_new(json_object_get(*upmsg, "params"), "taskId", json_stringn(t.up, t.up_len));
    return u;
}

struct mx_mcpup *mcp_tasks_route(struct mx_mcp *m, struct mx_call *c, const json_t *msg,
                                 struct mx_mcpup *scope, json_t **upmsg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    char text[160];

    if (!mcp_tasks_declared(msg)) {
        /* SEP-2663, Required Capabilities */
        snprintf(text, sizeof(text),
                 "%s needs the " MCP_TASKS_EXT " extension; declare it in the request's "
                 "clientCapabilities.extensions",
                 method);
        mx_call_error(
            c, 400, MX_REV_MISSING_CAPABILITY, text,
            json_pack("{s:{s:{s:{}}}}", "requiredCapabilities", "extensions", MCP_TASKS_EXT));
        return NULL;
    }
    return route_id(m, c, msg, scope, upmsg);
}

/* ---- MCP 2025-11-25 experimental tasks ---- */

bool mcp_tasks25_by_id(const char *method)
{
    return method && (strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/result") == 0 ||
                      strcmp(method, "tasks/cancel") == 0);
}

bool mcp_tasks25_involved(const char *method, const json_t *msg)
{
    return (method && strncmp(method, "tasks/", 6) == 0) ||
           json_is_object(json_object_get(json_object_get(msg, "params"), "task"));
}

struct mx_mcpup *mcp_tasks25_route(struct mx_mcp *m, struct mx_call *c, const json_t *msg,
                                   struct mx_mcpup *scope, json_t **upmsg)
{
    return route_id(m, c, msg, scope, upmsg);
}

/* Seal |obj|.taskId for the client. Returns false when it is there and
 * cannot be sealed (longer than a sealed id carries). */
static bool seal_in(struct mx_mcp *m, const struct mx_mcpup *u, json_t *obj)
{
    json_t *id = json_object_get(obj, "taskId");
    char text[MX_TASKID_TEXT_MAX];
    if (!json_is_string(id))
        return true;
    if (mx_taskid_encode(mx_str_cstr(u->cfg->alias),
                         mx_str_make(json_string_value(id), json_string_length(id)), m->task_key,
                         text, sizeof(text)) < 0)
        return false;
    json_object_set_new(obj, "taskId", json_string(text));
    return true;
}

bool mcp_tasks25_seal(struct mx_mcp *m, const struct mx_mcpup *u, json_t *result)
{
    bool ok = seal_in(m, u, result) && seal_in(m, u, json_object_get(result, "task")) &&
              seal_in(m, u, json_object_get(json_object_get(result, "_meta"), RELATED_TASK));
    json_t *tasks = json_object_get(result, "tasks");
    size_t i = 0;
    while (i < json_array_size(tasks)) {
        /* a task whose id cannot be sealed is left out: never shown raw */
        if (seal_in(m, u, json_array_get(tasks, i)))
            i++;
        else
            json_array_remove(tasks, i);
    }
    return ok;
}

struct mx_mcpup *mcp_tasks25_lister(struct mx_mcp *m, size_t *cnt)
{
    struct mx_mcpup *u = NULL;
    *cnt = 0;
    for (size_t i = 0; i < m->up_cnt; i++) {
        json_t *t = json_object_get(json_object_get(m->ups[i]->init, "capabilities"), "tasks");
        if (json_is_object(json_object_get(t, "list")) && !m->ups[i]->up->retired) {
            u = m->ups[i];
            (*cnt)++;
        }
    }
    return u;
}

void mcp_tasks_seal(struct mx_mcp *m, const struct mx_mcpup *u, const char *method, json_t *result)
{
    json_t *id = json_object_get(result, "taskId");
    const char *type = json_string_value(json_object_get(result, "resultType"));
    char text[MX_TASKID_TEXT_MAX];
    if (!json_is_string(id) ||
        !(strcmp(method, "tasks/get") == 0 ||
          (strcmp(method, "tools/call") == 0 && type && strcmp(type, "task") == 0)))
        return;
    if (mx_taskid_encode(mx_str_cstr(u->cfg->alias),
                         mx_str_make(json_string_value(id), json_string_length(id)), m->task_key,
                         text, sizeof(text)) < 0) {
        /* an id past the cap cannot be sealed: the client must not see it raw */
        json_object_clear(result);
        json_object_set_new(result, "isError", json_true());
        json_object_set_new(result, "content",
                            json_pack("[{s:s, s:s}]", "type", "text", "text",
                                      "the server's task id is longer than mcplex carries"));
        return;
    }
    json_object_set_new(result, "taskId", json_string(text));
}

void mcp_tasks_caps(struct mx_mcp *m, const struct mx_mcpup *scope, json_t *caps)
{
    bool any = false;
    for (size_t i = 0; i < m->up_cnt && !any; i++) {
        if (scope == NULL || m->ups[i] == scope)
            any = offers(m->ups[i]);
    }
    if (!any)
        return;
    json_t *ext = json_object_get(caps, "extensions");
    if (!json_is_object(ext)) {
        ext = json_object();
        json_object_set_new(caps, "extensions", ext);
    }
    json_object_set_new(ext, MCP_TASKS_EXT, json_object());
}
