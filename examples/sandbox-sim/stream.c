/* SPDX-License-Identifier: MIT */
/*
 * SSE responses for the slow tool: one ev_timer per call writes a progress
 * event each interval and the result after the last step, then ends the
 * stream (MCP 2025-06-18, Streamable HTTP). A call holds its request until the
 * stream ends, the client goes away, a drop switch resets the connection or a
 * notifications/cancelled names it.
 *
 * Lifetime: on_abort can run inside mx_req_start/mx_req_write (a failed write
 * closes the connection), so a call is reference counted and every exit
 * detaches the request before touching it again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "err.h"
#include "log.h"
#include "conf.h"
#include "sim.h"
#include "tasks.h"

/* How long a dropped stream waits after its last event before the reset. */
#define DROP_DELAY_S 0.02

struct mx_sim_call {
    struct mx_sim_call *prev;
    struct mx_sim_call *next;
    struct mx_sim *sim;
    struct mx_req *req; /* NULL once the call is over */
    ev_timer timer;
    json_t *id;
    json_t *token; /* progressToken, or NULL */
    char session[MX_SIM_SESSION_ID];
    int64_t step;
    int64_t steps;
    int64_t events;     /* SSE events written */
    int64_t drop_after; /* reset the connection after this many events; -1: never */
    int refs;
    bool linked;
    bool dropping; /* no more events; the reset is due */
    /* Conformance scripts (conf.h); script 0 is the slow tool. */
    int script;            /* enum mx_sim_script */
    int conf_tool;         /* for mx_sim_conf_answer */
    json_t *script_events; /* to write one per tick, then |result| */
    size_t next_event;
    json_t *result;  /* the tool result after the events */
    char ask_id[32]; /* id of the request sent to the client; "" when none */
    unsigned listen; /* a subscriptions/listen stream: enum mx_sim_changed bits */
    bool listening;
    bool get; /* a session's standalone GET stream: its notifications are untagged */
    /* Tasks a listen stream follows (SEP-2663 taskIds), by id: the table
     * may drop a task at any time, so it is looked up when needed. */
    struct followed *follow;
    size_t follow_cnt;
};

/* A task a listen stream follows and the last status it told of it (or the
 * status it had when the stream started following it). */
struct followed {
    char id[33];
    char status[24];
};

static void unref(struct mx_sim_call *c)
{
    if (--c->refs > 0)
        return;
    json_decref(c->id);
    json_decref(c->token);
    json_decref(c->script_events);
    json_decref(c->result);
    free(c->follow);
    free(c);
}

/* The call is over: unlink it, stop its timer, drop the list's reference.
 * The caller has already taken c->req (or it is gone). */
static void finish(struct mx_sim_call *c)
{
    struct mx_sim *sim = c->sim;
    if (!c->linked)
        return;
    c->linked = false;
    c->req = NULL;
    ev_timer_stop(sim->loop, &c->timer);
    if (c->prev)
        c->prev->next = c->next;
    else
        sim->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    mx_sim_fault_busy(sim, -1);
    if (c->get)
        sim->get_streams--;
    unref(c);
}

static void on_abort(struct mx_req *req, void *data)
{
    struct mx_sim_call *c = data;
    (void)req;
    mx_log_info("sim", "req#%lu: client went away during the stream after %lld events",
                mx_req_id(req), (long long)c->events);
    finish(c);
}

static void drop(struct mx_sim_call *c)
{
    struct mx_req *req = c->req;
    mx_log_info("sim", "req#%lu: resetting the response after %lld events (drop switch)",
                mx_req_id(req), (long long)c->events);
    c->sim->stats.dropped++;
    finish(c);
    mx_req_reset(req);
}

static void drop_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_sim_call *c = mx_container_of(w, struct mx_sim_call, timer);
    (void)loop;
    (void)revents;
    drop(c);
}

/*
 * Reset a moment after the last event instead of at once: HTTP/2 queues
 * response data in the session and a RST_STREAM would overtake it, so the
 * client would see fewer events than the switch promises.
 */
