/* SPDX-License-Identifier: MIT */
/*
 * The HTTP+SSE transport of MCP 2024-11-05 toward clients: the TypeScript
 * SDK's SSEClientTransport (tests/js/client.mjs with MX_CLIENT_TRANSPORT=sse)
 * opens GET /sse and GET /sse/<server>, POSTs to the URL of the endpoint
 * event, and lists, calls sandbox-sim's slow tool with progress and answers
 * server-everything's sampling request, all through mcplex's client
 * sessions. Closing the stream ends the session (/health counts none).
 * The guards of /mcp hold at /sse: a bad Origin and a missing client token
 * are refused, an unknown message URL is a 404, and no canary (the
 * upstreams' secrets, the client token) reaches mcplex's log.
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
    char sim_token[MX_IT_CANARY_SIZE];
    char ev_token[MX_IT_CANARY_SIZE];
    char client_token[MX_IT_CANARY_SIZE];
    int port;
    char *log;
};

static void world_start(struct world *w)
{
    int sim_port = 0, ev_port = 0;
    memset(w, 0, sizeof(*w));
    mx_it_canary(w->sim_token, sizeof(w->sim_token));
    mx_it_canary(w->ev_token, sizeof(w->ev_token));
    mx_it_canary(w->client_token, sizeof(w->client_token));
    const char *sim_args[] = {"--name", "sim", NULL};
    assert_true(mx_it_start_sim("sim", w->sim_token, sim_args, &sim_port) > 0);
    assert_true(mx_it_start_everything(w->ev_token, &ev_port) > 0);
    char *sim_secret = mx_it_secret_file("sim.secret", w->sim_token);
    char *ev_secret = mx_it_secret_file("ev.secret", w->ev_token);
    char *client_secret = mx_it_secret_file("client.secret", w->client_token);
    w->port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "client_token = \"file:%s\"\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.everything]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             w->port, client_secret, sim_port, sim_secret, ev_port, ev_secret);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, w->port) > 0);
    w->log = mx_it_path("mcplex.log");
    assert_int_equal(setenv("MX_CLIENT_TRANSPORT", "sse", 1), 0);
    free(cfg);
    free(cfg_path);
    free(sim_secret);
    free(ev_secret);
    free(client_secret);
}

static void world_end(struct world *w)
{
    unsetenv("MX_CLIENT_TRANSPORT");
    const char *files[] = {w->log, NULL};
    const char *canaries[] = {w->sim_token, w->ev_token, w->client_token};
    assert_int_equal(mx_it_canary_hits(files, canaries, 3), 0);
    free(w->log);
}

static char *url_of(const struct world *w, const char *path)
{
    return mx_xasprintf("http://127.0.0.1:%d%s", w->port, path);
}

/* One SDK client run over HTTP+SSE that must succeed. */
static json_t *client(const struct world *w, const char *url, const char *scenario,
                      const char *args)
{
    json_t *out = NULL;
    int rc = mx_it_client(url, scenario, args, w->client_token, &out);
    if (rc != 0 || out == NULL || !json_is_true(json_object_get(out, "ok"))) {
        char *dump = out ? json_dumps(out, 0) : NULL;
        fail_msg("SSE client %s at %s: exit %d: %s", scenario, url, rc, dump ? dump : "(none)");
    }
    return out;
}

static void assert_progress(const struct world *w, const char *url, const char *tool)
{
    char *args =
        mx_xasprintf("{\"name\":\"%s\",\"arguments\":{\"steps\":3,\"interval_ms\":50}}", tool);
    json_t *out = client(w, url, "progress", args);
    /* The SDK client handles a notification in a microtask and a response
     * at once, and its EventSource dispatches every event of one read in a
     * row: the last progress, which the sim sends with the answer, is lost
     * to the client when both arrive in one read. The first two come alone,
     * in order. */
    json_t *progress = json_object_get(out, "progress");
    assert_true(json_array_size(progress) >= 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *p = json_object_get(json_array_get(progress, i), "progress");
        assert_int_equal(json_integer_value(p), (json_int_t)i + 1);
    }
    assert_string_equal(mx_it_result_text(out), "done after 3 steps");
    json_decref(out);
    free(args);
}

static void assert_sampling(const struct world *w, const char *url, const char *tool)
{
    char reply[MX_IT_CANARY_SIZE + 8];
    mx_it_canary(reply, sizeof(reply)); /* a fresh word to look for */
    char *args = mx_xasprintf(
        "{\"name\":\"%s\",\"arguments\":{\"prompt\":\"q\",\"maxTokens\":5},\"reply\":\"%s\"}", tool,
        reply);
    json_t *out = client(w, url, "sampling", args);
    mx_it_assert_sampled_once(out, reply);
    json_decref(out);
    free(args);
}

