/* SPDX-License-Identifier: MIT */
/*
 * The session core of the message-channel transports (upchan.c), driven
 * through a fake transport that records what it is asked to write: the
 * start from the loop, initialize and initialized, requests sent once
 * ready and matched to answers, pings before ready, what is no message,
 * the bound on starting and its backoff, a lost channel, a timeout's
 * cancellation, pausing, and a batch cut short by a close.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc.h"
#include "err.h"
#include "revision.h"
#include "rpc.h"
#include "upchan.h"
#include "upstream.h"

#define FAKE_KEY_BIT (1ULL << 61)

struct fake {
    struct mx_upchan c;
    json_t *out; /* every message written, in order */
    double wait_s;
    bool open_only; /* start leaves the channel opening */
    int starts, ends, resumes, readies, fails;
    int64_t last_ms;
    int junk[3];
};

static struct fake *F(struct mx_upchan *c)
{
    return mx_container_of(c, struct fake, c);
}

static void fake_start(struct mx_upchan *c)
{
    struct fake *f = F(c);
    f->starts++;
    if (f->open_only) {
        mx_upchan_set_state(c, MX_UPCHAN_OPENING);
    } else {
        mx_upchan_set_state(c, MX_UPCHAN_INIT);
        assert_int_equal(mx_upchan_send_initialize(c, c->conn), 0);
    }
    mx_upchan_wait_init(c, f->wait_s);
}

static int fake_write(struct mx_upchan *c, enum mx_upchan_msg what, const json_t *msg)
{
    (void)what;
    json_array_append_new(F(c)->out, json_deep_copy(msg));
    return 0;
}

static bool fake_launch(struct mx_upchan *c, struct mx_upmsg_rpc *r)
{
    json_t *msg = mx_upchan_shape(c, r);
    fake_write(c, MX_UPCHAN_SEND, msg);
    json_decref(msg);
    r->sent = true;
    r->key = c->base.key;
    return true;
}

static void fake_end(struct mx_upchan *c)
{
    F(c)->ends++;
}

static int fake_closes; /* the session is gone after its close */

static void fake_close(struct mx_upchan *c)
{
    (void)c;
    fake_closes++;
}

static void fake_resume(struct mx_upchan *c)
{
    F(c)->resumes++;
}

static bool fake_init_wait(struct mx_upchan *c, struct mx_upfail *f)
{
    mx_upmsg_fail(c->cfg, MX_RPC_UPSTREAM_TIMEOUT, "timed-out", f, "did not answer in time");
    return true;
}

static void fake_ready(struct mx_upchan *c)
{
    F(c)->readies++;
}

static void fake_failed(struct mx_upchan *c, const struct mx_upfail *f, int64_t ms)
{
    (void)f;
    F(c)->fails++;
    F(c)->last_ms = ms;
}

static void fake_junk(struct mx_upchan *c, enum mx_upchan_junk what)
{
    F(c)->junk[what]++;
}

static void fake_free(struct mx_upchan *c)
{
    json_decref(F(c)->out);
    free(F(c));
}

static uint64_t fake_keys = 1;

static struct mx_upsess *fake_open(struct mx_upsess_env *env, const json_t *caps,
                                   const char *trace_session, const struct mx_upsess_cbs *cbs,
                                   void *data);

static const struct mx_upsess_ops fake_upsess_ops = {
    .label = "fake",
    .subsys = "fake",
    .open = fake_open,
    .close = mx_upchan_close,
    .request = mx_upchan_request,
    .send = mx_upchan_send,
    .cancel = mx_upmsg_cancel,
    .resume = mx_upmsg_resume,
};

static const struct mx_upchan_ops fake_ops = {
    .transport = &fake_upsess_ops,
    .subsys = "fake",
    .state_names = {"idle", "opening", "init", "ready", "closed"},
    .key_bit = FAKE_KEY_BIT,
    .next_key = &fake_keys,
    .lost_then = "it starts again at the next request",
    .ready_on_write = true,
    .start = fake_start,
    .write = fake_write,
    .launch = fake_launch,
    .end = fake_end,
    .close = fake_close,
    .resume = fake_resume,
    .init_wait = fake_init_wait,
    .ready = fake_ready,
    .failed = fake_failed,
    .junk = fake_junk,
    .free = fake_free,
};

/* The ops the next fake_open uses: fake_ops, or a copy with discover set. */
static const struct mx_upchan_ops *fake_chan_ops = &fake_ops;