static void schedule_drop(struct mx_sim_call *c)
{
    c->dropping = true;
    ev_timer_stop(c->sim->loop, &c->timer);
    ev_set_cb(&c->timer, drop_cb);
    ev_timer_set(&c->timer, DROP_DELAY_S, 0.0);
    ev_timer_start(c->sim->loop, &c->timer);
}

/* Write |msg| (stolen) as one SSE event. Returns false when the call ended
 * or a drop is due: the caller must not touch |c| then. */
static bool emit(struct mx_sim_call *c, json_t *msg)
{
    char *data = json_dumps(msg, JSON_COMPACT);
    char *ev = mx_xasprintf("event: message\ndata: %s\n\n", data ? data : "{}");
    bool alive;
    int rc;

    free(data);
    json_decref(msg);
    c->refs++;
    /* MX_EAGAIN only means "above the watermark"; events are small, keep going. */
    rc = mx_req_write(c->req, ev, strlen(ev));
    free(ev);
    if (c->req && rc == MX_ECLOSED)
        finish(c);
    if (c->req) {
        c->events++;
        if (c->drop_after >= 0 && c->events >= c->drop_after)
            schedule_drop(c);
    }
    alive = c->req != NULL && !c->dropping;
    unref(c);
    return alive;
}

/* Write the response carrying |result| (stolen) and end the stream. */
static void complete(struct mx_sim_call *c, json_t *result)
{
    if (!emit(c, mx_sim_rpc_result(c->id, result)))
        return;
    struct mx_req *req = c->req;
    finish(c);
    /* Last: ending may dispatch the next pipelined request on this connection. */
    mx_req_end(req);
}

static void complete_slow(struct mx_sim_call *c)
{
    char text[64];
    snprintf(text, sizeof(text), "done after %lld steps", (long long)c->steps);
    complete(c, mx_sim_text_result(text, false));
}

/*
 * --forge-progress: a hostile server's progress for the integer tokens
 * 0..N it was not given on this call (a gateway that numbers its tokens
 * hands out small integers). Returns false when the call ended.
 */
static bool forge_progress(struct mx_sim_call *c)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "forged by %s", c->sim->name);
    for (int64_t t = 0; t <= c->sim->forge_progress; t++) {
        if (json_is_integer(c->token) && json_integer_value(c->token) == t)
            continue;
        json_t *params =
            json_pack("{s:I,s:I,s:I,s:s}", "progressToken", (json_int_t)t, "progress",
                      (json_int_t)c->step, "total", (json_int_t)c->steps, "message", msg);
        if (!emit(c, mx_sim_rpc_notification("notifications/progress", params)))
            return false;
    }
    return true;
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_sim_call *c = mx_container_of(w, struct mx_sim_call, timer);
    char msg[64];
    (void)loop;
    (void)revents;
    c->step++;
    if (c->sim->forge_progress >= 0 && !forge_progress(c))
        return;
    if (c->token) {
        snprintf(msg, sizeof(msg), "step %lld of %lld", (long long)c->step, (long long)c->steps);
        json_t *params =
            json_pack("{s:O,s:I,s:I,s:s}", "progressToken", c->token, "progress",
                      (json_int_t)c->step, "total", (json_int_t)c->steps, "message", msg);
        if (!emit(c, mx_sim_rpc_notification("notifications/progress", params)))
            return;
    }
    if (c->step >= c->steps) {
        complete_slow(c);
        return;
    }
    /* interval_ms 0: a timer without repeat fires once; re-arm it by hand. */
    if (c->timer.repeat == 0.0) {
        ev_timer_set(&c->timer, 0.0, 0.0);
        ev_timer_start(c->sim->loop, &c->timer);
    }
}

/*
 * Link a new call answering |req| as an SSE stream and send the headers.
 * Returns it with two references (the list's and the caller's, which the
 * caller drops); c->req is NULL if the client is already gone.
 */
