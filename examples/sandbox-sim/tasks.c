/* SPDX-License-Identifier: MIT */
/*
 * The sim's task table (2026-07-28 tasks extension, SEP-2663). A task's
 * status is derived when asked: cancelled once tasks/cancel reached it while
 * it ran, input_required while inputRequests remain unanswered, working until
 * its due time, then its end (completed, or failed for a protocol error).
 * Tasks live for TTL_MS and are kept at most MX_SIM_TASKS_MAX at a time.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "mcp.h"
#include "rand.h"
#include "tasks.h"

/* A task stays readable this long (ttlMs); clients poll this often. */
#define TTL_MS  600000
#define POLL_MS 200

struct sim_task {
    char id[33];
    enum mx_sim_task_end end;
    char *text;
    json_t *pending; /* inputRequests not answered yet, by key */
    int64_t created; /* wall clock, ms */
    int64_t due;     /* monotonic ms when it ends, once no input is pending */
    int64_t updated; /* wall clock, ms, of the last change update or cancel made */
    int64_t created_mono;
    bool cancelled;
};

struct mx_sim_tasks {
    struct sim_task *v[MX_SIM_TASKS_MAX];
    size_t cnt;
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
    return k->end == MX_SIM_TASK_PROTOCOL ? "failed" : "completed";
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

/* The Task fields (SEP-2663): id, status, times in ISO 8601, ttlMs and
 * pollIntervalMs as integer milliseconds. */
static json_t *envelope(const struct sim_task *k, int64_t now)
{
    int64_t updated = k->updated;
    /* A task that ran out its time last changed then, not when it was asked. */
    if (!k->cancelled && json_object_size(k->pending) == 0 && now >= k->due) {
        int64_t ended = k->created + (k->due - k->created_mono);
        if (ended > updated)
            updated = ended;
    }
    return json_pack("{s:s,s:s,s:o,s:o,s:I,s:I}", "taskId", k->id, "status", status_of(k, now),
                     "createdAt", iso_time(k->created), "lastUpdatedAt", iso_time(updated), "ttlMs",
                     (json_int_t)TTL_MS, "pollIntervalMs", (json_int_t)POLL_MS);
}

/* Drop tasks past their ttlMs, then, when still full, the oldest finished one. */
static bool make_room(struct mx_sim_tasks *t, int64_t now)
{
    int64_t wall = ms_of(CLOCK_REALTIME);
    size_t w = 0;
    for (size_t i = 0; i < t->cnt; i++) {
        if (wall - t->v[i]->created > TTL_MS)
            task_free(t->v[i]);
        else
            t->v[w++] = t->v[i];
    }
    t->cnt = w;
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

void mx_sim_tasks_create(struct mx_sim_tasks *t, enum mx_sim_task_end end, const char *text,
                         int64_t run_ms, json_t *inputs, struct mx_sim_reply *out)
{
    int64_t now = ms_of(CLOCK_MONOTONIC);
    if (!make_room(t, now)) {
        json_decref(inputs);
        mx_sim_reply_error(out, MX_SIM_RPC_INTERNAL,
                           "too many running tasks; cancel some or wait for them to finish", NULL);
        return;
    }
    struct sim_task *k = mx_xcalloc(1, sizeof(*k));
    mx_rand_hex(k->id, sizeof(k->id));
    k->end = end;
    k->text = mx_xstrdup(text);
    k->pending = inputs ? inputs : json_object();
    k->created = k->updated = ms_of(CLOCK_REALTIME);
    k->created_mono = now;
    k->due = now + run_ms;
    t->v[t->cnt++] = k;
    /* SEP-2663: CreateTaskResult is the flat Result & Task; the task is in
     * the table before the answer leaves, so an immediate tasks/get finds it. */
    out->result = envelope(k, now);
    json_object_set_new(out->result, "resultType", json_string("task"));
}

static struct sim_task *find(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out)
{
    const char *id = json_string_value(json_object_get(params, "taskId"));
    for (size_t i = 0; id && i < t->cnt; i++) {
        if (strcmp(t->v[i]->id, id) == 0)
            return t->v[i];
    }
    mx_sim_reply_error(out, MX_SIM_RPC_PARAMS,
                       id ? "Invalid params: no task has this taskId (it may have expired)"
                          : "Invalid params: params.taskId must be a string",
                       NULL);
    return NULL;
}

void mx_sim_tasks_get(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out)
{
    struct sim_task *k = find(t, params, out);
    if (k == NULL)
        return;
    int64_t now = ms_of(CLOCK_MONOTONIC);
    const char *status = status_of(k, now);
    out->result = envelope(k, now);
    /* SEP-2663, DetailedTask: a finished task inlines its result or error
     * (there is no tasks/result); one waiting for input lists the requests. */
    if (strcmp(status, "completed") == 0)
        json_object_set_new(out->result, "result",
                            mx_sim_text_result(k->text, k->end == MX_SIM_TASK_TOOL_ERROR));
    else if (strcmp(status, "failed") == 0)
        json_object_set_new(
            out->result, "error",
            json_pack("{s:i,s:s}", "code", MX_SIM_RPC_INTERNAL, "message", k->text));
    else if (strcmp(status, "input_required") == 0)
        json_object_set(out->result, "inputRequests", k->pending);
}

void mx_sim_tasks_update(struct mx_sim_tasks *t, json_t *params, struct mx_sim_reply *out)
{
    json_t *responses = json_object_get(params, "inputResponses");
    if (!json_is_object(responses)) {
        mx_sim_reply_error(out, MX_SIM_RPC_PARAMS,
                           "Invalid params: inputResponses must be an object", NULL);
        return;
    }
    struct sim_task *k = find(t, params, out);
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
    struct sim_task *k = find(t, params, out);
    if (k == NULL)
        return;
    /* Cancelling a finished task changes nothing and gets the same ack. */
    if (!terminal(k, ms_of(CLOCK_MONOTONIC))) {
        k->cancelled = true;
        k->updated = ms_of(CLOCK_REALTIME);
    }
    out->result = json_object();
}
