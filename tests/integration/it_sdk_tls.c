/* SPDX-License-Identifier: MIT */
/*
 * The official TypeScript SDK clients through mcplex over TLS (a TLS
 * listener whose local CA the clients trust through NODE_EXTRA_CA_CERTS),
 * at the merged /mcp and at /mcp/<server>: the 2025 client (SDK 1.32.2) and
 * the newest client that speaks 2026-07-28 (@modelcontextprotocol/client
 * 2.4.0, pinned to it). Behind mcplex: sandbox-sim (a 2025 upstream),
 * server-everything (a 2025 upstream that asks for sampling) and sandbox-sim
 * --conformance (an upstream that speaks 2026-07-28), each with its own
 * canary bearer token. Each client lists, calls, follows progress and
 * answers a sampling question (a server-to-client request for the 2025
 * client, an input_required round trip for the 2026 one). No canary in
 * mcplex's log.
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
    char sim_token[MX_IT_CANARY_SIZE];
    char ev_token[MX_IT_CANARY_SIZE];
    char conf_token[MX_IT_CANARY_SIZE];
    int port;
    char *ca;
    char *log;
};

static void start_world(struct world *w)
{
    int sim_port = 0, ev_port = 0, conf_port = 0;
    memset(w, 0, sizeof(*w));
    mx_it_canary(w->sim_token, sizeof(w->sim_token));
    mx_it_canary(w->ev_token, sizeof(w->ev_token));
    mx_it_canary(w->conf_token, sizeof(w->conf_token));
    const char *sim_args[] = {"--name", "sim", NULL};
    assert_true(mx_it_start_sim("sim", w->sim_token, sim_args, &sim_port) > 0);
    const char *conf_args[] = {"--conformance", "--name", "conf-sim", NULL};
    assert_true(mx_it_start_sim("conf", w->conf_token, conf_args, &conf_port) > 0);
    assert_true(mx_it_start_everything(w->ev_token, &ev_port) > 0);
    char *sim_secret = mx_it_secret_file("sim.secret", w->sim_token);
    char *ev_secret = mx_it_secret_file("ev.secret", w->ev_token);
    char *conf_secret = mx_it_secret_file("conf.secret", w->conf_token);
    char *state = mx_it_path("state");
    w->ca = mx_xasprintf("%s/certs/ca.pem", state);
    w->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = true\n"
                             "[proxy]\nstate_dir = \"%s\"\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.everything]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.conf]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             w->port, state, sim_port, sim_secret, ev_port, ev_secret, conf_port,
                             conf_secret);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex_tls(cfg_path, w->port, w->ca) > 0);
    w->log = mx_it_path("mcplex.log");
    assert_int_equal(setenv("NODE_EXTRA_CA_CERTS", w->ca, 1), 0);
    free(cfg);
    free(cfg_path);
    free(state);
    free(sim_secret);
    free(ev_secret);
    free(conf_secret);
}

static void world_end(struct world *w)
{
    unsetenv("NODE_EXTRA_CA_CERTS");
    const char *files[] = {w->log, NULL};
    const char *canaries[] = {w->sim_token, w->ev_token, w->conf_token};
    assert_int_equal(mx_it_canary_hits(files, canaries, 3), 0);
    free(w->ca);
    free(w->log);
}

static char *url_of(const struct world *w, const char *path)
{
    return mx_xasprintf("https://127.0.0.1:%d%s", w->port, path);
}

/* ---- the 2025 client (SDK 1.32.2) ---- */

static json_t *client25(const char *url, const char *scenario, const char *args)
{
    json_t *out = mx_it_client_ok(url, scenario, args);
    if (!json_is_true(json_object_get(out, "ok"))) {
        char *dump = json_dumps(out, 0);
        fail_msg("SDK 1.32 %s at %s: %s", scenario, url, dump);
    }
    return out;
}

static void assert_text25(const char *url, const char *tool, const char *want)
{
    char *args = mx_xasprintf("{\"name\":\"%s\"}", tool);
    json_t *out = client25(url, "call", args);
    const char *t = mx_it_result_text(out);
    if (t == NULL || strstr(t, want) == NULL)
        fail_msg("%s at %s: got '%s', want '%s'", tool, url, t ? t : "(none)", want);
    json_decref(out);
    free(args);
}