static struct mx_sim_call *call_open(struct mx_sim *sim, struct mx_req *req, json_t *id,
                                     const char *session, const char *what)
{
    static const struct mx_hdr_out hdrs[] = {
        {"Content-Type", "text/event-stream"},
        {"Cache-Control", "no-cache"},
        {"X-Accel-Buffering", "no"},
    };
    struct mx_sim_call *c = mx_xcalloc(1, sizeof(*c));
    int rc;

    c->sim = sim;
    c->req = req;
    c->id = json_incref(id);
    c->drop_after = -1;
    snprintf(c->session, sizeof(c->session), "%s", session);
    c->refs = 2;
    c->linked = true;
    c->next = sim->calls;
    if (sim->calls)
        sim->calls->prev = c;
    sim->calls = c;
    mx_sim_fault_busy(sim, +1);
    ev_timer_init(&c->timer, tick_cb, 0.0, 0.0);

    mx_sim_log_req(sim, req, 200, what);
    mx_req_set_handler(req, NULL, on_abort, c);
    rc = mx_req_start(req, 200, hdrs, sizeof(hdrs) / sizeof(hdrs[0]), -1);
    if (c->req && rc)
        finish(c);
    return c;
}

void mx_sim_stream_start(struct mx_sim *sim, struct mx_req *req, json_t *id, const char *session,
                         const struct mx_sim_reply *reply)
{
    double interval = (double)reply->interval_ms / 1000.0;
    int64_t drop_after = sim->drop_after_events;
    struct mx_sim_call *c;

    sim->drop_after_events = -1;
    c = call_open(sim, req, id, session,
                  drop_after >= 0 ? "tools/call slow (sse, drop armed)" : "tools/call slow (sse)");
    c->token = json_incref(reply->progress_token);
    c->steps = reply->steps;
    c->drop_after = drop_after;
    ev_timer_set(&c->timer, interval, interval);
    if (c->req && c->drop_after == 0)
        schedule_drop(c);
    if (c->req && !c->dropping) {
        if (c->steps == 0)
            complete_slow(c);
        else
            ev_timer_start(sim->loop, &c->timer);
    }
    unref(c);
}

/* A scripted call's tick: the next event, or the result after the last one. */
static void script_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_sim_call *c = mx_container_of(w, struct mx_sim_call, timer);
    (void)loop;
    (void)revents;
    if (c->next_event < json_array_size(c->script_events)) {
        json_t *ev = json_array_get(c->script_events, c->next_event++);
        emit(c, json_incref(ev));
        return;
    }
    json_t *result = c->result;
    c->result = NULL;
    complete(c, result);
}

void mx_sim_stream_script(struct mx_sim *sim, struct mx_req *req, json_t *id, const char *session,
                          struct mx_sim_reply *reply)
{
    struct mx_sim_call *c = call_open(sim, req, id, session, "tools/call (sse, scripted)");
    double interval = (double)reply->interval_ms / 1000.0;

    c->script = reply->script;
    c->conf_tool = reply->conf_tool;
    c->script_events = reply->events;
    reply->events = NULL;
    c->result = reply->result;
    reply->result = NULL;
    if (c->req && c->script == MX_SIM_SCRIPT_ASK) {
        /* MCP 2025-11-25, Streamable HTTP: a server request on the response stream. */
        snprintf(c->ask_id, sizeof(c->ask_id), "sim-ask-%llu", (unsigned long long)++sim->asks);
        json_t *msg = json_pack("{s:s,s:s,s:O,s:O}", "jsonrpc", "2.0", "id", c->ask_id, "method",
                                json_object_get(reply->ask, "method"), "params",
                                json_object_get(reply->ask, "params"));
        emit(c, msg);
    } else if (c->req) {
        ev_set_cb(&c->timer, script_tick_cb);
        /* with no events the result alone comes after one interval */
        ev_timer_set(&c->timer, json_array_size(c->script_events) ? 0.0 : interval, interval);
        ev_timer_start(sim->loop, &c->timer);
    }
    unref(c);
}

