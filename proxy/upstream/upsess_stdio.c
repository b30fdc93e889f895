/* SPDX-License-Identifier: MIT */
/*
 * The stdio transport of upstream sessions, the row of `transport =
 * "stdio"` (a `command` server; mx_upsess_stdio_ops): a session is one
 * child process (child.h) speaking newline-delimited JSON-RPC (MCP
 * 2025-06-18, Transports, stdio). Callers use the mx_upsess_* functions
 * unchanged. Semantics, beyond upsess.h:
 * - the process starts at the first request (or connect-only request) and
 *   requests wait, in order, while it starts; initialize goes first, is
 *   sent again when the process has not answered within a bound (an
 *   installer such as `npx -y pkg` may take long and may re-exec, losing
 *   the first line), and nothing else is written before the answer and
 *   notifications/initialized;
 * - a process that exits fails the requests written to it (their outcome
 *   is unknown; never re-sent), keeps the ones not yet written waiting, and
 *   is started again for them (or the next request), after a backoff when
 *   it keeps failing; on_ready fires again after the new initialize;
 * - the stdin queue has a cap: above a watermark requests wait for it to
 *   drain, and a message that cannot fit fails;
 * - progress notifications go to the request whose progress token they
 *   carry; a request from the server goes to the one request in flight that
 *   can cause one (tools/call, prompts/get, ...) when there is exactly one,
 *   else to the session's on_message (stdio carries no other hint);
 * - stderr goes to the log, never to the protocol (child.h).
 * Session keys of stdio sessions have the top bit set, so they never equal
 * the key of a session of another transport. The request table is
 * upmsg.c's. States:
 *
 *   idle --a request waits--> starting (process spawned, initialize sent,
 *        sent again while unanswered) --answer + initialized--> ready
 *   starting --exit, no answer in time, bad answer--> idle (waiting
 *        requests fail; the next start waits out a backoff)
 *   ready --exit--> idle (written requests fail, waiting ones restart it)
 *   any --close--> closed
 *
 * Re-entrancy: callers' callbacks may cancel requests or close the session;
 * a request and the session stay allocated while their code is on the stack
 * (refs) and go afterwards.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "backoff.h"
#include "child.h"
#include "childenv.h"
#include "err.h"
#include "log.h"
#include "rand.h"
#include "rpc.h"
#include "upmsg.h"

#define SUBSYS "stdio"

#define LINE_CAP        (16u * 1024 * 1024) /* one message from the process */
#define IN_CAP          (32u * 1024 * 1024) /* bytes queued for its stdin */
#define IN_HIGH         (1u * 1024 * 1024)  /* above this, requests wait for a drain */
#define INIT_RESEND_S   3.0                 /* first re-send of initialize... */
#define INIT_RESEND_MAX 15.0                /* ...then doubling up to this */
#define INIT_LIMIT_MS   60000L              /* at least this long for an answer */
#define STABLE_S        10.0                /* ready this long: a later exit is no crash loop */
#define BACKOFF_BASE_MS 500
#define BACKOFF_CAP_MS  30000
#define JUNK_WARN_S     10.0 /* at most one warning this often about non-JSON lines */
#define KEY_BIT         (1ULL << 63)

enum ss_state {
    SS_IDLE = 0,
    SS_STARTING = 1,
    SS_READY = 2,
    SS_CLOSED = 3,
};

struct ss {
    struct mx_upsess base; /* first (upsess_int.h) */
    const struct mx_server_cfg *cfg;
    int refs;
    enum ss_state state;
    struct mx_child *child;
    pid_t pid;
    json_t *init_ids;   /* ids of the initialize requests sent to this process */
    ev_timer kick;      /* starts and launches from the loop, never from a caller's call */
    ev_timer init_wait; /* re-sends initialize, gives up */
    double resend_s;
    ev_tstamp started_at;
    ev_tstamp ready_at;
    ev_tstamp retry_at;  /* no start before this */
    unsigned failures;   /* starts in a row that did not last */
    struct mx_upmsg_q q; /* the requests */
    unsigned long junk;
    ev_tstamp junk_warned_at;
};

