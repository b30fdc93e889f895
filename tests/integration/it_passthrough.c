/* SPDX-License-Identifier: MIT */
/*
 * /mcp/<server> end to end: the official SDK client → mcplex → sandbox-sim
 * (bearer and cookie credentials) and server-everything (bearer), each with
 * a random canary credential. Checks the answers, that progress streams
 * through before the upstream finishes, that a wrong credential becomes a
 * clear JSON-RPC error (never a 401), and that no canary appears in anything
 * mcplex printed or wrote. Also: a world-readable secret file is refused.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

struct world {
    char bearer[MX_IT_CANARY_SIZE];   /* sim "alpha" */
    char cookie[MX_IT_CANARY_SIZE];   /* sim "beta" */
    char ev_token[MX_IT_CANARY_SIZE]; /* server-everything */
    char wrong[MX_IT_CANARY_SIZE];    /* a credential nobody accepts */
    int port;
    pid_t mcplex;
    char *log;
    char *trace;
};

static const char *first_text(json_t *result)
{
    json_t *content = json_object_get(result, "content");
    return json_string_value(json_object_get(json_array_get(content, 0), "text"));
}

static char *secret_file(const char *name, const char *value, mode_t mode)
{
    char *path = mx_it_path(name);
    assert_int_equal(mx_it_write_file(path, value, strlen(value)), 0);
    assert_int_equal(chmod(path, mode), 0);
    return path;
}

/* Starts the three upstreams and mcplex in front of them. */
static void start_world(struct world *w)
{
    int p_alpha, p_beta, p_ev;
    mx_it_canary(w->bearer, sizeof(w->bearer));
    mx_it_canary(w->cookie, sizeof(w->cookie));
    mx_it_canary(w->ev_token, sizeof(w->ev_token));
    mx_it_canary(w->wrong, sizeof(w->wrong));
    assert_int_equal(setenv("MX_IT_BETA_COOKIE", w->cookie, 1), 0);

    assert_true(mx_it_start_sim("alpha", w->bearer, NULL, &p_alpha) > 0);
    const char *cookie_args[] = {
        "--cookie", "__sbx_auth", "--cookie-env", "MX_IT_BETA_COOKIE", "--name", "beta", NULL};
    assert_true(mx_it_start_sim("beta", NULL, cookie_args, &p_beta) > 0);
    assert_true(mx_it_start_everything(w->ev_token, &p_ev) > 0);

    char *alpha_secret = secret_file("alpha.secret", w->bearer, 0600);
    char *ev_secret = secret_file("everything.secret", w->ev_token, 0600);
    char *wrong_secret = secret_file("wrong.secret", w->wrong, 0600);
    w->port = mx_it_free_port();
    w->trace = mx_it_path("trace.jsonl");
    char *cfg = mx_xasprintf("[listen]\n"
                             "address = \"127.0.0.1:%d\"\n"
                             "tls = false\n"
                             "[proxy]\n"
                             "trace = \"%s\"\n"
                             "[servers.alpha]\n"
                             "url = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.beta]\n"
                             "url = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"cookie:__sbx_auth\"\n"
                             "secret = \"env:MX_IT_BETA_COOKIE\"\n"
                             "[servers.everything]\n"
                             "url = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.wrongkey]\n"
                             "url = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\n"
                             "secret = \"file:%s\"\n",
                             w->port, w->trace, p_alpha, alpha_secret, p_beta, p_ev, ev_secret,
                             p_alpha, wrong_secret);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    w->mcplex = mx_it_start_mcplex(cfg_path, w->port);
    assert_true(w->mcplex > 0);
    w->log = mx_it_path("mcplex.log");
    free(alpha_secret);
    free(ev_secret);
    free(wrong_secret);
    free(cfg);
    free(cfg_path);
}

static char *gw_url(const struct world *w, const char *server)
{
    return mx_xasprintf("http://127.0.0.1:%d/mcp/%s", w->port, server);
}

static void assert_echo_through(const struct world *w, const char *server)
{
    char *url = gw_url(w, server);
    char msg[128];
    json_t *out = NULL;
    snprintf(msg, sizeof(msg), "{\"message\":\"hello %s\"}", server);
    assert_int_equal(mx_it_client(url, "smoke", msg, NULL, &out), 0);
    assert_true(json_is_true(json_object_get(out, "ok")));
    const char *text = first_text(json_object_get(out, "echo"));
    assert_non_null(text);
    char want[64];
    snprintf(want, sizeof(want), "hello %s", server);
    assert_non_null(strstr(text, want));
    json_decref(out);
    free(url);
}

static void assert_no_canary(const struct world *w, const char *extra_file)
{
    const char *canaries[] = {w->bearer, w->cookie, w->ev_token, w->wrong};
    const char *files[] = {w->log, w->trace, extra_file, NULL};
    for (size_t i = 0; i < 4; i++) {
        char **hits = NULL;
        int n = mx_it_scan_for(files, canaries[i], &hits);
        for (int k = 0; k < n; k++)
            fprintf(stderr, "canary %zu found in %s\n", i, hits[k]);
        mx_it_strv_free(hits);
        assert_int_equal(n, 0);
    }
}