/* A test_reconnection answer kept for the client's resume. */
struct mx_sim_poll {
    struct mx_sim_poll *next;
    char session[MX_SIM_SESSION_ID];
    char event_id[MX_SIM_SESSION_ID + 24];
    json_t *id;
    json_t *result;
};

static void poll_free(struct mx_sim_poll *p)
{
    json_decref(p->id);
    json_decref(p->result);
    free(p);
}

void mx_sim_stream_poll(struct mx_sim *sim, struct mx_req *req, json_t *id, const char *session,
                        struct mx_sim_reply *reply)
{
    struct mx_sim_call *c = call_open(sim, req, id, session, "tools/call (sse, polled)");
    struct mx_sim_poll *p = mx_xcalloc(1, sizeof(*p));
    char ev[sizeof(p->event_id) + 48];
    size_t n = 0;

    snprintf(p->session, sizeof(p->session), "%s", session);
    snprintf(p->event_id, sizeof(p->event_id), "%s-poll-%llu", session,
             (unsigned long long)++sim->polls_made);
    p->id = json_incref(id);
    p->result = reply->result;
    reply->result = NULL;
    p->next = sim->polls;
    sim->polls = p;
    /* keep the newest few: a client that never resumes leaves one behind */
    for (struct mx_sim_poll **pp = &sim->polls; *pp; n++) {
        if (n < MX_SIM_POLLS_KEPT) {
            pp = &(*pp)->next;
            continue;
        }
        struct mx_sim_poll *old = *pp;
        *pp = old->next;
        poll_free(old);
    }
    /* MCP 2025-11-25, Streamable HTTP: an event id with empty data primes
     * the stream, the retry field says when to come back, and the server
     * may then close the connection; the request goes on. */
    snprintf(ev, sizeof(ev), "id: %s\nretry: %d\ndata: \n\n", p->event_id, MX_SIM_POLL_RETRY_MS);
    c->refs++;
    if (c->req && mx_req_write(c->req, ev, strlen(ev)) == MX_ECLOSED && c->req)
        finish(c);
    if (c->req) {
        c->events++;
        struct mx_req *r = c->req;
        finish(c);
        mx_req_end(r);
    }
    unref(c);
    unref(c);
}

bool mx_sim_stream_resume(struct mx_sim *sim, struct mx_req *req, const char *session,
                          struct mx_str last_event_id)
{
    for (struct mx_sim_poll **pp = &sim->polls; *pp; pp = &(*pp)->next) {
        struct mx_sim_poll *p = *pp;
        if (strcmp(p->session, session) != 0 || !mx_str_eq(last_event_id, mx_str_cstr(p->event_id)))
            continue;
        *pp = p->next;
        struct mx_sim_call *c = call_open(sim, req, p->id, session, "GET resume (sse)");
        json_t *result = p->result;
        p->result = NULL;
        poll_free(p);
        if (c->req)
            complete(c, result);
        else
            json_decref(result);
        unref(c);
        return true;
    }
    return false;
}

bool mx_sim_stream_answer(struct mx_sim *sim, const char *session, json_t *response)
{
    const char *id = json_string_value(json_object_get(response, "id"));
    for (struct mx_sim_call *c = sim->calls; c && id; c = c->next) {
        if (c->ask_id[0] == '\0' || strcmp(c->ask_id, id) != 0 || strcmp(c->session, session) != 0)
            continue;
        c->ask_id[0] = '\0';
        c->refs++;
        complete(c, mx_sim_conf_answer(c->conf_tool, response));
        unref(c);
        return true;
    }
    return false;
}

static json_t *tagged(json_t *id)
{
    return json_pack("{s:{s:O}}", "_meta", "io.modelcontextprotocol/subscriptionId", id);
}

/* A listen stream's notification |method| with |params| (stolen), tagged
 * with the listen request's id (2026-07-28, Subscriptions). */