static uint64_t next_key = 1;

static void ss_kick(struct ss *s, double after_s);

static struct ss *SS(struct mx_upsess *s)
{
    return mx_container_of(s, struct ss, base);
}

static const char *name(const struct ss *s)
{
    return s->cfg->name;
}

static const char *state_name(enum ss_state st)
{
    switch (st) {
    case SS_IDLE:
        return "idle";
    case SS_STARTING:
        return "starting";
    case SS_READY:
        return "ready";
    case SS_CLOSED:
        return "closed";
    }
    return "?";
}

static void set_state(struct ss *s, enum ss_state st)
{
    if (s->state == st)
        return;
    mx_log_debug(SUBSYS, "up:%s session %s -> %s", name(s), state_name(s->state), state_name(st));
    s->state = st;
    s->base.ready = st == SS_READY;
}

/* ---- lifetimes ---- */

static void ss_ref(struct ss *s)
{
    s->refs++;
}

static void ss_unref(struct ss *s)
{
    MX_ASSERT(s->refs > 0);
    if (--s->refs > 0)
        return;
    json_decref(s->init_ids);
    mx_upsess_base_clear(&s->base);
    free(s);
}

static void q_resume(void *owner)
{
    struct ss *s = owner;
    if (s->child)
        mx_child_resume(s->child);
}

static void q_hold(void *owner)
{
    ss_ref(owner);
}

static void q_release(void *owner)
{
    ss_unref(owner);
}

static void rpc_timeout(struct mx_upmsg_rpc *r, void *owner);

static const struct mx_upmsg_q_ops q_ops = {NULL, q_resume, rpc_timeout, q_hold, q_release};

/* ---- failures ---- */

static void describe_status(int status, char *out, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(out, cap, "exited (status %d)", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, cap, "was killed by signal %d", WTERMSIG(status));
    else
        snprintf(out, cap, "ended (wait status %d)", status);
}

static void start_failed(struct ss *s, const struct mx_upfail *f)
{
    s->failures++;
    int64_t ms =
        mx_backoff_ms(s->failures - 1, BACKOFF_BASE_MS, BACKOFF_CAP_MS, mx_rand_below(UINT64_MAX));
    s->retry_at = ev_now(s->base.env->loop) + (double)ms / 1000.0;
    mx_upstream_note(s->base.env->up, MX_UPSTREAM_EV_UNREACHABLE);
    mx_log_warn(SUBSYS, "%s; next start in %.1f s at the earliest", f->message,
                (double)ms / 1000.0);
    mx_upmsg_fail_all(&s->q, false, f);
}

/* ---- writing ---- */

static int write_msg(struct ss *s, const json_t *msg)
{
    char *text = mx_rpc_dump(msg);
    int rc = mx_child_write(s->child, text, strlen(text));
    if (rc == 0)
        mx_upsess_trace(&s->base, "c2s", mx_str_cstr(text));
    free(text);
    return rc;
}

static void send_initialize(struct ss *s)
{
    char buf[48];
    snprintf(buf, sizeof(buf), "mcplex-init-%zu", json_array_size(s->init_ids) + 1);
    json_t *id = json_string(buf);
    json_t *msg = mx_upmsg_initialize(s->base.caps, id);
    if (write_msg(s, msg) == 0)
        json_array_append(s->init_ids, id);
    json_decref(msg);
    json_decref(id);
}

/* ---- the process ---- */

static int on_line(struct mx_child *c, struct mx_str line, void *data);
static void on_drain(struct mx_child *c, void *data);
static void on_exit_cb(struct mx_child *c, int status, void *data);

static const struct mx_child_cbs child_cbs = {on_line, on_drain, on_exit_cb};

static void end_child(struct ss *s)
{
    ev_timer_stop(s->base.env->loop, &s->init_wait);
    mx_child_close(s->child);
    s->child = NULL;
    s->pid = 0;
    mx_upmsg_unpause_all(&s->q);
}

