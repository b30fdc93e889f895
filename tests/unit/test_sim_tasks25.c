/* SPDX-License-Identifier: MIT */
/*
 * sandbox-sim's tasks of MCP 2025-11-25 without HTTP: the capability per
 * revision, slow as a task (create, get, result, cancel, list, expiry) and
 * the refusals. The sim is an executable, not a library, so its .c files are
 * included here. Holding a tasks/result on the loop (stream.c) is not
 * covered here: this test checks the reply that asks for the hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "../../examples/sandbox-sim/conf.c"
#include "../../examples/sandbox-sim/mcp.c"
#include "../../examples/sandbox-sim/tasks.c"

static struct mx_sim_tasks *table;

/* A 2025-11-25 session's context (tasks on) or an older one's (off). */
static struct mx_sim_mcp_ctx ctx_of(bool tasks)
{
    struct mx_sim_mcp_ctx c = {.name = "tester", .revision = tasks ? "2025-11-25" : "2025-06-18"};
    c.tasks = tasks ? table : NULL;
    return c;
}

static void run(bool tasks, const char *method, const char *params_json, struct mx_sim_reply *r)
{
    struct mx_sim_mcp_ctx c = ctx_of(tasks);
    json_t *params = params_json ? json_loads(params_json, 0, NULL) : NULL;
    if (params_json)
        assert_non_null(params);
    mx_sim_mcp_request(&c, method, params, r);
    json_decref(params);
}

/* |method| with {"taskId": id} in a tasks session. */
static void task_req(const char *method, const char *id, struct mx_sim_reply *r)
{
    struct mx_sim_mcp_ctx c = ctx_of(true);
    json_t *params = json_pack("{s:s}", "taskId", id);
    mx_sim_mcp_request(&c, method, params, r);
    json_decref(params);
}

/* Call slow as a task with |args| and |task|; returns its new taskId. */
static char *create(const char *args, const char *task)
{
    char params[256];
    struct mx_sim_reply r;
    snprintf(params, sizeof(params), "{\"name\":\"slow\",\"arguments\":%s,\"task\":%s}", args,
             task);
    run(true, "tools/call", params, &r);
    assert_int_equal(r.err_code, 0);
    assert_false(r.deferred);
    assert_int_equal(r.tool, MX_SIM_T_SLOW);
    json_t *k = json_object_get(r.result, "task");
    assert_non_null(k);
    char *id = mx_xstrdup(json_string_value(json_object_get(k, "taskId")));
    mx_sim_reply_clear(&r);
    return id;
}

