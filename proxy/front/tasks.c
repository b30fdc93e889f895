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
#include <time.h>

#include "alloc.h"
#include "buf.h"
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

/* The tasks capability of 2025-11-25 |u| (NULL: none). */
static json_t *caps25(const struct mx_mcpup *u)
{
    return json_object_get(json_object_get(u->init, "capabilities"), "tasks");
}

/* Whether |u| runs tasks a 2026-07-28 client can reach: the extension, or
 * a 2025 server's task-augmented tools/call (bridged, tasks.h). */
static bool offers(const struct mx_mcpup *u)
{
    json_t *ext = json_object_get(json_object_get(u->init, "capabilities"), "extensions");
    json_t *tools = json_object_get(json_object_get(caps25(u), "requests"), "tools");
    return !u->up->retired && (json_is_object(json_object_get(ext, MCP_TASKS_EXT)) ||
                               json_is_object(json_object_get(tools, "call")));
}

/* |up|, a task id of |u|, sealed for clients into |out|; false when it is
 * longer than a sealed id carries. */
static bool seal(const struct mx_mcp *m, const struct mx_mcpup *u, struct mx_str up,
                 char out[MX_TASKID_TEXT_MAX])
{
    return mx_taskid_encode(mx_str_cstr(u->cfg->alias), up, m->task_key, out, MX_TASKID_TEXT_MAX) >=
           0;
}

/* The configured upstream of |alias|, or NULL. */
static struct mx_mcpup *by_alias(struct mx_mcp *m, const char *alias)
{
    for (size_t i = 0; i < m->up_cnt; i++) {
        if (strcmp(m->ups[i]->cfg->alias, alias) == 0 && !m->ups[i]->up->retired)
            return m->ups[i];
    }
    return NULL;
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
    struct mx_mcpup *u = by_alias(m, t.alias);
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

struct mx_mcpup *mcp_tasks_upstream(struct mx_mcp *m, const char *id, const struct mx_mcpup *scope,
                                    struct mx_taskid *t)
{
    if (id == NULL || mx_taskid_decode(mx_str_cstr(id), m->task_key, t) != 0)
        return NULL;
    struct mx_mcpup *u = by_alias(m, t->alias);
    return scope == NULL || scope == u ? u : NULL;
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
    if (!seal(m, u, mx_str_make(json_string_value(id), json_string_length(id)), text))
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
            mcp_tasks_note(m, u, json_array_get(tasks, i++), 0, false);
        else
            json_array_remove(tasks, i);
    }
    if (!ok)
        return false;
    /* a CreateTaskResult names its maker; a Task (tasks/get, cancel) is news */
    if (json_is_object(json_object_get(result, "task")))
        mcp_tasks_note(m, u, json_object_get(result, "task"), owner, false);
    else if (json_is_string(json_object_get(result, "status")))
        mcp_tasks_note(m, u, result, 0, false);
    return true;
}

