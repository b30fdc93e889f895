/* SPDX-License-Identifier: MIT */
/*
 * The 2026-07-28 tasks extension (SEP-2663) through mcplex: two sandbox-sim
 * --conformance upstreams, "a" and "b", behind one mcplex. server/discover
 * offers the extension; a task made at /mcp/a comes back with a task id
 * mcplex sealed, which tasks/get answers at /mcp (routed by the id alone)
 * and at /mcp/a, and which /mcp/b refuses (-32602): an id of one upstream
 * never reaches another. A changed character, an id without the extension
 * declared (-32021) and a task cancelled through /mcp follow. No canary in
 * anything mcplex printed.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <signal.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

#define EXT      "io.modelcontextprotocol/tasks"
#define CAPS_EXT "{\"extensions\":{\"" EXT "\":{}}}"

struct world {
    char a_token[MX_IT_CANARY_SIZE];
    char b_token[MX_IT_CANARY_SIZE];
    char *base;
    char *log;
    char *cfg_path;
    char *state_dir;
    int port;
    pid_t mcplex;
};

static void start_world(struct world *w)
{
    int a_port, b_port;
    memset(w, 0, sizeof(*w));
    mx_it_canary(w->a_token, sizeof(w->a_token));
    mx_it_canary(w->b_token, sizeof(w->b_token));
    const char *a_args[] = {"--conformance", "--name", "sim-a", NULL};
    const char *b_args[] = {"--conformance", "--name", "sim-b", NULL};
    assert_true(mx_it_start_sim("a", w->a_token, a_args, &a_port) > 0);
    assert_true(mx_it_start_sim("b", w->b_token, b_args, &b_port) > 0);
    char *a_s = mx_it_secret_file("a.secret", w->a_token);
    char *b_s = mx_it_secret_file("b.secret", w->b_token);
    int port = mx_it_free_port();
    w->state_dir = mx_it_path("state");
    char *cfg =
        mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                     "[proxy]\nstate_dir = \"%s\"\n"
                     "[servers.a]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n"
                     "[servers.b]\nurl = \"http://127.0.0.1:%d/mcp\"\nsecret = \"file:%s\"\n",
                     port, w->state_dir, a_port, a_s, b_port, b_s);
    w->cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(w->cfg_path, cfg, strlen(cfg)), 0);
    w->port = port;
    w->mcplex = mx_it_start_mcplex(w->cfg_path, port);
    assert_true(w->mcplex > 0);
    w->base = mx_xasprintf("http://127.0.0.1:%d", port);
    w->log = mx_it_path("mcplex.log");
    free(a_s);
    free(b_s);
    free(cfg);
}

/* POST a 2026-07-28 request |method| with |params| (the inside of the
 * object, "" for none) and clientCapabilities |caps| to |path|; Mcp-Name
 * |name| when not NULL. */
static void post26(const struct world *w, const char *path, const char *method, const char *name,
                   const char *params, const char *caps, struct mx_it_answer *a)
{
    mx_it_post26(w->base, path, method, name, params, caps, NULL, NULL, NULL, a);
}

/* tasks/|verb| of |id| at |path| with the extension declared. */
static void task_req(const struct world *w, const char *path, const char *verb, const char *id,
                     struct mx_it_answer *a)
{
    char method[32];
    char *params = mx_xasprintf("\"taskId\":\"%s\"", id);
    snprintf(method, sizeof(method), "tasks/%s", verb);
    post26(w, path, method, id, params, CAPS_EXT, a);
    free(params);
}

/* A slow_compute task of |seconds| made at |path|: its client task id. */
static char *make_task(const struct world *w, const char *path, int seconds)
{
    struct mx_it_answer a;
    char *params = mx_xasprintf(
        "\"name\":\"slow_compute\",\"arguments\":{\"seconds\":%d,\"label\":\"it\"}", seconds);
    post26(w, path, "tools/call", "slow_compute", params, CAPS_EXT, &a);
    free(params);
    assert_int_equal(a.status, 200);
    json_t *r = mx_it_result(&a);
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "task");
    assert_string_equal(json_string_value(json_object_get(r, "status")), "working");
    const char *id = json_string_value(json_object_get(r, "taskId"));
    assert_non_null(id);
    char *out = mx_xstrdup(id);
    mx_it_answer_clear(&a);
    return out;
}