static const char *status_of_id(const char *id)
{
    static char s[32];
    struct mx_sim_reply r;
    task_req("tasks/get", id, &r);
    assert_int_equal(r.err_code, 0);
    snprintf(s, sizeof(s), "%s", json_string_value(json_object_get(r.result, "status")));
    mx_sim_reply_clear(&r);
    return s;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int setup(void **state)
{
    (void)state;
    table = mx_sim_tasks_new();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mx_sim_tasks_free(table);
    table = NULL;
    return 0;
}

static void test_sim_tasks25_capabilities(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    run(true, "initialize", "{\"protocolVersion\":\"2025-11-25\"}", &r);
    json_t *want =
        json_loads("{\"list\":{},\"cancel\":{},\"requests\":{\"tools\":{\"call\":{}}}}", 0, NULL);
    assert_true(
        json_equal(json_object_get(json_object_get(r.result, "capabilities"), "tasks"), want));
    json_decref(want);
    mx_sim_reply_clear(&r);

    run(false, "initialize", "{\"protocolVersion\":\"2025-06-18\"}", &r);
    assert_null(json_object_get(json_object_get(r.result, "capabilities"), "tasks"));
    mx_sim_reply_clear(&r);

    /* only slow says it may run as a task, and only where tasks exist */
    run(true, "tools/list", NULL, &r);
    json_t *tools = json_object_get(r.result, "tools");
    for (size_t i = 0; i < json_array_size(tools); i++) {
        json_t *t = json_array_get(tools, i);
        json_t *ex = json_object_get(t, "execution");
        if (strcmp(json_string_value(json_object_get(t, "name")), "slow") == 0)
            assert_string_equal(json_string_value(json_object_get(ex, "taskSupport")), "optional");
        else
            assert_null(ex);
    }
    mx_sim_reply_clear(&r);
    run(false, "tools/list", NULL, &r);
    assert_null(
        json_object_get(json_array_get(json_object_get(r.result, "tools"), 2), "execution"));
    mx_sim_reply_clear(&r);

    /* older revisions: tasks/... are unknown methods, params.task is ignored */
    static const char *const methods[] = {"tasks/get", "tasks/result", "tasks/list",
                                          "tasks/cancel"};
    for (size_t i = 0; i < 4; i++) {
        run(false, methods[i], "{\"taskId\":\"x\"}", &r);
        assert_int_equal(r.err_code, MX_SIM_RPC_NOMETHOD);
        mx_sim_reply_clear(&r);
    }
    run(false, "tools/call", "{\"name\":\"slow\",\"task\":{}}", &r);
    assert_true(r.deferred);
    mx_sim_reply_clear(&r);
}

static void test_sim_tasks25_lifecycle(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    char *id = create("{\"steps\":2,\"interval_ms\":40}", "{\"ttl\":60000}");

    task_req("tasks/get", id, &r);
    assert_string_equal(json_string_value(json_object_get(r.result, "taskId")), id);
    assert_string_equal(json_string_value(json_object_get(r.result, "status")), "working");
    assert_int_equal(json_integer_value(json_object_get(r.result, "ttl")), 60000);
    assert_int_equal(json_integer_value(json_object_get(r.result, "pollInterval")), 200);
    const char *at = json_string_value(json_object_get(r.result, "createdAt"));
    assert_int_equal(strlen(at), 24); /* 2025-11-25T10:30:00.000Z */
    assert_int_equal(at[23], 'Z');
    assert_non_null(json_object_get(r.result, "lastUpdatedAt"));
    assert_null(json_object_get(r.result, "ttlMs"));
    mx_sim_reply_clear(&r);

    /* tasks/result before the due time asks to be held until then */
    task_req("tasks/result", id, &r);
    assert_true(r.task_wait);
    assert_true(r.wait_ms > 0 && r.wait_ms <= 80);
    assert_string_equal(r.task_id, id);
    assert_null(r.result);
    assert_int_equal(r.err_code, 0);
    mx_sim_reply_clear(&r);

    sleep_ms(100);
    assert_string_equal(status_of_id(id), "completed");
    task_req("tasks/result", id, &r);
    assert_false(r.task_wait);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r.result, "content"), 0), "text")),
                        "done after 2 steps");
    assert_false(json_is_true(json_object_get(r.result, "isError")));
    json_t *rel =
        json_object_get(json_object_get(r.result, "_meta"), "io.modelcontextprotocol/related-task");
    assert_string_equal(json_string_value(json_object_get(rel, "taskId")), id);
    mx_sim_reply_clear(&r);

    /* a finished task cannot be cancelled */
    task_req("tasks/cancel", id, &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    assert_non_null(strstr(r.err_msg, "terminal status"));
    mx_sim_reply_clear(&r);
    free(id);
}

static void test_sim_tasks25_cancel(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    char *id = create("{\"steps\":1,\"interval_ms\":60000}", "{}");
    task_req("tasks/cancel", id, &r);
    assert_int_equal(r.err_code, 0);
    assert_string_equal(json_string_value(json_object_get(r.result, "status")), "cancelled");
    assert_int_equal(json_integer_value(json_object_get(r.result, "ttl")),
                     MX_SIM_TASKS_TTL_DEFAULT_MS);
    mx_sim_reply_clear(&r);
    assert_string_equal(status_of_id(id), "cancelled");

    task_req("tasks/cancel", id, &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);

    /* a cancelled task has no result: an error, not a hold */
    task_req("tasks/result", id, &r);
    assert_false(r.task_wait);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
    free(id);
}

