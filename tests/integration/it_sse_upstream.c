/* SPDX-License-Identifier: MIT */
/*
 * Legacy HTTP+SSE upstreams (MCP 2024-11-05, transport = "sse") end to end:
 * server-everything in its `sse` mode, requiring a canary bearer token,
 * beside sandbox-sim over Streamable HTTP, driven by the official SDK client
 * through the merged /mcp (list, call, progress, a sampling request the
 * client answers) and through /mcp/<server> (initialize, list, call,
 * progress), calls at once from many clients. Also: the same server with a wrong token is refused
 * with a clear auth error; a server whose `endpoint` event names another origin is refused and that
 * origin never hears from mcplex; a call in flight when the server dies fails as outcome-unknown,
 * is not sent again, and the next call opens a new stream to the restarted server; no canary in
 * anything mcplex printed or wrote.
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
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

struct world {
    char ev_token[MX_IT_CANARY_SIZE];  /* server-everything's bearer */
    char bad_token[MX_IT_CANARY_SIZE]; /* what "bad" sends instead */
    char sim_token[MX_IT_CANARY_SIZE]; /* bearer of sandbox-sim */
    int ev_port;
    int far_port;
    pid_t ev;
    pid_t mcplex;
    char *url;
    char *log;
    char *trace;
};

/* tests/js/sse-elsewhere.mjs; its /sse port in |*port|. */
static pid_t start_elsewhere(int *port)
{
    char *script = mx_xasprintf("%s/tests/js/sse-elsewhere.mjs", mx_it_source_dir());
    char *port_file = mx_it_path("elsewhere.port");
    char *port_env = mx_xasprintf("MX_PORT_FILE=%s", port_file);
    const char *argv[] = {"node", script, NULL};
    const char *env[] = {port_env, NULL};
    pid_t pid = mx_it_spawn("elsewhere", argv, env, NULL);
    *port = pid > 0 ? mx_it_port_file(pid, port_file, MX_IT_START_TIMEOUT_MS) : -1;
    free(script);
    free(port_file);
    free(port_env);
    return *port > 0 ? pid : -1;
}