static void start_child(struct ss *s)
{
    struct mx_childenv env;
    struct mx_upfail f;
    char why[512];
    const struct mx_server_cfg *cfg = s->cfg;

    if (mx_childenv_build(&cfg->env, cfg->env_secret, environ, &env, why, sizeof(why)) != 0) {
        mx_upmsg_fail(s->cfg, MX_RPC_UPSTREAM_UNAVAILABLE, "unreachable", &f,
                      "cannot be started: %s", why);
        start_failed(s, &f);
        return;
    }
    char **argv = mx_xcalloc(cfg->command.cnt + 1, sizeof(*argv));
    for (size_t i = 0; i < cfg->command.cnt; i++)
        argv[i] = cfg->command.v[i];
    struct mx_child_opts o = {0};
    o.name = cfg->name;
    o.argv = argv;
    o.cwd = cfg->cwd;
    o.envp = env.envp;
    o.max_line = LINE_CAP;
    o.in_cap = IN_CAP;
    int rc = mx_child_start(s->base.env->loop, &o, &child_cbs, s, &s->child, why, sizeof(why));
    free(argv);
    mx_childenv_clear(&env);
    if (rc) {
        mx_upmsg_fail(s->cfg, MX_RPC_UPSTREAM_UNAVAILABLE, "unreachable", &f,
                      "cannot be started: %s", why);
        start_failed(s, &f);
        return;
    }
    s->pid = mx_child_pid(s->child);
    s->started_at = ev_now(s->base.env->loop);
    json_decref(s->init_ids);
    s->init_ids = json_array();
    set_state(s, SS_STARTING);
    mx_log_info(SUBSYS, "up:%s started %s (pid %d)", name(s), cfg->command.v[0], (int)s->pid);
    /* MCP 2025-06-18, Lifecycle: initialize first; it waits in the pipe
     * while the process starts */
    send_initialize(s);
    s->resend_s = INIT_RESEND_S;
    ev_timer_set(&s->init_wait, s->resend_s, 0.0);
    ev_timer_start(s->base.env->loop, &s->init_wait);
}

static long init_limit_ms(const struct ss *s)
{
    return s->cfg->request_timeout_ms > INIT_LIMIT_MS ? (long)s->cfg->request_timeout_ms
                                                      : INIT_LIMIT_MS;
}

static void init_wait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct ss *s = mx_container_of(w, struct ss, init_wait);
    struct mx_upfail f;
    (void)revents;
    if (s->state != SS_STARTING)
        return;
    double waited = ev_now(loop) - s->started_at;
    double limit = (double)init_limit_ms(s) / 1000.0;
    if (waited + 0.05 >= limit) {
        ss_ref(s);
        mx_upmsg_fail(s->cfg, MX_RPC_UPSTREAM_UNAVAILABLE, "unreachable", &f,
                      "did not answer initialize within %.0f s", limit);
        end_child(s);
        set_state(s, SS_IDLE);
        start_failed(s, &f);
        ss_unref(s);
        return;
    }
    /* Safe to repeat (initialize changes nothing but the session), and the
     * first may be lost: an installer that re-execs can swallow it. */
    mx_log_info(SUBSYS, "up:%s has not answered initialize after %.0f s; sending it again", name(s),
                waited);
    send_initialize(s);
    s->resend_s = s->resend_s * 2 > INIT_RESEND_MAX ? INIT_RESEND_MAX : s->resend_s * 2;
    double next = s->resend_s;
    if (waited + next > limit)
        next = limit - waited;
    ev_timer_set(w, next, 0.0);
    ev_timer_start(loop, w);
}

static void launch_waiting(struct ss *s);