json_t *mcp_tasks25_caps(struct mx_mcp *m, const struct mx_mcpup *scope)
{
    json_t *out = NULL;
    /* what a 2026-07-28 server's extension gives a 2025 client (bridged) */
    json_t *bridged =
        json_pack("{s:{}, s:{}, s:{s:{s:{}}}}", "list", "cancel", "requests", "tools", "call");
    for (size_t i = 0; i < m->up_cnt; i++) {
        json_t *t = caps25(m->ups[i]);
        if (mcp_tasks_modern(m->ups[i]) && offers(m->ups[i]))
            t = bridged;
        if (!json_is_object(t) || m->ups[i]->up->retired || (scope && m->ups[i] != scope))
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
    json_decref(bridged);
    return out;
}

static bool terminal(const json_t *task);

void mcp_tasks_seal(struct mx_mcp *m, const struct mx_mcpup *u, const char *method, json_t *result)
{
    json_t *id = json_object_get(result, "taskId");
    const char *type = json_string_value(json_object_get(result, "resultType"));
    char text[MX_TASKID_TEXT_MAX];
    if (!json_is_string(id) ||
        !(strcmp(method, "tasks/get") == 0 ||
          (strcmp(method, "tools/call") == 0 && type && strcmp(type, "task") == 0)))
        return;
    if (!seal(m, u, mx_str_make(json_string_value(id), json_string_length(id)), text)) {
        /* an id past the cap cannot be sealed: the client must not see it raw */
        json_object_clear(result);
        json_object_set_new(result, "isError", json_true());
        json_object_set_new(result, "content",
                            json_pack("[{s:s, s:s}]", "type", "text", "text",
                                      "the server's task id is longer than mcplex carries"));
        return;
    }
    json_object_set_new(result, "taskId", json_string(text));
    /* a task created ended carries no result: only tasks/get says it */
    if (strcmp(method, "tasks/get") == 0 || !terminal(result))
        mcp_tasks_note(m, u, result, 0, true);
}

void mcp_tasks_caps(struct mx_mcp *m, const struct mx_mcpup *scope, json_t *caps)
{
    bool any = false;
    /* SEP-2663: never the 2025-11-25 slot */
    json_object_del(caps, "tasks");
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
    bool modern;       /* |task| is a 2026-07-28 one (else 2025-11-25) */
};

struct relay;

struct mcp_taskbook {
    struct booked *head;
    struct booked *tail;
    size_t cnt;
    size_t bytes;
    struct relay *relays; /* the task requests answered in steps (below) */
};

static void relays_retired(struct mcp_taskbook *b, size_t idx);

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
    relays_retired(b, idx);
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

/* |may_add|: a task not in the book yet is added (else only one it holds
 * is updated: a notification about a task no client asked about is news to
 * nobody, and a hostile upstream's stream of them must not push the
 * others out). */
static void note(struct mx_mcp *m, const struct mx_mcpup *u, const json_t *task, uint64_t owner,
                 bool modern, bool may_add)
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
    if (e == NULL && !may_add)
        return;
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
    /* "task" of a creation, "complete" of a tasks/get: the answer says */
    json_object_del(e->task, "resultType");
    e->modern = modern;
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

void mcp_tasks_note(struct mx_mcp *m, const struct mx_mcpup *u, const json_t *task, uint64_t owner,
                    bool modern)
{
    note(m, u, task, owner, modern, true);
}

json_t *mcp_tasks_known(struct mx_mcp *m, const struct mx_mcpup *u, const json_t *msg, bool modern)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    const char *id = json_string_value(json_object_get(json_object_get(msg, "params"), "taskId"));
    if (method == NULL || strcmp(method, "tasks/get") != 0 || id == NULL)
        return NULL;
    ev_tstamp now = ev_now(m->loop);
    struct booked *e = find(m->tasks, id, now);
    if (e == NULL || e->up != u->idx || e->modern != modern)
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
        if (e->owner == owner && !e->modern && (scope == NULL || scope->idx == e->up) &&
            !m->ups[e->up]->up->retired)
            json_array_append(tasks, e->task);
    }
    return json_pack("{s:o}", "tasks", tasks);
}

static json_t *task26_of(const json_t *t25);

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
    note(m, u, params, 0, false, false);
    struct booked *e =
        find(m->tasks, json_string_value(json_object_get(params, "taskId")), ev_now(m->loop));
    /* on a shared upstream session only the book knows whose task it is */
    struct mx_session *s = session;
    if (s == NULL && e && e->owner)
        s = mx_session_by_key(m->sessions, e->owner);
    if (s && s->answered)
        mcp_push(s, out);
    /* and to the 2026 clients that follow it */
    json_t *t26 = task26_of(params);
    mcp_modern_task_status(m, t26);
    json_decref(t26);
    json_decref(out);
}

