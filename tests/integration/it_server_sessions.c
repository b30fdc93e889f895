/* SPDX-License-Identifier: MIT */
/*
 * /mcp/<server> with client sessions of mcplex's own, as /mcp has, for
 * 2025 clients (the official TypeScript SDK client, 1.32.2). First
 * server-everything is killed and started again on its port between two
 * calls of one client session: the upstream forgot its session (it answers
 * 400 "No valid session ID provided"), mcplex opens a new one and sends the
 * call again (it did not run), and the client, which keeps its own
 * Mcp-Session-Id, sees both calls answered. Then a 2025 client in front of
 * an upstream that speaks MCP 2026-07-28 only (sandbox-sim --conformance
 * --modern-only, which refuses initialize with -32022): it initializes,
 * lists (2026-only tools included), calls, hears progress and answers a
 * sampling question of an input_required result; the sim never saw an
 * initialize. No canary in anything mcplex printed or wrote.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

static char *secret_file(const char *name, const char *value)
{
    char *path = mx_it_path(name);
    assert_int_equal(mx_it_write_file(path, value, strlen(value)), 0);
    return path;
}

/* mcplex in front of one HTTP upstream |name| at |up_port| with bearer
 * |token|; returns its port. */
static int start_mcplex_for(const char *name, int up_port, const char *token, pid_t *pid)
{
    char *secret = secret_file("up.secret", token);
    char *trace = mx_it_path("trace.jsonl");
    char *state = mx_it_path("state");
    int port = mx_it_free_port();
    assert_true(port > 0);
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\ntrace = \"%s\"\nstate_dir = \"%s\"\n"
                             "[servers.%s]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             port, trace, state, name, up_port, secret);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    *pid = mx_it_start_mcplex(cfg_path, port);
    assert_true(*pid > 0);
    free(cfg_path);
    free(cfg);
    free(state);
    free(trace);
    free(secret);
    return port;
}

static void assert_no_canary(const char *token)
{
    char *log = mx_it_path("mcplex.log");
    char *trace = mx_it_path("trace.jsonl");
    const char *files[] = {log, trace, NULL};
    const char *canaries[] = {token};
    assert_int_equal(mx_it_canary_hits(files, canaries, 1), 0);
    free(trace);
    free(log);
}

static const char *text_of(const json_t *result)
{
    json_t *content = json_object_get(result, "content");
    return json_string_value(json_object_get(json_array_get(content, 0), "text"));
}

static void test_upstream_restart_is_invisible(void **state)
{
    (void)state;
    char token[MX_IT_CANARY_SIZE];
    mx_it_canary(token, sizeof(token));
    int ev_port = 0;
    pid_t ev = mx_it_start_everything(token, &ev_port);
    assert_true(ev > 0);
    pid_t mcplex;
    int port = start_mcplex_for("ev", ev_port, token, &mcplex);

    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp/ev", port);
    char *ready = mx_it_path("ready");
    char *go = mx_it_path("go");
    char *args = mx_xasprintf("{\"name\":\"echo\",\"arguments\":{\"message\":\"across\"},"
                              "\"ready_file\":\"%s\",\"go_file\":\"%s\",\"wait_ms\":40000}",
                              ready, go);
    pid_t client = mx_it_client_start(url, "two-calls", args, NULL);
    assert_true(client > 0);
    mx_it_wait_file(ready, 30000);

    /* the upstream goes away and comes back on the same port, without the
     * session it had */
    assert_int_equal(mx_it_signal(ev, SIGTERM), 0);
    assert_true(mx_it_wait_exit(ev, 10000) >= 0);
    int again = ev_port;
    pid_t ev2 = mx_it_start_everything_as("streamableHttp", token, &again);
    assert_true(ev2 > 0);
    assert_int_equal(again, ev_port);
    assert_int_equal(mx_it_write_file(go, "go\n", 3), 0);

    json_t *out = NULL;
    assert_int_equal(mx_it_node_finish(client, MX_IT_NODE_TIMEOUT_MS, &out), 0);
    assert_non_null(out);
    char *dump = json_dumps(out, 0);
    fprintf(stderr, "two-calls: %s\n", dump);
    free(dump);
    assert_true(json_is_true(json_object_get(out, "ok")));
    assert_true(json_is_true(json_object_get(out, "go")));
    const char *t1 = text_of(json_object_get(out, "first"));
    const char *t2 = text_of(json_object_get(out, "second"));
    assert_non_null(t1);
    assert_non_null(t2);
    assert_non_null(strstr(t1, "across"));
    assert_non_null(strstr(t2, "across"));
    /* the client's session is mcplex's: it never changed */
    assert_true(json_is_true(json_object_get(out, "session_id_same")));
    json_decref(out);

    assert_int_equal(mx_it_signal(mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(mcplex, 15000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_no_canary(token);
    free(args);
    free(go);
    free(ready);
    free(url);
    mx_it_pass();
}

static void test_2025_client_at_2026_only_upstream(void **state)
{
    (void)state;
    char token[MX_IT_CANARY_SIZE];
    mx_it_canary(token, sizeof(token));
    int sim_port = 0;
    const char *sim_args[] = {"--conformance", "--modern-only", "--name", "modern-sim", NULL};
    assert_true(mx_it_start_sim("modern-sim", token, sim_args, &sim_port) > 0);
    pid_t mcplex;
    int port = start_mcplex_for("modern", sim_port, token, &mcplex);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp/modern", port);

    json_t *out = mx_it_client_ok(url, "list-all", NULL);
    if (!json_is_true(json_object_get(out, "ok")))
        fail_msg("list-all: %s", json_dumps(out, 0));
    /* a 2025 session of mcplex's own, at the revision the client asked */
    json_t *init = json_object_get(out, "initialize");
    assert_true(json_is_true(json_object_get(init, "has_session_id")));
    assert_string_equal(json_string_value(json_object_get(init, "protocol_version")), "2025-11-25");
    json_t *tools = json_object_get(json_object_get(out, "tools"), "names");
    assert_true(mx_it_has_string(tools, "test_simple_text"));
    assert_true(mx_it_has_string(tools, "test_input_required_result_sampling"));
    json_decref(out);

    out = mx_it_client_ok(url, "call", "{\"name\":\"test_simple_text\"}");
    const char *t = mx_it_result_text(out);
    assert_non_null(t);
    assert_true(strlen(t) > 0);
    /* nothing of 2026-07-28 reaches the 2025 client */
    assert_null(json_object_get(json_object_get(out, "result"), "resultType"));
    json_decref(out);

    out = mx_it_client_ok(url, "progress", "{\"name\":\"test_tool_with_progress\"}");
    assert_int_equal(json_array_size(json_object_get(out, "progress")), 3);
    assert_null(json_object_get(json_object_get(out, "result"), "error"));
    json_decref(out);

    out = mx_it_client_ok(url, "sampling",
                          "{\"name\":\"test_input_required_result_sampling\","
                          "\"reply\":\"REPLY-SCOPED-31\"}");
    mx_it_assert_sampled_once(out, "REPLY-SCOPED-31");
    json_decref(out);

    /* mcplex spoke 2026-07-28 to it: no initialize ever reached the sim */
    assert_int_equal(mx_it_sim_method_count(sim_port, token, "initialize"), 0);
    assert_true(mx_it_sim_method_count(sim_port, token, "tools/call") >= 3);

    assert_int_equal(mx_it_signal(mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(mcplex, 15000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_no_canary(token);
    free(url);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_upstream_restart_is_invisible, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_2025_client_at_2026_only_upstream, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