static struct mx_upsess *fake_open(struct mx_upsess_env *env, const json_t *caps,
                                   const char *trace_session, const struct mx_upsess_cbs *cbs,
                                   void *data)
{
    struct fake *f = mx_xcalloc(1, sizeof(*f));
    mx_upchan_init(&f->c, fake_chan_ops, env, caps, trace_session, cbs, data);
    f->out = json_array();
    f->wait_s = 10.0;
    return &f->c.base;
}

/* ---- the harness ---- */

struct got {
    int ready, messages, done;
    bool close_on_message;
    bool pause;
    bool had_resp;
    int fail_code;
    char fail_msg[512];
    struct mx_upsess *s;
};

static void on_ready(struct mx_upsess *s, json_t *init, void *data)
{
    (void)s;
    assert_non_null(init);
    ((struct got *)data)->ready++;
}

static void on_session_message(struct mx_upsess *s, uint64_t key, json_t *msg, void *data)
{
    struct got *g = data;
    (void)key;
    (void)msg;
    g->messages++;
    if (g->close_on_message)
        mx_upsess_close(s);
}

static const struct mx_upsess_cbs scbs = {on_session_message, on_ready, NULL};

static int on_rpc_message(struct mx_uprpc *r, uint64_t key, json_t *msg, void *data)
{
    struct got *g = data;
    (void)r;
    (void)key;
    (void)msg;
    g->messages++;
    return g->pause ? MX_EAGAIN : 0;
}

static void on_done(struct mx_uprpc *r, json_t *resp, const struct mx_upfail *fail, void *data)
{
    struct got *g = data;
    (void)r;
    g->done++;
    g->had_resp = resp != NULL;
    g->fail_code = fail ? fail->code : 0;
    snprintf(g->fail_msg, sizeof(g->fail_msg), "%s", fail ? fail->message : "");
}

static const struct mx_uprpc_cbs rcbs = {on_rpc_message, on_done, NULL};

/* One test's world: an upstream, its env, what the callbacks saw. */
struct world {
    char name[2];
    struct mx_server_cfg cfg;
    struct mx_upstream up;
    struct mx_upsess_env env;
    struct got g;
    size_t live; /* sessions and requests before the test */
};

static int setup(void **state)
{
    struct world *w = mx_xcalloc(1, sizeof(*w));
    w->name[0] = 't';
    w->cfg.name = w->name;
    mx_upstream_init(&w->up, &w->cfg);
    w->env.loop = ev_default_loop(0);
    w->env.up = &w->up;
    w->live = mx_upsess_live_cnt();
    *state = w;
    return 0;
}

/* Every test closes its session: nothing of it is left. */
static int teardown(void **state)
{
    struct world *w = *state;
    assert_true(mx_upsess_live_cnt() == w->live);
    mx_upsess_env_clear(&w->env);
    mx_upstream_clear(&w->up);
    free(w);
    return 0;
}

static void stop_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(loop, EVBREAK_ONE);
}

/* Run the loop for |s| seconds. */
static void run_for(double s)
{
    struct ev_loop *loop = ev_default_loop(0);
    ev_timer stop;
    ev_timer_init(&stop, stop_cb, s, 0.0);
    ev_timer_start(loop, &stop);
    ev_run(loop, 0);
    ev_timer_stop(loop, &stop);
}

static struct fake *fake_new(struct world *w)
{
    struct mx_upsess *s = fake_open(&w->env, NULL, NULL, &scbs, &w->g);
    w->g.s = s;
    return F(mx_container_of(s, struct mx_upchan, base));
}

static void feed(struct fake *f, const char *text)
{
    mx_upchan_input(&f->c, mx_str_cstr(text));
}

static void feed_init_answer(struct fake *f, const char *id)
{
    char buf[256];
    snprintf(buf, sizeof(buf),
             "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"protocolVersion\":\"%s\","
             "\"capabilities\":{},\"serverInfo\":{\"name\":\"f\",\"version\":\"1\"}}}",
             id, mx_rev_session_versions[0]);
    feed(f, buf);
}

static json_t *written(struct fake *f, size_t i)
{
    return json_array_get(f->out, i);
}

static json_t *last_written(struct fake *f)
{
    return json_array_get(f->out, json_array_size(f->out) - 1);
}

static const char *method_of(const json_t *m)
{
    return json_string_value(json_object_get(m, "method"));
}