void mcp_tasks26_status(struct mx_mcp *m, struct mx_mcpup *u, const json_t *msg)
{
    json_t *t = json_deep_copy(json_object_get(msg, "params"));
    if (!json_is_object(t) || !json_is_string(json_object_get(t, "taskId")) ||
        !json_is_string(json_object_get(t, "status")) || !seal_in(m, u, t)) {
        json_decref(t);
        mcp_up_dropped(u, "notifications/tasks", "names no task");
        return;
    }
    json_object_del(t, "resultType");
    /* the upstream's listen, not the client's */
    json_object_del(json_object_get(t, "_meta"), MX_REV_META_SUBSCRIPTION_ID);
    note(m, u, t, 0, true, false);
    mcp_modern_task_status(m, t);
    json_decref(t);
}

/* ---- between eras ---- */

/* Now as an ISO 8601 time in UTC with milliseconds. */
static json_t *iso_now(void)
{
    struct timespec ts;
    struct tm tm;
    char buf[40];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, sizeof(buf) - n, ".%03ldZ", ts.tv_nsec / 1000000);
    return json_string(buf);
}

bool mcp_tasks_modern(const struct mx_mcpup *u)
{
    return u->env.era == MX_UPSESS_ERA_MODERN;
}

static void copy_members(json_t *to, const json_t *from, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(from, keys[i]);
        if (v)
            json_object_set(to, keys[i], v);
    }
}

static const char *const TASK_SAME[] = {"taskId", "status", "statusMessage", "createdAt",
                                        "lastUpdatedAt"};
#define TASK_SAME_CNT (sizeof(TASK_SAME) / sizeof(TASK_SAME[0]))

/* A 2026-07-28 Task (SEP-2663: ttlMs, pollIntervalMs) as a 2025-11-25 one
 * (ttl, null for none, and pollInterval). */
static json_t *task25_of(const json_t *t26)
{
    json_t *t = json_object();
    copy_members(t, t26, TASK_SAME, TASK_SAME_CNT);
    json_t *ttl = json_object_get(t26, "ttlMs");
    json_object_set_new(t, "ttl", json_is_integer(ttl) ? json_copy(ttl) : json_null());
    json_t *poll = json_object_get(t26, "pollIntervalMs");
    if (json_is_integer(poll))
        json_object_set(t, "pollInterval", poll);
    return t;
}

/* The reverse: a 2025-11-25 Task as a 2026-07-28 one. */
static json_t *task26_of(const json_t *t25)
{
    json_t *t = json_object();
    copy_members(t, t25, TASK_SAME, TASK_SAME_CNT);
    json_t *ttl = json_object_get(t25, "ttl");
    if (json_is_integer(ttl))
        json_object_set(t, "ttlMs", ttl);
    json_t *poll = json_object_get(t25, "pollInterval");
    if (json_is_integer(poll))
        json_object_set(t, "pollIntervalMs", poll);
    return t;
}

void mcp_tasks25_declare(json_t *upmsg, const struct mx_session *s)
{
    json_t *caps = mcp_client_caps(s);
    json_object_set_new(caps, "extensions", json_pack("{s:{}}", MCP_TASKS_EXT));
    json_t *meta = mx_rpc_own(mx_rpc_own(upmsg, "params", true), "_meta", true);
    json_object_set_new(meta, MX_REV_META_CAPS, caps);
    /* SEP-2663: the server decides; a 2025 hint is tolerated, not needed */
    json_object_del(json_object_get(upmsg, "params"), "task");
}

