/* SPDX-License-Identifier: MIT */
/*
 * The merged /mcp endpoint end to end: two server-everything upstreams with
 * different canary credentials (so every one of their names collides) and
 * one sandbox-sim, driven by the official TypeScript SDK client through
 * mcplex. Checks the merged tools, prompts, resources and templates with
 * the documented names, pagination with a page smaller than the lists, a
 * call to each upstream, prompts and resources routed (and an ambiguous URI
 * refused with its candidates named), progress from a long tool,
 * cancellation reaching the upstream, a sampling request answered by the
 * client through mcplex, two sessions using the same request ids and
 * progress tokens at once, an upstream's own list change reaching every
 * client once as list_changed, /health naming every renamed tool, and no canary
 * in anything mcplex printed or wrote.
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

#define PAGE_SIZE 7

struct world {
    char ev1_token[MX_IT_CANARY_SIZE];
    char ev2_token[MX_IT_CANARY_SIZE];
    char sim_token[MX_IT_CANARY_SIZE];
    int port;
    int sim_port;
    pid_t mcplex;
    char *url;
    char *log;
    char *trace;
};

static char *secret_file(const char *name, const char *value)
{
    char *path = mx_it_path(name);
    assert_int_equal(mx_it_write_file(path, value, strlen(value)), 0);
    return path;
}

static void start_world(struct world *w)
{
    int p1, p2;
    mx_it_canary(w->ev1_token, sizeof(w->ev1_token));
    mx_it_canary(w->ev2_token, sizeof(w->ev2_token));
    mx_it_canary(w->sim_token, sizeof(w->sim_token));
    assert_true(mx_it_start_everything(w->ev1_token, &p1) > 0);
    assert_true(mx_it_start_everything(w->ev2_token, &p2) > 0);
    const char *sim_args[] = {"--name", "sim-one", NULL};
    assert_true(mx_it_start_sim("sim", w->sim_token, sim_args, &w->sim_port) > 0);

    char *s1 = secret_file("ev1.secret", w->ev1_token);
    char *s2 = secret_file("ev2.secret", w->ev2_token);
    char *s3 = secret_file("sim.secret", w->sim_token);
    w->port = mx_it_free_port();
    w->trace = mx_it_path("trace.jsonl");
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\ntrace = \"%s\"\npage_size = %d\n"
                             "[servers.ev1]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.ev2]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n",
                             w->port, w->trace, PAGE_SIZE, p1, s1, p2, s2, w->sim_port, s3);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    w->mcplex = mx_it_start_mcplex(cfg_path, w->port);
    assert_true(w->mcplex > 0);
    w->url = mx_xasprintf("http://127.0.0.1:%d/mcp", w->port);
    w->log = mx_it_path("mcplex.log");
    free(s1);
    free(s2);
    free(s3);
    free(cfg);
    free(cfg_path);
}

static void free_world(struct world *w)
{
    free(w->url);
    free(w->log);
    free(w->trace);
}

static bool has_name(json_t *names, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v)
    {
        if (strcmp(json_string_value(v), name) == 0)
            return true;
    }
    return false;
}

static size_t count_name(json_t *names, const char *name)
{
    size_t i, n = 0;
    json_t *v;
    json_array_foreach(names, i, v)
    {
        if (strcmp(json_string_value(v), name) == 0)
            n++;
    }
    return n;
}

static json_t *client(const struct world *w, const char *scenario, const char *args)
{
    json_t *out = NULL;
    int rc = mx_it_client(w->url, scenario, args, NULL, &out);
    if (rc != 0 || out == NULL)
        fail_msg("client %s %s: exit %d", scenario, args ? args : "", rc);
    return out;
}

static const char *result_text(json_t *out)
{
    json_t *r = json_object_get(out, "result");
    return json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
}

static json_t *sim_stats(const struct world *w)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/__stats", w->sim_port);
    char *auth = mx_xasprintf("Authorization: Bearer %s", w->sim_token);
    const char *hdrs[] = {auth, NULL};
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("GET", url, hdrs, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    json_t *j = json_loads(body, 0, NULL);
    assert_non_null(j);
    free(body);
    free(auth);
    free(url);
    return j;
}

static void assert_merged_lists(const struct world *w)
{
    json_t *out = client(w, "list-all", NULL);
    assert_true(json_is_true(json_object_get(out, "ok")));
    json_t *tools = json_object_get(out, "tools");
    json_t *names = json_object_get(tools, "names");
    /* every server-everything name is held by both: prefixed in both */
    static const char *const both[] = {
        "echo", "get-sum", "get-env", "trigger-long-running-operation", "trigger-sampling-request"};
    for (size_t i = 0; i < sizeof(both) / sizeof(both[0]); i++) {
        char a[96], b[96];
        snprintf(a, sizeof(a), "ev1_%s", both[i]);
        snprintf(b, sizeof(b), "ev2_%s", both[i]);
        if (!has_name(names, a) || !has_name(names, b))
            fail_msg("missing %s or %s", a, b);
        assert_false(has_name(names, both[i]));
    }
    /* the sim's names: plain when only it has them, prefixed on collision */
    assert_true(has_name(names, "whoami"));
    assert_true(has_name(names, "slow"));
    assert_true(has_name(names, "add"));
    assert_true(has_name(names, "sim_echo"));
    assert_true(has_name(names, "sim_get-env"));
    /* one entry per name, in order, over several pages */
    size_t n = json_array_size(names);
    assert_true(n >= 30);
    for (size_t i = 1; i < n; i++)
        assert_true(strcmp(json_string_value(json_array_get(names, i - 1)),
                           json_string_value(json_array_get(names, i))) < 0);
    assert_int_equal(json_integer_value(json_object_get(tools, "pages")),
                     (json_int_t)((n + PAGE_SIZE - 1) / PAGE_SIZE));

    json_t *prompts = json_object_get(json_object_get(out, "prompts"), "names");
    assert_true(has_name(prompts, "greet"));
    assert_true(has_name(prompts, "ev1_simple-prompt"));
    assert_true(has_name(prompts, "ev2_simple-prompt"));

    /* resource URIs are never renamed: the same document from both
     * server-everything instances is listed twice */
    json_t *uris = json_object_get(json_object_get(out, "resources"), "uris");
    assert_true(has_name(uris, "sim://readme"));
    assert_true(has_name(uris, "sim://config"));
    assert_int_equal(count_name(uris, "demo://resource/static/document/features.md"), 2);
    json_t *tpl = json_object_get(json_object_get(out, "resource_templates"), "uris");
    assert_int_equal(count_name(tpl, "demo://resource/dynamic/text/{resourceId}"), 2);
    json_decref(out);
}

