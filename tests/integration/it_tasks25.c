/* SPDX-License-Identifier: MIT */
/*
 * The experimental tasks of MCP 2025-11-25 through mcplex: the official SDK
 * client calls server-everything's task tool simulate-research-query as a
 * task at /mcp/everything and at /mcp, follows its status to the end, gets
 * its result, then tasks/get and tasks/list. The task id the client sees is
 * mcplex's sealed one, never the server's own (a 32-digit hex id, kept in
 * the trace): the same id in the creation, every status, the result's
 * related-task and the list; a second task is cancelled by its sealed id;
 * a made-up id is refused with -32602. The server's
 * notifications/tasks/status reach the client that made the task, with the
 * same sealed id, though its upstream session is shared by every client:
 * mcplex's book of tasks knows whose task it is.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
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

#define TOOL "simulate-research-query"

struct world {
    char token[MX_IT_CANARY_SIZE];
    int port;
    char *trace;
    char *cfg_path;
    pid_t mcplex;
};

static void world_start(struct world *w)
{
    int ev_port;
    mx_it_canary(w->token, sizeof(w->token));
    assert_true(mx_it_start_everything(w->token, &ev_port) > 0);
    char *secret = mx_it_secret_file("everything.secret", w->token);
    w->port = mx_it_free_port();
    w->trace = mx_it_path("trace.jsonl");
    char *state = mx_it_path("state");
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\ntrace = \"%s\"\nstate_dir = \"%s\"\n"
                             "[servers.everything]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\nsecret = \"file:%s\"\n",
                             w->port, w->trace, state, ev_port, secret);
    w->cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(w->cfg_path, cfg, strlen(cfg)), 0);
    w->mcplex = mx_it_start_mcplex(w->cfg_path, w->port);
    assert_true(w->mcplex > 0);
    free(state);
    free(cfg);
    free(secret);
}

static bool is_hex32(const char *s)
{
    if (s == NULL || strlen(s) != 32)
        return false;
    return strspn(s, "0123456789abcdef") == 32;
}

/* One task run at |path| (the tool's name there is |tool|). */
static void run_task(struct world *w, const char *path, const char *tool)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d%s", w->port, path);
    char *args = mx_xasprintf("{\"name\":\"%s\",\"arguments\":{\"topic\":\"tides\"},"
                              "\"forged_id\":\"0123456789abcdef0123456789abcdef\"}",
                              tool);
    json_t *out = mx_it_client_ok(url, "task", args);
    json_t *task = json_object_get(out, "task");
    const char *id = json_string_value(json_object_get(task, "created"));
    fprintf(stderr, "# %s: task id %s\n", path, id ? id : "(none)");
    if (!json_is_null(json_object_get(task, "error")))
        fail_msg("the task failed: %s", json_dumps(json_object_get(task, "error"), 0));
    assert_non_null(id);
    /* mcplex's own id, not the server's */
    assert_false(is_hex32(id));

    json_t *st;
    size_t i;
    assert_true(json_array_size(json_object_get(task, "statuses")) >= 1);
    json_array_foreach(json_object_get(task, "statuses"), i, st)
    {
        assert_string_equal(json_string_value(json_object_get(st, "id")), id);
    }
    /* the status notifications name this task by its sealed id (or the
     * second task the client starts later, which it also hears of) */
    const char *second = json_string_value(json_object_get(out, "cancel_id"));
    size_t mine = 0;
    json_array_foreach(json_object_get(task, "notified"), i, st)
    {
        const char *nid = json_string_value(json_object_get(st, "id"));
        assert_non_null(nid);
        if (strcmp(nid, id) == 0)
            mine++;
        else
            assert_true(second && strcmp(nid, second) == 0);
    }
    fprintf(stderr, "# %s: %zu status notifications of this task\n", path, mine);
    assert_true(mine >= 1);
    json_t *result = json_object_get(task, "result");
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
    assert_non_null(text);
    assert_non_null(strstr(text, "Research Report: tides"));
    const char *related = json_string_value(json_object_get(
        json_object_get(json_object_get(result, "_meta"), "io.modelcontextprotocol/related-task"),
        "taskId"));
    if (related)
        assert_string_equal(related, id);

    json_t *got = json_object_get(out, "get");
    assert_string_equal(json_string_value(json_object_get(got, "taskId")), id);
    assert_string_equal(json_string_value(json_object_get(got, "status")), "completed");

    bool listed = false;
    json_t *t;
    json_array_foreach(json_object_get(json_object_get(out, "list"), "tasks"), i, t)
    {
        const char *tid = json_string_value(json_object_get(t, "taskId"));
        assert_false(is_hex32(tid));
        if (tid && strcmp(tid, id) == 0)
            listed = true;
    }
    assert_true(listed);

    /* the second task, cancelled by its sealed id */
    const char *cancel_id = json_string_value(json_object_get(out, "cancel_id"));
    assert_non_null(cancel_id);
    assert_false(is_hex32(cancel_id));
    assert_string_not_equal(cancel_id, id);
    json_t *cancelled = json_object_get(out, "cancel");
    if (json_object_get(cancelled, "error"))
        fail_msg("tasks/cancel failed: %s", json_dumps(cancelled, 0));
    assert_string_equal(json_string_value(json_object_get(cancelled, "taskId")), cancel_id);
    assert_string_equal(json_string_value(json_object_get(cancelled, "status")), "cancelled");

    /* a server-looking id mcplex never sealed */
    json_t *forged = json_object_get(json_object_get(out, "forged"), "error");
    assert_non_null(forged);
    assert_int_equal(json_integer_value(json_object_get(forged, "code")), -32602);
    json_decref(out);
    free(args);
    free(url);
}