/* Request |method| (id |id|, progress token "p"; connect only when NULL)
 * on the session of |w|. */
static struct mx_uprpc *call(struct world *w, int id, const char *method, long timeout_ms)
{
    json_t *req = method ? json_pack("{s:s, s:i, s:s, s:{s:{s:s}}}", "jsonrpc", "2.0", "id", id,
                                     "method", method, "params", "_meta", "progressToken", "p")
                         : NULL;
    struct mx_uprpc *r;
    assert_int_equal(mx_upsess_request(w->g.s, req, timeout_ms, &rcbs, &w->g, &r), 0);
    json_decref(req);
    return r;
}

/* A session made ready by a connect-only request. */
static struct fake *ready_session(struct world *w)
{
    struct fake *f = fake_new(w);
    call(w, 0, NULL, 0);
    run_for(0.02);
    feed_init_answer(f, "mcplex-init-1");
    assert_int_equal(f->c.state, MX_UPCHAN_READY);
    assert_int_equal(w->g.done, 1);
    assert_int_equal(w->g.fail_code, 0);
    w->g.done = 0;
    return f;
}

/* ---- the tests ---- */

static void test_upchan_initializes_then_sends(void **state)
{
    struct world *w = *state;
    struct fake *f = fake_new(w);
    call(w, 1, "tools/list", 0);
    assert_int_equal(f->starts, 0); /* from the loop, never from inside the call */
    run_for(0.02);
    assert_int_equal(f->starts, 1);
    assert_int_equal(f->c.state, MX_UPCHAN_INIT);
    assert_int_equal(json_array_size(f->out), 1);
    assert_string_equal(method_of(written(f, 0)), "initialize");
    assert_string_equal(json_string_value(json_object_get(written(f, 0), "id")), "mcplex-init-1");

    /* an answer to nobody while starting: dropped */
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":\"other\",\"result\":{}}");
    assert_int_equal(f->c.state, MX_UPCHAN_INIT);
    feed_init_answer(f, "mcplex-init-1");
    assert_int_equal(f->c.state, MX_UPCHAN_READY);
    assert_int_equal(f->readies, 1);
    assert_int_equal(w->g.ready, 1);
    assert_true(mx_upsess_is_ready(w->g.s));
    assert_true(mx_upsess_key(w->g.s) & FAKE_KEY_BIT);
    assert_non_null(mx_upsess_init_result(w->g.s));
    assert_int_equal(json_array_size(f->out), 3);
    assert_string_equal(method_of(written(f, 1)), "notifications/initialized");
    assert_string_equal(method_of(written(f, 2)), "tools/list");

    /* the same answer again: initialize is answered already */
    feed_init_answer(f, "mcplex-init-1");
    assert_int_equal(f->readies, 1);
    assert_int_equal(w->g.done, 0);
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}");
    assert_int_equal(w->g.done, 1);
    assert_true(w->g.had_resp);
    assert_int_equal(w->g.fail_code, 0);

    /* a message of the session's own */
    feed(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}");
    assert_int_equal(w->g.messages, 1);

    int closes = fake_closes;
    mx_upsess_close(w->g.s);
    assert_int_equal(fake_closes, closes + 1);
}

static void test_upchan_ping_and_junk_before_ready(void **state)
{
    struct world *w = *state;
    struct fake *f = fake_new(w);
    f->open_only = true;
    call(w, 0, NULL, 0);
    run_for(0.02);
    assert_int_equal(f->c.state, MX_UPCHAN_OPENING);

    /* nowhere to answer yet: dropped */
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
    assert_int_equal(json_array_size(f->out), 0);
    mx_upchan_set_state(&f->c, MX_UPCHAN_INIT);
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
    assert_int_equal(json_array_size(f->out), 1);
    assert_int_equal(json_integer_value(json_object_get(written(f, 0), "id")), 7);
    assert_true(json_is_object(json_object_get(written(f, 0), "result")));
    /* other requests and notifications wait for initialized: dropped */
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"roots/list\"}");
    assert_int_equal(json_array_size(f->out), 1);
    assert_int_equal(w->g.messages, 0);

    feed(f, "hello");
    feed(f, "\"a string\"");
    assert_int_equal(f->junk[MX_UPCHAN_JUNK_TEXT], 2);
    feed(f, "{\"x\":1}");
    assert_int_equal(f->junk[MX_UPCHAN_JUNK_JSON], 1);
    feed(f, "[1, {\"x\":1}]");
    assert_int_equal(f->junk[MX_UPCHAN_JUNK_ITEM], 1);
    assert_int_equal(f->junk[MX_UPCHAN_JUNK_JSON], 2);
    assert_int_equal(w->g.done, 0);
    mx_upsess_close(w->g.s);
}