static json_t *listen_notification(struct mx_sim_call *c, const char *method, json_t *params)
{
    json_object_set_new(params, "_meta",
                        json_pack("{s:O}", "io.modelcontextprotocol/subscriptionId", c->id));
    return mx_sim_rpc_notification(method, params);
}

/*
 * Look up every followed task: tell of each status that changed since the
 * stream last told (SEP-2663, notifications/tasks), stop following tasks
 * that ended or left the table, and arm the timer for the next due time.
 * The timer only ever runs on the loop, never from the request that changed
 * a task, so answering it cannot recurse into other requests.
 */
static void follow_check(struct mx_sim_call *c)
{
    struct mx_sim *sim = c->sim;
    int64_t next = -1;
    size_t kept = 0;

    c->refs++;
    for (size_t i = 0; i < c->follow_cnt && c->req; i++) {
        struct followed f = c->follow[i];
        int64_t due = -1;
        json_t *d = mx_sim_tasks_detail(sim->tasks, f.id, &due);
        if (d == NULL)
            continue; /* expired or dropped from the table */
        const char *status = json_string_value(json_object_get(d, "status"));
        bool changed = strcmp(status, f.status) != 0;
        snprintf(f.status, sizeof(f.status), "%s", status);
        if (!mx_sim_tasks_is_terminal(f.status)) {
            c->follow[kept++] = f;
            if (due >= 0 && (next < 0 || due < next))
                next = due;
        }
        if (!changed) {
            json_decref(d);
            continue;
        }
        mx_log_debug("sim", "req#%lu: notifications/tasks %s %s", mx_req_id(c->req), f.id,
                     f.status);
        if (!emit(c, listen_notification(c, "notifications/tasks", d)))
            break;
    }
    if (c->req) {
        c->follow_cnt = kept;
        if (next >= 0) {
            /* the loop's clock and the table's may disagree by a millisecond */
            ev_timer_stop(sim->loop, &c->timer);
            ev_timer_set(&c->timer, (double)(next > 0 ? next : 1) / 1000.0, 0.0);
            ev_timer_start(sim->loop, &c->timer);
        }
    }
    unref(c);
}

static void follow_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    follow_check(mx_container_of(w, struct mx_sim_call, timer));
}

/* Follow the tasks |task_ids| names: each with the status it has now, which
 * the client learns from tasks/get; a task that already ended has nothing
 * more to tell and is not kept. */
static void follow_start(struct mx_sim_call *c, json_t *task_ids)
{
    struct mx_sim *sim = c->sim;
    int64_t next = -1;

    c->follow = mx_xcalloc(json_array_size(task_ids) + 1, sizeof(c->follow[0]));
    for (size_t i = 0; i < json_array_size(task_ids); i++) {
        const char *id = json_string_value(json_array_get(task_ids, i));
        int64_t due = -1;
        json_t *d = mx_sim_tasks_detail(sim->tasks, id, &due);
        const char *status = json_string_value(json_object_get(d, "status"));
        if (d && !mx_sim_tasks_is_terminal(status)) {
            struct followed *f = &c->follow[c->follow_cnt++];
            snprintf(f->id, sizeof(f->id), "%s", id);
            snprintf(f->status, sizeof(f->status), "%s", status);
            if (due >= 0 && (next < 0 || due < next))
                next = due;
        }
        json_decref(d);
    }
    ev_set_cb(&c->timer, follow_cb);
    if (next >= 0) {
        ev_timer_set(&c->timer, (double)(next > 0 ? next : 1) / 1000.0, 0.0);
        ev_timer_start(sim->loop, &c->timer);
    }
}

