/* SPDX-License-Identifier: MIT */
/*
 * A `command` upstream that speaks only MCP 2026-07-28: the official
 * TypeScript SDK v2 server over stdio with 2025 sessions refused
 * (tests/js/stdio26-server.mjs), beside server-everything over stdio, a
 * 2025 server. mcplex opens each with initialize, as always: the 2026 one
 * refuses it the way a 2026-only server does (-32022, data.supported naming
 * 2026-07-28), so mcplex asks it server/discover and sends stateless
 * requests (the 2026-07-28 _meta on each); the 2025 one answers initialize
 * and never sees a server/discover. The official SDK clients of both eras
 * list and call the 2026 server's tools through /mcp and /mcp/<server>, and
 * server-everything's at /mcp; each outcome is logged. The secret in the
 * 2025 server's environment (a random canary) is in no log and no trace.
 * A 2025 server that leaves unknown methods unanswered
 * (tests/js/stdio25-quiet.mjs) starts as fast as before: nothing waits for
 * a server/discover answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

struct world {
    char token[MX_IT_CANARY_SIZE];
    int port;
    pid_t mcplex;
    char *url;
    char *log;
    char *trace;
};

/* mcplex serving the config |cfg| on |port|: its pid. */
static pid_t start_mcplex(const char *cfg, int port)
{
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    pid_t pid = mx_it_start_mcplex(cfg_path, port);
    assert_true(pid > 0);
    free(cfg_path);
    return pid;
}

static void start_world(struct world *w)
{
    mx_it_canary(w->token, sizeof(w->token));
    char *secret = mx_it_secret_file("ev.secret", w->token);
    w->port = mx_it_free_port();
    w->trace = mx_it_path("trace.jsonl");
    char *cfg = mx_xasprintf(
        "[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
        "[proxy]\ntrace = \"%s\"\n"
        "[servers.s26]\nenv = [\"PATH\"]\ncommand = [\"node\", \"%s/tests/js/stdio26-server.mjs\", "
        "\"s26\"]\n"
        "[servers.ev]\ncommand = [\"node\", "
        "\"%s/tests/js/node_modules/@modelcontextprotocol/server-everything/dist/index.js\", "
        "\"stdio\"]\nenv = [\"PATH\", \"EV_TOKEN=file:%s\"]\n",
        w->port, w->trace, mx_it_source_dir(), mx_it_source_dir(), secret);
    w->mcplex = start_mcplex(cfg, w->port);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", w->port);
    w->log = mx_it_path("mcplex.log");
    free(cfg);
    free(secret);
}

static json_t *client_ok(const char *url, const char *scenario, const char *args)
{
    json_t *out = mx_it_client_ok(url, scenario, args);
    if (!json_is_true(json_object_get(out, "ok")))
        fail_msg("client %s at %s: %s", scenario, url, json_dumps(out, 0));
    return out;
}

/* The text of a call of |args| at |url|, which must be |want|. */
static void assert_call(const char *url, const char *args, const char *want)
{
    json_t *out = client_ok(url, "call", args);
    const char *t = mx_it_result_text(out);
    if (t == NULL || strcmp(t, want) != 0)
        fail_msg("call %s at %s: want \"%s\", got %s", args, url, want, json_dumps(out, 0));
    /* nothing of 2026-07-28 reaches the 2025 client */
    assert_null(json_object_get(json_object_get(out, "result"), "resultType"));
    json_decref(out);
}

static bool log_has(const struct world *w, const char *needle)
{
    char *log = mx_it_read_file(w->log, NULL);
    bool has = log && strstr(log, needle);
    free(log);
    return has;
}

/* The SDK v2 client pinned to 2026-07-28 at |url|: lists |echo| and
 * |whoami|, and calls them; echo must answer |want| (it is sent "modern"). */
