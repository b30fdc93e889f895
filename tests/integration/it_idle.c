/* SPDX-License-Identifier: MIT */
/*
 * idle_close with a client that stays: the official TypeScript SDK client
 * opens a session at /mcp, lists the tools (mcplex opens its session and
 * its GET notification stream with a sandbox-sim that offers one) and then
 * stays connected, its session and GET stream to mcplex open, without a
 * call. Once idle_close has passed, the sim sees no connection and no
 * stream from mcplex (so a sandbox would pause) and no request until the
 * next call; /health says nothing is held. The sim's tool list changes
 * while nothing is open; the client's next call reopens the GET stream, and
 * the change reaches the client as list_changed and a fresh list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define IDLE_CLOSE_MS 3000
#define SLACK_MS      2000 /* after idle_close, for the closing to show */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static json_int_t num(json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

/* What the sim sees of mcplex now: connections (the stats request's own
 * left out) and GET streams, and the /mcp requests so far. */
struct seen {
    json_int_t conns;
    json_int_t streams;
    json_int_t requests;
};

static struct seen sim_seen(int port, const char *tok)
{
    struct seen s;
    json_t *st = mx_it_sim_stats(port, tok);
    assert_non_null(st);
    s.conns = num(st, "open_connections") - 1;
    s.streams = num(st, "get_streams");
    s.requests = num(st, "requests");
    json_decref(st);
    return s;
}

/* Poll the sim until it sees exactly |conns| and |streams| or |ms| pass. */
static struct seen sim_wait(int port, const char *tok, json_int_t conns, json_int_t streams,
                            long ms)
{
    double until = now_ms() + (double)ms;
    struct seen s = sim_seen(port, tok);
    while ((s.conns != conns || s.streams != streams) && now_ms() < until) {
        sleep_ms(50);
        s = sim_seen(port, tok);
    }
    return s;
}

/* /health's entry for upstream |name| (caller json_decref()s). */
static json_t *health_upstream(int port, const char *name)
{
    json_t *h = mx_it_health(port, NULL);
    json_t *found = NULL, *u;
    size_t i;
    json_array_foreach(json_object_get(h, "upstreams"), i, u)
    {
        if (strcmp(json_string_value(json_object_get(u, "name")), name) == 0)
            found = json_incref(u);
    }
    json_int_t sessions = num(json_object_get(h, "mcp"), "sessions");
    json_decref(h);
    assert_non_null(found);
    json_object_set_new(found, "mcp_sessions", json_integer(sessions));
    return found;
}

static void test_idle_close_with_client_connected(void **state)
{
    char tok[MX_IT_CANARY_SIZE];
    int sim_port;
    (void)state;
    mx_it_canary(tok, sizeof(tok));
    const char *sim_args[] = {"--name", "idle-sim", "--get-stream", NULL};
    assert_true(mx_it_start_sim("sim", tok, sim_args, &sim_port) > 0);
    char *secret = mx_it_secret_file("sim.secret", tok);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\nidle_close = \"%dms\"\n",
                             port, sim_port, secret, IDLE_CLOSE_MS);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", port);

    char *ready = mx_it_path("ready");
    char *go = mx_it_path("go");
    char *args = mx_xasprintf("{\"ready_file\":\"%s\",\"go_file\":\"%s\",\"wait_ms\":30000,"
                              "\"kind\":\"tools\",\"trigger\":{\"name\":\"echo\","
                              "\"arguments\":{\"message\":\"again\"}}}",
                              ready, go);
    pid_t client = mx_it_client_start(url, "list-changed", args, NULL);
    assert_true(client > 0);
    mx_it_wait_file(ready, 30000);
    double t_ready = now_ms();

    /* in use: mcplex holds its GET stream (and a connection for it) */
    struct seen busy = sim_wait(sim_port, tok, -1, 1, 2000);
    json_t *hu_busy = health_upstream(port, "sim");
    fprintf(stderr, "in use: the sim sees %lld connections, %lld GET streams\n",
            (long long)busy.conns, (long long)busy.streams);
    assert_int_equal(busy.streams, 1);
    assert_true(busy.conns >= 1);

    /* idle_close passes with the client still connected: nothing is held */
    long left = IDLE_CLOSE_MS + SLACK_MS - (long)(now_ms() - t_ready);
    struct seen idle = sim_wait(sim_port, tok, 0, 0, left > 0 ? left : 0);
    double t_idle = now_ms() - t_ready;
    fprintf(stderr, "%.0f ms after the last use: the sim sees %lld connections, %lld GET streams\n",
            t_idle, (long long)idle.conns, (long long)idle.streams);
    assert_false(mx_it_has_exited(client));
    json_t *hu = health_upstream(port, "sim");
    assert_int_equal(num(hu, "mcp_sessions"), 1); /* the client's session stays */
    if (idle.conns != 0 || idle.streams != 0)
        fail_msg("after idle_close mcplex still holds %lld connections and %lld streams",
                 (long long)idle.conns, (long long)idle.streams);
    /* /health said what was held while in use, and says nothing is now */
    json_t *held = json_object_get(hu_busy, "held");
    assert_true(num(held, "connections") >= 1);
    assert_int_equal(num(held, "streams"), 1);
    assert_true(json_is_string(json_object_get(hu_busy, "held_since")));
    json_decref(hu_busy);
    held = json_object_get(hu, "held");
    assert_int_equal(num(held, "connections"), 0);
    assert_int_equal(num(held, "streams"), 0);
    assert_true(json_is_null(json_object_get(hu, "held_since")));
    assert_true(json_is_string(json_object_get(hu, "idle_closed_at")));
    json_decref(hu);

    /* nothing is sent until the next call */
    sleep_ms(1500);
    struct seen quiet = sim_seen(sim_port, tok);
    assert_int_equal(quiet.requests, idle.requests);
    assert_int_equal(quiet.conns, 0);
    assert_int_equal(quiet.streams, 0);

    /* the tool list changes while no stream is open */
    char *auth = mx_xasprintf("Authorization: Bearer %s", tok);
    const char *hdrs[] = {auth, "Content-Type: application/json", NULL};
    char *ctl = mx_xasprintf("http://127.0.0.1:%d/__control", sim_port);
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("POST", ctl, hdrs, "{\"action\":\"add_tool\"}", &status, &body), 0);
    assert_int_equal(status, 200);
    free(body);

    /* the next call reopens the stream; the change reaches the client */
    assert_int_equal(mx_it_write_file(go, "go\n", 3), 0);
    json_t *out = NULL;
    assert_int_equal(mx_it_node_finish(client, MX_IT_NODE_TIMEOUT_MS, &out), 0);
    assert_non_null(out);
    assert_null(json_object_get(json_object_get(out, "trigger"), "error"));
    assert_true(json_is_true(json_object_get(out, "notified")));
    json_t *before = json_object_get(json_object_get(out, "before"), "names");
    json_t *after = json_object_get(json_object_get(out, "after"), "names");
    assert_true(mx_it_has_string(before, "echo"));
    assert_false(mx_it_has_string(before, "gen-1"));
    assert_true(mx_it_has_string(after, "gen-1"));
    json_decref(out);
    /* the next call opened the GET stream again; the lists were fetched anew */
    json_t *st = mx_it_sim_stats(sim_port, tok);
    assert_non_null(st);
    fprintf(stderr, "GET streams opened: %lld, tools/list: %lld\n",
            (long long)num(st, "get_opened"),
            (long long)num(json_object_get(st, "methods"), "tools/list"));
    assert_int_equal(num(st, "get_opened"), 2);
    assert_true(num(json_object_get(st, "methods"), "tools/list") >= 2);
    json_decref(st);

    free(ctl);
    free(auth);
    free(args);
    free(go);
    free(ready);
    free(url);
    free(cfg_path);
    free(cfg);
    free(secret);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_idle_close_with_client_connected, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