static void assert_progress25(const char *url, const char *tool)
{
    char *args =
        mx_xasprintf("{\"name\":\"%s\",\"arguments\":{\"steps\":3,\"interval_ms\":50}}", tool);
    json_t *out = client25(url, "progress", args);
    assert_int_equal(json_array_size(json_object_get(out, "progress")), 3);
    assert_string_equal(mx_it_result_text(out), "done after 3 steps");
    json_decref(out);
    free(args);
}

/* A sampling question reaches the client as a request on its stream; its
 * answer ends up in the tool's result. */
static void assert_sampling25(const char *url, const char *tool, const char *arguments)
{
    char reply[MX_IT_CANARY_SIZE + 8];
    mx_it_canary(reply, sizeof(reply)); /* a fresh word to look for */
    char *args =
        mx_xasprintf("{\"name\":\"%s\",\"arguments\":%s,\"reply\":\"%s\"}", tool, arguments, reply);
    json_t *out = client25(url, "sampling", args);
    assert_int_equal(json_array_size(json_object_get(out, "sampling_requests")), 1);
    char *dump = json_dumps(json_object_get(out, "result"), 0);
    if (strstr(dump, reply) == NULL)
        fail_msg("%s at %s: the sampled text is not in the result: %s", tool, url, dump);
    free(dump);
    json_decref(out);
    free(args);
}

static void test_sdk1_tls_merged(void **state)
{
    struct world w;
    (void)state;
    start_world(&w);
    char *url = url_of(&w, "/mcp");
    json_t *out = client25(url, "list-all", NULL);
    json_t *tools = json_object_get(json_object_get(out, "tools"), "names");
    assert_true(mx_it_has_string(tools, "whoami"));
    assert_true(mx_it_has_string(tools, "trigger-sampling-request"));
    assert_true(mx_it_has_string(tools, "test_simple_text"));
    /* echo is offered by two servers: prefixed in both */
    assert_true(mx_it_has_string(tools, "sim_echo"));
    assert_true(mx_it_has_string(tools, "everything_echo"));
    json_decref(out);
    assert_text25(url, "whoami", "sim");
    assert_text25(url, "test_simple_text", "test");
    assert_progress25(url, "slow");
    assert_sampling25(url, "trigger-sampling-request", "{\"prompt\":\"q\",\"maxTokens\":5}");
    /* the 2026-07-28 upstream's input_required question, bridged */
    assert_sampling25(url, "test_input_required_result_sampling", "{}");
    free(url);
    world_end(&w);
    mx_it_pass();
}

static void test_sdk1_tls_per_server(void **state)
{
    struct world w;
    (void)state;
    start_world(&w);
    char *sim = url_of(&w, "/mcp/sim");
    char *ev = url_of(&w, "/mcp/everything");
    char *conf = url_of(&w, "/mcp/conf");
    json_t *out = client25(sim, "list-all", NULL);
    json_t *tools = json_object_get(json_object_get(out, "tools"), "names");
    /* one server alone: its own names */
    assert_true(mx_it_has_string(tools, "echo"));
    assert_false(mx_it_has_string(tools, "sim_echo"));
    assert_false(mx_it_has_string(tools, "test_simple_text"));
    json_decref(out);
    assert_text25(sim, "whoami", "sim");
    assert_progress25(sim, "slow");
    assert_sampling25(ev, "trigger-sampling-request", "{\"prompt\":\"q\",\"maxTokens\":5}");
    assert_text25(conf, "test_simple_text", "test");
    free(sim);
    free(ev);
    free(conf);
    world_end(&w);
    mx_it_pass();
}

/* ---- the 2026-07-28 client (SDK v2, pinned) ---- */