void mcp_tasks25_from26(struct mx_mcp *m, const struct mx_mcpup *u, const char *method,
                        const char *up_id, json_t **result)
{
    json_t *r = *result;
    const char *type = json_string_value(json_object_get(r, "resultType"));
    json_t *out = NULL;
    if (strcmp(method, "tools/call") == 0 && type && strcmp(type, "task") == 0) {
        out = json_pack("{s:o}", "task", task25_of(r));
    } else if (strcmp(method, "tasks/get") == 0) {
        out = task25_of(r);
    } else if (strcmp(method, "tasks/cancel") == 0 && up_id) {
        /* SEP-2663 acknowledges a cancel; 2025-11-25 answers the Task: the
         * last one heard of, cancelled unless it had ended */
        char sealed[MX_TASKID_TEXT_MAX];
        struct booked *e = NULL;
        if (seal(m, u, mx_str_cstr(up_id), sealed))
            e = find(m->tasks, sealed, ev_now(m->loop));
        out = e && !e->modern ? json_deep_copy(e->task)
                              : json_pack("{s:s, s:n}", "taskId", up_id, "ttl");
        json_object_set_new(out, "taskId", json_string(up_id));
        if (!terminal(out)) {
            json_t *now = iso_now();
            json_object_set_new(out, "status", json_string("cancelled"));
            if (json_object_get(out, "createdAt") == NULL)
                json_object_set(out, "createdAt", now);
            json_object_set_new(out, "lastUpdatedAt", now);
        }
    }
    if (out) {
        json_decref(r);
        *result = out;
    }
}

bool mcp_tasks26_wanted(const struct mx_mcpup *u, const json_t *msg, const char *tool)
{
    if (mcp_tasks_modern(u) || tool == NULL || !mcp_tasks_declared(msg))
        return false;
    size_t i;
    json_t *t;
    json_array_foreach(u->lists[MX_AGG_TOOLS], i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (name && strcmp(name, tool) == 0) {
            const char *ts =
                json_string_value(json_object_get(json_object_get(t, "execution"), "taskSupport"));
            return ts && strcmp(ts, "required") == 0;
        }
    }
    return false;
}

void mcp_tasks26_from25(const char *method, json_t **result)
{
    json_t *r = *result;
    json_t *out = NULL;
    if (strcmp(method, "tools/call") == 0 && json_is_object(json_object_get(r, "task"))) {
        out = task26_of(json_object_get(r, "task"));
        json_object_set_new(out, "resultType", json_string("task"));
    } else if (strcmp(method, "tasks/cancel") == 0) {
        out = json_object(); /* SEP-2663: an acknowledgement, no Task in it */
    }
    if (out) {
        json_decref(r);
        *result = out;
    }
}

/*
 * A task request one era asks and the other has no single request for,
 * answered in steps of mcplex's own requests on the upstream session:
 * - a 2025 client's tasks/result of a 2026-07-28 upstream's task (which
 *   has no tasks/result): tasks/get every pollIntervalMs until the task
 *   ends, then its result or error;
 * - a 2026 client's tasks/get of a 2025 upstream's task: tasks/get, and
 *   once the task has ended, tasks/result, inlined as SEP-2663 does.
 * The client's call waits meanwhile (mx_call_wait): when it goes away, the
 * steps stop.
 */
struct relay {
    struct relay *next; /* the book's relays */
    struct relay *prev;
    struct mx_mcp *m;
    struct mx_mcpup *u;
    struct upctx *ctx;
    struct mx_call *c;
    struct mx_uprpc *rpc;
    ev_timer tick;
    char *up_id;
    char sealed[MX_TASKID_TEXT_MAX];
    bool modern_client;
    json_t *caps; /* to a 2026 upstream: the clientCapabilities each request declares */
    json_t *task; /* from a 2025 upstream: its Task while the result is fetched */
    /* only the session made ready (the revision learnt), then |then| runs */
    mcp_tasks_then then;
    struct mx_session *s;
    struct mx_mcpup *scope;
    json_t *msg;
};

#define RELAY_POLL_MIN_S 0.1
#define RELAY_POLL_MAX_S 5.0

static void relay_free(struct relay *r)
{
    struct mcp_taskbook *b = r->m->tasks;
    if (r->prev)
        r->prev->next = r->next;
    else
        b->relays = r->next;
    if (r->next)
        r->next->prev = r->prev;
    ev_timer_stop(r->m->loop, &r->tick);
    json_decref(r->caps);
    json_decref(r->task);
    json_decref(r->msg);
    free(r->up_id);
    mx_call_release(r->c);
    free(r);
}

