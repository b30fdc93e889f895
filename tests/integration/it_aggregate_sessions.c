/* SPDX-License-Identifier: MIT */
/*
 * Upstream sessions under /mcp. A shared upstream serves 50 concurrent
 * client sessions (official SDK clients) with one upstream session: the
 * sim counts one initialize. A per-client upstream opens one upstream
 * session per client session, lazily, and ends it (DELETE) when the client
 * ends its own. Also the per-server filters and the "always" prefix with a
 * server name holding '_', an upstream session the upstream forgot (404,
 * re-initialized once, invisibly), raw HTTP rules of the endpoint (404 for
 * an unknown session, 400 without one, DELETE, one GET stream per session),
 * and an upstream that refuses its credential: a JSON-RPC error naming the
 * vault entry, never a 401.
 */
#include <errno.h>
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

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

static const char *const json_hdrs[] = {"Content-Type: application/json",
                                        "Accept: application/json, text/event-stream", NULL};

static json_t *stats(int port, const char *token)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/__stats", port);
    char *auth = mx_xasprintf("Authorization: Bearer %s", token);
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

static json_int_t stat_int(json_t *st, const char *group, const char *key)
{
    return json_integer_value(json_object_get(group ? json_object_get(st, group) : st, key));
}

static void control(int port, const char *token, const char *body)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/__control", port);
    char *auth = mx_xasprintf("Authorization: Bearer %s", token);
    const char *hdrs[] = {auth, "Content-Type: application/json", NULL};
    long status = 0;
    assert_int_equal(mx_it_http("POST", url, hdrs, body, &status, NULL), 0);
    assert_int_equal(status, 200);
    free(auth);
    free(url);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static pid_t start_mcplex(const char *name, const char *servers, int *port)
{
    *port = mx_it_free_port();
    char *cfg =
        mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n%s", *port, servers);
    char *file = mx_xasprintf("%s.toml", name);
    char *path = mx_it_path(file);
    assert_int_equal(mx_it_write_file(path, cfg, strlen(cfg)), 0);
    pid_t pid = mx_it_start_mcplex(path, *port);
    assert_true(pid > 0);
    free(cfg);
    free(file);
    free(path);
    return pid;
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

/* 50 client sessions, one upstream session; filters and "always" names. */
static void test_aggregate_shared_fifty_sessions(void **state)
{
    char token[MX_IT_CANARY_SIZE];
    int sim_port, port;
    (void)state;
    mx_it_canary(token, sizeof(token));
    assert_true(mx_it_start_sim("sim", token, NULL, &sim_port) > 0);
    char *secret = mx_it_path("sim.secret");
    assert_int_equal(mx_it_write_file(secret, token, strlen(token)), 0);
    char *servers = mx_xasprintf("[proxy]\nprefix = \"always\"\n"
                                 "[servers.box_one]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                                 "secret = \"file:%s\"\nsession = \"shared\"\n"
                                 "tools_deny = [\"get-*\"]\nprompts = [\"nothing*\"]\n",
                                 sim_port, secret);
    pid_t mcplex = start_mcplex("shared", servers, &port);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    json_t *out = NULL;

    assert_int_equal(
        mx_it_client(url, "many", "{\"count\":50,\"tool\":\"box_one_echo\"}", NULL, &out), 0);
    assert_int_equal(json_integer_value(json_object_get(out, "succeeded")), 50);
    json_decref(out);
    json_t *st = stats(sim_port, token);
    /* one upstream session for all of them */
    assert_int_equal(stat_int(st, "methods", "initialize"), 1);
    assert_int_equal(stat_int(st, "sessions", "created"), 1);
    assert_int_equal(stat_int(st, "tools", "echo"), 50);
    json_decref(st);

    /* "always": every name prefixed, the server name's '_' kept; the
     * filters apply before merging */
    assert_int_equal(mx_it_client(url, "list-all", NULL, NULL, &out), 0);
    json_t *tools = json_object_get(json_object_get(out, "tools"), "names");
    assert_int_equal(json_array_size(tools), 4);
    assert_true(has_name(tools, "box_one_add"));
    assert_true(has_name(tools, "box_one_echo"));
    assert_true(has_name(tools, "box_one_slow"));
    assert_true(has_name(tools, "box_one_whoami"));
    assert_int_equal(json_array_size(json_object_get(json_object_get(out, "prompts"), "names")), 0);
    json_decref(out);

    /* a denied tool cannot be called either */
    assert_int_equal(mx_it_client(url, "call",
                                  "{\"name\":\"box_one_get-env\",\"arguments\":{\"name\":\"X\"}}",
                                  NULL, &out),
                     0);
    json_t *err = json_object_get(json_object_get(out, "result"), "error");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32602);
    json_decref(out);

    /* the upstream forgets every session: the next call re-initializes once,
     * and the client never sees it */
    control(sim_port, token, "{\"action\":\"expire_sessions\"}");
    assert_int_equal(
        mx_it_client(url, "call",
                     "{\"name\":\"box_one_echo\",\"arguments\":{\"message\":\"again\"}}", NULL,
                     &out),
        0);
    json_t *content = json_object_get(json_object_get(out, "result"), "content");
    assert_string_equal(json_string_value(json_object_get(json_array_get(content, 0), "text")),
                        "again");
    json_decref(out);
    st = stats(sim_port, token);
    assert_int_equal(stat_int(st, "methods", "initialize"), 2);
    assert_int_equal(stat_int(st, "status", "404"), 1);
    json_decref(st);

    assert_int_equal(mx_it_signal(mcplex, SIGTERM), 0);
    assert_true(mx_it_wait_exit(mcplex, 15000) >= 0);
    char *log = mx_it_path("mcplex.log");
    const char *files[] = {log, NULL};
    assert_int_equal(mx_it_scan_for(files, token, NULL), 0);
    free(log);
    free(url);
    free(servers);
    free(secret);
    mx_it_pass();
}