/* Closing the stream ends the session: /health counts none within 5 s. */
static void assert_no_sessions(const struct world *w)
{
    json_int_t n = -1;
    for (int i = 0; i < 50; i++) {
        json_t *h = mx_it_health(w->port, NULL);
        n = json_integer_value(json_object_get(json_object_get(h, "mcp"), "sessions"));
        json_decref(h);
        if (n == 0)
            return;
        usleep(100 * 1000);
    }
    fail_msg("%lld client sessions are still open after their SSE streams closed", (long long)n);
}

static void test_legacy_sse_merged(void **state)
{
    struct world w;
    (void)state;
    world_start(&w);
    char *url = url_of(&w, "/sse");
    json_t *out = client(&w, url, "list-all", NULL);
    json_t *tools = json_object_get(json_object_get(out, "tools"), "names");
    assert_true(mx_it_has_string(tools, "whoami"));
    assert_true(mx_it_has_string(tools, "trigger-sampling-request"));
    assert_true(mx_it_has_string(tools, "sim_echo"));
    json_decref(out);
    assert_progress(&w, url, "slow");
    assert_sampling(&w, url, "trigger-sampling-request");
    assert_no_sessions(&w);
    free(url);
    world_end(&w);
    mx_it_pass();
}

static void test_legacy_sse_per_server(void **state)
{
    struct world w;
    (void)state;
    world_start(&w);
    char *sim = url_of(&w, "/sse/sim");
    char *ev = url_of(&w, "/sse/everything");
    json_t *out = client(&w, sim, "list-all", NULL);
    json_t *tools = json_object_get(json_object_get(out, "tools"), "names");
    /* one server alone: its own names */
    assert_true(mx_it_has_string(tools, "echo"));
    assert_false(mx_it_has_string(tools, "sim_echo"));
    assert_false(mx_it_has_string(tools, "trigger-sampling-request"));
    json_decref(out);
    assert_progress(&w, sim, "slow");
    assert_sampling(&w, ev, "trigger-sampling-request");
    assert_no_sessions(&w);
    free(sim);
    free(ev);
    world_end(&w);
    mx_it_pass();
}

static void test_legacy_sse_guard(void **state)
{
    struct world w;
    long status = 0;
    char *body = NULL;
    (void)state;
    world_start(&w);
    char *url = url_of(&w, "/sse");
    char *auth = mx_xasprintf("Authorization: Bearer %s", w.client_token);
    /* no client token */
    const char *no_token[] = {"Accept: text/event-stream", NULL};
    assert_int_equal(mx_it_http("GET", url, no_token, NULL, &status, &body), 0);
    assert_int_equal(status, 403);
    assert_non_null(strstr(body, "token"));
    free(body);
    /* an Origin that is not allowed */
    const char *bad_origin[] = {"Accept: text/event-stream", auth, "Origin: http://evil.example",
                                NULL};
    assert_int_equal(mx_it_http("GET", url, bad_origin, NULL, &status, &body), 0);
    assert_int_equal(status, 403);
    assert_non_null(strstr(body, "Origin"));
    free(body);
    /* a message URL no stream gave */
    char *post_url = url_of(&w, "/sse?session=0123456789abcdef0123456789abcdef");
    const char *post_hdrs[] = {"Content-Type: application/json", auth, NULL};
    assert_int_equal(mx_it_http("POST", post_url, post_hdrs,
                                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &status,
                                &body),
                     0);
    assert_int_equal(status, 404);
    assert_non_null(strstr(body, "GET /sse"));
    free(body);
    /* the POST to a real session without the token */
    const char *post_no_token[] = {"Content-Type: application/json", NULL};
    assert_int_equal(mx_it_http("POST", post_url, post_no_token, "{}", &status, &body), 0);
    assert_int_equal(status, 403);
    free(body);
    /* an unknown server */
    char *nope = url_of(&w, "/sse/nope");
    const char *get_hdrs[] = {"Accept: text/event-stream", auth, NULL};
    assert_int_equal(mx_it_http("GET", nope, get_hdrs, NULL, &status, &body), 0);
    assert_int_equal(status, 404);
    assert_non_null(strstr(body, "sim"));
    free(body);
    free(nope);
    free(post_url);
    free(auth);
    free(url);
    world_end(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_legacy_sse_merged, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_legacy_sse_per_server, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_legacy_sse_guard, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