static void relay_end(struct relay *r, json_t *payload, bool is_error)
{
    struct mx_call *c = r->c;
    if (is_error)
        payload = mcp_tasks_scrub(r->m, r->u, r->up_id, payload);
    mx_call_hold(c);
    mx_call_unwait(c);
    if (r->modern_client && !is_error)
        mcp_modern_finish(payload);
    mx_call_reply(c, payload, is_error, 200);
    json_decref(payload);
    relay_free(r);
    mx_call_release(c);
}

static void relay_error(struct relay *r, int code, const char *msg)
{
    relay_end(r, json_pack("{s:i, s:s}", "code", code, "message", msg), true);
}

static void relay_gone(struct mx_call *c, void *data)
{
    struct relay *r = data;
    (void)c;
    if (r->rpc)
        r->m->ops->cancel(r->rpc);
    relay_free(r);
}

static void relay_done(struct mx_uprpc *rpc, json_t *resp, const struct mx_upfail *fail,
                       void *data);

static void relay_send(struct relay *r, const char *method)
{
    static const struct mx_uprpc_cbs cbs = {NULL, relay_done, NULL};
    json_t *msg = json_pack("{s:s, s:o, s:s, s:{s:s}}", "jsonrpc", "2.0", "id",
                            mcp_internal_id(r->m), "method", method, "params", "taskId", r->up_id);
    if (r->caps)
        json_object_set_new(json_object_get(msg, "params"), "_meta",
                            json_pack("{s:O}", MX_REV_META_CAPS, r->caps));
    int rc =
        r->m->ops->request(r->ctx->v.s, msg, (long)r->u->cfg->request_timeout_ms, &cbs, r, &r->rpc);
    json_decref(msg);
    if (rc != 0) {
        r->rpc = NULL;
        relay_error(r, MX_RPC_INTERNAL_ERROR, "mcplex could not ask the server about this task");
    }
}

static void relay_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct relay *r = mx_container_of(w, struct relay, tick);
    (void)loop;
    (void)revents;
    relay_send(r, "tasks/get");
}

/* A 2025 client's tasks/result: the 2026 DetailedTask |t| of this round. */
static void relay_step25(struct relay *r, const json_t *t)
{
    const char *st = json_string_value(json_object_get(t, "status"));
    json_t *t25 = task25_of(t);
    json_object_set_new(t25, "taskId", json_string(r->sealed));
    mcp_tasks_note(r->m, r->u, t25, 0, false);
    json_decref(t25);
    if (st && strcmp(st, "completed") == 0) {
        json_t *res = json_object_get(t, "result");
        res = json_is_object(res) ? json_deep_copy(res) : json_object();
        json_t *meta = mx_rpc_own(res, "_meta", true);
        json_object_set_new(meta, RELATED_TASK, json_pack("{s:s}", "taskId", r->sealed));
        relay_end(r, res, false);
    } else if (st && strcmp(st, "failed") == 0) {
        json_t *err = json_object_get(t, "error");
        if (json_is_object(err))
            relay_end(r, json_deep_copy(err), true);
        else
            relay_error(r, MX_RPC_INTERNAL_ERROR, "the task failed");
    } else if (st && strcmp(st, "cancelled") == 0) {
        relay_error(r, MX_RPC_INVALID_PARAMS, "the task was cancelled; it has no result");
    } else if (st && strcmp(st, "input_required") == 0) {
        relay_error(r, MX_RPC_INTERNAL_ERROR,
                    "the task waits for input its server asks in MCP 2026-07-28 form, which "
                    "mcplex does not carry to a 2025 client; answer it from a 2026-07-28 client");
    } else {
        json_t *poll = json_object_get(t, "pollIntervalMs");
        double s = json_is_integer(poll) ? (double)json_integer_value(poll) / 1000.0 : 1.0;
        s = s < RELAY_POLL_MIN_S ? RELAY_POLL_MIN_S : s > RELAY_POLL_MAX_S ? RELAY_POLL_MAX_S : s;
        ev_timer_set(&r->tick, s, 0.0);
        ev_timer_start(r->m->loop, &r->tick);
    }
}

