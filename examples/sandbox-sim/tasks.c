/* SPDX-License-Identifier: MIT */
/*
 * The sim's task table, shared by the 2026-07-28 tasks extension (SEP-2663)
 * and the experimental tasks of MCP 2025-11-25. A task's status is derived
 * when asked: cancelled once tasks/cancel reached it while it ran,
 * input_required while inputRequests remain unanswered, working until its
 * due time, then its end (completed, or failed for a protocol error and, in
 * 2025-11-25, for a tool error). Tasks live for their ttl and are kept at
 * most MX_SIM_TASKS_MAX at a time; each era sees only its own.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "mcp.h"
#include "num.h"
#include "rand.h"
#include "tasks.h"

/* 2026-07-28: a task stays readable this long (ttlMs); clients poll this
 * often (both eras). */
#define TTL_MS  600000
#define POLL_MS 200

/* Which revision's envelopes a task speaks. */
enum task_era {
    TASK_ERA_2026 = 0,
    TASK_ERA_2025 = 1,
};

struct sim_task {
    char id[33];
    enum task_era era;
    enum mx_sim_task_end end;
    char *text;
    json_t *pending; /* inputRequests not answered yet, by key */
    int64_t created; /* wall clock, ms */
    int64_t due;     /* monotonic ms when it ends, once no input is pending */
    int64_t updated; /* wall clock, ms, of the last change update or cancel made */
    int64_t created_mono;
    int64_t ttl_ms;
    uint64_t seq; /* creation order, for tasks/list cursors */
    bool cancelled;
};

struct mx_sim_tasks {
    struct sim_task *v[MX_SIM_TASKS_MAX]; /* oldest first */
    size_t cnt;
    uint64_t seq;
};

static int64_t ms_of(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void task_free(struct sim_task *k)
{
    if (k == NULL)
        return;
    json_decref(k->pending);
    free(k->text);
    free(k);
}

struct mx_sim_tasks *mx_sim_tasks_new(void)
{
    return mx_xcalloc(1, sizeof(struct mx_sim_tasks));
}

void mx_sim_tasks_free(struct mx_sim_tasks *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->cnt; i++)
        task_free(t->v[i]);
    free(t);
}

static const char *status_of(const struct sim_task *k, int64_t now)
{
    if (k->cancelled)
        return "cancelled";
    if (json_object_size(k->pending) > 0)
        return "input_required";
    if (now < k->due)
        return "working";
    /* MCP 2025-11-25, Tasks, Task Status: a tool call whose result has
     * isError is failed there; SEP-2663 completes it with that result. */
    if (k->end == MX_SIM_TASK_PROTOCOL ||
        (k->era == TASK_ERA_2025 && k->end == MX_SIM_TASK_TOOL_ERROR))
        return "failed";
    return "completed";
}

static bool terminal(const struct sim_task *k, int64_t now)
{
    const char *s = status_of(k, now);
    return strcmp(s, "working") != 0 && strcmp(s, "input_required") != 0;
}

static json_t *iso_time(int64_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char buf[40];
    gmtime_r(&secs, &tm);
    size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, sizeof(buf) - n, ".%03dZ", (int)(ms % 1000));
    return json_string(buf);
}

/* The Task fields: id, status, times in ISO 8601, then the ttl and poll
 * interval in integer milliseconds, named ttlMs and pollIntervalMs in
 * SEP-2663 and ttl and pollInterval in MCP 2025-11-25. */
static json_t *envelope(const struct sim_task *k, int64_t now)
{
    int64_t updated = k->updated;
    /* A task that ran out its time last changed then, not when it was asked. */
    if (!k->cancelled && json_object_size(k->pending) == 0 && now >= k->due) {
        int64_t ended = k->created + (k->due - k->created_mono);
        if (ended > updated)
            updated = ended;
    }
    bool v2025 = k->era == TASK_ERA_2025;
    json_t *e = json_pack("{s:s,s:s,s:o,s:o,s:I,s:I}", "taskId", k->id, "status", status_of(k, now),
                          "createdAt", iso_time(k->created), "lastUpdatedAt", iso_time(updated),
                          v2025 ? "ttl" : "ttlMs", (json_int_t)k->ttl_ms,
                          v2025 ? "pollInterval" : "pollIntervalMs", (json_int_t)POLL_MS);
    if (v2025 && k->cancelled)
        json_object_set_new(e, "statusMessage", json_string("The task was cancelled by request."));
    return e;
}