static void init_answered(struct ss *s, json_t *msg)
{
    struct mx_upfail f;
    json_t *result = json_object_get(msg, "result");
    if (!mx_upmsg_init_ok(s->cfg, msg, &f)) {
        end_child(s);
        set_state(s, SS_IDLE);
        start_failed(s, &f);
        return;
    }
    ev_timer_stop(s->base.env->loop, &s->init_wait);
    json_decref(s->base.init_result);
    s->base.init_result = json_incref(result);
    /* MCP 2025-06-18, Lifecycle: initialized before anything else */
    json_t *note = mx_upmsg_initialized();
    write_msg(s, note);
    json_decref(note);
    s->base.key = KEY_BIT | next_key++;
    s->ready_at = ev_now(s->base.env->loop);
    set_state(s, SS_READY);
    mx_upstream_note(s->base.env->up, MX_UPSTREAM_EV_OK);
    mx_log_info(SUBSYS, "up:%s ready (pid %d, MCP %s, %.1f s to start)", name(s), (int)s->pid,
                json_string_value(json_object_get(result, "protocolVersion")),
                s->ready_at - s->started_at);
    ss_ref(s);
    launch_waiting(s);
    if (s->state == SS_READY && s->base.cbs.on_ready)
        s->base.cbs.on_ready(&s->base, s->base.init_result, s->base.data);
    ss_unref(s);
}

static void on_exit_cb(struct mx_child *c, int status, void *data)
{
    struct ss *s = data;
    struct mx_upfail f;
    char how[64];
    (void)c;
    describe_status(status, how, sizeof(how));
    enum ss_state was = s->state;
    ev_tstamp now = ev_now(s->base.env->loop);
    ss_ref(s);
    end_child(s);
    s->base.key = 0;
    set_state(s, SS_IDLE);
    if (was == SS_STARTING) {
        mx_upmsg_fail(s->cfg, MX_RPC_UPSTREAM_UNAVAILABLE, "unreachable", &f, "%s while starting",
                      how);
        start_failed(s, &f);
    } else {
        if (now - s->ready_at >= STABLE_S) {
            s->failures = 0;
        } else {
            s->failures++;
            int64_t ms = mx_backoff_ms(s->failures - 1, BACKOFF_BASE_MS, BACKOFF_CAP_MS,
                                       mx_rand_below(UINT64_MAX));
            s->retry_at = now + (double)ms / 1000.0;
        }
        mx_log_warn(SUBSYS, "up:%s %s; it starts again at the next request", name(s), how);
        /* MCP 2025-06-18, stdio: what was written may have run; never
         * written twice */
        mx_upmsg_fail(s->cfg, MX_RPC_OUTCOME_UNKNOWN, "outcome-unknown", &f,
                      "%s before it answered; the request was not repeated", how);
        mx_upmsg_fail_all(&s->q, true, &f);
        if (s->state == SS_IDLE && mx_upmsg_first(&s->q, false, UINT64_MAX))
            ss_kick(s, 0.0);
    }
    ss_unref(s);
}

static void on_drain(struct mx_child *c, void *data)
{
    struct ss *s = data;
    (void)c;
    if (s->state == SS_READY)
        ss_kick(s, 0.0);
}

/* ---- reading ---- */

static void reply_ping(struct ss *s, json_t *msg)
{
    json_t *r = mx_upmsg_ping_answer(msg);
    write_msg(s, r);
    json_decref(r);
}

static void junk_line(struct ss *s, const char *what)
{
    ev_tstamp now = ev_now(s->base.env->loop);
    s->junk++;
    if (s->junk == 1 || now - s->junk_warned_at >= JUNK_WARN_S) {
        mx_log_warn(SUBSYS, "up:%s wrote %s on stdout; ignored (%lu such lines so far)", name(s),
                    what, s->junk);
        s->junk_warned_at = now;
    }
}