/* A 2026 client's tasks/get: the answer |resp| (result or error) of this
 * round from the 2025 upstream. */
static void relay_step26(struct relay *r, json_t *resp)
{
    json_t *result = json_object_get(resp, "result");
    if (r->task == NULL) {
        const char *st = json_string_value(json_object_get(result, "status"));
        if (!json_is_object(result) || st == NULL) {
            json_t *err = json_object_get(resp, "error");
            if (json_is_object(err))
                relay_end(r, json_deep_copy(err), true);
            else
                relay_error(r, MX_RPC_INTERNAL_ERROR, "the server's answer is not a task");
            return;
        }
        r->task = task26_of(result);
        if (strcmp(st, "completed") == 0 || strcmp(st, "failed") == 0) {
            relay_send(r, "tasks/result");
            return;
        }
    } else if (json_is_object(result)) {
        json_t *res = json_deep_copy(result);
        /* its related-task names the server's own id */
        json_object_del(json_object_get(res, "_meta"), RELATED_TASK);
        json_object_set_new(r->task, "result", res);
    } else {
        json_t *err = json_object_get(resp, "error");
        json_object_set_new(r->task, "error",
                            json_is_object(err)
                                ? json_deep_copy(err)
                                : json_pack("{s:i, s:s}", "code", MX_RPC_INTERNAL_ERROR, "message",
                                            "the task failed"));
    }
    json_t *out = json_incref(r->task);
    json_object_set_new(out, "taskId", json_string(r->sealed));
    mcp_tasks_note(r->m, r->u, out, 0, true);
    relay_end(r, out, false);
}

static void relay_done(struct mx_uprpc *rpc, json_t *resp, const struct mx_upfail *fail, void *data)
{
    struct relay *r = data;
    (void)rpc;
    r->rpc = NULL;
    if (r->then) {
        /* the revision is known now, or the request fails as it would have */
        struct mx_call *c = r->c;
        mx_call_hold(c);
        mx_call_unwait(c);
        r->then(r->m, r->s, c, r->msg, r->scope);
        relay_free(r);
        mx_call_release(c);
        return;
    }
    if (resp == NULL) {
        mcp_up_note_fail(r->u, fail);
        relay_end(r, mx_upfail_error(r->u->cfg, fail), true);
        return;
    }
    mcp_up_note_ok(r->u);
    if (r->modern_client) {
        relay_step26(r, resp);
    } else if (json_is_object(json_object_get(resp, "error"))) {
        relay_end(r, json_deep_copy(json_object_get(resp, "error")), true);
    } else {
        relay_step25(r, json_object_get(resp, "result"));
    }
}

static struct relay *relay_new(struct mx_mcp *m, struct mx_session *s, struct mx_call *c,
                               struct mx_mcpup *u)
{
    struct relay *r = mx_xcalloc(1, sizeof(*r));
    r->m = m;
    r->u = u;
    r->c = c;
    mx_call_hold(c);
    ev_init(&r->tick, relay_tick);
    r->ctx = mcp_up_session(u, s);
    r->next = m->tasks->relays;
    if (r->next)
        r->next->prev = r;
    m->tasks->relays = r;
    return r;
}

static void relay_start(struct mx_mcp *m, struct mx_session *s, struct mx_call *c,
                        struct mx_mcpup *u, json_t *upmsg, bool modern_client)
{
    const char *id = json_string_value(json_object_get(json_object_get(upmsg, "params"), "taskId"));
    struct relay *r = relay_new(m, s, c, u);
    r->modern_client = modern_client;
    r->up_id = mx_xstrdup(id ? id : "");
    if (!seal(m, u, mx_str_cstr(r->up_id), r->sealed))
        r->sealed[0] = '\0';
    if (!modern_client) {
        r->caps = mcp_client_caps(s);
        json_object_set_new(r->caps, "extensions", json_pack("{s:{}}", MCP_TASKS_EXT));
    }
    json_decref(upmsg);
    mx_call_wait(c, relay_gone, r);
    relay_send(r, "tasks/get");
}