/* One upstream session per client session, opened lazily, ended with it. */
static void test_aggregate_per_client_sessions(void **state)
{
    char token[MX_IT_CANARY_SIZE];
    int sim_port, port;
    (void)state;
    mx_it_canary(token, sizeof(token));
    assert_true(mx_it_start_sim("sim", token, NULL, &sim_port) > 0);
    char *secret = mx_it_path("sim.secret");
    assert_int_equal(mx_it_write_file(secret, token, strlen(token)), 0);
    char *servers = mx_xasprintf("[servers.pc]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                                 "secret = \"file:%s\"\nsession = \"per-client\"\n",
                                 sim_port, secret);
    pid_t mcplex = start_mcplex("perclient", servers, &port);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);
    json_t *out = NULL;
    assert_int_equal(mx_it_client(url, "many", "{\"count\":5}", NULL, &out), 0);
    assert_int_equal(json_integer_value(json_object_get(out, "succeeded")), 5);
    json_decref(out);
    json_t *st = stats(sim_port, token);
    assert_int_equal(stat_int(st, "methods", "initialize"), 5);
    json_decref(st);
    /* each client's DELETE ended its upstream session too (not waited for) */
    json_int_t deleted = 0;
    for (int i = 0; i < 60 && deleted < 5; i++) {
        st = stats(sim_port, token);
        deleted = stat_int(st, "sessions", "deleted");
        json_decref(st);
        if (deleted < 5)
            sleep_ms(50);
    }
    assert_int_equal(deleted, 5);
    assert_int_equal(mx_it_signal(mcplex, SIGTERM), 0);
    assert_true(mx_it_wait_exit(mcplex, 15000) >= 0);
    free(url);
    free(servers);
    free(secret);
    mx_it_pass();
}