static void assert_calls(const struct world *w)
{
    json_t *out = client(w, "call", "{\"name\":\"whoami\"}");
    assert_string_equal(result_text(out), "sim-one");
    json_decref(out);

    out = client(w, "call", "{\"name\":\"ev1_get-sum\",\"arguments\":{\"a\":2,\"b\":3}}");
    assert_non_null(strstr(result_text(out), "5"));
    json_decref(out);

    out = client(w, "call", "{\"name\":\"ev2_echo\",\"arguments\":{\"message\":\"to ev2\"}}");
    assert_non_null(strstr(result_text(out), "to ev2"));
    json_decref(out);

    out = client(w, "call", "{\"name\":\"sim_echo\",\"arguments\":{\"message\":\"to sim\"}}");
    assert_string_equal(result_text(out), "to sim");
    json_decref(out);

    /* an unknown name is the protocol error every revision specifies */
    out = client(w, "call", "{\"name\":\"echo\"}");
    json_t *err = json_object_get(json_object_get(out, "result"), "error");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32602);
    json_decref(out);

    out = client(w, "prompt", "{\"name\":\"greet\",\"arguments\":{\"name\":\"Ada\"}}");
    json_t *msgs = json_object_get(json_object_get(out, "result"), "messages");
    const char *text = json_string_value(
        json_object_get(json_object_get(json_array_get(msgs, 0), "content"), "text"));
    assert_non_null(strstr(text, "Ada"));
    json_decref(out);

    out = client(w, "prompt", "{\"name\":\"ev2_simple-prompt\"}");
    assert_int_equal(json_array_size(json_object_get(json_object_get(out, "result"), "messages")),
                     1);
    json_decref(out);

    out = client(w, "read", "{\"uri\":\"sim://readme\"}");
    json_t *contents = json_object_get(json_object_get(out, "result"), "contents");
    assert_non_null(
        strstr(json_string_value(json_object_get(json_array_get(contents, 0), "text")), "sim-one"));
    json_decref(out);

    /* held by two upstreams (by template): refused, both named */
    out = client(w, "read", "{\"uri\":\"demo://resource/dynamic/text/3\"}");
    err = json_object_get(json_object_get(out, "result"), "error");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32602);
    json_t *cands = json_object_get(json_object_get(err, "data"), "candidates");
    assert_true(has_name(cands, "ev1") && has_name(cands, "ev2"));
    json_decref(out);
}

