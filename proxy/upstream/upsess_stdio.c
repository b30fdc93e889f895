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
 *   notifications/initialized; a server that refuses it naming 2026-07-28
 *   (-32022) is asked server/discover and, when that lists 2026-07-28,
 *   gets stateless requests with the 2026-07-28 _meta (upchan.h);
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
 * the key of a session of another transport. The session core (states,
 * initialize, dispatch) is upchan.c's, the request table upmsg.c's; this
 * file is the process, its lines and its exit. States (upchan.h):
 *
 *   idle --a request waits--> starting (process spawned, initialize sent,
 *        sent again while unanswered) --answer + initialized--> ready
 *   starting --exit, no answer in time, bad answer--> idle (waiting
 *        requests fail; the next start waits out a backoff)
 *   ready --exit--> idle (written requests fail, waiting ones restart it)
 *   any --close--> closed
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "child.h"
#include "childenv.h"
#include "err.h"
#include "log.h"
#include "rpc.h"
#include "upchan.h"

#define SUBSYS "stdio"

#define LINE_CAP        (16u * 1024 * 1024) /* one message from the process */
#define IN_CAP          (32u * 1024 * 1024) /* bytes queued for its stdin */
#define IN_HIGH         (1u * 1024 * 1024)  /* above this, requests wait for a drain */
#define INIT_RESEND_S   3.0                 /* first re-send of initialize... */
#define INIT_RESEND_MAX 15.0                /* ...then doubling up to this */
#define INIT_LIMIT_MS   60000L              /* at least this long for an answer */
#define JUNK_WARN_S     10.0 /* at most one warning this often about non-JSON lines */
#define KEY_BIT         (1ULL << 63)

struct ss {
    struct mx_upchan c; /* first: the session (upchan.h) */
    struct mx_child *child;
    pid_t pid;
    double resend_s;
    unsigned long junk;
    ev_tstamp junk_warned_at;
};

static uint64_t next_key = 1;

static struct ss *SS(struct mx_upchan *c)
{
    return mx_container_of(c, struct ss, c);
}

static const char *name(const struct ss *s)
{
    return s->c.cfg->name;
}

/* ---- writing ---- */

static int write_msg(struct ss *s, const json_t *msg)
{
    char *text = mx_rpc_dump(msg);
    int rc = mx_child_write(s->child, text, strlen(text));
    if (rc == 0)
        mx_upsess_trace(&s->c.base, "c2s", mx_str_cstr(text));
    free(text);
    return rc;
}

/* Only a caller's message that cannot be written is logged; mcplex's own
 * are dropped (initialize is sent again while unanswered, and a process
 * that stopped reading exits). */
static int stdio_write(struct mx_upchan *c, enum mx_upchan_msg what, const json_t *msg)
{
    struct ss *s = SS(c);
    int rc = write_msg(s, msg);
    if (rc && what == MX_UPCHAN_SEND)
        mx_log_warn(SUBSYS, "up:%s message not sent: %s", name(s), mx_strerror(rc));
    return rc;
}

static bool stdio_launch(struct mx_upchan *c, struct mx_upmsg_rpc *r)
{
    struct ss *s = SS(c);
    struct mx_upfail f;
    if (mx_child_queued(s->child) > IN_HIGH)
        return false; /* on_drain goes on */
    json_t *msg = mx_upchan_shape(c, r);
    int rc = write_msg(s, msg);
    json_decref(msg);
    if (rc == 0) {
        r->sent = true;
        r->key = c->base.key;
    }
    if (rc == MX_ELIMIT && mx_child_queued(s->child) > 0)
        return false; /* waits for the queue to drain */
    if (rc == MX_ELIMIT) {
        mx_upmsg_fail(c->cfg, MX_RPC_UPSTREAM_HTTP, "protocol-error", &f,
                      "cannot take a request over %u bytes", IN_CAP);
        mx_upmsg_finish(r, NULL, &f);
    }
    return rc != MX_ECLOSED; /* it stopped reading: its exit follows */
}

static bool stdio_timed_out(struct mx_upchan *c, struct mx_upmsg_rpc *r, struct mx_upfail *f)
{
    size_t queued = mx_child_queued(SS(c)->child);
    if (queued == 0)
        return false;
    mx_upmsg_fail(c->cfg, MX_RPC_UPSTREAM_TIMEOUT, "timed-out", f,
                  "timed out after %ld s: it is not reading its input (%zu bytes wait for it)",
                  (r->timeout_ms + 999) / 1000, queued);
    return true;
}

