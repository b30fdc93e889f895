/* SPDX-License-Identifier: MIT */
/*
 * sandbox-sim's MCP methods without HTTP: the catalogue, every tool with good
 * and bad arguments, prompts, resources, errors and the JSON-RPC envelopes.
 * The sim is an executable, not a library, so mcp.c is included here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../examples/sandbox-sim/conf.c"
#include "../../examples/sandbox-sim/mcp.c"
#include "../../examples/sandbox-sim/tasks.c"

static json_t *fake_config(void *arg)
{
    (void)arg;
    return json_pack("{s:i}", "pause_after_ms", 250);
}

static const struct mx_sim_mcp_ctx ctx = {
    .name = "tester", .revision = "2025-06-18", .config_json = fake_config};

/* Run |method| with |params_json| (NULL: no params) into |r|. */
static void run(const char *method, const char *params_json, struct mx_sim_reply *r)
{
    json_t *params = params_json ? json_loads(params_json, 0, NULL) : NULL;
    if (params_json)
        assert_non_null(params);
    mx_sim_mcp_request(&ctx, method, params, r);
    json_decref(params);
}

static const char *text_of(const json_t *result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

static bool is_error_result(const json_t *result)
{
    return json_is_true(json_object_get(result, "isError"));
}

/* A tools/call of |tool| with |args_json|: check isError and, if given, the text. */
static void call_tool(const char *tool, const char *args_json, bool want_error, const char *want)
{
    struct mx_sim_reply r;
    json_t *params = json_pack("{s:s}", "name", tool);
    if (args_json)
        json_object_set_new(params, "arguments", json_loads(args_json, 0, NULL));
    mx_sim_mcp_request(&ctx, "tools/call", params, &r);
    json_decref(params);
    assert_int_equal(r.err_code, 0);
    assert_non_null(r.result);
    assert_int_equal(is_error_result(r.result), want_error);
    if (want)
        assert_string_equal(text_of(r.result), want);
    mx_sim_reply_clear(&r);
}

static void test_sim_mcp_method_names(void **state)
{
    (void)state;
    for (int m = 0; m < MX_SIM_M_RESPONSE; m++)
        assert_int_equal(mx_sim_method_find(mx_sim_method_name((enum mx_sim_method)m)), m);
    assert_int_equal(mx_sim_method_find("response"), MX_SIM_M_OTHER);
    assert_int_equal(mx_sim_method_find("tools/cal"), MX_SIM_M_OTHER);
    assert_int_equal(mx_sim_method_find(""), MX_SIM_M_OTHER);
}

static void test_sim_mcp_initialize(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    run("initialize", "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}", &r);
    assert_non_null(r.result);
    assert_string_equal(json_string_value(json_object_get(r.result, "protocolVersion")),
                        "2025-06-18");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r.result, "serverInfo"), "name")),
        "tester");
    json_t *caps = json_object_get(r.result, "capabilities");
    assert_non_null(json_object_get(caps, "tools"));
    assert_non_null(json_object_get(caps, "prompts"));
    assert_non_null(json_object_get(caps, "resources"));
    mx_sim_reply_clear(&r);

    run("ping", NULL, &r);
    assert_true(json_is_object(r.result));
    assert_int_equal(json_object_size(r.result), 0);
    mx_sim_reply_clear(&r);
}

static void test_sim_mcp_tools_list(void **state)
{
    static const char *const names[] = {"echo", "add", "slow", "get-env", "whoami"};
    struct mx_sim_reply r;
    (void)state;
    run("tools/list", "{}", &r);
    json_t *tools = json_object_get(r.result, "tools");
    assert_int_equal(json_array_size(tools), 5);
    for (size_t i = 0; i < 5; i++) {
        json_t *t = json_array_get(tools, i);
        json_t *schema = json_object_get(t, "inputSchema");
        assert_string_equal(json_string_value(json_object_get(t, "name")), names[i]);
        assert_string_equal(json_string_value(json_object_get(schema, "type")), "object");
        assert_true(json_is_object(json_object_get(schema, "properties")));
        assert_true(json_is_array(json_object_get(schema, "required")));
    }
    mx_sim_reply_clear(&r);
}