static void assert_progress_and_cancel(const struct world *w)
{
    json_t *out = client(w, "progress",
                         "{\"name\":\"ev1_trigger-long-running-operation\","
                         "\"arguments\":{\"duration\":1,\"steps\":4}}");
    json_t *progress = json_object_get(out, "progress");
    assert_int_equal(json_array_size(progress), 4);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(progress, 3), "progress")),
                     4);
    assert_non_null(strstr(result_text(out), "Steps: 4"));
    /* the first step arrived well before the answer: streamed, not buffered */
    double first = json_number_value(json_object_get(json_array_get(progress, 0), "t_ms"));
    assert_true(json_number_value(json_object_get(out, "result_t_ms")) - first >= 500.0);
    json_decref(out);

    json_t *before = sim_stats(w);
    json_int_t cancelled0 = json_integer_value(json_object_get(before, "cancelled"));
    json_decref(before);
    out = client(w, "cancel",
                 "{\"name\":\"slow\",\"arguments\":{\"steps\":30,\"interval_ms\":200},"
                 "\"after_progress\":2,\"settle_ms\":700}");
    assert_true(json_is_true(json_object_get(out, "cancelled")));
    assert_true(json_number_value(json_object_get(out, "result_t_ms")) < 3000.0);
    json_decref(out);
    /* the cancellation reached the upstream with the upstream's id */
    json_t *after = sim_stats(w);
    assert_int_equal(json_integer_value(json_object_get(after, "cancelled")), cancelled0 + 1);
    assert_int_equal(json_integer_value(json_object_get(after, "streams")), 0);
    json_decref(after);
}

static void assert_sampling(const struct world *w)
{
    json_t *out = client(w, "sampling",
                         "{\"name\":\"ev2_trigger-sampling-request\","
                         "\"arguments\":{\"prompt\":\"say hi\",\"maxTokens\":20},"
                         "\"reply\":\"hello from the test client\"}");
    json_t *reqs = json_object_get(out, "sampling_requests");
    assert_int_equal(json_array_size(reqs), 1);
    const char *asked = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(json_array_get(reqs, 0), "messages"), 0),
                        "content"),
        "text"));
    assert_non_null(strstr(asked, "say hi"));
    assert_non_null(strstr(result_text(out), "hello from the test client"));
    json_decref(out);
}

/* Sessions sending id 1 and progress token "tok" at once: each gets its own
 * answer and its own progress, nothing of the other's. */
static void assert_same_ids(const struct world *w)
{
    json_t *out = client(w, "same-ids",
                         "{\"calls\":["
                         "{\"name\":\"ev1_trigger-long-running-operation\","
                         "\"arguments\":{\"duration\":1,\"steps\":2}},"
                         "{\"name\":\"ev2_trigger-long-running-operation\","
                         "\"arguments\":{\"duration\":0.6,\"steps\":3}},"
                         "{\"name\":\"slow\",\"arguments\":{\"steps\":5,\"interval_ms\":100}}]}");
    json_t *sessions = json_object_get(out, "sessions");
    static const struct {
        const char *text;
        size_t progress;
    } want[] = {{"Duration: 1 seconds, Steps: 2", 2},
                {"Duration: 0.6 seconds, Steps: 3", 3},
                {"done after 5 steps", 5}};
    assert_int_equal(json_array_size(sessions), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *s = json_array_get(sessions, i);
        const char *text = json_string_value(json_object_get(s, "text"));
        if (text == NULL || strstr(text, want[i].text) == NULL)
            fail_msg("session %zu got \"%s\"", i, text ? text : "(nothing)");
        json_t *ids = json_object_get(s, "ids");
        assert_int_equal(json_array_size(ids), 1);
        assert_int_equal(json_integer_value(json_array_get(ids, 0)), 1);
        json_t *progress = json_object_get(s, "progress");
        assert_int_equal(json_array_size(progress), want[i].progress);
        for (size_t k = 0; k < json_array_size(progress); k++) {
            json_t *p = json_array_get(progress, k);
            assert_string_equal(json_string_value(json_object_get(p, "progressToken")), "tok");
            assert_int_equal(json_integer_value(json_object_get(p, "total")),
                             (json_int_t)want[i].progress);
        }
    }
    json_decref(out);
}