/* Drop the tasks past their ttl (MCP 2025-11-25, Tasks: a receiver may
 * delete a task and its result then; SEP-2663 likewise for ttlMs). */
static void expire(struct mx_sim_tasks *t)
{
    int64_t wall = ms_of(CLOCK_REALTIME);
    size_t w = 0;
    for (size_t i = 0; i < t->cnt; i++) {
        if (wall - t->v[i]->created > t->v[i]->ttl_ms)
            task_free(t->v[i]);
        else
            t->v[w++] = t->v[i];
    }
    t->cnt = w;
}

/* Drop tasks past their ttlMs, then, when still full, the oldest finished one. */
static bool make_room(struct mx_sim_tasks *t, int64_t now)
{
    expire(t);
    if (t->cnt < MX_SIM_TASKS_MAX)
        return true;
    for (size_t i = 0; i < t->cnt; i++) {
        if (terminal(t->v[i], now)) {
            task_free(t->v[i]);
            memmove(&t->v[i], &t->v[i + 1], (t->cnt - i - 1) * sizeof(t->v[0]));
            t->cnt--;
            return true;
        }
    }
    return false;
}

/* A new task in the table, or NULL with |out| a -32603 error when the table
 * is full of running tasks; takes |inputs| (NULL: none). */
static struct sim_task *task_new(struct mx_sim_tasks *t, enum task_era era,
                                 enum mx_sim_task_end end, const char *text, int64_t run_ms,
                                 int64_t ttl_ms, json_t *inputs, struct mx_sim_reply *out)
{
    int64_t now = ms_of(CLOCK_MONOTONIC);
    if (!make_room(t, now)) {
        json_decref(inputs);
        mx_sim_reply_error(out, MX_SIM_RPC_INTERNAL,
                           "too many running tasks; cancel some or wait for them to finish", NULL);
        return NULL;
    }
    struct sim_task *k = mx_xcalloc(1, sizeof(*k));
    mx_rand_hex(k->id, sizeof(k->id));
    k->era = era;
    k->end = end;
    k->text = mx_xstrdup(text);
    k->pending = inputs ? inputs : json_object();
    k->created = k->updated = ms_of(CLOCK_REALTIME);
    k->created_mono = now;
    k->due = now + run_ms;
    k->ttl_ms = ttl_ms;
    k->seq = ++t->seq;
    t->v[t->cnt++] = k;
    return k;
}

void mx_sim_tasks_create(struct mx_sim_tasks *t, enum mx_sim_task_end end, const char *text,
                         int64_t run_ms, json_t *inputs, struct mx_sim_reply *out)
{
    struct sim_task *k = task_new(t, TASK_ERA_2026, end, text, run_ms, TTL_MS, inputs, out);
    if (k == NULL)
        return;
    /* SEP-2663: CreateTaskResult is the flat Result & Task; the task is in
     * the table before the answer leaves, so an immediate tasks/get finds it. */
    out->result = envelope(k, k->created_mono);
    json_object_set_new(out->result, "resultType", json_string("task"));
}

static struct sim_task *find(struct mx_sim_tasks *t, enum task_era era, json_t *params,
                             struct mx_sim_reply *out)
{
    const char *id = json_string_value(json_object_get(params, "taskId"));
    expire(t);
    for (size_t i = 0; id && i < t->cnt; i++) {
        if (t->v[i]->era == era && strcmp(t->v[i]->id, id) == 0)
            return t->v[i];
    }
    mx_sim_reply_error(out, MX_SIM_RPC_PARAMS,
                       id ? "Invalid params: no task has this taskId (it may have expired)"
                          : "Invalid params: params.taskId must be a string",
                       NULL);
    return NULL;
}

/* SEP-2663, DetailedTask: the Task, and a finished task's result or error
 * inlined (there is no tasks/result); one waiting for input lists the
 * requests. */
static json_t *detail(const struct sim_task *k, int64_t now)
{
    const char *status = status_of(k, now);
    json_t *d = envelope(k, now);
    if (strcmp(status, "completed") == 0)
        json_object_set_new(d, "result",
                            mx_sim_text_result(k->text, k->end == MX_SIM_TASK_TOOL_ERROR));
    else if (strcmp(status, "failed") == 0)
        json_object_set_new(
            d, "error", json_pack("{s:i,s:s}", "code", MX_SIM_RPC_INTERNAL, "message", k->text));
    else if (strcmp(status, "input_required") == 0)
        json_object_set(d, "inputRequests", k->pending);
    return d;
}