static void test_passthrough_end_to_end(void **state)
{
    struct world w = {0};
    (void)state;
    start_world(&w);

    /* echo through each upstream, each with its own credential */
    assert_echo_through(&w, "alpha");
    assert_echo_through(&w, "beta");
    assert_echo_through(&w, "everything");

    /* progress streams through event by event: the first notification
     * reaches the client long before the upstream's final answer */
    char *url = gw_url(&w, "alpha");
    json_t *out = NULL;
    assert_int_equal(mx_it_client(url, "progress",
                                  "{\"name\":\"slow\",\"arguments\":{\"steps\":5,"
                                  "\"interval_ms\":300}}",
                                  NULL, &out),
                     0);
    json_t *progress = json_object_get(out, "progress");
    assert_int_equal(json_array_size(progress), 5);
    double first = json_number_value(json_object_get(json_array_get(progress, 0), "t_ms"));
    double done = json_number_value(json_object_get(out, "result_t_ms"));
    assert_true(first > 0);
    assert_true(done - first >= 900.0); /* four more intervals followed the first event */
    assert_non_null(strstr(first_text(json_object_get(out, "result")), "done"));
    json_decref(out);
    free(url);

    /* the same through server-everything, a server nobody here wrote */
    url = gw_url(&w, "everything");
    assert_int_equal(mx_it_client(url, "progress",
                                  "{\"name\":\"trigger-long-running-operation\","
                                  "\"arguments\":{\"duration\":3,\"steps\":3}}",
                                  NULL, &out),
                     0);
    progress = json_object_get(out, "progress");
    assert_int_equal(json_array_size(progress), 3);
    first = json_number_value(json_object_get(json_array_get(progress, 0), "t_ms"));
    done = json_number_value(json_object_get(out, "result_t_ms"));
    /* two one-second steps followed the first event (a loaded machine
     * stretches the steps; it never shortens them much) */
    assert_true(done - first >= 1000.0);
    assert_non_null(strstr(first_text(json_object_get(out, "result")), "completed"));
    json_decref(out);
    free(url);

    /* a wrong credential: a JSON-RPC error naming server and secret, no 401 */
    url = gw_url(&w, "wrongkey");
    assert_int_equal(mx_it_client(url, "smoke", NULL, NULL, &out), 0);
    json_t *err = json_object_get(out, "error");
    assert_string_equal(json_string_value(json_object_get(err, "kind")), "jsonrpc");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32011);
    const char *m = json_string_value(json_object_get(err, "message"));
    assert_non_null(strstr(m, "wrongkey"));
    assert_non_null(strstr(m, "file:"));
    json_decref(out);
    free(url);

    /* raw HTTP: the status the client sees for a refused credential is 200 */
    url = gw_url(&w, "wrongkey");
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", NULL};
    long status = 0;
    char *body = NULL;
    assert_int_equal(
        mx_it_http("POST", url, hdrs,
                   "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"initialize\",\"params\":{"
                   "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
                   "\"name\":\"t\",\"version\":\"1\"}}}",
                   &status, &body),
        0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(body, "\"id\":7"));
    free(body);
    free(url);

    /* /health: states, and not a secret in it */
    char *health_url = mx_xasprintf("http://127.0.0.1:%d/health", w.port);
    assert_int_equal(mx_it_http("GET", health_url, NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    json_t *h = json_loads(body, 0, NULL);
    assert_non_null(h);
    json_t *ups = json_object_get(h, "upstreams");
    assert_int_equal(json_array_size(ups), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *u = json_array_get(ups, i);
        const char *name = json_string_value(json_object_get(u, "name"));
        const char *st = json_string_value(json_object_get(u, "state"));
        assert_string_equal(st, strcmp(name, "wrongkey") == 0 ? "auth-failed" : "up");
    }
    json_decref(h);
    char *health_file = mx_it_path("health.json");
    assert_int_equal(mx_it_write_file(health_file, body, strlen(body)), 0);
    free(body);
    free(health_url);

    /* the trace recorded the calls */
    size_t tlen = 0;
    char *trace = mx_it_read_file(w.trace, &tlen);
    assert_non_null(trace);
    assert_non_null(strstr(trace, "\"dir\":\"c2s\""));
    assert_non_null(strstr(trace, "\"server\":\"everything\""));
    assert_non_null(strstr(trace, "notifications/progress"));
    free(trace);

    /* SIGTERM drains and exits 0; then nothing mcplex wrote holds a canary */
    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(w.mcplex, 5000);
    assert_true(st >= 0 && WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_no_canary(&w, health_file);
    free(health_file);
    free(w.log);
    free(w.trace);
    mx_it_pass();
}

static void test_passthrough_refuses_readable_secret_file(void **state)
{
    char canary[MX_IT_CANARY_SIZE];
    (void)state;
    mx_it_canary(canary, sizeof(canary));
    char *secret = secret_file("loose.secret", canary, 0644);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.loose]\nurl = \"http://127.0.0.1:9/mcp\"\n"
                             "auth = \"bearer\"\nsecret = \"file:%s\"\n",
                             port, secret);
    char *cfg_path = mx_it_path("loose.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    for (int k = 0; k < 2; k++) {
        const char *argv[] = {bin, k == 0 ? "serve" : "check", "-c", cfg_path, NULL};
        char *log = mx_it_path(k == 0 ? "serve.log" : "check.log");
        pid_t pid = mx_it_spawn(k == 0 ? "serve" : "check", argv, NULL, log);
        assert_true(pid > 0);
        int st = mx_it_wait_exit(pid, 5000);
        assert_true(st >= 0 && WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 1);
        char *text = mx_it_read_file(log, NULL);
        assert_non_null(text);
        assert_non_null(strstr(text, secret)); /* names the file */
        assert_non_null(strstr(text, "0644"));
        assert_null(strstr(text, canary));
        free(text);
        free(log);
    }
    free(bin);
    free(cfg_path);
    free(cfg);
    free(secret);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_passthrough_end_to_end, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_passthrough_refuses_readable_secret_file, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
