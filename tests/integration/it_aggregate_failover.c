/* SPDX-License-Identifier: MIT */
/*
 * Upstreams coming and going under /mcp, seen by the official SDK client:
 * an upstream that is down at the client's initialize joins later with a
 * tools/list_changed, and its names appear (the names the client already
 * saw keep their meaning; the newcomer's colliding names are prefixed); an
 * upstream killed mid-test makes a call to
 * it fail with a JSON-RPC error naming it and the reason, its tools leave
 * the merged list with a list_changed, the other upstream keeps working;
 * restarted on the same port, the next call succeeds on a new upstream
 * session and its tools are listed again.
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
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

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

static void wait_file(const char *path, int timeout_ms)
{
    for (int waited = 0; access(path, F_OK) != 0; waited += 50) {
        if (waited > timeout_ms)
            fail_msg("%s did not appear within %d ms", path, timeout_ms);
        struct timespec ts = {0, 50 * 1000 * 1000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}

static json_t *finish(pid_t pid)
{
    json_t *out = NULL;
    int rc = mx_it_node_finish(pid, MX_IT_NODE_TIMEOUT_MS, &out);
    if (rc != 0 || out == NULL)
        fail_msg("client exited %d", rc);
    return out;
}

static pid_t start_listener(const char *url, const char *ready)
{
    char *args =
        mx_xasprintf("{\"ready_file\":\"%s\",\"wait_ms\":25000,\"kind\":\"tools\"}", ready);
    pid_t pid = mx_it_client_start(url, "list-changed", args, NULL);
    assert_true(pid > 0);
    free(args);
    wait_file(ready, 30000);
    return pid;
}

static json_t *health_mcp_upstream(int port, const char *name)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/health", port);
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("GET", url, NULL, NULL, &status, &body), 0);
    json_t *h = json_loads(body, 0, NULL);
    json_t *ups = json_object_get(json_object_get(h, "mcp"), "upstreams");
    json_t *found = NULL;
    size_t i;
    json_t *u;
    json_array_foreach(ups, i, u)
    {
        if (strcmp(json_string_value(json_object_get(u, "name")), name) == 0)
            found = json_incref(u);
    }
    json_decref(h);
    free(body);
    free(url);
    assert_non_null(found);
    return found;
}

static void test_aggregate_upstreams_come_and_go(void **state)
{
    char sim_token[MX_IT_CANARY_SIZE], late_token[MX_IT_CANARY_SIZE];
    int sim_port, late_port, port;
    (void)state;
    mx_it_canary(sim_token, sizeof(sim_token));
    mx_it_canary(late_token, sizeof(late_token));
    const char *sim_args[] = {"--name", "sim-a", NULL};
    pid_t sim = mx_it_start_sim("sim", sim_token, sim_args, &sim_port);
    assert_true(sim > 0);
    late_port = mx_it_free_port();
    port = mx_it_free_port();
    assert_true(late_port > 0 && port > 0);

    char *s1 = mx_it_path("sim.secret"), *s2 = mx_it_path("late.secret");
    assert_int_equal(mx_it_write_file(s1, sim_token, strlen(sim_token)), 0);
    assert_int_equal(mx_it_write_file(s2, late_token, strlen(late_token)), 0);
    char *trace = mx_it_path("trace.jsonl");
    /* "sim" gives up waking after 2 s; "late" keeps trying long enough to
     * be found when it starts */
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\ntrace = \"%s\"\nfanout_timeout = \"1s\"\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\nwake_timeout = \"2s\"\n"
                             "[servers.late]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\nwake_timeout = \"40s\"\n",
                             port, trace, sim_port, s1, late_port, s2);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    pid_t mcplex = mx_it_start_mcplex(cfg_path, port);
    assert_true(mcplex > 0);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);

    /* 1. "late" is down when the client starts; it joins with list_changed */
    char *ready = mx_it_path("ready-1");
    pid_t a = start_listener(url, ready);
    const char *late_args[] = {"--listen", NULL, "--name", "late-b", NULL};
    char *late_listen = mx_xasprintf("127.0.0.1:%d", late_port);
    late_args[1] = late_listen;
    int got_port = 0;
    assert_true(mx_it_start_sim("late", late_token, late_args, &got_port) > 0);
    assert_int_equal(got_port, late_port);
    json_t *out = finish(a);
    assert_true(json_is_true(json_object_get(out, "notified")));
    json_t *before = json_object_get(json_object_get(out, "before"), "names");
    json_t *after = json_object_get(json_object_get(out, "after"), "names");
    assert_true(has_name(before, "whoami")); /* only "sim" held it */
    assert_false(has_name(before, "late_whoami"));
    /* now both hold whoami: the one the client saw stays, the newcomer's is prefixed */
    assert_true(has_name(after, "whoami"));
    assert_false(has_name(after, "sim_whoami"));
    assert_true(has_name(after, "late_whoami"));
    json_decref(out);

    /* 2. "sim" dies: a call to it fails naming it; its tools leave the list */
    assert_int_equal(mx_it_signal(sim, SIGTERM), 0);
    assert_true(mx_it_wait_exit(sim, 5000) >= 0);
    free(ready);
    ready = mx_it_path("ready-2");
    pid_t b = start_listener(url, ready);
    assert_int_equal(mx_it_client(url, "call", "{\"name\":\"whoami\"}", NULL, &out), 0);
    json_t *err = json_object_get(json_object_get(out, "result"), "error");
    assert_string_equal(json_string_value(json_object_get(err, "kind")), "jsonrpc");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32010);
    const char *msg = json_string_value(json_object_get(err, "message"));
    assert_non_null(strstr(msg, "'sim'"));
    /* no wake hook: a port that takes no connection fails fast, with the cause */
    assert_non_null(strstr(msg, "is unreachable: connection refused at 127.0.0.1:"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(err, "data"), "server")),
                        "sim");
    json_decref(out);
    /* a client that asked for progress: nothing can wake sim (no wake
     * hook), so no call waits for it and none says it waits; it fails at
     * once with the cause */
    assert_int_equal(mx_it_client(url, "progress", "{\"name\":\"slow\"}", NULL, &out), 0);
    assert_int_equal(json_array_size(json_object_get(out, "progress")), 0);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(out, "result"), "error"), "code")),
                     -32010);
    json_decref(out);
    /* the other upstream keeps working */
    assert_int_equal(mx_it_client(url, "call", "{\"name\":\"late_whoami\"}", NULL, &out), 0);
    json_t *content = json_object_get(json_object_get(out, "result"), "content");
    assert_string_equal(json_string_value(json_object_get(json_array_get(content, 0), "text")),
                        "late-b");
    json_decref(out);
    out = finish(b);
    assert_true(json_is_true(json_object_get(out, "notified")));
    after = json_object_get(json_object_get(out, "after"), "names");
    assert_false(has_name(after, "whoami"));
    assert_true(has_name(after, "late_whoami")); /* names do not move */
    json_decref(out);
    json_t *h = health_mcp_upstream(port, "sim");
    assert_false(json_is_true(json_object_get(h, "listed")));
    assert_non_null(strstr(json_string_value(json_object_get(h, "reason")), "sim"));
    json_decref(h);

    /* 3. restarted on the same port: the next call succeeds (new upstream
     * session after the restarted sim answers 404 for the old one) */
    const char *again_args[] = {"--listen", NULL, "--name", "sim-a2", NULL};
    char *sim_listen = mx_xasprintf("127.0.0.1:%d", sim_port);
    again_args[1] = sim_listen;
    assert_true(mx_it_start_sim("sim-again", sim_token, again_args, &got_port) > 0);
    assert_int_equal(mx_it_client(url, "call", "{\"name\":\"whoami\"}", NULL, &out), 0);
    content = json_object_get(json_object_get(out, "result"), "content");
    assert_string_equal(json_string_value(json_object_get(json_array_get(content, 0), "text")),
                        "sim-a2");
    json_decref(out);
    h = health_mcp_upstream(port, "sim");
    assert_true(json_is_true(json_object_get(h, "listed")));
    json_decref(h);

    assert_int_equal(mx_it_signal(mcplex, SIGTERM), 0);
    int st = mx_it_wait_exit(mcplex, 15000);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *log = mx_it_path("mcplex.log");
    const char *files[] = {log, trace, NULL};
    assert_int_equal(mx_it_scan_for(files, sim_token, NULL), 0);
    assert_int_equal(mx_it_scan_for(files, late_token, NULL), 0);
    free(log);
    free(sim_listen);
    free(late_listen);
    free(ready);
    free(url);
    free(cfg_path);
    free(cfg);
    free(trace);
    free(s1);
    free(s2);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_aggregate_upstreams_come_and_go, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