/* The revision |u| speaks is learnt on first contact: until then the
 * session is made ready (a request with no message), the call waiting. */
static bool await_era(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, struct mx_mcpup *u,
                      json_t *msg, struct mx_mcpup *scope, mcp_tasks_then then)
{
    static const struct mx_uprpc_cbs cbs = {NULL, relay_done, NULL};
    if (u->env.era != MX_UPSESS_ERA_UNKNOWN)
        return false;
    struct relay *r = relay_new(m, s, c, u);
    r->then = then;
    r->s = s;
    r->scope = scope;
    r->msg = json_incref(msg);
    if (m->ops->request(r->ctx->v.s, NULL, (long)u->cfg->request_timeout_ms, &cbs, r, &r->rpc) !=
        0) {
        relay_free(r);
        return false;
    }
    mx_call_wait(c, relay_gone, r);
    return true;
}

bool mcp_tasks_take(struct mx_mcp *m, struct mx_session *s, struct mx_call *c, struct mx_mcpup *u,
                    json_t *msg, json_t *upmsg, struct mx_mcpup *scope, bool modern,
                    mcp_tasks_then then)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *known = NULL;
    if (then && await_era(m, s, c, u, msg, scope, then)) {
        json_decref(upmsg);
    } else if ((known = mcp_tasks_known(m, u, msg, modern)) != NULL) {
        json_decref(upmsg);
        if (modern)
            mcp_modern_finish(known);
        mx_call_result(c, known);
    } else if (!modern && mcp_tasks_modern(u) && strcmp(method, "tasks/result") == 0) {
        /* SEP-2663 has no tasks/result: the status is followed to the end */
        relay_start(m, s, c, u, upmsg, false);
    } else if (modern && !mcp_tasks_modern(u) && strcmp(method, "tasks/get") == 0) {
        /* a 2025 server's task: its status, and its result once ended */
        relay_start(m, NULL, c, u, upmsg, true);
    } else {
        return false;
    }
    return true;
}

json_t *mcp_tasks_scrub(struct mx_mcp *m, const struct mx_mcpup *u, const char *up_id, json_t *err)
{
    /* a short id could stand for any digits in the text */
    size_t n = up_id ? strlen(up_id) : 0;
    char sealed[MX_TASKID_TEXT_MAX];
    char *text = n >= 8 ? json_dumps(err, JSON_COMPACT) : NULL;
    if (text == NULL || strstr(text, up_id) == NULL || !seal(m, u, mx_str_make(up_id, n), sealed)) {
        free(text);
        return err;
    }
    struct mx_buf b;
    mx_buf_init(&b, SIZE_MAX);
    const char *p = text;
    for (const char *hit; (hit = strstr(p, up_id)) != NULL; p = hit + n) {
        mx_buf_append(&b, p, (size_t)(hit - p));
        mx_buf_append(&b, sealed, strlen(sealed));
    }
    mx_buf_append(&b, p, strlen(p));
    json_t *out = json_loadb(mx_buf_data(&b), mx_buf_len(&b), 0, NULL);
    mx_buf_clear(&b);
    free(text);
    if (out == NULL)
        return err;
    json_decref(err);
    return out;
}

/* Slot |idx| was retired: what its relays wait for will not come. */
static void relays_retired(struct mcp_taskbook *b, size_t idx)
{
    for (struct relay *r = b->relays, *next; r; r = next) {
        next = r->next;
        if (r->u->idx != idx)
            continue;
        if (r->rpc)
            r->m->ops->cancel(r->rpc);
        r->rpc = NULL;
        relay_error(r, MX_RPC_INTERNAL_ERROR,
                    "the server that ran this task was removed from the configuration; its task "
                    "is lost");
    }
}