void mx_sim_stream_listen(struct mx_sim *sim, struct mx_req *req, json_t *id, unsigned mask,
                          json_t *task_ids)
{
    struct mx_sim_call *c = call_open(sim, req, id, "", "subscriptions/listen (sse)");
    json_t *params = tagged(id);
    json_t *honored = json_object();

    c->listen = mask;
    c->listening = true;
    if (mask & MX_SIM_CHANGED_TOOLS)
        json_object_set_new(honored, "toolsListChanged", json_true());
    if (mask & MX_SIM_CHANGED_PROMPTS)
        json_object_set_new(honored, "promptsListChanged", json_true());
    if (task_ids)
        json_object_set(honored, "taskIds", task_ids);
    json_object_set_new(params, "notifications", honored);
    /* 2026-07-28, Subscriptions: the acknowledgement comes first. */
    if (c->req)
        emit(c, mx_sim_rpc_notification("notifications/subscriptions/acknowledged", params));
    else
        json_decref(params);
    /* Its status now is what tasks/get says; only later changes are told. */
    if (c->req && task_ids)
        follow_start(c, task_ids);
    unref(c);
}

void mx_sim_stream_get(struct mx_sim *sim, struct mx_req *req, const char *session)
{
    struct mx_sim_call *c = call_open(sim, req, NULL, session, "GET stream (sse)");
    c->listen = MX_SIM_CHANGED_TOOLS | MX_SIM_CHANGED_PROMPTS;
    c->listening = true;
    c->get = true;
    sim->get_streams++;
    sim->stats.get_opened++;
    unref(c);
}

void mx_sim_stream_list_changed(struct mx_sim *sim, unsigned mask)
{
    struct mx_sim_call *c = sim->calls;
    while (c) {
        struct mx_sim_call *next = c->next;
        if (c->listening && (c->listen & mask)) {
            if (next)
                next->refs++;
            /* MCP 2025-06-18: a GET stream's notifications carry no tag */
            json_t *params = c->get ? json_object() : tagged(c->id);
            if (c->listen & mask & MX_SIM_CHANGED_TOOLS)
                emit(c, mx_sim_rpc_notification("notifications/tools/list_changed", params));
            else
                emit(c, mx_sim_rpc_notification("notifications/prompts/list_changed", params));
            if (next && !next->linked) {
                /* emit() cannot end another call; stay safe anyway */
                unref(next);
                return;
            }
            if (next)
                unref(next);
        }
        c = next;
    }
}

bool mx_sim_stream_cancel(struct mx_sim *sim, const char *session, json_t *request_id)
{
    for (struct mx_sim_call *c = sim->calls; c; c = c->next) {
        if (strcmp(c->session, session) != 0 || !json_equal(c->id, request_id))
            continue;
        struct mx_req *req = c->req;
        mx_log_info("sim", "req#%lu: cancelled by the client after %lld of %lld steps",
                    mx_req_id(req), (long long)c->step, (long long)c->steps);
        sim->stats.cancelled++;
        finish(c);
        /* The cancelled request gets no response; the stream just ends. */
        mx_req_end(req);
        return true;
    }
    return false;
}

/* ---- tasks/result held until its task ends (MCP 2025-11-25) ---- */

/* A tasks/result request waiting for its task: a timer to its due time and
 * nothing else, so the loop never blocks on it. */
struct mx_sim_wait {
    struct mx_sim_wait *prev;
    struct mx_sim_wait *next;
    struct mx_sim *sim;
    struct mx_req *req;
    ev_timer timer;
    json_t *id;
    char task_id[33];
};

static void wait_free(struct mx_sim_wait *w)
{
    struct mx_sim *sim = w->sim;
    ev_timer_stop(sim->loop, &w->timer);
    if (w->prev)
        w->prev->next = w->next;
    else
        sim->waits = w->next;
    if (w->next)
        w->next->prev = w->prev;
    mx_sim_fault_busy(sim, -1);
    json_decref(w->id);
    free(w);
}

static void wait_arm(struct mx_sim_wait *w, int64_t ms)
{
    ev_timer_stop(w->sim->loop, &w->timer);
    ev_timer_set(&w->timer, (double)ms / 1000.0, 0.0);
    ev_timer_start(w->sim->loop, &w->timer);
}

