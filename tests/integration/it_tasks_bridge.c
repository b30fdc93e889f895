/* SPDX-License-Identifier: MIT */
/*
 * Tasks between MCP eras through /mcp, one mcplex in front of a server of
 * each revision:
 * - a 2025-11-25 client (the official SDK's experimental tasks) runs a task
 *   on sandbox-sim --conformance --modern-only, which speaks 2026-07-28
 *   alone (the tasks extension, SEP-2663, with no tasks/result): created,
 *   followed to "completed", its result fetched (mcplex follows the status
 *   for tasks/result), listed, a second one cancelled (the acknowledgement
 *   becomes the cancelled Task), a made-up id refused;
 * - a 2026-07-28 client runs server-everything's simulate-research-query,
 *   a tool that exists only as a 2025-11-25 task: mcplex calls it as one,
 *   the client gets a SEP-2663 CreateTaskResult and follows tasks/get to
 *   "completed" with the result inlined; a second is cancelled with the
 *   acknowledgement SEP-2663 asks for.
 * The ids the clients see are mcplex's sealed ones, never a server's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define TASKS_CAPS "{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}"

struct world {
    char token[MX_IT_CANARY_SIZE];
    char *base;
    int port;
};

static void world_start(struct world *w)
{
    int sim_port, ev_port;
    mx_it_canary(w->token, sizeof(w->token));
    const char *args[] = {"--conformance", "--modern-only", "--name", "sim26", NULL};
    assert_true(mx_it_start_sim("sim26", w->token, args, &sim_port) > 0);
    assert_true(mx_it_start_everything(w->token, &ev_port) > 0);
    char *secret = mx_it_secret_file("up.secret", w->token);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[servers.sim26]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.everything]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\nsecret = \"file:%s\"\n",
                             port, sim_port, secret, ev_port, secret);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    assert_true(mx_it_start_mcplex(cfg_path, port) > 0);
    w->base = mx_xasprintf("http://127.0.0.1:%d", port);
    w->port = port;
    free(cfg_path);
    free(cfg);
    free(secret);
}

static void world_end(struct world *w)
{
    char *log = mx_it_path("mcplex.log");
    const char *files[] = {log, NULL};
    const char *canaries[] = {w->token};
    assert_int_equal(mx_it_canary_hits(files, canaries, 1), 0);
    free(log);
    free(w->base);
}

/* The servers' own task ids are hex (with dashes for a UUID); mcplex's
 * sealed ones are base64url and longer. */
static void assert_sealed(const char *id)
{
    assert_non_null(id);
    assert_true(strlen(id) > 40);
    assert_true(strspn(id, "0123456789abcdef-") != strlen(id));
}

static void test_client25_on_server26(void **state)
{
    struct world w;
    (void)state;
    world_start(&w);
    char *url = mx_xasprintf("%s/mcp", w.base);
    json_t *out = mx_it_client_ok(
        url, "task",
        "{\"name\":\"slow_compute\",\"arguments\":{\"seconds\":1,\"label\":\"tide\"}}");
    json_t *task = json_object_get(out, "task");
    if (!json_is_null(json_object_get(task, "error")))
        fail_msg("the task failed: %s", json_dumps(json_object_get(task, "error"), 0));
    const char *id = json_string_value(json_object_get(task, "created"));
    assert_sealed(id);
    size_t n = json_array_size(json_object_get(task, "statuses"));
    assert_true(n >= 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(task, "statuses"), n - 1), "status")),
                        "completed");
    json_t *result = json_object_get(task, "result");
    assert_string_equal(mx_it_first_text(result), "Computed tide in 1 s");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_object_get(result, "_meta"),
                                                          "io.modelcontextprotocol/related-task"),
                                          "taskId")),
        id);
    /* tasks/get in 2025 form: ttl and pollInterval, no inlined result */
    json_t *got = json_object_get(out, "get");
    assert_string_equal(json_string_value(json_object_get(got, "taskId")), id);
    assert_string_equal(json_string_value(json_object_get(got, "status")), "completed");
    assert_true(json_is_integer(json_object_get(got, "ttl")));
    assert_null(json_object_get(got, "ttlMs"));
    assert_null(json_object_get(got, "result"));
    json_t *tasks = json_object_get(json_object_get(out, "list"), "tasks");
    assert_int_equal(json_array_size(tasks), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "taskId")), id);
    /* SEP-2663 acknowledges a cancel; the 2025 client gets the Task */
    json_t *cancelled = json_object_get(out, "cancel");
    if (json_object_get(cancelled, "error"))
        fail_msg("tasks/cancel failed: %s", json_dumps(cancelled, 0));
    assert_sealed(json_string_value(json_object_get(cancelled, "taskId")));
    assert_string_equal(json_string_value(json_object_get(cancelled, "status")), "cancelled");
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(out, "forged"), "error"), "code")),
                     -32602);
    json_decref(out);
    free(url);
    world_end(&w);
    mx_it_pass();
}