static void test_sim_mcp_tools(void **state)
{
    (void)state;
    call_tool("echo", "{\"message\":\"hello\"}", false, "hello");
    call_tool("echo", "{\"message\":\"\"}", false, "");
    call_tool("echo", "{}", true, NULL);
    call_tool("echo", "{\"message\":1}", true, NULL);
    call_tool("echo", "{\"message\":\"x\",\"extra\":1}", true, NULL);
    call_tool("echo", "[1]", true, NULL);

    call_tool("add", "{\"a\":2,\"b\":3}", false, "5");
    call_tool("add", "{\"a\":-2,\"b\":0.5}", false, "-1.5");
    call_tool("add", "{\"a\":9223372036854775807,\"b\":1}", false, "9.22337203685478e+18");
    call_tool("add", "{\"a\":1e308,\"b\":1e308}", true, NULL);
    call_tool("add", "{\"a\":\"2\",\"b\":3}", true, NULL);
    call_tool("add", "{\"a\":2}", true, NULL);

    call_tool("whoami", NULL, false, "tester");
    call_tool("whoami", "{\"x\":1}", true, NULL);

    setenv("MX_TEST_SIM_VAR", "visible", 1);
    unsetenv("MX_TEST_SIM_UNSET");
    call_tool("get-env", "{\"name\":\"MX_TEST_SIM_VAR\"}", false, "visible");
    call_tool("get-env", "{\"name\":\"MX_TEST_SIM_UNSET\"}", false, "(unset)");
    call_tool("get-env", "{\"name\":\"\"}", true, NULL);
    call_tool("get-env", "{\"name\":\"A=B\"}", true, NULL);
    call_tool("get-env", "{}", true, NULL);
}

static void test_sim_mcp_slow(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    run("tools/call", "{\"name\":\"slow\"}", &r);
    assert_true(r.deferred);
    assert_int_equal(r.tool, MX_SIM_T_SLOW);
    assert_int_equal(r.steps, 3);
    assert_int_equal(r.interval_ms, 100);
    assert_null(r.progress_token);
    mx_sim_reply_clear(&r);

    run("tools/call",
        "{\"name\":\"slow\",\"arguments\":{\"steps\":7,\"interval_ms\":0},"
        "\"_meta\":{\"progressToken\":\"tok\"}}",
        &r);
    assert_true(r.deferred);
    assert_int_equal(r.steps, 7);
    assert_int_equal(r.interval_ms, 0);
    assert_string_equal(json_string_value(r.progress_token), "tok");
    mx_sim_reply_clear(&r);

    run("tools/call", "{\"name\":\"slow\",\"_meta\":{\"progressToken\":42}}", &r);
    assert_int_equal(json_integer_value(r.progress_token), 42);
    mx_sim_reply_clear(&r);

    /* A token of the wrong type is no token. */
    run("tools/call", "{\"name\":\"slow\",\"_meta\":{\"progressToken\":true}}", &r);
    assert_true(r.deferred);
    assert_null(r.progress_token);
    mx_sim_reply_clear(&r);

    /* Bounds: at the cap and one past it. */
    call_tool("slow", "{\"steps\":1001}", true, NULL);
    call_tool("slow", "{\"steps\":-1}", true, NULL);
    call_tool("slow", "{\"steps\":1.5}", true, NULL);
    call_tool("slow", "{\"interval_ms\":60001}", true, NULL);
    run("tools/call", "{\"name\":\"slow\",\"arguments\":{\"steps\":1000,\"interval_ms\":60000}}",
        &r);
    assert_true(r.deferred);
    mx_sim_reply_clear(&r);
}