static void assert_calls26(const char *url, const char *echo, const char *whoami, const char *want)
{
    char *args = mx_xasprintf("{\"calls\":[{\"name\":\"%s\",\"arguments\":{\"text\":\"modern\"}},"
                              "{\"name\":\"%s\"}]}",
                              echo, whoami);
    json_t *out = mx_it_client26_ok(url, args);
    json_t *tools = json_object_get(out, "tools");
    if (!mx_it_has_string(tools, echo) || !mx_it_has_string(tools, whoami))
        fail_msg("2026 client's tools at %s: %s", url, json_dumps(tools, 0));
    json_t *calls = json_object_get(out, "calls");
    const char *t = json_string_value(json_array_get(calls, 0));
    if (t == NULL || strcmp(t, want) != 0)
        fail_msg("2026 client's echo at %s: want \"%s\", got %s", url, want, json_dumps(calls, 0));
    /* the upstream saw mcplex's 2026-07-28 envelope */
    assert_string_equal(json_string_value(json_array_get(calls, 1)),
                        "{\"protocolVersion\":\"2026-07-28\",\"client\":\"mcplex\"}");
    json_decref(out);
    free(args);
}

static void test_stdio_2026_only(void **state)
{
    (void)state;
    struct world w = {0};
    start_world(&w);

    /* the merged view at /mcp: echo is both servers', so prefixed */
    json_t *out = client_ok(w.url, "list-all", NULL);
    json_t *tools = json_object_get(json_object_get(out, "tools"), "names");
    if (!mx_it_has_string(tools, "s26_echo") || !mx_it_has_string(tools, "whoami") ||
        !mx_it_has_string(tools, "ev_echo"))
        fail_msg("tools at /mcp: %s", json_dumps(tools, 0));
    json_decref(out);
    assert_call(w.url, "{\"name\":\"s26_echo\",\"arguments\":{\"text\":\"at /mcp\"}}",
                "s26 echo: at /mcp");
    /* the server saw the 2026-07-28 envelope, from mcplex */
    assert_call(w.url, "{\"name\":\"whoami\"}",
                "{\"protocolVersion\":\"2026-07-28\",\"client\":\"mcplex\"}");
    /* the 2025 server behind the same gateway still works */
    assert_call(w.url, "{\"name\":\"ev_echo\",\"arguments\":{\"message\":\"old\"}}", "Echo: old");

    /* the per-server view, names unprefixed */
    char *one = mx_xasprintf("%s/s26", w.url);
    out = client_ok(one, "list-all", NULL);
    tools = json_object_get(json_object_get(out, "tools"), "names");
    if (!mx_it_has_string(tools, "echo") || !mx_it_has_string(tools, "whoami") ||
        json_array_size(tools) != 2)
        fail_msg("tools at /mcp/s26: %s", json_dumps(tools, 0));
    json_decref(out);
    assert_call(one, "{\"name\":\"echo\",\"arguments\":{\"text\":\"scoped\"}}", "s26 echo: scoped");

    /* a 2026-07-28 client, at /mcp and at /mcp/s26 */
    assert_calls26(w.url, "s26_echo", "whoami", "s26 echo: modern");
    assert_calls26(one, "echo", "whoami", "s26 echo: modern");
    free(one);

    /* initialize went to both; the 2026 server refused it and was asked
     * server/discover; the 2025 one never was */
    assert_true(mx_it_trace_count(w.trace, "c2s", "s26", "\"initialize\"") >= 1);
    assert_true(mx_it_trace_count(w.trace, "c2s", "s26", "\"server/discover\"") >= 1);
    assert_true(mx_it_trace_count(w.trace, "c2s", "ev", "\"initialize\"") >= 1);
    assert_int_equal(mx_it_trace_count(w.trace, "c2s", "ev", "\"server/discover\""), 0);
    assert_true(log_has(&w, "up:s26 refused initialize and named MCP 2026-07-28"));
    assert_true(log_has(&w, "up:s26 speaks MCP 2026-07-28"));
    assert_false(log_has(&w, "up:ev refused initialize"));

    const char *files[] = {w.log, w.trace, NULL};
    const char *canaries[] = {w.token};
    assert_int_equal(mx_it_canary_hits(files, canaries, 1), 0);
    free(w.url);
    free(w.log);
    free(w.trace);
    mx_it_pass();
}