/* subscriptions/listen (id 90) following task |id|: the open socket, its
 * acknowledgement read and checked. */
static int listen_task(const struct world *w, const char *id, char **acc, size_t *len)
{
    char *body = mx_xasprintf(
        "{\"jsonrpc\":\"2.0\",\"id\":90,\"method\":\"subscriptions/listen\",\"params\":{"
        "\"notifications\":{\"taskIds\":[\"%s\",\"not-a-task\"]},\"_meta\":{"
        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientCapabilities\":" TASKS_CAPS "}}}",
        id);
    int fd = mx_it_raw_post26(w->port, "subscriptions/listen", NULL, body);
    assert_true(mx_it_raw_wait(fd, acc, len, "notifications/subscriptions/acknowledged", 1, 10000));
    char *want = mx_xasprintf("\"taskIds\":[\"%s\"]", id);
    assert_non_null(strstr(*acc, want)); /* what is not a task id is left out */
    free(want);
    free(body);
    return fd;
}

/* A 2026-07-28 client's tools/call of |tool| with |args| that makes a task:
 * a SEP-2663 CreateTaskResult with a sealed id, which it returns. */
static char *create26(const struct world *w, const char *tool, const char *args)
{
    struct mx_it_answer a;
    char *params = mx_xasprintf("\"name\":\"%s\",\"arguments\":%s", tool, args);
    mx_it_post26(w->base, "/mcp", "tools/call", tool, params, TASKS_CAPS, NULL, NULL, NULL, &a);
    json_t *created = mx_it_result(&a);
    assert_string_equal(json_string_value(json_object_get(created, "resultType")), "task");
    assert_non_null(json_object_get(created, "ttlMs"));
    assert_null(json_object_get(created, "task"));
    char *id = mx_xstrdup(json_string_value(json_object_get(created, "taskId")));
    assert_sealed(id);
    mx_it_answer_clear(&a);
    free(params);
    return id;
}

/* Read listen stream |fd| until task |id| is "completed": a
 * notifications/tasks naming it by the sealed id, tagged with the listen's
 * subscription (90), its text holding |text| when not NULL; |fd| is closed
 * and |*acc| freed. */
static void assert_followed(int fd, char **acc, size_t *len, const char *id, const char *text,
                            int timeout_ms)
{
    assert_true(mx_it_raw_wait(fd, acc, len, "\"status\":\"completed\"", 1, timeout_ms));
    const char *note = strstr(*acc, "\"method\":\"notifications/tasks\"");
    assert_non_null(note);
    char *named = mx_xasprintf("\"taskId\":\"%s\"", id);
    assert_non_null(strstr(note, named));
    assert_non_null(strstr(note, "\"io.modelcontextprotocol/subscriptionId\":90"));
    if (text)
        assert_non_null(strstr(note, text));
    /* SEP-2663 form, never 2025's */
    assert_null(strstr(*acc, "\"ttl\":"));
    free(named);
    close(fd);
    free(*acc);
    *acc = NULL;
}

static json_t *get26(const struct world *w, const char *id, struct mx_it_answer *a)
{
    char *params = mx_xasprintf("\"taskId\":\"%s\"", id);
    mx_it_post26(w->base, "/mcp", "tasks/get", id, params, TASKS_CAPS, NULL, NULL, NULL, a);
    free(params);
    return mx_it_result(a);
}

static void test_client26_on_server25(void **state)
{
    struct world w;
    (void)state;
    world_start(&w);
    struct mx_it_answer a = {0};
    /* a tool that runs only as a task, on a 2025-11-25 server */
    char *id = create26(&w, "simulate-research-query", "{\"topic\":\"tides\"}");
    /* its status notifications, for a 2026 client that follows it */
    char *acc = NULL;
    size_t len = 0;
    int fd = listen_task(&w, id, &acc, &len);

    /* followed to its end: the result inlined, as SEP-2663 has it */
    const char *status = NULL;
    json_t *t = NULL;
    for (int i = 0; i < 60; i++) {
        mx_it_answer_clear(&a);
        t = get26(&w, id, &a);
        status = json_string_value(json_object_get(t, "status"));
        assert_non_null(status);
        if (strcmp(status, "working") != 0)
            break;
        usleep(250 * 1000);
    }
    assert_string_equal(status, "completed");
    mx_it_assert_modern_result(t, false);
    assert_string_equal(json_string_value(json_object_get(t, "taskId")), id);
    const char *text = mx_it_first_text(json_object_get(t, "result"));
    assert_non_null(text);
    assert_non_null(strstr(text, "Research Report: tides"));
    /* nothing names the server's own id */
    assert_null(json_object_get(json_object_get(json_object_get(t, "result"), "_meta"),
                                "io.modelcontextprotocol/related-task"));
    mx_it_answer_clear(&a);
    /* notifications/tasks as SEP-2663 has them, by the sealed id, on the
     * listen stream they were asked on */
    assert_followed(fd, &acc, &len, id, NULL, 10000);

    /* a second, cancelled: an acknowledgement, then the Task says so */
    char *id2 = create26(&w, "simulate-research-query", "{\"topic\":\"ebb\"}");
    char *params = mx_xasprintf("\"taskId\":\"%s\"", id2);
    mx_it_post26(w.base, "/mcp", "tasks/cancel", id2, params, TASKS_CAPS, NULL, NULL, NULL, &a);
    json_t *ack = mx_it_result(&a);
    mx_it_assert_modern_result(ack, false);
    assert_null(json_object_get(ack, "taskId"));
    assert_null(json_object_get(ack, "status"));
    mx_it_answer_clear(&a);
    t = get26(&w, id2, &a);
    assert_string_equal(json_string_value(json_object_get(t, "status")), "cancelled");
    mx_it_answer_clear(&a);
    free(params);
    free(id2);
    free(id);
    world_end(&w);
    mx_it_pass();
}

