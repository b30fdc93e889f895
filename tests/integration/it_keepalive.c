/* SPDX-License-Identifier: MIT */
/*
 * keepalive: two sandbox-sims that pause after 1.5 s without a request,
 * behind one mcplex; after one call to each, mcplex goes quiet. The server
 * with keepalive = "400ms" is pinged and stays awake; the other one, with
 * the default (0: never), is left alone and pauses. An upstream that speaks
 * MCP 2026-07-28 (which has no ping) is kept awake with server/discover,
 * and never sent a ping it would refuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

static json_int_t stat_num(json_t *st, const char *obj, const char *key)
{
    json_t *o = obj ? json_object_get(st, obj) : st;
    return json_integer_value(json_object_get(o, key));
}

static void test_keepalive_keeps_one_awake(void **state)
{
    char tok_a[MX_IT_CANARY_SIZE], tok_b[MX_IT_CANARY_SIZE];
    int port_a, port_b;
    (void)state;
    mx_it_canary(tok_a, sizeof(tok_a));
    mx_it_canary(tok_b, sizeof(tok_b));
    const char *args_a[] = {"--name", "kept", "--pause-after-ms", "1500", NULL};
    const char *args_b[] = {"--name", "left", "--pause-after-ms", "1500", NULL};
    assert_true(mx_it_start_sim("kept", tok_a, args_a, &port_a) > 0);
    assert_true(mx_it_start_sim("left", tok_b, args_b, &port_b) > 0);
    char *sa = mx_it_secret_file("kept.secret", tok_a);
    char *sb = mx_it_secret_file("left.secret", tok_b);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.kept]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\nkeepalive = \"400ms\"\n"
                             "[servers.left]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             port, port_a, sa, port_b, sb);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);

    /* one call to each opens mcplex's session with it */
    json_t *out = mx_it_client_ok(url, "call",
                                  "{\"name\":\"kept_echo\",\"arguments\":"
                                  "{\"message\":\"a\"}}");
    assert_string_equal(mx_it_result_text(out), "a");
    json_decref(out);
    out =
        mx_it_client_ok(url, "call", "{\"name\":\"left_echo\",\"arguments\":{\"message\":\"b\"}}");
    assert_string_equal(mx_it_result_text(out), "b");
    json_decref(out);

    /* then nothing from clients for 3.5 s: two pause periods */
    struct timespec ts = {3, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    json_t *a = mx_it_sim_stats(port_a, tok_a);
    json_t *b = mx_it_sim_stats(port_b, tok_b);
    assert_non_null(a);
    assert_non_null(b);
    if (json_is_true(json_object_get(a, "paused")) || stat_num(a, "methods", "ping") < 4)
        fail_msg("kept: paused %d, %lld pings", json_is_true(json_object_get(a, "paused")),
                 (long long)stat_num(a, "methods", "ping"));
    assert_true(json_is_true(json_object_get(b, "paused")));
    assert_int_equal(stat_num(b, "methods", "ping"), 0);
    json_decref(a);
    json_decref(b);
    free(url);
    free(cfg_path);
    free(cfg);
    free(sa);
    free(sb);
    mx_it_pass();
}

static void test_keepalive_2026_upstream(void **state)
{
    char tok[MX_IT_CANARY_SIZE];
    int sim_port;
    (void)state;
    mx_it_canary(tok, sizeof(tok));
    const char *args[] = {"--conformance", "--name", "kept26", "--pause-after-ms", "1500", NULL};
    assert_true(mx_it_start_sim("kept26", tok, args, &sim_port) > 0);
    char *secret = mx_it_secret_file("kept26.secret", tok);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.kept26]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\nkeepalive = \"400ms\"\n",
                             port, sim_port, secret);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    json_t *out = mx_it_client_ok(url, "call", "{\"name\":\"test_simple_text\"}");
    assert_non_null(mx_it_result_text(out));
    json_decref(out);
    json_t *st = mx_it_sim_stats(sim_port, tok);
    assert_non_null(st);
    /* server/discover counts as "other" in the sim's tally */
    json_int_t discover0 = stat_num(st, "methods", "other");
    json_decref(st);

    struct timespec ts = {3, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    st = mx_it_sim_stats(sim_port, tok);
    assert_non_null(st);
    if (json_is_true(json_object_get(st, "paused")) ||
        stat_num(st, "methods", "other") - discover0 < 4)
        fail_msg("kept26: paused %d, %lld keepalives", json_is_true(json_object_get(st, "paused")),
                 (long long)(stat_num(st, "methods", "other") - discover0));
    /* nothing it refused: a ping would have been a 404 */
    assert_int_equal(stat_num(st, "status", "404"), 0);
    assert_int_equal(stat_num(st, "methods", "ping"), 0);
    json_decref(st);
    free(url);
    free(cfg_path);
    free(cfg);
    free(secret);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_keepalive_keeps_one_awake, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_keepalive_2026_upstream, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