/* An installer that loses the first line (the wrapper swallows it): the
 * initialize is gone and goes again after 3 s, the server refuses that one
 * naming 2026-07-28, and mcplex asks server/discover. */
static void test_stdio_2026_lost_first_line(void **state)
{
    (void)state;
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf(
        "[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
        "[servers.late]\nenv = [\"PATH\"]\n"
        "command = [\"/bin/sh\", \"%s/tests/integration/stdio-child.sh\", \"--swallow\", \"--\", "
        "\"node\", \"%s/tests/js/stdio26-server.mjs\", \"late\"]\n",
        port, mx_it_source_dir(), mx_it_source_dir());
    start_mcplex(cfg, port);
    char *one = mx_xasprintf("http://127.0.0.1:%d/mcp/late", port);
    assert_call(one, "{\"name\":\"echo\",\"arguments\":{\"text\":\"again\"}}", "late echo: again");
    struct world w = {.log = mx_it_path("mcplex.log")};
    assert_true(log_has(&w, "up:late has not answered initialize after 3 s; sending it again"));
    assert_true(log_has(&w, "up:late speaks MCP 2026-07-28"));
    free(w.log);
    free(one);
    free(cfg);
    mx_it_pass();
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* A 2025 stdio server that never answers a method it does not know: the
 * first tools/list through mcplex (the process started for it) waits for no
 * server/discover answer. Every start is measured and printed; none waits
 * out the 3 s bound after which an unanswered first message is given up. */
static void test_stdio_2025_quiet_no_delay(void **state)
{
    (void)state;
    int port = mx_it_free_port();
    char *trace = mx_it_path("trace.jsonl");
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\ntrace = \"%s\"\n"
                             "[servers.q]\nenv = [\"PATH\"]\n"
                             "command = [\"node\", \"%s/tests/js/stdio25-quiet.mjs\", \"q\"]\n",
                             port, trace, mx_it_source_dir());
    pid_t mcplex = start_mcplex(cfg, port);
    char *one = mx_xasprintf("http://127.0.0.1:%d/mcp/q", port);
    double t0 = now_ms();
    json_t *out = client_ok(one, "list-all", NULL);
    double wall = now_ms() - t0;
    json_t *tm = json_object_get(out, "timings");
    double first = json_number_value(json_object_get(tm, "connect_ms")) +
                   json_number_value(json_object_get(tm, "tools_ms"));
    print_message("first tools/list of a quiet 2025 stdio server: %.0f ms (initialize and "
                  "tools/list, the process started for them; client run %.0f ms)\n",
                  first, wall);
    json_t *tools = json_object_get(json_object_get(out, "tools"), "names");
    if (!mx_it_has_string(tools, "echo") || json_array_size(tools) != 1)
        fail_msg("tools at /mcp/q: %s", json_dumps(tools, 0));
    json_decref(out);
    assert_call(one, "{\"name\":\"echo\",\"arguments\":{\"text\":\"old\"}}", "q echo: old");
    if (first >= 3000.0)
        fail_msg("the first tools/list took %.0f ms: a start waited out the 3 s bound", first);
    assert_int_equal(mx_it_trace_count(trace, "c2s", "q", "\"server/discover\""), 0);
    struct world w = {.log = mx_it_path("mcplex.log")};
    assert_false(log_has(&w, "has not answered"));
    (void)mcplex;
    free(w.log);
    free(one);
    free(cfg);
    free(trace);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stdio_2026_only, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_stdio_2026_lost_first_line, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_stdio_2025_quiet_no_delay, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