static void handle_msg(struct ss *s, json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    switch (mx_rpc_classify(msg)) {
    case MX_RPC_RESPONSE: {
        json_t *id = json_object_get(msg, "id");
        if (s->state == SS_STARTING) {
            size_t i;
            json_t *v;
            json_array_foreach(s->init_ids, i, v)
            {
                if (json_equal(v, id)) {
                    init_answered(s, msg);
                    return;
                }
            }
        }
        struct mx_upmsg_rpc *r = s->state == SS_READY ? mx_upmsg_by_id(&s->q, id) : NULL;
        if (r)
            mx_upmsg_finish(r, msg, NULL);
        else
            mx_log_debug(SUBSYS, "up:%s answered a request nobody waits for; dropped", name(s));
        return;
    }
    case MX_RPC_NOTIFICATION:
    case MX_RPC_REQUEST:
        if (s->state != SS_READY) {
            if (strcmp(method, "ping") == 0)
                reply_ping(s, msg);
            else
                mx_log_debug(SUBSYS, "up:%s %s before initialized; dropped", name(s), method);
            return;
        }
        /* stdio says nothing of which request a server's request belongs
         * to: mx_upmsg_route guesses only when one request can have asked */
        if (mx_upmsg_route(&s->q, msg, s->base.key))
            return;
        break;
    case MX_RPC_INVALID:
        junk_line(s, "JSON that is not JSON-RPC");
        return;
    }
    if (s->base.cbs.on_message)
        s->base.cbs.on_message(&s->base, s->base.key, msg, s->base.data);
}

static bool looks_like_json(struct mx_str t)
{
    return t.len >= 2 && (t.p[0] == '{' || t.p[0] == '[');
}

static int on_line(struct mx_child *c, struct mx_str line, void *data)
{
    struct ss *s = data;
    (void)c;
    struct mx_str t = mx_str_trim(line);
    if (t.len == 0)
        return 0;
    json_t *msg = looks_like_json(t) ? mx_rpc_parse(t) : NULL;
    if (msg == NULL || (!json_is_object(msg) && !json_is_array(msg))) {
        /* MCP 2025-06-18, stdio: the server MUST NOT write anything else to
         * stdout; some do (banners, console.log) */
        json_decref(msg);
        junk_line(s, "a line that is not JSON-RPC");
        return 0;
    }
    mx_upsess_trace(&s->base, "s2c", t);
    ss_ref(s);
    if (json_is_object(msg)) {
        handle_msg(s, msg);
    } else {
        /* a JSON-RPC batch (MCP 2025-03-26) */
        size_t i;
        json_t *v;
        json_array_foreach(msg, i, v)
        {
            if (s->state == SS_CLOSED || s->child == NULL)
                break;
            if (json_is_object(v))
                handle_msg(s, v);
            else
                junk_line(s, "a batch item that is not an object");
        }
    }
    json_decref(msg);
    bool pause = s->state == SS_READY && s->q.paused_cnt > 0;
    ss_unref(s);
    return pause ? MX_EAGAIN : 0;
}

/* ---- launching ---- */

static struct mx_upmsg_rpc *first_waiting(struct ss *s)
{
    return mx_upmsg_first(&s->q, false, UINT64_MAX);
}

static void launch_waiting(struct ss *s)
{
    struct mx_upmsg_rpc *r;
    struct mx_upfail f;
    ss_ref(s);
    while (s->state == SS_READY && (r = first_waiting(s)) != NULL) {
        if (r->msg == NULL) {
            mx_upmsg_finish(r, NULL, NULL);
            continue;
        }
        if (mx_child_queued(s->child) > IN_HIGH)
            break; /* on_drain goes on */
        char *text = mx_rpc_dump(r->msg);
        int rc = mx_child_write(s->child, text, strlen(text));
        if (rc == 0) {
            mx_upsess_trace(&s->base, "c2s", mx_str_cstr(text));
            r->sent = true;
            r->key = s->base.key;
        }
        free(text);
        if (rc == MX_ELIMIT && mx_child_queued(s->child) > 0)
            break; /* waits for the queue to drain */
        if (rc == MX_ELIMIT) {
            mx_upmsg_fail(s->cfg, MX_RPC_UPSTREAM_HTTP, "protocol-error", &f,
                          "cannot take a request over %u bytes", IN_CAP);
            mx_upmsg_finish(r, NULL, &f);
        } else if (rc == MX_ECLOSED) {
            break; /* it stopped reading: its exit follows */
        }
    }
    ss_unref(s);
}