static void test_upchan_start_bound_backs_off(void **state)
{
    struct world *w = *state;
    struct fake *f = fake_new(w);
    f->wait_s = 0.01;
    call(w, 1, "tools/list", 0);
    run_for(0.05);
    assert_int_equal(f->starts, 1);
    assert_int_equal(f->ends, 1);
    assert_int_equal(f->fails, 1);
    assert_true(f->last_ms >= 250 && f->last_ms <= 500);
    assert_int_equal(f->c.state, MX_UPCHAN_IDLE);
    assert_int_equal(f->c.failures, 1);
    assert_int_equal(w->g.done, 1);
    assert_false(w->g.had_resp);
    assert_int_equal(w->g.fail_code, MX_RPC_UPSTREAM_TIMEOUT);
    assert_string_equal(w->g.fail_msg, "upstream 't' did not answer in time");

    /* the next start waits out the backoff (at least 250 ms) */
    call(w, 2, "tools/list", 0);
    run_for(0.01);
    assert_int_equal(f->starts, 1);
    assert_true(f->c.retry_at > ev_now(w->env.loop));
    mx_upsess_close(w->g.s);
}

static void test_upchan_lost_fails_what_was_sent(void **state)
{
    struct world *w = *state;
    struct fake *f = ready_session(w);
    call(w, 1, "tools/call", 0);
    run_for(0.02);
    assert_string_equal(method_of(last_written(f)), "tools/call");

    mx_upchan_lost(&f->c, "exited (status 1)");
    assert_int_equal(f->c.state, MX_UPCHAN_IDLE);
    assert_int_equal(mx_upsess_key(w->g.s), 0);
    assert_int_equal(f->ends, 1);
    assert_int_equal(f->c.failures, 1); /* it did not last */
    assert_int_equal(w->g.done, 1);
    assert_int_equal(w->g.fail_code, MX_RPC_OUTCOME_UNKNOWN);
    assert_string_equal(w->g.fail_msg, "upstream 't' exited (status 1) before it answered; the "
                                       "request was not repeated");
    mx_upsess_close(w->g.s);
}

static void test_upchan_timeout_cancels(void **state)
{
    struct world *w = *state;
    struct fake *f = ready_session(w);
    call(w, 4, "tools/call", 10);
    run_for(0.05);
    assert_int_equal(w->g.done, 1);
    assert_int_equal(w->g.fail_code, MX_RPC_UPSTREAM_TIMEOUT);
    assert_string_equal(w->g.fail_msg, "upstream 't' timed out after 1 s");
    json_t *last = last_written(f);
    assert_string_equal(method_of(last), "notifications/cancelled");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(last, "params"), "requestId")), 4);
    mx_upsess_close(w->g.s);
}

static void test_upchan_pause_and_resume(void **state)
{
    struct world *w = *state;
    struct fake *f = ready_session(w);
    struct mx_uprpc *r = call(w, 5, "tools/call", 0);
    run_for(0.02);
    w->g.pause = true;
    const char *progress = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
                           "\"params\":{\"progressToken\":\"p\",\"progress\":1}}";
    assert_int_equal(mx_upchan_input(&f->c, mx_str_cstr(progress)), MX_EAGAIN);
    assert_int_equal(w->g.messages, 1);
    mx_uprpc_resume(r);
    assert_int_equal(f->resumes, 1);
    w->g.pause = false;
    assert_int_equal(mx_upchan_input(&f->c, mx_str_cstr(progress)), 0);
    assert_int_equal(w->g.messages, 2);
    mx_upsess_close(w->g.s);
}

static void test_upchan_batch_stops_at_close(void **state)
{
    struct world *w = *state;
    struct fake *f = ready_session(w);
    w->g.close_on_message = true;
    /* the session goes when the batch lets go of it (teardown checks) */
    feed(f, "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/a\"},"
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/b\"}]");
    assert_int_equal(w->g.messages, 1);
}

static void test_upchan_refuses_without_channel(void **state)
{
    struct world *w = *state;
    struct fake *f = fake_new(w);
    f->c.no_channel = true;
    struct mx_uprpc *r;
    assert_int_equal(mx_upsess_request(w->g.s, NULL, 0, &rcbs, &w->g, &r), MX_EINVAL);
    mx_upsess_close(w->g.s);
}