/* Sampling through an input_required result and the client's retry. */
static void assert_sampling26(const char *url, const char *tool, const char *arguments)
{
    char reply[MX_IT_CANARY_SIZE + 8];
    mx_it_canary(reply, sizeof(reply));
    char *args = mx_xasprintf("{\"sampling\":{\"name\":\"%s\",\"arguments\":%s,\"reply\":\"%s\"}}",
                              tool, arguments, reply);
    json_t *out = mx_it_client26_ok(url, args);
    assert_int_equal(json_array_size(json_object_get(out, "sampling_requests")), 1);
    const char *got = json_string_value(json_object_get(out, "sampling_result"));
    if (got == NULL || strstr(got, reply) == NULL)
        fail_msg("%s at %s: the sampled text is not in the result: %s", tool, url,
                 got ? got : "(none)");
    json_decref(out);
    free(args);
}

static void test_sdk2_tls_merged(void **state)
{
    struct world w;
    (void)state;
    start_world(&w);
    char *url = url_of(&w, "/mcp");
    json_t *out =
        mx_it_client26_ok(url, "{\"calls\":[{\"name\":\"whoami\"},{\"name\":\"test_simple_text\"}],"
                               "\"progress\":{\"name\":\"slow\",\"arguments\":{\"steps\":3,"
                               "\"interval_ms\":50}}}");
    json_t *tools = json_object_get(out, "tools");
    assert_true(mx_it_has_string(tools, "sim_echo"));
    assert_true(mx_it_has_string(tools, "test_input_required_result_sampling"));
    json_t *texts = json_object_get(out, "calls");
    assert_string_equal(json_string_value(json_array_get(texts, 0)), "sim");
    assert_non_null(strstr(json_string_value(json_array_get(texts, 1)), "test"));
    assert_int_equal(json_array_size(json_object_get(out, "progress")), 3);
    assert_string_equal(json_string_value(json_object_get(out, "progress_result")),
                        "done after 3 steps");
    json_decref(out);
    /* a 2025 upstream's sampling request, and a 2026 upstream's
     * input_required question */
    assert_sampling26(url, "trigger-sampling-request", "{\"prompt\":\"q\",\"maxTokens\":5}");
    assert_sampling26(url, "test_input_required_result_sampling", "{}");
    free(url);
    world_end(&w);
    mx_it_pass();
}

static void test_sdk2_tls_per_server(void **state)
{
    struct world w;
    (void)state;
    start_world(&w);
    char *sim = url_of(&w, "/mcp/sim");
    char *ev = url_of(&w, "/mcp/everything");
    char *conf = url_of(&w, "/mcp/conf");
    json_t *out =
        mx_it_client26_ok(sim, "{\"calls\":[{\"name\":\"whoami\"},{\"name\":\"echo\","
                               "\"arguments\":{\"message\":\"over tls\"}}],"
                               "\"progress\":{\"name\":\"slow\",\"arguments\":{\"steps\":3,"
                               "\"interval_ms\":50}}}");
    json_t *tools = json_object_get(out, "tools");
    assert_true(mx_it_has_string(tools, "echo"));
    assert_false(mx_it_has_string(tools, "sim_echo"));
    assert_false(mx_it_has_string(tools, "test_simple_text"));
    json_t *texts = json_object_get(out, "calls");
    assert_string_equal(json_string_value(json_array_get(texts, 0)), "sim");
    assert_string_equal(json_string_value(json_array_get(texts, 1)), "over tls");
    assert_int_equal(json_array_size(json_object_get(out, "progress")), 3);
    json_decref(out);
    out = mx_it_client26_ok(conf, "{\"calls\":[{\"name\":\"test_simple_text\"}]}");
    assert_non_null(
        strstr(json_string_value(json_array_get(json_object_get(out, "calls"), 0)), "test"));
    json_decref(out);
    assert_sampling26(ev, "trigger-sampling-request", "{\"prompt\":\"q\",\"maxTokens\":5}");
    assert_sampling26(conf, "test_input_required_result_sampling", "{}");
    free(sim);
    free(ev);
    free(conf);
    world_end(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sdk1_tls_merged, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_sdk1_tls_per_server, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_sdk2_tls_merged, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_sdk2_tls_per_server, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
