/* SPDX-License-Identifier: MIT */
/*
 * The core scenario with mcplex under valgrind memcheck: one sandbox-sim
 * behind it, the official TypeScript SDK client's smoke run at /mcp and at
 * /mcp/<server>, a call with progress (an SSE answer), lists, a refused
 * request, the status page (its login, a feed left open), then SIGTERM. valgrind exits 1 on any
 * memory error or on a definite or indirect leak at exit (--error-exitcode=1
 * --errors-for-leak-kinds=definite,indirect); the test wants 0. Its own
 * ctest label (valgrind), built only without sanitizers, bounded by
 * VG_DEADLINE_MS per wait and ctest's TIMEOUT.
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define VG_DEADLINE_MS 120000 /* mcplex under valgrind: start, and exit with the leak check */

static void print_file(const char *path)
{
    char *text = mx_it_read_file(path, NULL);
    fprintf(stderr, "----- %s -----\n%s\n", path, text ? text : "(unreadable)");
    free(text);
}

static void test_valgrind_core_scenario(void **state)
{
    char secret[MX_IT_CANARY_SIZE];
    int sim_port;
    json_t *out = NULL;
    (void)state;
    mx_it_canary(secret, sizeof(secret));
    assert_true(mx_it_start_sim("sim", secret, NULL, &sim_port) > 0);
    char *sec = mx_it_path("sim.secret");
    assert_int_equal(mx_it_write_file(sec, secret, strlen(secret)), 0);
    int port = mx_it_free_port();
    char *trace = mx_it_path("trace.jsonl");
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nstate_dir = \"%s\"\ntrace = \"%s\"\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\nsecret = \"file:%s\"\n",
                             port, mx_it_dir(), trace, sim_port, sec);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);

    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *vg_log = mx_it_path("valgrind.log");
    char *vg_log_opt = mx_xasprintf("--log-file=%s", vg_log);
    const char *argv[] = {"valgrind",
                          "--tool=memcheck",
                          "--leak-check=full",
                          "--show-leak-kinds=definite,indirect",
                          "--errors-for-leak-kinds=definite,indirect",
                          "--error-exitcode=1",
                          "--track-origins=yes",
                          "--num-callers=30",
                          vg_log_opt,
                          bin,
                          "serve",
                          "-c",
                          cfg_path,
                          "--access-log",
                          NULL};
    pid_t pid = mx_it_spawn("mcplex", argv, NULL, NULL);
    assert_true(pid > 0);
    char *base = mx_xasprintf("http://127.0.0.1:%d", port);
    char *health = mx_xasprintf("%s/health", base);
    assert_int_equal(mx_it_wait_http_status(health, 200, VG_DEADLINE_MS), 0);

    /* the SDK client at /mcp and at /mcp/sim */
    char *mcp = mx_xasprintf("%s/mcp", base);
    char *one = mx_xasprintf("%s/mcp/sim", base);
    assert_int_equal(mx_it_client(mcp, "smoke", "{\"message\":\"vg-merged\"}", NULL, &out), 0);
    assert_true(json_is_true(json_object_get(out, "ok")));
    json_decref(out);
    assert_int_equal(mx_it_client(one, "smoke", "{\"message\":\"vg-one\"}", NULL, &out), 0);
    assert_true(json_is_true(json_object_get(out, "ok")));
    json_decref(out);
    /* progress: the answer turns into an SSE stream */
    assert_int_equal(mx_it_client(mcp, "progress",
                                  "{\"name\":\"slow\",\"arguments\":{\"steps\":3,"
                                  "\"interval_ms\":20},\"terminate\":true}",
                                  NULL, &out),
                     0);
    assert_true(json_array_size(json_object_get(out, "progress")) >= 1);
    json_decref(out);
    assert_int_equal(mx_it_client(mcp, "list-all", "{\"terminate\":true}", NULL, &out), 0);
    json_decref(out);
    /* refused and failed requests free what they took too */
    long status = 0;
    char *body = NULL;
    const char *bad[] = {"Content-Type: application/json",
                         "Accept: application/json, text/event-stream", NULL};
    assert_int_equal(mx_it_http("POST", mcp, bad, "{\"jsonrpc\":", &status, &body), 0);
    assert_int_equal(status, 400);
    free(body);
    const char *evil[] = {"Host: evil.example", NULL};
    assert_int_equal(mx_it_http("GET", health, evil, NULL, &status, &body), 0);
    assert_int_equal(status, 403);
    free(body);
    char *metrics = mx_xasprintf("%s/metrics", base);
    assert_int_equal(mx_it_http("GET", metrics, NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    free(body);

    /* the status page: rendered, its one-time login (the answer ends the
     * request: nothing of it is read after), and a feed still open when
     * SIGTERM comes */
    char *page = mx_xasprintf("%s/status", base);
    assert_int_equal(mx_it_http("GET", page, NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    free(body);
    char *code_url = mx_xasprintf("%s/status/code", base);
    assert_int_equal(mx_it_http("POST", code_url, NULL, "", &status, &body), 0);
    assert_int_equal(status, 200);
    json_t *code = json_loads(body, 0, NULL);
    free(body);
    char *login = mx_xasprintf("%s/status/login?code=%s", base,
                               json_string_value(json_object_get(code, "code")));
    json_decref(code);
    assert_int_equal(mx_it_http("GET", login, NULL, NULL, &status, NULL), 0);
    assert_int_equal(status, 303);
    char *events = mx_xasprintf("%s/status/events", base);
    const char *feed_argv[] = {"curl", "-s", "-N", "--max-time", "100", events, NULL};
    assert_true(mx_it_spawn("feed", feed_argv, NULL, NULL) > 0);
    struct timespec settle = {0, 500 * 1000 * 1000};
    nanosleep(&settle, NULL);

    /* SIGTERM: drain, free everything, valgrind's leak check, exit */
    assert_int_equal(mx_it_signal(pid, SIGTERM), 0);
    int st = mx_it_wait_exit(pid, VG_DEADLINE_MS);
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        print_file(vg_log);
    assert_true(st >= 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    char *report = mx_it_read_file(vg_log, NULL);
    assert_non_null(report);
    assert_non_null(strstr(report, "ERROR SUMMARY: 0 errors"));
    free(report);

    free(metrics);
    free(page);
    free(code_url);
    free(login);
    free(events);
    free(mcp);
    free(one);
    free(health);
    free(base);
    free(vg_log_opt);
    free(vg_log);
    free(bin);
    free(cfg_path);
    free(cfg);
    free(trace);
    free(sec);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_valgrind_core_scenario, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
