/* SPDX-License-Identifier: MIT */
/*
 * initialize at /mcp waits for the upstreams' own initialize, not for
 * their lists. Behind /mcp: "fast", a sandbox-sim, and "slow", a stdio
 * server that answers initialize at once and tools/list only after
 * LIST_DELAY_MS. A client's initialize is answered well before that, with
 * the capabilities of both; the lists are fetched meanwhile, and the
 * client's first tools/list waits for them (within fanout_timeout) and
 * holds the tools of both.
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

#define LIST_DELAY_MS 4000

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void test_init_before_lists(void **state)
{
    (void)state;
    char token[MX_IT_CANARY_SIZE];
    int sim_port;
    mx_it_canary(token, sizeof(token));
    const char *sim_args[] = {"--name", "fast", NULL};
    assert_true(mx_it_start_sim("fast", token, sim_args, &sim_port) > 0);
    char *secret = mx_it_secret_file("fast.secret", token);
    char *js = mx_xasprintf("%s/tests/js/slow-lists.mjs", mx_it_source_dir());
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nfanout_timeout = \"15s\"\n"
                             "[servers.fast]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.slow]\ncommand = [\"node\", \"%s\", \"%d\"]\n"
                             "env = [\"PATH\"]\n",
                             port, sim_port, secret, js, LIST_DELAY_MS);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);

    /* the first client: nothing fetched yet */
    char sid[160];
    double t0 = now_ms();
    mx_it_open_session(url, "init-test", sid, sizeof(sid));
    double init_ms = now_ms() - t0;
    fprintf(stderr, "initialize answered after %.0f ms (tools/list of slow: %d ms)\n", init_ms,
            LIST_DELAY_MS);
    if (init_ms >= LIST_DELAY_MS / 2)
        fail_msg("initialize took %.0f ms: it waited for a list that takes %d ms", init_ms,
                 LIST_DELAY_MS);

    /* the first tools/list waits for both lists */
    char sid_h[200];
    snprintf(sid_h, sizeof(sid_h), "Mcp-Session-Id: %s", sid);
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", sid_h,
                          "MCP-Protocol-Version: 2025-11-25", NULL};
    struct mx_it_answer a = {0};
    assert_int_equal(mx_it_http_full("POST", url, hdrs,
                                     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}",
                                     20000, &a.status, &a.headers, &a.body),
                     0);
    double list_ms = now_ms() - t0;
    assert_int_equal(a.status, 200);
    mx_it_answer_parse(&a);
    json_t *tools = json_object_get(mx_it_result(&a), "tools");
    json_t *names = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) json_array_append(names, json_object_get(t, "name"));
    if (!mx_it_json_has(names, "late") || !mx_it_json_has(names, "echo"))
        fail_msg("the first tools/list lacks a server's tools (after %.0f ms)", list_ms);
    json_decref(names);
    mx_it_answer_clear(&a);

    free(url);
    free(cfg_path);
    free(cfg);
    free(js);
    free(secret);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_init_before_lists, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
