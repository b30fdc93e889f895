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

#include "alloc.h"
#include "front_int.h"
#include "log.h"
#include "revision.h"
#include "rpc.h"
#include "taskid.h"
#include "tasks.h"
#include "upstream.h"

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

bool mcp_tasks25_seal(struct mx_mcp *m, const struct mx_mcpup *u, uint64_t owner, json_t *result)
{
    bool ok = seal_in(m, u, result) && seal_in(m, u, json_object_get(result, "task")) &&
              seal_in(m, u, json_object_get(json_object_get(result, "_meta"), RELATED_TASK));
    json_t *tasks = json_object_get(result, "tasks");
    size_t i = 0;
    while (i < json_array_size(tasks)) {
        /* a task whose id cannot be sealed is left out: never shown raw */
        if (seal_in(m, u, json_array_get(tasks, i)))
            mcp_tasks_note(m, u, json_array_get(tasks, i++), 0);
        else
            json_array_remove(tasks, i);
    }
    if (!ok)
        return false;
    /* a CreateTaskResult names its maker; a Task (tasks/get, cancel) is news */
    if (json_is_object(json_object_get(result, "task")))
        mcp_tasks_note(m, u, json_object_get(result, "task"), owner);
    else if (json_is_string(json_object_get(result, "status")))
        mcp_tasks_note(m, u, result, 0);
    return true;
}