static void test_tasks25_scoped(void **state)
{
    struct world w;
    (void)state;
    world_start(&w);
    run_task(&w, "/mcp/everything", TOOL);
    /* the server's own ids did go by, upstream of mcplex */
    char *trace = mx_it_read_file(w.trace, NULL);
    assert_non_null(trace);
    assert_non_null(strstr(trace, "\"taskId\""));
    free(trace);
    free(w.trace);
    free(w.cfg_path);
    mx_it_pass();
}

static void test_tasks25_merged(void **state)
{
    struct world w;
    (void)state;
    world_start(&w);
    run_task(&w, "/mcp", TOOL);
    free(w.trace);
    free(w.cfg_path);
    mx_it_pass();
}

/* server-everything keeps a task in the MCP session that made it: mcplex
 * keeps that upstream session across its restart (beside the catalogue in
 * the state dir, never ended with DELETE when it stops), so a new client's
 * tasks/result of the task reaches it after mcplex restarted. */
static void test_tasks25_restart(void **state)
{
    struct world w;
    (void)state;
    world_start(&w);
    char *url = mx_xasprintf("http://127.0.0.1:%d/mcp", w.port);
    char *ready = mx_it_path("ready");
    char *go = mx_it_path("go");
    char *args = mx_xasprintf("{\"name\":\"%s\",\"arguments\":{\"topic\":\"currents\"},"
                              "\"ready_file\":\"%s\",\"go_file\":\"%s\"}",
                              TOOL, ready, go);
    assert_int_equal(mx_it_write_file(go, "go\n", 3), 0);
    json_t *out = mx_it_client_ok(url, "task-pause", args);
    const char *id = json_string_value(
        json_object_get(json_object_get(json_object_get(out, "created"), "task"), "taskId"));
    assert_non_null(id);
    assert_false(is_hex32(id));
    char *rargs = mx_xasprintf("{\"id\":\"%s\"}", id);
    json_decref(out);

    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    assert_int_equal(mx_it_wait_exit(w.mcplex, 10000), 0);
    w.mcplex = mx_it_start_mcplex(w.cfg_path, w.port);
    assert_true(w.mcplex > 0);
    out = mx_it_client_ok(url, "task-result", rargs);
    json_t *result = json_object_get(out, "result");
    if (json_object_get(result, "error"))
        fail_msg("tasks/result after the restart failed: %s", json_dumps(result, 0));
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
    assert_non_null(text);
    assert_non_null(strstr(text, "Research Report: currents"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "get"), "status")),
                        "completed");
    json_decref(out);

    /* without the kept session the server has lost the task: the client
     * hears so, in words that never show the server's own id */
    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    assert_int_equal(mx_it_wait_exit(w.mcplex, 10000), 0);
    char *cat = mx_it_path("state/catalogue");
    DIR *d = opendir(cat);
    assert_non_null(d);
    int removed = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (n > 8 && strcmp(e->d_name + n - 8, ".session") == 0) {
            char *f = mx_xasprintf("%s/%s", cat, e->d_name);
            assert_int_equal(unlink(f), 0);
            free(f);
            removed++;
        }
    }
    closedir(d);
    assert_int_equal(removed, 1);
    w.mcplex = mx_it_start_mcplex(w.cfg_path, w.port);
    assert_true(w.mcplex > 0);
    out = mx_it_client_ok(url, "task-result", rargs);
    const char *msg = json_string_value(
        json_object_get(json_object_get(json_object_get(out, "result"), "error"), "message"));
    assert_non_null(msg);
    fprintf(stderr, "# a lost task: %s\n", msg);
    for (const char *p = msg; *p; p++)
        assert_false(strspn(p, "0123456789abcdef") >= 32);
    json_decref(out);
    free(cat);
    /* what is kept names no credential */
    char *st = mx_it_path("state");
    const char *paths[] = {st, NULL};
    char **hits = NULL;
    assert_int_equal(mx_it_scan_for(paths, w.token, &hits), 0);
    mx_it_strv_free(hits);
    free(st);
    free(rargs);
    free(args);
    free(go);
    free(ready);
    free(url);
    free(w.trace);
    free(w.cfg_path);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tasks25_scoped, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tasks25_merged, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_tasks25_restart, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