static void wait_cb(struct ev_loop *loop, ev_timer *timer, int revents)
{
    struct mx_sim_wait *w = mx_container_of(timer, struct mx_sim_wait, timer);
    struct mx_sim *sim = w->sim;
    struct mx_req *req = w->req;
    json_t *params = json_pack("{s:s}", "taskId", w->task_id);
    struct mx_sim_reply r;
    json_t *out;
    (void)loop;
    (void)revents;

    memset(&r, 0, sizeof(r));
    r.tool = -1;
    mx_sim_tasks_result_2025(sim->tasks, params, &r);
    json_decref(params);
    if (r.task_wait) {
        /* the two clocks may disagree by a millisecond: ask again soon */
        wait_arm(w, r.wait_ms > 0 ? r.wait_ms : 1);
        mx_sim_reply_clear(&r);
        return;
    }
    if (r.result)
        out = mx_sim_rpc_result(w->id, json_incref(r.result));
    else
        out = mx_sim_rpc_error(w->id, r.err_code, r.err_msg, json_incref(r.err_data));
    mx_sim_reply_clear(&r);
    mx_req_set_handler(req, NULL, NULL, NULL);
    wait_free(w);
    /* Last: answering may dispatch the next pipelined request. */
    mx_sim_respond(sim, req, 200, NULL, 0, out,
                   out && json_object_get(out, "result") ? "tasks/result (was waiting)"
                                                         : "tasks/result (was waiting, error)");
}

static void wait_abort(struct mx_req *req, void *data)
{
    struct mx_sim_wait *w = data;
    mx_log_info("sim", "req#%lu: client went away while tasks/result waited", mx_req_id(req));
    wait_free(w);
}

void mx_sim_stream_task_wait(struct mx_sim *sim, struct mx_req *req, json_t *id,
                             const struct mx_sim_reply *reply)
{
    struct mx_sim_wait *w = mx_xcalloc(1, sizeof(*w));
    w->sim = sim;
    w->req = req;
    w->id = json_incref(id);
    snprintf(w->task_id, sizeof(w->task_id), "%s", reply->task_id);
    w->next = sim->waits;
    if (sim->waits)
        sim->waits->prev = w;
    sim->waits = w;
    /* An open tasks/result keeps the sandbox awake, as an open stream does. */
    mx_sim_fault_busy(sim, +1);
    mx_log_debug("sim", "req#%lu tasks/result waits %lld ms for its task", mx_req_id(req),
                 (long long)reply->wait_ms);
    mx_req_set_handler(req, NULL, wait_abort, w);
    ev_timer_init(&w->timer, wait_cb, 0.0, 0.0);
    wait_arm(w, reply->wait_ms);
}

void mx_sim_stream_task_changed(struct mx_sim *sim, const char *task_id)
{
    /* Answer on the next iteration, not from inside the request that
     * changed the task: answering may run other requests. */
    for (struct mx_sim_wait *w = sim->waits; w && task_id; w = w->next) {
        if (strcmp(w->task_id, task_id) == 0)
            wait_arm(w, 0);
    }
    for (struct mx_sim_call *c = sim->calls; c && task_id; c = c->next) {
        for (size_t i = 0; i < c->follow_cnt; i++) {
            if (strcmp(c->follow[i].id, task_id) != 0)
                continue;
            ev_timer_stop(sim->loop, &c->timer);
            ev_timer_set(&c->timer, 0.0, 0.0);
            ev_timer_start(sim->loop, &c->timer);
            break;
        }
    }
}

void mx_sim_stream_clear(struct mx_sim *sim)
{
    while (sim->waits) {
        struct mx_sim_wait *w = sim->waits;
        struct mx_req *req = w->req;
        mx_req_set_handler(req, NULL, NULL, NULL);
        wait_free(w);
        mx_req_reset(req);
    }
    while (sim->polls) {
        struct mx_sim_poll *p = sim->polls;
        sim->polls = p->next;
        poll_free(p);
    }
    while (sim->calls) {
        struct mx_sim_call *c = sim->calls;
        struct mx_req *req = c->req;
        finish(c);
        mx_req_reset(req);
    }
}