/* A fake whose ops ask server/discover after a refusal naming 2026-07-28
 * (as stdio's do), started by a tools/list request: initialize written. */
static struct fake *fake26_started(struct world *w)
{
    static struct mx_upchan_ops ops26;
    ops26 = fake_ops;
    ops26.discover = true;
    fake_chan_ops = &ops26;
    struct fake *f = fake_new(w);
    fake_chan_ops = &fake_ops;
    call(w, 1, "tools/list", 0);
    run_for(0.02);
    assert_int_equal(json_array_size(f->out), 1);
    assert_string_equal(method_of(written(f, 0)), "initialize");
    return f;
}

#define REFUSED(supported)                                                                         \
    "{\"jsonrpc\":\"2.0\",\"id\":\"mcplex-init-1\",\"error\":{\"code\":-32022,\"message\":"        \
    "\"Unsupported protocol version\",\"data\":{\"supported\":[" supported "]}}}"

static void test_upchan_refusal_for_2026_discovers(void **state)
{
    struct world *w = *state;
    struct fake *f = fake26_started(w);
    /* refused the way a 2026-only server refuses it: server/discover next */
    feed(f, REFUSED("\"2026-07-28\""));
    assert_int_equal(f->c.state, MX_UPCHAN_INIT);
    assert_int_equal(json_array_size(f->out), 2);
    assert_string_equal(method_of(written(f, 1)), "server/discover");
    assert_string_equal(json_string_value(json_object_get(written(f, 1), "id")),
                        "mcplex-discover-1");
    /* the same refusal of a repeated initialize asks no second discover */
    feed(f, REFUSED("\"2026-07-28\""));
    assert_int_equal(json_array_size(f->out), 2);
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":\"mcplex-discover-1\",\"result\":{\"supportedVersions\":["
            "\"2026-07-28\"],\"capabilities\":{\"tools\":{}},\"_meta\":{\"" MX_REV_META_SERVER_INFO
            "\":{\"name\":\"s\",\"version\":\"1\"}}}}");
    assert_int_equal(f->c.state, MX_UPCHAN_READY);
    assert_int_equal(w->g.ready, 1);
    assert_int_equal(w->env.era, MX_UPSESS_ERA_MODERN);
    /* no initialized; the request carries the 2026-07-28 _meta */
    assert_int_equal(json_array_size(f->out), 3);
    json_t *sent = written(f, 2);
    assert_string_equal(method_of(sent), "tools/list");
    json_t *meta = json_object_get(json_object_get(sent, "params"), "_meta");
    assert_string_equal(json_string_value(json_object_get(meta, MX_REV_META_VERSION)),
                        "2026-07-28");
    assert_string_equal(json_string_value(json_object_get(meta, "progressToken")), "p");
    mx_upsess_close(w->g.s);
}

static void test_upchan_other_refusals_fail(void **state)
{
    struct world *w = *state;
    /* -32022 that names only 2025 versions is no 2026-only server */
    struct fake *f = fake26_started(w);
    feed(f, REFUSED("\"2025-06-18\""));
    assert_int_equal(f->fails, 1);
    assert_int_equal(json_array_size(f->out), 1);
    assert_int_equal(w->g.done, 1);
    assert_int_not_equal(w->g.fail_code, 0);
    mx_upsess_close(w->g.s);

    /* a discover answer that does not list 2026-07-28 contradicts the
     * refusal: the start fails saying so */
    w->g.done = 0;
    f = fake26_started(w);
    feed(f, REFUSED("\"2026-07-28\""));
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":\"mcplex-discover-1\",\"error\":{\"code\":-32601,"
            "\"message\":\"Method not found\"}}");
    assert_int_equal(f->fails, 1);
    assert_int_equal(w->g.done, 1);
    assert_non_null(strstr(w->g.fail_msg, "server/discover answer does not list 2026-07-28"));
    mx_upsess_close(w->g.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_upchan_initializes_then_sends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upchan_ping_and_junk_before_ready, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upchan_start_bound_backs_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upchan_lost_fails_what_was_sent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upchan_timeout_cancels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upchan_pause_and_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upchan_batch_stops_at_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upchan_refuses_without_channel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upchan_refusal_for_2026_discovers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upchan_other_refusals_fail, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