static void wait_file(const char *path, int timeout_ms)
{
    for (int waited = 0; access(path, F_OK) != 0; waited += 50) {
        if (waited > timeout_ms)
            fail_msg("%s did not appear within %d ms", path, timeout_ms);
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* An upstream changes its own list (server-everything adds a session
 * resource, announced on its GET stream): mcplex refreshes its view and
 * tells every client once. */
static void assert_upstream_list_change(const struct world *w)
{
    char *ready = mx_it_path("ready-resources");
    char *args =
        mx_xasprintf("{\"ready_file\":\"%s\",\"wait_ms\":20000,\"kind\":\"resources\"}", ready);
    pid_t listener = mx_it_client_start(w->url, "list-changed", args, NULL);
    assert_true(listener > 0);
    wait_file(ready, 30000);
    json_t *out = client(w, "call",
                         "{\"name\":\"ev1_gzip-file-as-resource\",\"arguments\":{"
                         "\"name\":\"hello.txt\",\"data\":\"data:text/plain;base64,aGVsbG8=\"}}");
    assert_null(json_object_get(json_object_get(out, "result"), "error"));
    json_decref(out);
    out = NULL;
    assert_int_equal(mx_it_node_finish(listener, MX_IT_NODE_TIMEOUT_MS, &out), 0);
    assert_true(json_is_true(json_object_get(out, "notified")));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(out, "changes"), "resources")), 1);
    json_t *before = json_object_get(json_object_get(out, "before"), "uris");
    json_t *after = json_object_get(json_object_get(out, "after"), "uris");
    assert_false(has_name(before, "demo://resource/session/hello.txt"));
    assert_true(has_name(after, "demo://resource/session/hello.txt"));
    json_decref(out);
    free(args);
    free(ready);
}

static char *assert_health(const struct world *w)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/health", w->port);
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("GET", url, NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    json_t *h = json_loads(body, 0, NULL);
    json_t *mcp = json_object_get(h, "mcp");
    json_t *renamed = json_object_get(mcp, "renamed");
    bool found = false;
    size_t i;
    json_t *r;
    json_array_foreach(renamed, i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "name")), "ev1_echo") == 0) {
            assert_string_equal(json_string_value(json_object_get(r, "server")), "ev1");
            assert_string_equal(json_string_value(json_object_get(r, "original")), "echo");
            found = true;
        }
    }
    assert_true(found);
    json_t *ups = json_object_get(mcp, "upstreams");
    assert_int_equal(json_array_size(ups), 3);
    json_array_foreach(ups, i, r)
    {
        assert_true(json_is_true(json_object_get(r, "listed")));
    }
    json_decref(h);
    char *path = mx_it_path("health.json");
    assert_int_equal(mx_it_write_file(path, body, strlen(body)), 0);
    free(body);
    free(url);
    return path;
}

static void assert_no_canary(const struct world *w, const char *extra)
{
    const char *canaries[] = {w->ev1_token, w->ev2_token, w->sim_token};
    const char *files[] = {w->log, w->trace, extra, NULL};
    for (size_t i = 0; i < 3; i++) {
        char **hits = NULL;
        int n = mx_it_scan_for(files, canaries[i], &hits);
        for (int k = 0; k < n; k++)
            fprintf(stderr, "canary %zu found in %s\n", i, hits[k]);
        mx_it_strv_free(hits);
        assert_int_equal(n, 0);
    }
}

static void test_aggregate_three_upstreams(void **state)
{
    struct world w;
    (void)state;
    memset(&w, 0, sizeof(w));
    start_world(&w);
    assert_merged_lists(&w);
    assert_calls(&w);
    assert_progress_and_cancel(&w);
    assert_sampling(&w);
    assert_same_ids(&w);
    assert_upstream_list_change(&w);
    char *health = assert_health(&w);

    /* the trace saw both sides: the client's ids and the upstreams' */
    char *trace = mx_it_read_file(w.trace, NULL);
    assert_non_null(trace);
    assert_non_null(strstr(trace, "\"server\":\"ev2\""));
    assert_non_null(strstr(trace, "sampling/createMessage"));
    free(trace);

    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(w.mcplex, 15000);
    assert_true(st >= 0 && WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_no_canary(&w, health);
    free(health);
    free_world(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_aggregate_three_upstreams, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