/* The endpoint's HTTP rules, with raw requests; a refused credential. */
static void test_aggregate_http_rules(void **state)
{
    char token[MX_IT_CANARY_SIZE], wrong[MX_IT_CANARY_SIZE];
    int sim_port, port;
    long status = 0;
    char *body = NULL, *head = NULL;
    (void)state;
    mx_it_canary(token, sizeof(token));
    mx_it_canary(wrong, sizeof(wrong));
    assert_true(mx_it_start_sim("sim", token, NULL, &sim_port) > 0);
    char *secret = mx_it_path("wrong.secret");
    assert_int_equal(mx_it_write_file(secret, wrong, strlen(wrong)), 0);
    char *servers = mx_xasprintf("[servers.locked]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                                 "secret = \"file:%s\"\n",
                                 sim_port, secret);
    pid_t mcplex = start_mcplex("rules", servers, &port);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);

    /* initialize answers even though the only upstream refuses us */
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                       "\"clientInfo\":{\"name\":\"raw\",\"version\":\"1\"}}}";
    assert_int_equal(mx_it_http_full("POST", url, json_hdrs, init, 10000, &status, &head, &body),
                     0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(body, "\"protocolVersion\":\"2025-06-18\""));
    char *sid = strcasestr(head, "mcp-session-id:");
    assert_non_null(sid);
    sid += strlen("mcp-session-id:");
    while (*sid == ' ')
        sid++;
    char *sid_hdr = mx_xasprintf("Mcp-Session-Id: %.*s", (int)strcspn(sid, "\r\n"), sid);
    free(body);
    free(head);
    const char *with[] = {json_hdrs[0], json_hdrs[1], sid_hdr, NULL};

    /* a call to the refusing upstream: JSON-RPC error, HTTP 200, names the
     * server and where its secret comes from */
    assert_int_equal(mx_it_http("POST", url, with,
                                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", &status,
                                &body),
                     0);
    assert_int_equal(status, 200);
    free(body);
    /* its tools were never listed: calls find nothing to route to */
    assert_int_equal(mx_it_http("POST", url, with,
                                "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
                                "\"params\":{\"name\":\"echo\"}}",
                                &status, &body),
                     0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(body, "-32602"));
    free(body);
    char *hurl = mx_xasprintf("http://127.0.0.1:%d/health", port);
    assert_int_equal(mx_it_http("GET", hurl, NULL, NULL, &status, &body), 0);
    assert_non_null(strstr(body, "auth-failed"));
    assert_non_null(strstr(body, "wrong.secret"));
    assert_null(strstr(body, wrong));
    free(body);

    /* ping is answered by mcplex; an unknown method is -32601 */
    assert_int_equal(mx_it_http("POST", url, with,
                                "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}", &status,
                                &body),
                     0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(body, "\"result\":{}"));
    free(body);
    assert_int_equal(mx_it_http("POST", url, with,
                                "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"no/such\"}", &status,
                                &body),
                     0);
    assert_non_null(strstr(body, "-32601"));
    free(body);

    /* no session header: 400; an unknown one: 404 */
    assert_int_equal(mx_it_http("POST", url, json_hdrs,
                                "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}", &status,
                                &body),
                     0);
    assert_int_equal(status, 400);
    free(body);
    const char *bogus[] = {json_hdrs[0], json_hdrs[1],
                           "Mcp-Session-Id: 0123456789abcdef0123456789abcdef", NULL};
    assert_int_equal(mx_it_http("POST", url, bogus,
                                "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", &status,
                                &body),
                     0);
    assert_int_equal(status, 404);
    free(body);
    /* not JSON: 400 parse error; wrong content type: 415 */
    assert_int_equal(mx_it_http("POST", url, with, "{nope", &status, &body), 0);
    assert_int_equal(status, 400);
    assert_non_null(strstr(body, "-32700"));
    free(body);
    const char *text_hdrs[] = {"Content-Type: text/plain",
                               "Accept: application/json, text/event-stream", sid_hdr, NULL};
    assert_int_equal(mx_it_http("POST", url, text_hdrs, "{}", &status, &body), 0);
    assert_int_equal(status, 415);
    free(body);

    /* DELETE ends the session; afterwards it is unknown */
    assert_int_equal(mx_it_http("DELETE", url, with, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    free(body);
    assert_int_equal(mx_it_http("POST", url, with,
                                "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}", &status,
                                &body),
                     0);
    assert_int_equal(status, 404);
    free(body);

    assert_int_equal(mx_it_signal(mcplex, SIGTERM), 0);
    assert_true(mx_it_wait_exit(mcplex, 15000) >= 0);
    char *log = mx_it_path("mcplex.log");
    const char *files[] = {log, NULL};
    assert_int_equal(mx_it_scan_for(files, wrong, NULL), 0);
    free(log);
    free(hurl);
    free(sid_hdr);
    free(url);
    free(servers);
    free(secret);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_aggregate_shared_fifty_sessions, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_aggregate_per_client_sessions, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_aggregate_http_rules, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