static void test_sim_mcp_call_errors(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    run("tools/call", "{\"name\":\"nope\"}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    assert_int_equal(r.tool, -1);
    assert_null(r.result);
    mx_sim_reply_clear(&r);

    run("tools/call", "{}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);

    run("tools/call", "[1]", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);

    run("no/such", NULL, &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_NOMETHOD);
    mx_sim_reply_clear(&r);
}

static void test_sim_mcp_prompts(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    run("prompts/list", NULL, &r);
    json_t *p = json_array_get(json_object_get(r.result, "prompts"), 0);
    assert_string_equal(json_string_value(json_object_get(p, "name")), "greet");
    mx_sim_reply_clear(&r);

    run("prompts/get", "{\"name\":\"greet\",\"arguments\":{\"name\":\"Ada\"}}", &r);
    json_t *msg = json_array_get(json_object_get(r.result, "messages"), 0);
    assert_string_equal(json_string_value(json_object_get(msg, "role")), "user");
    const char *text = json_string_value(json_object_get(json_object_get(msg, "content"), "text"));
    assert_non_null(strstr(text, "Ada"));
    mx_sim_reply_clear(&r);

    run("prompts/get", "{\"name\":\"greet\"}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);

    run("prompts/get", "{\"name\":\"other\",\"arguments\":{\"name\":\"x\"}}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
}

static void test_sim_mcp_resources(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    run("resources/list", NULL, &r);
    json_t *list = json_object_get(r.result, "resources");
    assert_int_equal(json_array_size(list), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "mimeType")),
                        "text/plain");
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 1), "mimeType")),
                        "application/json");
    mx_sim_reply_clear(&r);

    run("resources/read", "{\"uri\":\"sim://readme\"}", &r);
    json_t *c = json_array_get(json_object_get(r.result, "contents"), 0);
    assert_non_null(strstr(json_string_value(json_object_get(c, "text")), "tester"));
    mx_sim_reply_clear(&r);

    run("resources/read", "{\"uri\":\"sim://config\"}", &r);
    c = json_array_get(json_object_get(r.result, "contents"), 0);
    json_t *cfg = json_loads(json_string_value(json_object_get(c, "text")), 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(cfg, "pause_after_ms")), 250);
    json_decref(cfg);
    mx_sim_reply_clear(&r);

    run("resources/read", "{\"uri\":\"sim://missing\"}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_NORES);
    assert_string_equal(json_string_value(json_object_get(r.err_data, "uri")), "sim://missing");
    mx_sim_reply_clear(&r);

    run("resources/read", "{}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);

    run("resources/templates/list", NULL, &r);
    assert_int_equal(json_array_size(json_object_get(r.result, "resourceTemplates")), 0);
    mx_sim_reply_clear(&r);
}

static void test_sim_mcp_envelopes(void **state)
{
    json_t *id = json_integer(7);
    (void)state;
    json_t *e = mx_sim_rpc_error(NULL, MX_SIM_RPC_PARSE, "Parse error", NULL);
    assert_null(json_object_get(e, "id"));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "error"), "code")),
                     MX_SIM_RPC_PARSE);
    json_decref(e);

    e = mx_sim_rpc_error(id, MX_SIM_RPC_NORES, "x", json_pack("{s:s}", "uri", "u"));
    assert_int_equal(json_integer_value(json_object_get(e, "id")), 7);
    assert_non_null(json_object_get(json_object_get(e, "error"), "data"));
    json_decref(e);

    json_t *ok = mx_sim_rpc_result(id, json_object());
    assert_string_equal(json_string_value(json_object_get(ok, "jsonrpc")), "2.0");
    assert_int_equal(json_integer_value(json_object_get(ok, "id")), 7);
    json_decref(ok);
    assert_int_equal(id->refcount, 1);
    json_decref(id);
}

/* --extra-tools: listed after the built-in five, callable, nothing beyond N. */
static void test_sim_mcp_extra_tools(void **state)
{
    (void)state;
    struct mx_sim_mcp_ctx big = ctx;
    big.extra_tools = 1000;
    struct mx_sim_reply r;
    mx_sim_mcp_request(&big, "tools/list", NULL, &r);
    json_t *tools = json_object_get(r.result, "tools");
    assert_int_equal(json_array_size(tools), 5 + 1000);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 5), "name")),
                        "gen-1");
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 1004), "name")),
                        "gen-1000");
    mx_sim_reply_clear(&r);
    static const char *const names[] = {"gen-1", "gen-1000", "gen-0", "gen-1001", "gen-", "gen-x"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        json_t *params = json_pack("{s:s}", "name", names[i]);
        mx_sim_mcp_request(&big, "tools/call", params, &r);
        json_decref(params);
        if (i < 2) {
            assert_int_equal(r.err_code, 0);
            assert_string_equal(text_of(r.result), names[i]);
        } else {
            assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
        }
        mx_sim_reply_clear(&r);
    }
    /* without the flag there is no generated tool */
    json_t *params = json_pack("{s:s}", "name", "gen-1");
    mx_sim_mcp_request(&ctx, "tools/call", params, &r);
    json_decref(params);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_mcp_method_names), cmocka_unit_test(test_sim_mcp_initialize),
        cmocka_unit_test(test_sim_mcp_extra_tools),  cmocka_unit_test(test_sim_mcp_tools_list),
        cmocka_unit_test(test_sim_mcp_tools),        cmocka_unit_test(test_sim_mcp_slow),
        cmocka_unit_test(test_sim_mcp_call_errors),  cmocka_unit_test(test_sim_mcp_prompts),
        cmocka_unit_test(test_sim_mcp_resources),    cmocka_unit_test(test_sim_mcp_envelopes),
    };
    return cmocka_run_group_tests_name("sim_mcp", tests, NULL, NULL);
}