static void kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct ss *s = mx_container_of(w, struct ss, kick);
    (void)revents;
    if (s->state == SS_CLOSED)
        return;
    ss_ref(s);
    if (s->state == SS_READY) {
        launch_waiting(s);
    } else if (s->state == SS_IDLE && first_waiting(s)) {
        ev_tstamp now = ev_now(loop);
        if (now < s->retry_at)
            ss_kick(s, s->retry_at - now);
        else
            start_child(s);
    }
    ss_unref(s);
}

static void ss_kick(struct ss *s, double after_s)
{
    mx_upmsg_kick(s->base.env->loop, &s->kick, after_s);
}

static void rpc_timeout(struct mx_upmsg_rpc *r, void *owner)
{
    struct ss *s = owner;
    struct mx_upfail f;
    if (r->sent && r->key == s->base.key && s->state == SS_READY) {
        /* MCP 2025-06-18, Cancellation: tell it to stop working on it */
        json_t *note = mx_upmsg_cancelled(r->id, "timed out in mcplex");
        write_msg(s, note);
        json_decref(note);
    }
    size_t queued = mx_child_queued(s->child);
    if (queued > 0)
        mx_upmsg_fail(s->cfg, MX_RPC_UPSTREAM_TIMEOUT, "timed-out", &f,
                      "timed out after %ld s: it is not reading its input (%zu bytes wait for it)",
                      (r->timeout_ms + 999) / 1000, queued);
    else
        mx_upmsg_fail(s->cfg, MX_RPC_UPSTREAM_TIMEOUT, "timed-out", &f, "timed out after %ld s%s",
                      (r->timeout_ms + 999) / 1000,
                      r->sent ? "" : " before the request could be sent");
    mx_upmsg_finish(r, NULL, &f);
}

/* ---- the ops (upsess_int.h) ---- */

static struct mx_upsess *stdio_open(struct mx_upsess_env *env, const json_t *caps,
                                    const char *trace_session, const struct mx_upsess_cbs *cbs,
                                    void *data)
{
    struct ss *s = mx_xcalloc(1, sizeof(*s));
    mx_upsess_base_init(&s->base, &mx_upsess_stdio_ops, env, caps, trace_session, cbs, data);
    s->cfg = env->up->cfg;
    s->refs = 1;
    s->state = SS_IDLE;
    s->init_ids = json_array();
    ev_init(&s->kick, kick_cb);
    ev_init(&s->init_wait, init_wait_cb);
    mx_upmsg_q_init(&s->q, env->loop, &mx_upsess_stdio_ops, s->cfg, &q_ops, s);
    return &s->base;
}

static void stdio_close(struct mx_upsess *pub)
{
    struct ss *s = SS(pub);
    if (s->state == SS_CLOSED)
        return;
    set_state(s, SS_CLOSED);
    ev_timer_stop(s->base.env->loop, &s->kick);
    end_child(s);
    mx_upmsg_kill_all(&s->q);
    ss_unref(s);
}

static int stdio_request(struct mx_upsess *pub, json_t *msg, long timeout_ms,
                         const struct mx_uprpc_cbs *cbs, void *data, struct mx_uprpc **out)
{
    struct ss *s = SS(pub);
    if (s->state == SS_CLOSED)
        return MX_EINVAL;
    mx_upmsg_add(&s->q, msg, timeout_ms, cbs, data, out);
    /* from the loop: no callback may run from inside this call */
    ss_kick(s, 0.0);
    return 0;
}

static void stdio_send(struct mx_upsess *pub, json_t *msg)
{
    struct ss *s = SS(pub);
    int rc = write_msg(s, msg);
    if (rc) {
        mx_log_warn(SUBSYS, "up:%s message not sent: %s", name(s), mx_strerror(rc));
        return;
    }
    mx_upmsg_sent(&s->q, msg, s->base.key);
}

const struct mx_upsess_ops mx_upsess_stdio_ops = {
    .label = "stdio",
    .subsys = SUBSYS,
    .caps = 0,
    .open = stdio_open,
    .close = stdio_close,
    .request = stdio_request,
    .send = stdio_send,
    .cancel = mx_upmsg_cancel,
    .resume = mx_upmsg_resume,
};