json_t *mcp_tasks25_caps(struct mx_mcp *m)
{
    json_t *out = NULL;
    for (size_t i = 0; i < m->up_cnt; i++) {
        json_t *t = json_object_get(json_object_get(m->ups[i]->init, "capabilities"), "tasks");
        if (!json_is_object(t) || m->ups[i]->up->retired)
            continue;
        if (out == NULL)
            out = json_pack("{s:{}}", "list");
        if (json_is_object(json_object_get(t, "cancel")))
            json_object_set_new(out, "cancel", json_object());
        /* the union of the task-augmented requests, by kind and method */
        json_t *req = json_object_get(t, "requests");
        const char *kind;
        json_t *methods;
        json_object_foreach(req, kind, methods)
        {
            if (!json_is_object(methods))
                continue;
            json_t *have = mx_rpc_own(mx_rpc_own(out, "requests", true), kind, true);
            json_object_update_missing(have, methods);
        }
    }
    return out;
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
    mcp_tasks_note(m, u, result, 0);
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

/* ---- the book ---- */

struct booked {
    struct booked *prev; /* most recently heard of first */
    struct booked *next;
    char *id;       /* sealed */
    size_t up;      /* slot */
    uint64_t owner; /* client session key, 0: unknown */
    json_t *task;   /* as the client sees it */
    size_t bytes;
    ev_tstamp seen;
    ev_tstamp expires; /* 0: no ttl */
};

struct mcp_taskbook {
    struct booked *head;
    struct booked *tail;
    size_t cnt;
    size_t bytes;
};

struct mcp_taskbook *mcp_taskbook_new(void)
{
    return mx_xcalloc(1, sizeof(struct mcp_taskbook));
}

static void unlink_entry(struct mcp_taskbook *b, struct booked *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        b->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        b->tail = e->prev;
    e->prev = e->next = NULL;
}

static void drop(struct mcp_taskbook *b, struct booked *e)
{
    unlink_entry(b, e);
    b->cnt--;
    b->bytes -= e->bytes;
    json_decref(e->task);
    free(e->id);
    free(e);
}

void mcp_taskbook_free(struct mcp_taskbook *b)
{
    if (b == NULL)
        return;
    while (b->head)
        drop(b, b->head);
    free(b);
}

void mcp_taskbook_retired(struct mcp_taskbook *b, size_t idx)
{
    for (struct booked *e = b->head, *next; e; e = next) {
        next = e->next;
        if (e->up == idx)
            drop(b, e);
    }
}

static struct booked *find(struct mcp_taskbook *b, const char *id, ev_tstamp now)
{
    for (struct booked *e = b->head; e; e = e->next) {
        if (strcmp(e->id, id) != 0)
            continue;
        if (e->expires > 0 && now >= e->expires) {
            drop(b, e);
            return NULL;
        }
        return e;
    }
    return NULL;
}

static bool terminal(const json_t *task)
{
    const char *st = json_string_value(json_object_get(task, "status"));
    return st && (strcmp(st, "completed") == 0 || strcmp(st, "failed") == 0 ||
                  strcmp(st, "cancelled") == 0);
}

void mcp_tasks_note(struct mx_mcp *m, const struct mx_mcpup *u, const json_t *task, uint64_t owner)
{
    struct mcp_taskbook *b = m->tasks;
    const char *id = json_string_value(json_object_get(task, "taskId"));
    if (id == NULL || !json_is_string(json_object_get(task, "status")))
        return;
    ev_tstamp now = ev_now(m->loop);
    struct booked *e = find(b, id, now);
    /* a status sent after the task ended is a hostile upstream's word */
    if (e && terminal(e->task) && !terminal(task))
        return;
    size_t bytes = json_dumpb(task, NULL, 0, JSON_COMPACT);
    if (bytes == 0 || bytes > MCP_TASKS_ENTRY_MAX) {
        if (e)
            drop(b, e); /* what is kept would be older than what was said */
        return;
    }
    if (e == NULL) {
        e = mx_xcalloc(1, sizeof(*e));
        e->id = mx_xstrdup(id);
        e->up = u->idx;
        b->cnt++;
    } else {
        unlink_entry(b, e);
        b->bytes -= e->bytes;
        json_decref(e->task);
    }
    e->task = json_deep_copy(task);
    e->bytes = bytes;
    b->bytes += bytes;
    e->seen = now;
    if (owner)
        e->owner = owner;
    /* 2025-11-25 ttl, 2026-07-28 ttlMs: milliseconds from creation, here
     * from when it was heard of (later, so never gone too early) */
    json_t *ttl = json_object_get(task, "ttl");
    if (!json_is_integer(ttl))
        ttl = json_object_get(task, "ttlMs");
    e->expires = json_is_integer(ttl) && json_integer_value(ttl) > 0
                     ? now + (double)json_integer_value(ttl) / 1000.0
                     : 0;
    e->next = b->head;
    if (b->head)
        b->head->prev = e;
    b->head = e;
    if (b->tail == NULL)
        b->tail = e;
    while (b->cnt > MCP_TASKS_BOOK_MAX || b->bytes > MCP_TASKS_BOOK_BYTES)
        drop(b, b->tail);
}

json_t *mcp_tasks_known(struct mx_mcp *m, const struct mx_mcpup *u, const json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    const char *id = json_string_value(json_object_get(json_object_get(msg, "params"), "taskId"));
    if (method == NULL || strcmp(method, "tasks/get") != 0 || id == NULL)
        return NULL;
    ev_tstamp now = ev_now(m->loop);
    struct booked *e = find(m->tasks, id, now);
    if (e == NULL || e->up != u->idx)
        return NULL;
    if (terminal(e->task) ||
        (mx_upstream_may_sleep(u->up, now) && now - e->seen <= MCP_TASKS_STALE_S))
        return json_deep_copy(e->task);
    return NULL;
}

json_t *mcp_tasks25_list(struct mx_mcp *m, const struct mx_mcpup *scope, uint64_t owner)
{
    ev_tstamp now = ev_now(m->loop);
    json_t *tasks = json_array();
    for (struct booked *e = m->tasks->head, *next; e; e = next) {
        next = e->next;
        if (e->expires > 0 && now >= e->expires) {
            drop(m->tasks, e);
            continue;
        }
        if (e->owner == owner && (scope == NULL || scope->idx == e->up) &&
            !m->ups[e->up]->up->retired)
            json_array_append(tasks, e->task);
    }
    return json_pack("{s:o}", "tasks", tasks);
}

void mcp_tasks25_status(struct mx_mcp *m, struct mx_mcpup *u, struct mx_session *session,
                        const json_t *msg)
{
    json_t *out = json_deep_copy(msg);
    json_t *params = json_object_get(out, "params");
    if (!json_is_object(params) || !json_is_string(json_object_get(params, "taskId")) ||
        !seal_in(m, u, params)) {
        json_decref(out);
        mcp_up_dropped(u, "notifications/tasks/status", "names no task");
        return;
    }
    mcp_tasks_note(m, u, params, 0);
    struct booked *e =
        find(m->tasks, json_string_value(json_object_get(params, "taskId")), ev_now(m->loop));
    /* on a shared upstream session only the book knows whose task it is */
    struct mx_session *s = session;
    if (s == NULL && e && e->owner)
        s = mx_session_by_key(m->sessions, e->owner);
    if (s && s->answered)
        mcp_push(s, out);
    else
        mx_log_debug(SUBSYS_MCP,
                     "up:%s notifications/tasks/status of a task no client is known for",
                     u->cfg->name);
    json_decref(out);
}