/* ---- the process ---- */

static int on_line(struct mx_child *ch, struct mx_str line, void *data);
static void on_drain(struct mx_child *ch, void *data);
static void on_exit_cb(struct mx_child *ch, int status, void *data);

static const struct mx_child_cbs child_cbs = {on_line, on_drain, on_exit_cb};

static void describe_status(int status, char *out, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(out, cap, "exited (status %d)", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, cap, "was killed by signal %d", WTERMSIG(status));
    else
        snprintf(out, cap, "ended (wait status %d)", status);
}

static void stdio_failed(struct mx_upchan *c, const struct mx_upfail *f, int64_t ms)
{
    mx_upstream_note(c->base.env->up, MX_UPSTREAM_EV_UNREACHABLE);
    mx_log_warn(SUBSYS, "%s; next start in %.1f s at the earliest", f->message,
                (double)ms / 1000.0);
}

static void stdio_end(struct mx_upchan *c)
{
    struct ss *s = SS(c);
    mx_child_close(s->child);
    s->child = NULL;
    s->pid = 0;
}

static void stdio_start(struct mx_upchan *c)
{
    struct ss *s = SS(c);
    struct mx_childenv env;
    struct mx_upfail f;
    char why[512];
    const struct mx_server_cfg *cfg = c->cfg;

    if (mx_childenv_build(&cfg->env, cfg->env_secret, environ, &env, why, sizeof(why)) != 0) {
        mx_upmsg_fail(cfg, MX_RPC_UPSTREAM_UNAVAILABLE, "unreachable", &f, "cannot be started: %s",
                      why);
        mx_upchan_start_failed(c, &f);
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
    int rc = mx_child_start(c->base.env->loop, &o, &child_cbs, s, &s->child, why, sizeof(why));
    free(argv);
    mx_childenv_clear(&env);
    if (rc) {
        mx_upmsg_fail(cfg, MX_RPC_UPSTREAM_UNAVAILABLE, "unreachable", &f, "cannot be started: %s",
                      why);
        mx_upchan_start_failed(c, &f);
        return;
    }
    s->pid = mx_child_pid(s->child);
    mx_upchan_set_state(c, MX_UPCHAN_INIT);
    mx_log_info(SUBSYS, "up:%s started %s (pid %d)", name(s), cfg->command.v[0], (int)s->pid);
    /* MCP 2025-06-18, Lifecycle: initialize first; it waits in the pipe
     * while the process starts (a server of 2026-07-28 only refuses it and
     * is asked server/discover, upchan.h) */
    mx_upchan_send_initialize(c, 1);
    s->resend_s = INIT_RESEND_S;
    mx_upchan_wait_init(c, s->resend_s);
}

static long init_limit_ms(const struct ss *s)
{
    return s->c.cfg->request_timeout_ms > INIT_LIMIT_MS ? (long)s->c.cfg->request_timeout_ms
                                                        : INIT_LIMIT_MS;
}

static bool stdio_init_wait(struct mx_upchan *c, struct mx_upfail *f)
{
    struct ss *s = SS(c);
    double waited = ev_now(c->base.env->loop) - c->started_at;
    double limit = (double)init_limit_ms(s) / 1000.0;
    if (waited + 0.05 >= limit) {
        mx_upmsg_fail(c->cfg, MX_RPC_UPSTREAM_UNAVAILABLE, "unreachable", f,
                      "did not answer initialize within %.0f s", limit);
        return true;
    }
    /* Safe to repeat (initialize changes nothing but the session), and the
     * first may be lost: an installer that re-execs can swallow it. */
    if (!c->discovering)
        mx_log_info(SUBSYS, "up:%s has not answered initialize after %.0f s; sending it again",
                    name(s), waited);
    mx_upchan_send_again(c);
    s->resend_s = s->resend_s * 2 > INIT_RESEND_MAX ? INIT_RESEND_MAX : s->resend_s * 2;
    double next = s->resend_s;
    if (waited + next > limit)
        next = limit - waited;
    mx_upchan_wait_init(c, next);
    return false;
}

static void stdio_ready(struct mx_upchan *c)
{
    struct ss *s = SS(c);
    mx_upstream_note(c->base.env->up, MX_UPSTREAM_EV_OK);
    mx_log_info(SUBSYS, "up:%s ready (pid %d, MCP %s, %.1f s to start)", name(s), (int)s->pid,
                json_string_value(json_object_get(c->base.init_result, "protocolVersion")),
                c->ready_at - c->started_at);
}

static void on_exit_cb(struct mx_child *ch, int status, void *data)
{
    struct ss *s = data;
    struct mx_upfail f;
    char how[64];
    (void)ch;
    describe_status(status, how, sizeof(how));
    if (s->c.state == MX_UPCHAN_INIT) {
        mx_upmsg_fail(s->c.cfg, MX_RPC_UPSTREAM_UNAVAILABLE, "unreachable", &f, "%s while starting",
                      how);
        mx_upchan_start_failed(&s->c, &f);
    } else {
        mx_upchan_lost(&s->c, how);
    }
}

static void on_drain(struct mx_child *ch, void *data)
{
    struct ss *s = data;
    (void)ch;
    if (s->c.state == MX_UPCHAN_READY)
        mx_upchan_kick(&s->c, 0.0);
}

static void stdio_resume(struct mx_upchan *c)
{
    struct ss *s = SS(c);
    if (s->child)
        mx_child_resume(s->child);
}

/* ---- reading ---- */

/* MCP 2025-06-18, stdio: the server MUST NOT write anything else to stdout;
 * some do (banners, console.log). */
static void stdio_junk(struct mx_upchan *c, enum mx_upchan_junk what)
{
    static const char *const says[] = {
        [MX_UPCHAN_JUNK_TEXT] = "a line that is not JSON-RPC",
        [MX_UPCHAN_JUNK_JSON] = "JSON that is not JSON-RPC",
        [MX_UPCHAN_JUNK_ITEM] = "a batch item that is not an object",
    };
    struct ss *s = SS(c);
    ev_tstamp now = ev_now(c->base.env->loop);
    s->junk++;
    if (s->junk == 1 || now - s->junk_warned_at >= JUNK_WARN_S) {
        mx_log_warn(SUBSYS, "up:%s wrote %s on stdout; ignored (%lu such lines so far)", name(s),
                    says[what], s->junk);
        s->junk_warned_at = now;
    }
}

static bool looks_like_json(struct mx_str t)
{
    return t.len >= 2 && (t.p[0] == '{' || t.p[0] == '[');
}

static int on_line(struct mx_child *ch, struct mx_str line, void *data)
{
    struct ss *s = data;
    (void)ch;
    struct mx_str t = mx_str_trim(line);
    if (t.len == 0)
        return 0;
    if (!looks_like_json(t)) {
        stdio_junk(&s->c, MX_UPCHAN_JUNK_TEXT);
        return 0;
    }
    return mx_upchan_input(&s->c, t);
}

/* ---- the ops ---- */

static void stdio_free(struct mx_upchan *c)
{
    free(SS(c));
}

static const struct mx_upchan_ops chan_ops = {
    .transport = &mx_upsess_stdio_ops,
    .subsys = SUBSYS,
    .state_names = {[MX_UPCHAN_IDLE] = "idle",
                    [MX_UPCHAN_INIT] = "starting",
                    [MX_UPCHAN_READY] = "ready",
                    [MX_UPCHAN_CLOSED] = "closed"},
    .key_bit = KEY_BIT,
    .next_key = &next_key,
    .lost_then = "it starts again at the next request",
    .ready_on_write = true,
    .discover = true,
    .start = stdio_start,
    .write = stdio_write,
    .launch = stdio_launch,
    .end = stdio_end,
    .resume = stdio_resume,
    .init_wait = stdio_init_wait,
    .ready = stdio_ready,
    .failed = stdio_failed,
    .timed_out = stdio_timed_out,
    .junk = stdio_junk,
    .free = stdio_free,
};

static struct mx_upsess *stdio_open(struct mx_upsess_env *env, const json_t *caps,
                                    const char *trace_session, const struct mx_upsess_cbs *cbs,
                                    void *data)
{
    struct ss *s = mx_xcalloc(1, sizeof(*s));
    mx_upchan_init(&s->c, &chan_ops, env, caps, trace_session, cbs, data);
    return &s->c.base;
}

const struct mx_upsess_ops mx_upsess_stdio_ops = {
    .label = "stdio",
    .subsys = SUBSYS,
    .caps = MX_UPSESS_CAP_META_LOG_LEVEL,
    .open = stdio_open,
    .close = mx_upchan_close,
    .request = mx_upchan_request,
    .send = mx_upchan_send,
    .cancel = mx_upmsg_cancel,
    .resume = mx_upmsg_resume,
};