static void test_sim_tasks25_refusals(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    static const char *const methods[] = {"tasks/get", "tasks/result", "tasks/cancel"};
    for (size_t i = 0; i < 3; i++) {
        task_req(methods[i], "0123456789abcdef0123456789abcdef", &r);
        assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
        mx_sim_reply_clear(&r);
        run(true, methods[i], "{}", &r);
        assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
        mx_sim_reply_clear(&r);
    }

    /* MCP 2025-11-25, Tool-Level Negotiation: -32601 for a tool without
     * task support; an unknown tool stays -32602 */
    run(true, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"message\":\"x\"},\"task\":{}}",
        &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_NOMETHOD);
    assert_int_equal(r.tool, -1);
    mx_sim_reply_clear(&r);
    run(true, "tools/call", "{\"name\":\"nope\",\"task\":{}}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);

    /* a bad task object */
    run(true, "tools/call", "{\"name\":\"slow\",\"task\":5}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
    run(true, "tools/call", "{\"name\":\"slow\",\"task\":{\"ttl\":\"long\"}}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);

    /* ttl capped both ways */
    run(true, "tools/call", "{\"name\":\"slow\",\"task\":{\"ttl\":1e12}}", &r);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r.result, "task"), "ttl")),
                     MX_SIM_TASKS_TTL_MAX_MS);
    mx_sim_reply_clear(&r);
    run(true, "tools/call", "{\"name\":\"slow\",\"task\":{\"ttl\":1}}", &r);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r.result, "task"), "ttl")),
                     MX_SIM_TASKS_TTL_MIN_MS);
    mx_sim_reply_clear(&r);

    /* bad arguments: a task that failed at once with the tool error */
    char *id = create("{\"steps\":1001}", "{}");
    assert_string_equal(status_of_id(id), "failed");
    task_req("tasks/result", id, &r);
    assert_true(json_is_true(json_object_get(r.result, "isError")));
    mx_sim_reply_clear(&r);
    free(id);
}

static void test_sim_tasks25_list(void **state)
{
    struct mx_sim_reply r;
    char *ids[60];
    (void)state;
    for (int i = 0; i < 60; i++)
        ids[i] = create("{\"steps\":0}", "{}");

    run(true, "tasks/list", NULL, &r);
    json_t *tasks = json_object_get(r.result, "tasks");
    assert_int_equal(json_array_size(tasks), MX_SIM_TASKS_PAGE);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "taskId")),
                        ids[59]);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "status")),
                        "completed");
    const char *next = json_string_value(json_object_get(r.result, "nextCursor"));
    assert_non_null(next);
    json_t *params = json_pack("{s:s}", "cursor", next);
    mx_sim_reply_clear(&r);

    struct mx_sim_mcp_ctx c = ctx_of(true);
    mx_sim_mcp_request(&c, "tasks/list", params, &r);
    json_decref(params);
    tasks = json_object_get(r.result, "tasks");
    assert_int_equal(json_array_size(tasks), 10);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 9), "taskId")),
                        ids[0]);
    assert_null(json_object_get(r.result, "nextCursor"));
    mx_sim_reply_clear(&r);

    run(true, "tasks/list", "{\"cursor\":\"bogus\"}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
    for (int i = 0; i < 60; i++)
        free(ids[i]);
}

/* Each era sees only its own tasks in the shared table, and the 2026
 * envelope keeps its names. */
static void test_sim_tasks25_eras(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    memset(&r, 0, sizeof(r));
    mx_sim_tasks_create(table, MX_SIM_TASK_RESULT, "modern", 0, NULL, &r);
    char *modern = mx_xstrdup(json_string_value(json_object_get(r.result, "taskId")));
    assert_string_equal(json_string_value(json_object_get(r.result, "resultType")), "task");
    assert_int_equal(json_integer_value(json_object_get(r.result, "ttlMs")), 600000);
    assert_null(json_object_get(r.result, "ttl"));
    mx_sim_reply_clear(&r);

    task_req("tasks/get", modern, &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
    run(true, "tasks/list", NULL, &r);
    assert_int_equal(json_array_size(json_object_get(r.result, "tasks")), 0);
    mx_sim_reply_clear(&r);

    char *old = create("{\"steps\":0}", "{}");
    json_t *params = json_pack("{s:s}", "taskId", old);
    mx_sim_tasks_get(table, params, &r);
    json_decref(params);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
    free(old);
    free(modern);
}

/* A task past its ttl is gone. */
static void test_sim_tasks25_expiry(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    char *id = create("{\"steps\":0}", "{\"ttl\":1000}");
    assert_string_equal(status_of_id(id), "completed");
    sleep_ms(1100);
    task_req("tasks/get", id, &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
    free(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sim_tasks25_capabilities, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_tasks25_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_tasks25_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_tasks25_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_tasks25_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_tasks25_eras, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_tasks25_expiry, setup, teardown),
    };
    return cmocka_run_group_tests_name("sim_tasks25", tests, NULL, NULL);
}
