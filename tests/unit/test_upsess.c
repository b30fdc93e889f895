/* SPDX-License-Identifier: MIT */
/*
 * The upstream session dispatcher (upsess.c) and the upstream observer
 * (upstream.h): what each transport's row offers, the public functions on
 * NULL and on sessions of every transport that never reach a server, and
 * the observer's reports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "upsess.h"
#include "upstream.h"

static void test_upsess_caps_per_transport(void **state)
{
    (void)state;
    struct mx_server_cfg cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.transport = MX_TRANSPORT_HTTP;
    assert_int_equal(mx_upsess_caps(&cfg),
                     MX_UPSESS_CAP_DIRECT | MX_UPSESS_CAP_META_LOG_LEVEL | MX_UPSESS_CAP_CATALOGUE);
    assert_string_equal(mx_upsess_transport_label(&cfg), "Streamable HTTP");
    cfg.transport = MX_TRANSPORT_SSE;
    assert_int_equal(mx_upsess_caps(&cfg), 0);
    assert_string_equal(mx_upsess_transport_label(&cfg), "legacy HTTP+SSE");
    cfg.transport = MX_TRANSPORT_STDIO;
    /* a command may speak only 2026-07-28 (server/discover says) */
    assert_int_equal(mx_upsess_caps(&cfg), MX_UPSESS_CAP_META_LOG_LEVEL);
    assert_string_equal(mx_upsess_transport_label(&cfg), "stdio");
    /* the slot of a removed upstream is no transport's but still answers */
    assert_true(mx_upsess_caps(&mx_upstream_gone_cfg) & MX_UPSESS_CAP_DIRECT);
}

static void test_upsess_null(void **state)
{
    (void)state;
    struct mx_uprpc *r = NULL;
    static const struct mx_uprpc_cbs cbs = {NULL, NULL, NULL};
    mx_upsess_close(NULL);
    mx_upsess_send(NULL, NULL, 0);
    mx_uprpc_cancel(NULL);
    mx_uprpc_resume(NULL);
    assert_int_equal(mx_upsess_key(NULL), 0);
    assert_false(mx_upsess_is_ready(NULL));
    assert_null(mx_upsess_init_result(NULL));
    assert_null(mx_uprpc_input_key(NULL, NULL));
    assert_int_equal(mx_upsess_request(NULL, NULL, 0, &cbs, NULL, &r), MX_EINVAL);
    assert_null(r);
}

static void on_done(struct mx_uprpc *r, json_t *resp, const struct mx_upfail *fail, void *data)
{
    (void)r;
    (void)resp;
    (void)fail;
    (*(int *)data)++;
}

/* A session of each transport, closed before the loop runs: nothing is
 * sent, no callback runs, and every object is gone after. */
static void test_upsess_every_transport_opens_and_closes(void **state)
{
    (void)state;
    static const enum mx_transport kinds[] = {MX_TRANSPORT_HTTP, MX_TRANSPORT_SSE,
                                              MX_TRANSPORT_STDIO};
    char name[] = "t", url[] = "http://127.0.0.1:9/mcp", prog[] = "true";
    char *argv[] = {prog};
    size_t live = mx_upsess_live_cnt();
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        struct mx_server_cfg cfg;
        memset(&cfg, 0, sizeof(cfg));
        cfg.name = name;
        cfg.transport = kinds[i];
        if (kinds[i] == MX_TRANSPORT_STDIO) {
            cfg.command.v = argv;
            cfg.command.cnt = 1;
        } else {
            cfg.url = url;
        }
        struct mx_upstream up;
        mx_upstream_init(&up, &cfg);
        struct mx_upsess_env env;
        memset(&env, 0, sizeof(env));
        env.loop = ev_default_loop(0);
        env.up = &up;
        static const struct mx_upsess_cbs scbs = {NULL, NULL, NULL};
        struct mx_upsess *s = mx_upsess_new(&env, NULL, "label", &scbs, NULL);
        assert_non_null(s);
        assert_false(mx_upsess_is_ready(s));
        assert_int_equal(mx_upsess_key(s), 0);
        assert_null(mx_upsess_init_result(s));

        int done = 0;
        static const struct mx_uprpc_cbs cbs = {NULL, on_done, NULL};
        static const struct mx_uprpc_cbs no_done = {NULL, NULL, NULL};
        struct mx_uprpc *r1, *r2, *bad;
        json_t *msg = json_pack("{s:s, s:i, s:s}", "jsonrpc", "2.0", "id", 1, "method", "ping");
        json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/x");
        assert_int_equal(mx_upsess_request(s, note, 0, &cbs, &done, &bad), MX_EINVAL);
        assert_null(bad);
        assert_int_equal(mx_upsess_request(s, msg, 0, &no_done, &done, &bad), MX_EINVAL);
        assert_int_equal(mx_upsess_request(s, msg, 1000, &cbs, &done, &r1), 0);
        assert_int_equal(mx_upsess_request(s, NULL, 0, &cbs, &done, &r2), 0);
        assert_non_null(r1);
        assert_non_null(r2);
        assert_true(mx_upsess_live_cnt() == live + 3);
        assert_null(mx_uprpc_input_key(r1, NULL));
        mx_uprpc_resume(r1); /* not paused: nothing */
        mx_uprpc_cancel(r2);
        mx_upsess_send(s, note, 0); /* not ready: dropped */
        mx_upsess_close(s);
        assert_int_equal(done, 0);
        assert_true(mx_upsess_live_cnt() == live);
        json_decref(msg);
        json_decref(note);
        mx_upsess_env_clear(&env);
        mx_upstream_clear(&up);
    }
}