static void start_world(struct world *w)
{
    int sim_port;
    mx_it_canary(w->ev_token, sizeof(w->ev_token));
    mx_it_canary(w->bad_token, sizeof(w->bad_token));
    mx_it_canary(w->sim_token, sizeof(w->sim_token));
    w->ev_port = 0;
    w->ev = mx_it_start_everything_as("sse", w->ev_token, &w->ev_port);
    assert_true(w->ev > 0);
    assert_true(mx_it_start_sim("sim", w->sim_token, NULL, &sim_port) > 0);
    assert_true(start_elsewhere(&w->far_port) > 0);

    char *ev_s = mx_it_secret_file("ev.secret", w->ev_token);
    char *bad_s = mx_it_secret_file("bad.secret", w->bad_token);
    char *sim_s = mx_it_secret_file("sim.secret", w->sim_token);
    int port = mx_it_free_port();
    w->trace = mx_it_path("trace.jsonl");
    char *cfg = mx_xasprintf(
        "[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
        "[proxy]\ntrace = \"%s\"\nfanout_timeout = \"20s\"\nrequest_timeout = \"30s\"\n"
        "[servers.ev]\nurl = \"http://127.0.0.1:%d/sse\"\ntransport = \"sse\"\n"
        "secret = \"file:%s\"\n"
        "[servers.bad]\nurl = \"http://127.0.0.1:%d/sse\"\ntransport = \"sse\"\n"
        "secret = \"file:%s\"\n"
        "[servers.far]\nurl = \"http://127.0.0.1:%d/sse\"\ntransport = \"sse\"\n"
        "secret = \"file:%s\"\n"
        "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n",
        port, w->trace, w->ev_port, ev_s, w->ev_port, bad_s, w->far_port, ev_s, sim_port, sim_s);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    w->mcplex = mx_it_start_mcplex(cfg_path, port);
    assert_true(w->mcplex > 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    w->log = mx_it_path("mcplex.log");
    free(ev_s);
    free(bad_s);
    free(sim_s);
    free(cfg);
    free(cfg_path);
}

static void free_world(struct world *w)
{
    free(w->url);
    free(w->log);
    free(w->trace);
}

/* GET |path| on 127.0.0.1:|port| (a fixture's stats), as JSON. */
static json_t *stats(int port, const char *path)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d%s", port, path);
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("GET", url, NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    json_t *j = json_loads(body, 0, NULL);
    assert_non_null(j);
    free(body);
    free(url);
    return j;
}

static long stat_of(int port, const char *path, const char *key)
{
    json_t *j = stats(port, path);
    long v = (long)json_integer_value(json_object_get(j, key));
    json_decref(j);
    return v;
}

static void assert_merged(const struct world *w)
{
    json_t *out = mx_it_client_ok(w->url, "list-all", NULL);
    json_t *tools = json_object_get(json_object_get(out, "tools"), "names");
    /* echo is on both: prefixed; the rest of the SSE server's as they are */
    static const char *const want[] = {
        "ev_echo", "sim_echo", "trigger-long-running-operation", "trigger-sampling-request",
        "slow",    "add"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (!mx_it_has_string(tools, want[i]))
            fail_msg("no tool %s in the merged list", want[i]);
    }
    assert_true(json_array_size(json_object_get(json_object_get(out, "prompts"), "names")) > 0);
    json_decref(out);

    out = mx_it_client_ok(w->url, "call",
                          "{\"name\":\"ev_echo\",\"arguments\":{\"message\":\"old\"}}");
    assert_string_equal(mx_it_result_text(out), "Echo: old");
    json_decref(out);
    out = mx_it_client_ok(w->url, "call",
                          "{\"name\":\"sim_echo\",\"arguments\":{\"message\":\"new\"}}");
    assert_non_null(strstr(mx_it_result_text(out), "new"));
    json_decref(out);

    /* progress, routed by its token from the GET stream to this call */
    out = mx_it_client_ok(w->url, "progress",
                          "{\"name\":\"trigger-long-running-operation\","
                          "\"arguments\":{\"duration\":1,\"steps\":4}}");
    json_t *progress = json_object_get(out, "progress");
    assert_int_equal(json_array_size(progress), 4);
    assert_non_null(strstr(mx_it_result_text(out), "Steps: 4"));
    double first = json_number_value(json_object_get(json_array_get(progress, 0), "t_ms"));
    assert_true(json_number_value(json_object_get(out, "result_t_ms")) - first >= 500.0);
    json_decref(out);

    /* a sampling request from the server, answered by the client */
    out = mx_it_client_ok(w->url, "sampling",
                          "{\"name\":\"trigger-sampling-request\","
                          "\"arguments\":{\"prompt\":\"from-old\",\"maxTokens\":10},"
                          "\"reply\":\"answer-from-client\"}");
    assert_int_equal(json_array_size(json_object_get(out, "sampling_requests")), 1);
    const char *text = mx_it_result_text(out);
    assert_non_null(text);
    assert_non_null(strstr(text, "answer-from-client"));
    json_decref(out);
    /* the answer went up as a POST of its own */
    assert_true(mx_it_trace_count(w->trace, "c2s", "ev", "answer-from-client") >= 1);
}

static void assert_direct(const struct world *w)
{
    char *url = mx_xasprintf("%s/ev", w->url);
    json_t *out = mx_it_client_ok(url, "smoke", "{\"message\":\"direct\"}");
    assert_true(json_is_true(json_object_get(out, "ok")));
    /* that one server, alone: its own name and tools, unprefixed */
    const char *server = json_string_value(json_object_get(
        json_object_get(json_object_get(out, "initialize"), "server_info"), "name"));
    assert_non_null(server);
    assert_non_null(strstr(server, "everything"));
    json_t *tools = json_object_get(out, "tools");
    assert_true(mx_it_has_string(tools, "echo"));
    assert_true(mx_it_has_string(tools, "trigger-long-running-operation"));
    assert_false(mx_it_has_string(tools, "slow"));
    assert_string_equal(
        json_string_value(json_object_get(
            json_array_get(json_object_get(json_object_get(out, "echo"), "content"), 0), "text")),
        "Echo: direct");
    json_decref(out);

    out = mx_it_client_ok(url, "progress",
                          "{\"name\":\"trigger-long-running-operation\","
                          "\"arguments\":{\"duration\":0.6,\"steps\":3}}");
    assert_int_equal(json_array_size(json_object_get(out, "progress")), 3);
    assert_non_null(strstr(mx_it_result_text(out), "Steps: 3"));
    json_decref(out);
    free(url);
}

/* Calls at once from separate clients over the one shared upstream stream
 * of each endpoint: every answer reaches the client that asked. */
static void assert_concurrent(const struct world *w)
{
    enum { PER_ENDPOINT = 6 };
    pid_t pids[2 * PER_ENDPOINT];
    char *one = mx_xasprintf("%s/ev", w->url);
    for (int i = 0; i < 2 * PER_ENDPOINT; i++) {
        bool merged = i < PER_ENDPOINT;
        char *args = mx_xasprintf("{\"name\":\"%s\",\"arguments\":{\"message\":\"m%d\"}}",
                                  merged ? "ev_echo" : "echo", i);
        pids[i] = mx_it_client_start(merged ? w->url : one, "call", args, NULL);
        assert_true(pids[i] > 0);
        free(args);
    }
    for (int i = 0; i < 2 * PER_ENDPOINT; i++) {
        json_t *out = NULL;
        char want[32];
        assert_int_equal(mx_it_node_finish(pids[i], MX_IT_NODE_TIMEOUT_MS, &out), 0);
        snprintf(want, sizeof(want), "Echo: m%d", i);
        const char *text = mx_it_result_text(out);
        if (text == NULL || strcmp(text, want) != 0)
            fail_msg("client %d got %s, wanted %s", i, text ? text : "no text", want);
        json_decref(out);
    }
    free(one);
}

static void assert_refusals(const struct world *w)
{
    /* the credential is refused: a clear error, not a bare 401 */
    char *url = mx_xasprintf("%s/bad", w->url);
    json_t *out = mx_it_client_ok(url, "smoke", "{\"message\":\"x\"}");
    const char *msg = json_string_value(json_object_get(json_object_get(out, "error"), "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "upstream 'bad' auth-failed"));
    json_decref(out);
    free(url);
    assert_true(stat_of(w->ev_port, "/__auth_stats", "rejected") >= 1);

    /* an endpoint on another origin: refused, and that origin hears nothing */
    url = mx_xasprintf("%s/far", w->url);
    out = mx_it_client_ok(url, "smoke", "{\"message\":\"x\"}");
    msg = json_string_value(json_object_get(json_object_get(out, "error"), "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "refuses its message endpoint"));
    assert_non_null(strstr(msg, "another origin"));
    json_decref(out);
    free(url);
    json_t *st = stats(w->far_port, "/__stats");
    assert_true(json_integer_value(json_object_get(st, "streams")) >= 1);
    assert_int_equal(json_integer_value(json_object_get(st, "elsewhere")), 0);
    assert_int_equal(json_integer_value(json_object_get(st, "elsewhere_with_auth")), 0);
    json_decref(st);

    /* everyone else is still served */
    out = mx_it_client_ok(w->url, "call",
                          "{\"name\":\"ev_echo\",\"arguments\":{\"message\":\"still\"}}");
    assert_string_equal(mx_it_result_text(out), "Echo: still");
    json_decref(out);
}

static void assert_stream_loss(struct world *w)
{
    int before = mx_it_trace_count(w->trace, "c2s", "ev", "trigger-long-running-operation");
    pid_t c = mx_it_client_start(w->url, "progress",
                                 "{\"name\":\"trigger-long-running-operation\","
                                 "\"arguments\":{\"duration\":8,\"steps\":8}}",
                                 NULL);
    assert_true(c > 0);
    for (int waited = 0; waited < 20000; waited += 50) {
        if (mx_it_trace_count(w->trace, "c2s", "ev", "trigger-long-running-operation") > before)
            break;
        usleep(50 * 1000);
    }
    assert_int_equal(mx_it_trace_count(w->trace, "c2s", "ev", "trigger-long-running-operation"),
                     before + 1);
    usleep(1500 * 1000); /* a progress or two */
    assert_int_equal(mx_it_signal(w->ev, SIGKILL), 0);
    assert_true(mx_it_wait_exit(w->ev, 5000) >= 0);

    json_t *res = NULL;
    assert_int_equal(mx_it_node_finish(c, MX_IT_NODE_TIMEOUT_MS, &res), 0);
    assert_true(json_array_size(json_object_get(res, "progress")) >= 1);
    json_t *e = json_object_get(json_object_get(res, "result"), "error");
    assert_non_null(e);
    assert_int_equal(json_integer_value(json_object_get(e, "code")), -32013);
    const char *msg = json_string_value(json_object_get(e, "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "upstream 'ev'"));
    assert_non_null(strstr(msg, "event stream"));
    assert_non_null(strstr(msg, "not repeated"));
    assert_true(json_number_value(json_object_get(res, "result_t_ms")) < 6000.0);
    json_decref(res);

    /* the same server back on its port: the next call opens a new stream */
    int port = w->ev_port;
    w->ev = mx_it_start_everything_as("sse", w->ev_token, &port);
    assert_true(w->ev > 0);
    assert_int_equal(port, w->ev_port);
    json_t *out = mx_it_client_ok(w->url, "call",
                                  "{\"name\":\"ev_echo\",\"arguments\":{\"message\":\"back\"}}");
    assert_string_equal(mx_it_result_text(out), "Echo: back");
    json_decref(out);
    /* the call that was in flight went up once, never again */
    assert_int_equal(mx_it_trace_count(w->trace, "c2s", "ev", "trigger-long-running-operation"),
                     before + 1);
    assert_true(stat_of(w->ev_port, "/__auth_stats", "accepted") >= 3);
}

static void assert_no_canary(const struct world *w)
{
    const char *canaries[] = {w->ev_token, w->bad_token, w->sim_token};
    const char *files[] = {w->log, w->trace, NULL};
    assert_int_equal(mx_it_canary_hits(files, canaries, 3), 0);
}

static void test_sse_upstream(void **state)
{
    struct world w;
    (void)state;
    memset(&w, 0, sizeof(w));
    start_world(&w);
    assert_merged(&w);
    assert_direct(&w);
    assert_concurrent(&w);
    assert_refusals(&w);
    assert_stream_loss(&w);
    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(w.mcplex, 15000);
    assert_true(st >= 0 && WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    char *log = mx_it_read_file(w.log, NULL);
    assert_non_null(log);
    assert_non_null(strstr(log, "up:ev ready over HTTP+SSE"));
    free(log);
    assert_no_canary(&w);
    free_world(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sse_upstream, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
