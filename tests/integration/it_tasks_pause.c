/* SPDX-License-Identifier: MIT */
/*
 * A task across a paused sandbox and an mcplex restart (MCP 2025-11-25
 * tasks, the official SDK client at /mcp). sandbox-sim runs `slow` as a
 * task and pauses once nobody talks to it; mcplex lets go of it after its
 * idle_close. Then:
 * - tasks/get is answered from the status mcplex last heard, the sandbox
 *   left asleep: it sees no request and is not woken;
 * - after mcplex restarts, a new client's tasks/result of the same sealed
 *   id wakes the sandbox once and gets the task's result; tasks/get of it
 *   is then "completed".
 * The client's bearer canary and the sim's never reach the log.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

struct world {
    char token[MX_IT_CANARY_SIZE];
    int sim_port;
    int port;
    char *cfg_path;
    char *url;
    pid_t mcplex;
};

static void world_start(struct world *w)
{
    memset(w, 0, sizeof(*w));
    mx_it_canary(w->token, sizeof(w->token));
    /* pauses 800 ms after the last request; a wake holds the request 300 ms */
    const char *args[] = {
        "--pause-after-ms", "800", "--pause-mode", "hold", "--hold-ms", "300", NULL};
    assert_true(mx_it_start_sim("sim", w->token, args, &w->sim_port) > 0);
    char *secret = mx_it_secret_file("sim.secret", w->token);
    char *state = mx_it_path("state");
    w->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nstate_dir = \"%s\"\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\nidle_close = \"200ms\"\n",
                             w->port, state, w->sim_port, secret);
    w->cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(w->cfg_path, cfg, strlen(cfg)), 0);
    w->mcplex = mx_it_start_mcplex(w->cfg_path, w->port);
    assert_true(w->mcplex > 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", w->port);
    free(cfg);
    free(state);
    free(secret);
}

static json_int_t sim_count(const struct world *w, const char *key)
{
    json_t *st = mx_it_sim_stats(w->sim_port, w->token);
    assert_non_null(st);
    json_t *v = json_object_get(st, key);
    if (v == NULL)
        v = json_object_get(json_object_get(st, "methods"), key);
    json_int_t n = json_integer_value(v);
    json_decref(st);
    return n;
}

static bool sim_paused(const struct world *w)
{
    json_t *st = mx_it_sim_stats(w->sim_port, w->token);
    assert_non_null(st);
    bool paused = json_is_true(json_object_get(st, "paused"));
    json_decref(st);
    return paused;
}

static const char *status_of(const json_t *out, const char *step)
{
    const json_t *t = json_object_get(out, step);
    if (json_object_get(t, "error"))
        fail_msg("%s failed: %s", step, json_dumps(t, 0));
    return json_string_value(json_object_get(t, "status"));
}

static void test_task_across_pause_and_restart(void **state)
{
    struct world w;
    (void)state;
    world_start(&w);
    char *ready = mx_it_path("ready");
    char *go = mx_it_path("go");
    /* 16 steps of 250 ms: the task runs 4 s, in the sim's clock */
    char *args = mx_xasprintf("{\"name\":\"slow\",\"arguments\":{\"steps\":16,\"interval_ms\":250},"
                              "\"ready_file\":\"%s\",\"go_file\":\"%s\"}",
                              ready, go);
    pid_t client = mx_it_client_start(w.url, "task-pause", args, NULL);
    assert_true(client > 0);
    mx_it_wait_file(ready, 20000);
    char *id = mx_it_read_file(ready, NULL);
    assert_non_null(id);
    id[strcspn(id, "\n")] = '\0';
    json_int_t gets = sim_count(&w, "tasks_get");
    assert_int_equal(gets, 1); /* the first tasks/get, while it was awake */
    /* the sandbox falls asleep: nobody asks it anything */
    for (int i = 0; i < 100 && !sim_paused(&w); i++)
        usleep(50 * 1000);
    assert_true(sim_paused(&w));
    json_int_t wakes = sim_count(&w, "wakes");
    assert_int_equal(mx_it_write_file(go, "go\n", 3), 0);
    json_t *out = NULL;
    assert_int_equal(mx_it_node_finish(client, 30000, &out), 0);
    assert_non_null(out);
    assert_string_equal(status_of(out, "before"), "working");
    /* answered from what mcplex last heard: the sandbox was not asked */
    assert_string_equal(status_of(out, "after"), "working");
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "after"), "taskId")),
                        id);
    assert_int_equal(sim_count(&w, "tasks_get"), gets);
    assert_int_equal(sim_count(&w, "wakes"), wakes);
    assert_true(sim_paused(&w));
    /* the caller's own tasks, from mcplex's book: this one */
    json_t *tasks = json_object_get(json_object_get(out, "list"), "tasks");
    assert_int_equal(json_array_size(tasks), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "taskId")), id);
    json_decref(out);

    /* mcplex restarts; the id still names the task, and its result wakes
     * the sandbox once */
    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    assert_int_equal(mx_it_wait_exit(w.mcplex, 10000), 0);
    w.mcplex = mx_it_start_mcplex(w.cfg_path, w.port);
    assert_true(w.mcplex > 0);
    char *rargs = mx_xasprintf("{\"id\":\"%s\"}", id);
    out = mx_it_client_ok(w.url, "task-result", rargs);
    json_t *result = json_object_get(out, "result");
    if (json_object_get(result, "error"))
        fail_msg("tasks/result failed: %s", json_dumps(result, 0));
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(result, "content"), 0), "text")),
                        "done after 16 steps");
    assert_string_equal(status_of(out, "get"), "completed");
    assert_int_equal(sim_count(&w, "wakes"), wakes + 1);
    assert_int_equal(sim_count(&w, "tasks_result"), 1);
    json_decref(out);

    /* no credential reached the log */
    char *log = mx_it_path("mcplex.log");
    char *log2 = mx_it_path("mcplex-2.log");
    const char *files[] = {log, log2, NULL};
    const char *canaries[] = {w.token};
    assert_int_equal(mx_it_canary_hits(files, canaries, 1), 0);
    free(log2);
    free(log);
    free(rargs);
    free(id);
    free(args);
    free(go);
    free(ready);
    free(w.url);
    free(w.cfg_path);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_task_across_pause_and_restart, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