struct seen {
    int retries, wake_starts, wake_ends, woke, traced;
    uint64_t sent, received;
    char last_dir[8];
};

static void obs_retry(struct mx_upstream *u, void *data)
{
    (void)u;
    ((struct seen *)data)->retries++;
}

static void obs_bytes(struct mx_upstream *u, uint64_t sent, uint64_t received, void *data)
{
    struct seen *s = data;
    (void)u;
    s->sent += sent;
    s->received += received;
}

static void obs_wake_start(struct mx_upstream *u, void *data)
{
    (void)u;
    ((struct seen *)data)->wake_starts++;
}

static void obs_wake_end(struct mx_upstream *u, double duration_s, bool woke, void *data)
{
    struct seen *s = data;
    (void)u;
    assert_true(duration_s >= 0.0);
    s->wake_ends++;
    s->woke += woke;
}

static void obs_traced(struct mx_upstream *u, const char *dir, const char *session,
                       struct mx_str msg, void *data)
{
    struct seen *s = data;
    (void)u;
    assert_string_equal(session, "sess");
    assert_true(mx_str_eq(msg, MX_STR_LIT("{}")));
    snprintf(s->last_dir, sizeof(s->last_dir), "%s", dir);
    s->traced++;
}

static void test_upstream_observer(void **state)
{
    (void)state;
    struct mx_server_cfg cfg;
    char name[] = "o";
    memset(&cfg, 0, sizeof(cfg));
    cfg.name = name;
    struct mx_upstream u;
    mx_upstream_init(&u, &cfg);
    /* without an observer nothing is reported, and nothing breaks */
    mx_upstream_report_retry(&u);
    mx_upstream_report_bytes(&u, 1, 2);
    mx_upstream_report_msg(&u, "c2s", "sess", MX_STR_LIT("{}"));
    mx_upstream_note(&u, MX_UPSTREAM_EV_NOT_AWAKE);
    mx_upstream_note(&u, MX_UPSTREAM_EV_OK);

    static const struct mx_upstream_obs obs = {obs_retry, obs_bytes, obs_wake_start, obs_wake_end,
                                               obs_traced};
    struct seen seen;
    memset(&seen, 0, sizeof(seen));
    u.obs = &obs;
    u.obs_data = &seen;
    mx_upstream_report_retry(&u);
    mx_upstream_report_bytes(&u, 10, 0);
    mx_upstream_report_bytes(&u, 0, 7);
    mx_upstream_report_msg(&u, "s2c", "sess", MX_STR_LIT("{}"));
    assert_int_equal(seen.retries, 1);
    assert_true(seen.sent == 10 && seen.received == 7);
    assert_int_equal(seen.traced, 1);
    assert_string_equal(seen.last_dir, "s2c");
    /* a wake that ends with an answer, then one that ends down */
    mx_upstream_note(&u, MX_UPSTREAM_EV_NOT_AWAKE);
    mx_upstream_note(&u, MX_UPSTREAM_EV_NOT_AWAKE); /* still the same wake */
    mx_upstream_note(&u, MX_UPSTREAM_EV_OK);
    assert_int_equal(seen.wake_starts, 1);
    assert_int_equal(seen.wake_ends, 1);
    assert_int_equal(seen.woke, 1);
    mx_upstream_note(&u, MX_UPSTREAM_EV_NOT_AWAKE);
    mx_upstream_note(&u, MX_UPSTREAM_EV_TIMEOUT);
    assert_int_equal(seen.wake_starts, 2);
    assert_int_equal(seen.wake_ends, 2);
    assert_int_equal(seen.woke, 1);
    /* callbacks are optional one by one */
    static const struct mx_upstream_obs none = {NULL, NULL, NULL, NULL, NULL};
    u.obs = &none;
    mx_upstream_report_retry(&u);
    mx_upstream_report_msg(&u, "c2s", "sess", MX_STR_LIT("{}"));
    mx_upstream_note(&u, MX_UPSTREAM_EV_NOT_AWAKE);
    mx_upstream_note(&u, MX_UPSTREAM_EV_OK);
    assert_int_equal(seen.retries, 1);
    assert_int_equal(seen.traced, 1);
    mx_upstream_clear(&u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upsess_caps_per_transport),
        cmocka_unit_test(test_upsess_null),
        cmocka_unit_test(test_upsess_every_transport_opens_and_closes),
        cmocka_unit_test(test_upstream_observer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