void mx_sim_tasks_get(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out)
{
    struct sim_task *k = find(t, TASK_ERA_2026, params, out);
    if (k != NULL)
        out->result = detail(k, ms_of(CLOCK_MONOTONIC));
}

static struct sim_task *find_id(struct mx_sim_tasks *t, const char *id)
{
    expire(t);
    for (size_t i = 0; i < t->cnt; i++) {
        if (t->v[i]->era == TASK_ERA_2026 && strcmp(t->v[i]->id, id) == 0)
            return t->v[i];
    }
    return NULL;
}

json_t *mx_sim_tasks_known(struct mx_sim_tasks *t, json_t *ids)
{
    json_t *known = json_array();
    size_t looked = 0;
    for (size_t i = 0; i < json_array_size(ids) && looked < MX_SIM_TASKS_FOLLOW_MAX; i++) {
        json_t *v = json_array_get(ids, i);
        if (!json_is_string(v))
            continue;
        looked++;
        bool seen = false;
        for (size_t j = 0; j < json_array_size(known) && !seen; j++)
            seen = json_equal(json_array_get(known, j), v);
        if (!seen && find_id(t, json_string_value(v)))
            json_array_append(known, v);
    }
    return known;
}

json_t *mx_sim_tasks_detail(struct mx_sim_tasks *t, const char *id, int64_t *due_in_ms)
{
    struct sim_task *k = id ? find_id(t, id) : NULL;
    int64_t now = ms_of(CLOCK_MONOTONIC);
    *due_in_ms = -1;
    if (k == NULL)
        return NULL;
    if (strcmp(status_of(k, now), "working") == 0)
        *due_in_ms = k->due - now;
    return detail(k, now);
}

bool mx_sim_tasks_is_terminal(const char *status)
{
    return status && strcmp(status, "working") != 0 && strcmp(status, "input_required") != 0;
}

void mx_sim_tasks_update(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out)
{
    json_t *responses = json_object_get(params, "inputResponses");
    if (!json_is_object(responses)) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS,
                           "Invalid params: inputResponses must be an object", NULL);
        return;
    }
    struct sim_task *k = find(t, TASK_ERA_2026, params, out);
    if (k == NULL)
        return;
    const char *key;
    json_t *v;
    bool changed = false;
    /* Keys the task did not ask (or asked and already has) are ignored; the
     * ack is the same (SEP-2663: partial answers keep the rest pending). */
    json_object_foreach(responses, key, v)
    {
        if (json_object_get(k->pending, key)) {
            json_object_del(k->pending, key);
            changed = true;
        }
    }
    if (changed && json_object_size(k->pending) == 0)
        k->due = ms_of(CLOCK_MONOTONIC);
    if (changed)
        k->updated = ms_of(CLOCK_REALTIME);
    out->result = json_object();
}

void mx_sim_tasks_cancel(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out)
{
    struct sim_task *k = find(t, TASK_ERA_2026, params, out);
    if (k == NULL)
        return;
    /* Cancelling a finished task changes nothing and gets the same ack. */
    if (!terminal(k, ms_of(CLOCK_MONOTONIC))) {
        k->cancelled = true;
        k->updated = ms_of(CLOCK_REALTIME);
    }
    out->result = json_object();
}

/* ---- MCP 2025-11-25 ---- */

void mx_sim_tasks_create_2025(struct mx_sim_tasks *t, const char *text, bool is_error,
                              int64_t run_ms, json_t *task, struct mx_sim_reply *out)
{
    json_t *ttl = json_object_get(task, "ttl");
    int64_t ttl_ms = MX_SIM_TASKS_TTL_DEFAULT_MS;

    if (!json_is_object(task) || (ttl && !json_is_null(ttl) && !json_is_number(ttl)) ||
        (json_is_number(ttl) && json_number_value(ttl) < 0)) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS,
                           "Invalid params: params.task must be an object whose ttl, if given, "
                           "is a number of milliseconds",
                           NULL);
        return;
    }
    /* A receiver may override the requested ttl (MCP 2025-11-25, Tasks, TTL
     * and Resource Management): bounded, so one request cannot pin a task
     * for ever nor make it vanish before the first poll. */
    if (json_is_number(ttl)) {
        double want = json_number_value(ttl);
        ttl_ms = want > (double)MX_SIM_TASKS_TTL_MAX_MS ? MX_SIM_TASKS_TTL_MAX_MS : (int64_t)want;
        if (ttl_ms < MX_SIM_TASKS_TTL_MIN_MS)
            ttl_ms = MX_SIM_TASKS_TTL_MIN_MS;
    }
    struct sim_task *k =
        task_new(t, TASK_ERA_2025, is_error ? MX_SIM_TASK_TOOL_ERROR : MX_SIM_TASK_RESULT, text,
                 run_ms, ttl_ms, NULL, out);
    if (k == NULL)
        return;
    out->result = json_pack("{s:o}", "task", envelope(k, k->created_mono));
}