/* A 2026-07-28 client follows a 2026-07-28 server's task: mcplex follows it
 * on the server's listen stream and passes notifications/tasks on. */
static void test_client26_follows_server26(void **state)
{
    struct world w;
    (void)state;
    world_start(&w);
    char *id = create26(&w, "slow_compute", "{\"seconds\":2,\"label\":\"neap\"}");
    char *acc = NULL;
    size_t len = 0;
    int fd = listen_task(&w, id, &acc, &len);
    assert_followed(fd, &acc, &len, id, "Computed neap in 2 s", 15000);
    free(id);
    world_end(&w);
    mx_it_pass();
}

/* A 2025-11-25 request |body| in session |sid| at |url|: its result. */
static json_t *post25(const char *url, const char *sid, const char *body, struct mx_it_answer *a)
{
    char *sid_h = mx_xasprintf("Mcp-Session-Id: %s", sid);
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream",
                          "MCP-Protocol-Version: 2025-11-25", sid_h, NULL};
    memset(a, 0, sizeof(*a));
    assert_int_equal(
        mx_it_http_full("POST", url, hdrs, body, 30000, &a->status, &a->headers, &a->body), 0);
    mx_it_answer_parse(a);
    free(sid_h);
    return mx_it_result(a);
}

/* A 2025 session's task on |tool|: its sealed id. */
static char *create25(const char *url, const char *sid, const char *tool, const char *args)
{
    struct mx_it_answer a;
    char *body = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
                              "{\"name\":\"%s\",\"arguments\":%s,\"task\":{\"ttl\":60000}}}",
                              tool, args);
    json_t *task = json_object_get(post25(url, sid, body, &a), "task");
    char *id = mx_xstrdup(json_string_value(json_object_get(task, "taskId")));
    assert_sealed(id);
    mx_it_answer_clear(&a);
    free(body);
    return id;
}

/* tasks/list at /mcp is the caller's own tasks, across both servers (one
 * bridged from 2026-07-28), and no other client's. */
static void test_list_is_the_callers(void **state)
{
    struct world w;
    struct mx_it_answer a;
    char sid_a[128], sid_b[128];
    (void)state;
    world_start(&w);
    char *url = mx_xasprintf("%s/mcp", w.base);
    mx_it_open_session(url, "client-a", sid_a, sizeof(sid_a));
    mx_it_open_session(url, "client-b", sid_b, sizeof(sid_b));
    char *on26 = create25(url, sid_a, "slow_compute", "{\"seconds\":1,\"label\":\"a\"}");
    char *on25 = create25(url, sid_a, "simulate-research-query", "{\"topic\":\"a\"}");
    static const char list[] = "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tasks/list\"}";
    json_t *tasks = json_object_get(post25(url, sid_a, list, &a), "tasks");
    assert_int_equal(json_array_size(tasks), 2);
    bool seen26 = false, seen25 = false;
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t)
    {
        const char *id = json_string_value(json_object_get(t, "taskId"));
        assert_non_null(id);
        seen26 = seen26 || strcmp(id, on26) == 0;
        seen25 = seen25 || strcmp(id, on25) == 0;
        assert_non_null(json_object_get(t, "status"));
    }
    assert_true(seen26 && seen25);
    mx_it_answer_clear(&a);
    tasks = json_object_get(post25(url, sid_b, list, &a), "tasks");
    assert_int_equal(json_array_size(tasks), 0);
    mx_it_answer_clear(&a);
    free(on25);
    free(on26);
    free(url);
    world_end(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_client25_on_server26, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_client26_on_server25, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_client26_follows_server26, mx_it_setup,
                                        mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_list_is_the_callers, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