static void test_tasks_2026(void **state)
{
    struct world w;
    struct mx_it_answer a;
    (void)state;
    start_world(&w);

    /* the extension is offered at both kinds of endpoint */
    post26(&w, "/mcp", "server/discover", NULL, "", "{}", &a);
    json_t *ext = json_object_get(json_object_get(mx_it_result(&a), "capabilities"), "extensions");
    assert_true(json_is_object(json_object_get(ext, EXT)));
    mx_it_answer_clear(&a);
    post26(&w, "/mcp/b", "server/discover", NULL, "", "{}", &a);
    ext = json_object_get(json_object_get(mx_it_result(&a), "capabilities"), "extensions");
    assert_true(json_is_object(json_object_get(ext, EXT)));
    mx_it_answer_clear(&a);

    char *ta = make_task(&w, "/mcp/a", 60);
    char *tb = make_task(&w, "/mcp/b", 60);
    assert_string_not_equal(ta, tb);

    /* /mcp routes by the id alone; the answer names the id the client holds */
    task_req(&w, "/mcp", "get", ta, &a);
    assert_int_equal(a.status, 200);
    assert_string_equal(json_string_value(json_object_get(mx_it_result(&a), "taskId")), ta);
    assert_string_equal(json_string_value(json_object_get(mx_it_result(&a), "status")), "working");
    mx_it_answer_clear(&a);
    task_req(&w, "/mcp/a", "get", ta, &a);
    assert_string_equal(json_string_value(json_object_get(mx_it_result(&a), "taskId")), ta);
    mx_it_answer_clear(&a);

    /* a's task id never addresses b */
    task_req(&w, "/mcp/b", "get", ta, &a);
    assert_int_equal(mx_it_error_code(&a), -32602);
    mx_it_answer_clear(&a);
    task_req(&w, "/mcp/b", "cancel", ta, &a);
    assert_int_equal(mx_it_error_code(&a), -32602);
    mx_it_answer_clear(&a);

    /* a changed character is no task id */
    char *forged = mx_xstrdup(ta);
    forged[strlen(forged) / 2] = forged[strlen(forged) / 2] == 'A' ? 'B' : 'A';
    task_req(&w, "/mcp", "get", forged, &a);
    assert_int_equal(mx_it_error_code(&a), -32602);
    mx_it_answer_clear(&a);

    /* without the extension declared: -32021 with HTTP 400 */
    char *params = mx_xasprintf("\"taskId\":\"%s\"", ta);
    post26(&w, "/mcp", "tasks/get", ta, params, "{}", &a);
    assert_int_equal(a.status, 400);
    assert_int_equal(mx_it_error_code(&a), -32021);
    mx_it_answer_clear(&a);
    free(params);

    /* cancel through /mcp: a's task ends cancelled, b's runs on */
    task_req(&w, "/mcp", "cancel", ta, &a);
    assert_int_equal(a.status, 200);
    assert_string_equal(json_string_value(json_object_get(mx_it_result(&a), "resultType")),
                        "complete");
    assert_null(json_object_get(mx_it_result(&a), "taskId"));
    mx_it_answer_clear(&a);
    task_req(&w, "/mcp", "get", ta, &a);
    assert_string_equal(json_string_value(json_object_get(mx_it_result(&a), "status")),
                        "cancelled");
    mx_it_answer_clear(&a);
    task_req(&w, "/mcp", "get", tb, &a);
    assert_string_equal(json_string_value(json_object_get(mx_it_result(&a), "status")), "working");
    mx_it_answer_clear(&a);
    task_req(&w, "/mcp/b", "cancel", tb, &a);
    mx_it_answer_clear(&a);

    /* a task outlives an mcplex restart: its id still opens, to the same
     * upstream; the key that seals ids is kept in the state dir, owner-only */
    char *tl = make_task(&w, "/mcp/a", 60);
    assert_int_equal(mx_it_signal(w.mcplex, SIGTERM), 0);
    assert_int_equal(mx_it_wait_exit(w.mcplex, 10000), 0);
    w.mcplex = mx_it_start_mcplex(w.cfg_path, w.port);
    assert_true(w.mcplex > 0);
    task_req(&w, "/mcp/a", "get", tl, &a);
    assert_int_equal(a.status, 200);
    assert_string_equal(json_string_value(json_object_get(mx_it_result(&a), "taskId")), tl);
    assert_string_equal(json_string_value(json_object_get(mx_it_result(&a), "status")), "working");
    mx_it_answer_clear(&a);
    char *key = mx_xasprintf("%s/task-key", w.state_dir);
    struct stat st;
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    task_req(&w, "/mcp/a", "cancel", tl, &a);
    mx_it_answer_clear(&a);
    free(key);
    free(tl);

    const char *files[] = {w.log, NULL};
    const char *canaries[] = {w.a_token, w.b_token};
    assert_int_equal(mx_it_canary_hits(files, canaries, 2), 0);
    free(forged);
    free(ta);
    free(tb);
    free(w.base);
    free(w.log);
    free(w.cfg_path);
    free(w.state_dir);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tasks_2026, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