void mx_sim_tasks_get_2025(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out)
{
    struct sim_task *k = find(t, TASK_ERA_2025, params, out);
    if (k != NULL)
        out->result = envelope(k, ms_of(CLOCK_MONOTONIC));
}

void mx_sim_tasks_cancel_2025(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out)
{
    struct sim_task *k = find(t, TASK_ERA_2025, params, out);
    int64_t now = ms_of(CLOCK_MONOTONIC);
    char msg[120];
    if (k == NULL)
        return;
    /* MCP 2025-11-25, Tasks, Task Cancellation: -32602 for a terminal task. */
    if (terminal(k, now)) {
        snprintf(msg, sizeof(msg), "Invalid params: cannot cancel a task in terminal status (%s)",
                 status_of(k, now));
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, msg, NULL);
        return;
    }
    k->cancelled = true;
    k->updated = ms_of(CLOCK_REALTIME);
    out->result = envelope(k, now);
}

void mx_sim_tasks_result_2025(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out)
{
    struct sim_task *k = find(t, TASK_ERA_2025, params, out);
    if (k == NULL)
        return;
    int64_t now = ms_of(CLOCK_MONOTONIC);
    const char *status = status_of(k, now);
    /* MCP 2025-11-25, Tasks, Result Retrieval: a task not yet terminal
     * blocks tasks/result until it is; the caller holds the request. */
    if (!terminal(k, now)) {
        out->task_wait = true;
        out->wait_ms = k->due > now ? k->due - now : 0;
        snprintf(out->task_id, sizeof(out->task_id), "%s", k->id);
        return;
    }
    if (strcmp(status, "cancelled") == 0) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS,
                           "Invalid params: the task was cancelled and has no result", NULL);
        return;
    }
    if (k->end == MX_SIM_TASK_PROTOCOL) {
        mx_sim_reply_error(out, MX_SIM_RPC_INTERNAL, k->text, NULL);
        return;
    }
    /* The result carries the related-task _meta: the CallToolResult alone
     * does not say which task it belongs to (same section). */
    out->result = mx_sim_text_result(k->text, k->end == MX_SIM_TASK_TOOL_ERROR);
    json_object_set_new(
        out->result, "_meta",
        json_pack("{s:{s:s}}", "io.modelcontextprotocol/related-task", "taskId", k->id));
}

void mx_sim_tasks_list_2025(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out)
{
    json_t *cur = json_object_get(params, "cursor");
    int64_t before = INT64_MAX;
    int64_t now = ms_of(CLOCK_MONOTONIC);
    size_t n = 0;
    uint64_t last = 0;

    /* The cursor is the creation number of the last task listed: opaque to
     * the client (MCP 2025-11-25, Pagination), and it survives expiries. */
    if (cur && !json_is_null(cur)) {
        const char *c = json_string_value(cur);
        if (c == NULL || c[0] != 't' || mx_num_parse(c + 1, strlen(c + 1), 1, INT64_MAX, &before)) {
            mx_sim_reply_error(out, MX_SIM_RPC_PARAMS, "Invalid params: unknown cursor", NULL);
            return;
        }
    }
    expire(t);
    json_t *tasks = json_array();
    out->result = json_pack("{s:o}", "tasks", tasks);
    for (size_t i = t->cnt; i-- > 0;) {
        const struct sim_task *k = t->v[i];
        if (k->era != TASK_ERA_2025 || (int64_t)k->seq >= before)
            continue;
        if (n == MX_SIM_TASKS_PAGE) {
            char next[32];
            snprintf(next, sizeof(next), "t%llu", (unsigned long long)last);
            json_object_set_new(out->result, "nextCursor", json_string(next));
            break;
        }
        json_array_append_new(tasks, envelope(k, now));
        last = k->seq;
        n++;
    }
}
