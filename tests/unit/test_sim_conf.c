/* SPDX-License-Identifier: MIT */
/*
 * sandbox-sim --conformance without HTTP: the fixture names and answers the
 * conformance suite's server scenarios ask for, the scripts of the talking
 * and asking tools, and the per-session state (capabilities, log level,
 * subscriptions). The sim is an executable, so its sources are included.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../examples/sandbox-sim/conf.c"
#include "../../examples/sandbox-sim/mcp.c"
#include "../../examples/sandbox-sim/tasks.c"

static struct mx_sim_conf_sess sess;
static const struct mx_sim_mcp_ctx ctx = {.name = "conf", .revision = "2025-11-25", .conf = &sess};

static void run(const char *method, const char *params_json, struct mx_sim_reply *r)
{
    json_t *params = params_json ? json_loads(params_json, 0, NULL) : NULL;
    if (params_json)
        assert_non_null(params);
    mx_sim_mcp_request(&ctx, method, params, r);
    json_decref(params);
}

static const char *str_at(json_t *v, const char *path)
{
    /* "a.b.0.c": objects by key, arrays by index */
    char buf[128];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
        v = json_is_array(v) ? json_array_get(v, (size_t)strtoul(k, NULL, 10))
                             : json_object_get(v, k);
    return json_string_value(v);
}

static void init_session(const char *caps)
{
    struct mx_sim_reply r;
    char params[200];
    memset(&sess, 0, sizeof(sess));
    snprintf(params, sizeof(params), "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":%s}",
             caps);
    run("initialize", params, &r);
    json_t *c = json_object_get(r.result, "capabilities");
    assert_true(json_is_object(json_object_get(c, "logging")));
    assert_true(json_is_object(json_object_get(c, "completions")));
    assert_true(json_is_true(json_object_get(json_object_get(c, "resources"), "subscribe")));
    mx_sim_reply_clear(&r);
}

static void test_sim_conf_lists(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    init_session("{}");
    run("tools/list", NULL, &r);
    json_t *tools = json_object_get(r.result, "tools");
    /* the 2025 catalogue: no 2026-only tool */
    assert_int_equal(json_array_size(tools), T_RECONNECT + 1);
    for (size_t i = 0; i < json_array_size(tools); i++) {
        assert_non_null(str_at(json_array_get(tools, i), "name"));
        assert_non_null(str_at(json_array_get(tools, i), "description"));
        assert_true(json_is_object(json_object_get(json_array_get(tools, i), "inputSchema")));
    }
    assert_string_equal(str_at(tools, "0.name"), "test_simple_text");
    mx_sim_reply_clear(&r);
    run("prompts/list", NULL, &r);
    assert_int_equal(json_array_size(json_object_get(r.result, "prompts")), 4);
    assert_string_equal(str_at(r.result, "prompts.1.arguments.1.name"), "arg2");
    mx_sim_reply_clear(&r);
    run("resources/templates/list", NULL, &r);
    assert_string_equal(str_at(r.result, "resourceTemplates.0.uriTemplate"),
                        "test://template/{id}/data");
    mx_sim_reply_clear(&r);
}

static void test_sim_conf_plain_tools(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    init_session("{}");
    run("tools/call", "{\"name\":\"test_simple_text\"}", &r);
    assert_string_equal(str_at(r.result, "content.0.text"),
                        "This is a simple text response for testing.");
    mx_sim_reply_clear(&r);
    run("tools/call", "{\"name\":\"test_audio_content\",\"arguments\":{}}", &r);
    assert_string_equal(str_at(r.result, "content.0.mimeType"), "audio/wav");
    assert_non_null(str_at(r.result, "content.0.data"));
    mx_sim_reply_clear(&r);
    run("tools/call", "{\"name\":\"test_multiple_content_types\"}", &r);
    assert_string_equal(str_at(r.result, "content.2.resource.uri"),
                        "test://mixed-content-resource");
    mx_sim_reply_clear(&r);
    run("tools/call", "{\"name\":\"test_error_handling\"}", &r);
    assert_true(json_is_true(json_object_get(r.result, "isError")));
    mx_sim_reply_clear(&r);
    run("tools/call", "{\"name\":\"echo\"}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
}

static void test_sim_conf_scripts(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    init_session("{}");
    run("tools/call", "{\"name\":\"test_tool_with_progress\",\"_meta\":{\"progressToken\":7}}", &r);
    assert_int_equal(r.script, MX_SIM_SCRIPT_EVENTS);
    assert_int_equal(json_array_size(r.events), 3);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_array_get(r.events, 2), "params"), "progress")),
                     100);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_array_get(r.events, 0), "params"), "progressToken")),
                     7);
    mx_sim_reply_clear(&r);
    /* No token, no progress: the tool still runs through its steps. */
    run("tools/call", "{\"name\":\"test_tool_with_progress\"}", &r);
    assert_int_equal(json_array_size(r.events), 0);
    mx_sim_reply_clear(&r);

    run("tools/call", "{\"name\":\"test_tool_with_logging\"}", &r);
    assert_int_equal(json_array_size(r.events), 3);
    assert_string_equal(str_at(json_array_get(r.events, 1), "params.data"), "Tool processing data");
    mx_sim_reply_clear(&r);
    /* Info messages stop once the client asks for warnings and above. */
    run("logging/setLevel", "{\"level\":\"warning\"}", &r);
    assert_true(json_is_object(r.result));
    mx_sim_reply_clear(&r);
    run("tools/call", "{\"name\":\"test_tool_with_logging\"}", &r);
    assert_int_equal(json_array_size(r.events), 0);
    mx_sim_reply_clear(&r);
    run("logging/setLevel", "{\"level\":\"loud\"}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
}

static void test_sim_conf_asks(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    /* Without the capability the tool refuses instead of asking. */
    init_session("{}");
    run("tools/call", "{\"name\":\"test_sampling\",\"arguments\":{\"prompt\":\"hi\"}}", &r);
    assert_int_equal(r.script, MX_SIM_SCRIPT_NONE);
    assert_true(json_is_true(json_object_get(r.result, "isError")));
    mx_sim_reply_clear(&r);

    init_session("{\"sampling\":{},\"elicitation\":{}}");
    run("tools/call", "{\"name\":\"test_sampling\",\"arguments\":{\"prompt\":\"hi\"}}", &r);
    assert_int_equal(r.script, MX_SIM_SCRIPT_ASK);
    assert_string_equal(str_at(r.ask, "method"), "sampling/createMessage");
    assert_string_equal(str_at(r.ask, "params.messages.0.content.text"), "hi");
    json_t *resp = json_pack("{s:s,s:{s:s,s:{s:s,s:s}}}", "id", "x", "result", "role", "assistant",
                             "content", "type", "text", "text", "Paris");
    json_t *res = mx_sim_conf_answer(r.conf_tool, resp);
    assert_string_equal(str_at(res, "content.0.text"), "LLM response: Paris");
    json_decref(res);
    json_decref(resp);
    mx_sim_reply_clear(&r);

    run("tools/call", "{\"name\":\"test_elicitation_sep1034_defaults\"}", &r);
    assert_string_equal(str_at(r.ask, "params.requestedSchema.properties.name.default"),
                        "John Doe");
    resp = json_pack("{s:s,s:{s:s,s:{s:i}}}", "id", "x", "result", "action", "accept", "content",
                     "age", 25);
    res = mx_sim_conf_answer(r.conf_tool, resp);
    assert_string_equal(str_at(res, "content.0.text"),
                        "Elicitation completed: action=accept, content={\"age\":25}");
    json_decref(res);
    json_decref(resp);
    mx_sim_reply_clear(&r);

    /* A client error becomes a tool error naming it. */
    run("tools/call", "{\"name\":\"test_elicitation\",\"arguments\":{\"message\":\"m\"}}", &r);
    resp = json_pack("{s:s,s:{s:i,s:s}}", "id", "x", "error", "code", -1, "message", "no");
    res = mx_sim_conf_answer(r.conf_tool, resp);
    assert_true(json_is_true(json_object_get(res, "isError")));
    json_decref(res);
    json_decref(resp);
    mx_sim_reply_clear(&r);
    run("tools/call", "{\"name\":\"test_elicitation\",\"arguments\":{}}", &r);
    assert_true(json_is_true(json_object_get(r.result, "isError")));
    mx_sim_reply_clear(&r);
}

static void test_sim_conf_resources(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    init_session("{}");
    run("resources/read", "{\"uri\":\"test://static-binary\"}", &r);
    assert_string_equal(str_at(r.result, "contents.0.mimeType"), "image/png");
    assert_non_null(str_at(r.result, "contents.0.blob"));
    mx_sim_reply_clear(&r);
    run("resources/read", "{\"uri\":\"test://template/123/data\"}", &r);
    assert_string_equal(str_at(r.result, "contents.0.text"),
                        "{\"id\":\"123\",\"templateTest\":true,\"data\":\"Data for ID: 123\"}");
    mx_sim_reply_clear(&r);
    run("resources/read", "{\"uri\":\"test://template/1/2/data\"}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_NORES);
    mx_sim_reply_clear(&r);
    run("resources/subscribe", "{\"uri\":\"test://watched-resource\"}", &r);
    assert_int_equal(json_object_size(r.result), 0);
    assert_int_equal(sess.subs, 1u << R_WATCHED);
    mx_sim_reply_clear(&r);
    run("resources/unsubscribe", "{\"uri\":\"test://watched-resource\"}", &r);
    assert_int_equal(sess.subs, 0);
    mx_sim_reply_clear(&r);
    run("resources/subscribe", "{\"uri\":\"test://nope\"}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_NORES);
    mx_sim_reply_clear(&r);
}

static void test_sim_conf_prompts_and_completion(void **state)
{
    struct mx_sim_reply r;
    (void)state;
    init_session("{}");
    run("prompts/get",
        "{\"name\":\"test_prompt_with_arguments\",\"arguments\":{\"arg1\":\"hello\","
        "\"arg2\":\"world\"}}",
        &r);
    assert_string_equal(str_at(r.result, "messages.0.content.text"),
                        "Prompt with arguments: arg1='hello', arg2='world'");
    mx_sim_reply_clear(&r);
    run("prompts/get", "{\"name\":\"test_prompt_with_arguments\",\"arguments\":{}}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
    run("prompts/get",
        "{\"name\":\"test_prompt_with_embedded_resource\",\"arguments\":{\"resourceUri\":"
        "\"test://x\"}}",
        &r);
    assert_string_equal(str_at(r.result, "messages.0.content.resource.uri"), "test://x");
    mx_sim_reply_clear(&r);
    run("completion/complete",
        "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"test_prompt_with_arguments\"},"
        "\"argument\":{\"name\":\"arg1\",\"value\":\"par\"}}",
        &r);
    json_t *values = json_object_get(json_object_get(r.result, "completion"), "values");
    assert_int_equal(json_array_size(values), 3);
    assert_string_equal(json_string_value(json_array_get(values, 2)), "party");
    mx_sim_reply_clear(&r);
    run("completion/complete", "{\"ref\":{\"type\":\"ref/prompt\"}}", &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
    /* ping stays with the sim's own methods */
    run("ping", NULL, &r);
    assert_int_equal(json_object_size(r.result), 0);
    mx_sim_reply_clear(&r);
}

static const unsigned char key[MX_SIM_STATE_KEY_LEN] = {1, 2, 3};

/* A stateless request's state: built from its _meta, here by hand. */
static void modern_session(bool elicitation, bool sampling)
{
    memset(&sess, 0, sizeof(sess));
    sess.modern = true;
    sess.state_key = key;
    sess.log_level = MX_SIM_LOG_NONE;
    sess.elicitation = elicitation;
    sess.sampling = sampling;
}

/* tools/call |tool| with |args| and |responses| (JSON or NULL) and |state|
 * (or NULL). */
static void call_tool(const char *tool, const char *args, const char *responses, const char *state,
                      struct mx_sim_reply *r)
{
    json_t *params = json_pack("{s:s}", "name", tool);
    if (args)
        json_object_set_new(params, "arguments", json_loads(args, 0, NULL));
    if (responses)
        json_object_set_new(params, "inputResponses", json_loads(responses, 0, NULL));
    if (state)
        json_object_set_new(params, "requestState", json_string(state));
    mx_sim_mcp_request(&ctx, "tools/call", params, r);
    json_decref(params);
}

static void call_irr(const char *tool, const char *responses, const char *state,
                     struct mx_sim_reply *r)
{
    call_tool(tool, NULL, responses, state, r);
}

/* |r| is -32021 with HTTP 400 naming |cap|; cleared. */
static void assert_nocap(struct mx_sim_reply *r, const char *cap)
{
    assert_null(r->result);
    assert_int_equal(r->err_code, MX_SIM_RPC_NOCAP);
    assert_int_equal(r->http_status, 400);
    assert_non_null(json_object_get(json_object_get(r->err_data, "requiredCapabilities"), cap));
    mx_sim_reply_clear(r);
}

static void test_sim_conf_input_required(void **state)
{
    struct mx_sim_reply r;
    char *st;
    (void)state;
    modern_session(true, true);
    run("tools/list", NULL, &r);
    /* 2026: the whole catalogue, the asking tools included */
    size_t n = json_array_size(json_object_get(r.result, "tools"));
    assert_int_equal(n, T_CNT);
    mx_sim_reply_clear(&r);

    call_irr("test_input_required_result_elicitation", NULL, NULL, &r);
    assert_string_equal(str_at(r.result, "resultType"), "input_required");
    assert_string_equal(str_at(r.result, "inputRequests.user_name.method"), "elicitation/create");
    mx_sim_reply_clear(&r);
    call_irr("test_input_required_result_elicitation",
             "{\"user_name\":{\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}},"
             "\"extra\":{}}",
             NULL, &r);
    assert_string_equal(str_at(r.result, "content.0.text"), "Hello, Ada!");
    mx_sim_reply_clear(&r);
    /* a wrong key: ask again, not an error */
    call_irr("test_input_required_result_elicitation", "{\"wrong\":{}}", NULL, &r);
    assert_string_equal(str_at(r.result, "resultType"), "input_required");
    mx_sim_reply_clear(&r);
    call_irr("test_input_required_result_elicitation", "[1]", NULL, &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);

    /* three rounds, the state signed each time; a changed byte is refused */
    call_irr("test_input_required_result_multi_round", NULL, NULL, &r);
    st = mx_xstrdup(str_at(r.result, "requestState"));
    mx_sim_reply_clear(&r);
    call_irr("test_input_required_result_multi_round",
             "{\"step1\":{\"action\":\"accept\",\"content\":{\"name\":\"Ada\"}}}", st, &r);
    assert_string_equal(str_at(r.result, "inputRequests.step2.method"), "elicitation/create");
    free(st);
    st = mx_xstrdup(str_at(r.result, "requestState"));
    mx_sim_reply_clear(&r);
    call_irr("test_input_required_result_multi_round",
             "{\"step2\":{\"action\":\"accept\",\"content\":{\"color\":\"blue\"}}}", st, &r);
    assert_string_equal(str_at(r.result, "content.0.text"), "Round 3: Ada likes blue");
    mx_sim_reply_clear(&r);
    st[strlen(st) - 1] = st[strlen(st) - 1] == '0' ? '1' : '0';
    call_irr("test_input_required_result_multi_round",
             "{\"step2\":{\"action\":\"accept\",\"content\":{\"color\":\"blue\"}}}", st, &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
    free(st);

    /* only what the request's capabilities allow */
    modern_session(false, true);
    call_irr("test_input_required_result_capabilities", NULL, NULL, &r);
    assert_null(json_object_get(json_object_get(r.result, "inputRequests"), "user_name"));
    assert_non_null(json_object_get(json_object_get(r.result, "inputRequests"), "greeting"));
    mx_sim_reply_clear(&r);
    modern_session(true, false);
    call_irr("test_missing_capability", NULL, NULL, &r);
    assert_nocap(&r, "sampling");
    call_irr("test_trigger_tool_change", NULL, NULL, &r);
    assert_int_equal(r.changed, MX_SIM_CHANGED_TOOLS);
    mx_sim_reply_clear(&r);
}

/* The 2025 asking tools in 2026-07-28: the same question as an input-required
 * result, and the retry's answer gives the text the 2025 version gives. */
static void test_sim_conf_asks_2026(void **state)
{
    static const char prompt[] = "{\"prompt\":\"Capital?\"}";
    static const char sampled[] = "{\"sampling\":{\"role\":\"assistant\",\"model\":\"m\","
                                  "\"content\":{\"type\":\"text\",\"text\":\"Paris\"}}}";
    struct mx_sim_reply r;
    (void)state;
    modern_session(true, true);
    call_tool("test_sampling", prompt, NULL, NULL, &r);
    assert_int_equal(r.script, MX_SIM_SCRIPT_NONE);
    assert_string_equal(str_at(r.result, "resultType"), "input_required");
    assert_string_equal(str_at(r.result, "inputRequests.sampling.method"),
                        "sampling/createMessage");
    assert_string_equal(str_at(r.result, "inputRequests.sampling.params.messages.0.content.text"),
                        "Capital?");
    assert_null(json_object_get(r.result, "requestState"));
    mx_sim_reply_clear(&r);
    call_tool("test_sampling", prompt, sampled, NULL, &r);
    assert_null(json_object_get(r.result, "resultType"));
    assert_string_equal(str_at(r.result, "content.0.text"), "LLM response: Paris");
    assert_false(json_is_true(json_object_get(r.result, "isError")));
    mx_sim_reply_clear(&r);
    /* an answer under another key: asked again */
    call_tool("test_sampling", prompt, "{\"other\":{}}", NULL, &r);
    assert_string_equal(str_at(r.result, "resultType"), "input_required");
    mx_sim_reply_clear(&r);
    call_tool("test_sampling", prompt, "[]", NULL, &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
    call_tool("test_sampling", NULL, NULL, NULL, &r);
    assert_true(json_is_true(json_object_get(r.result, "isError")));
    mx_sim_reply_clear(&r);

    call_tool("test_elicitation", "{\"message\":\"Who?\"}", NULL, NULL, &r);
    assert_string_equal(str_at(r.result, "inputRequests.elicitation.method"), "elicitation/create");
    assert_string_equal(str_at(r.result, "inputRequests.elicitation.params.message"), "Who?");
    assert_string_equal(
        str_at(r.result, "inputRequests.elicitation.params.requestedSchema.required.1"), "email");
    mx_sim_reply_clear(&r);
    call_tool("test_elicitation", "{\"message\":\"Who?\"}",
              "{\"elicitation\":{\"action\":\"accept\",\"content\":{\"username\":\"ada\","
              "\"email\":\"a@example.com\"}}}",
              NULL, &r);
    assert_string_equal(
        str_at(r.result, "content.0.text"),
        "User response: action=accept, content={\"email\":\"a@example.com\",\"username\":\"ada\"}");
    mx_sim_reply_clear(&r);

    call_tool("test_elicitation_sep1034_defaults", NULL, NULL, NULL, &r);
    assert_string_equal(
        str_at(r.result,
               "inputRequests.elicitation.params.requestedSchema.properties.status.default"),
        "active");
    mx_sim_reply_clear(&r);
    call_tool("test_elicitation_sep1330_enums", NULL, NULL, NULL, &r);
    assert_string_equal(str_at(r.result, "inputRequests.elicitation.params.requestedSchema."
                                         "properties.titledMulti.items.anyOf.2.const"),
                        "value3");
    mx_sim_reply_clear(&r);
    call_tool("test_elicitation_sep1330_enums", NULL, "{\"elicitation\":{\"action\":\"decline\"}}",
              NULL, &r);
    assert_string_equal(str_at(r.result, "content.0.text"),
                        "Elicitation completed: action=decline, content={}");
    mx_sim_reply_clear(&r);

    /* a capability the request does not declare: -32021, HTTP 400, before
     * anything is asked or any answer is read */
    modern_session(false, true);
    call_tool("test_elicitation_sep1034_defaults", NULL,
              "{\"elicitation\":{\"action\":\"accept\"}}", NULL, &r);
    assert_nocap(&r, "elicitation");
    call_tool("test_streaming_elicitation", NULL, NULL, NULL, &r);
    assert_nocap(&r, "elicitation");
    modern_session(true, false);
    call_tool("test_sampling", prompt, sampled, NULL, &r);
    assert_nocap(&r, "sampling");
    call_tool("test_streaming_elicitation", NULL, NULL, NULL, &r);
    assert_string_equal(str_at(r.result, "inputRequests.confirm.method"), "elicitation/create");
    mx_sim_reply_clear(&r);
    call_tool("test_streaming_elicitation", NULL, "{\"confirm\":{\"action\":\"accept\"}}", NULL,
              &r);
    assert_string_equal(str_at(r.result, "content.0.text"), "confirmed");
    mx_sim_reply_clear(&r);
}

/* 2026-07-28: one tool mirrors its argument into Mcp-Param-Region (the check
 * of the header is modern.c's, before the call). */
static void test_sim_conf_param_header(void **state)
{
    struct mx_sim_reply r;
    const char *arg = NULL;
    (void)state;
    modern_session(false, false);
    run("tools/list", NULL, &r);
    json_t *tools = json_object_get(r.result, "tools");
    json_t *tool = json_array_get(tools, T_HEADER_PARAM);
    assert_string_equal(str_at(tool, "name"), "test_header_param");
    assert_string_equal(str_at(tool, "inputSchema.properties.region.x-mcp-header"), "Region");
    assert_string_equal(str_at(tool, "inputSchema.required.0"), "region");
    mx_sim_reply_clear(&r);
    assert_string_equal(mx_sim_conf_param_header("test_header_param", &arg), "Region");
    assert_string_equal(arg, "region");
    assert_null(mx_sim_conf_param_header("test_simple_text", &arg));
    assert_null(mx_sim_conf_param_header("no_such_tool", &arg));
    assert_null(mx_sim_conf_param_header(NULL, &arg));
    call_tool("test_header_param", "{\"region\":\"eu-west\"}", NULL, NULL, &r);
    assert_string_equal(str_at(r.result, "content.0.text"), "Region: eu-west");
    mx_sim_reply_clear(&r);
    call_tool("test_header_param", "{}", NULL, NULL, &r);
    assert_true(json_is_true(json_object_get(r.result, "isError")));
    mx_sim_reply_clear(&r);

    /* not in the 2025 catalogue: no headers to carry it there */
    init_session("{}");
    call_tool("test_header_param", "{\"region\":\"eu-west\"}", NULL, NULL, &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
}

/* Run |method| with params {"taskId": |id|} and |extra| members (JSON or NULL). */
static void task_req(const char *method, const char *id, const char *extra, struct mx_sim_reply *r)
{
    json_t *params = extra ? json_loads(extra, 0, NULL) : json_object();
    assert_non_null(params);
    json_object_set_new(params, "taskId", json_string(id));
    mx_sim_mcp_request(&ctx, method, params, r);
    json_decref(params);
}

/* tasks/get of |id| until its status is not |while_status|, within 5 s;
 * leaves the last answer in |r|. */
static void poll_task(const char *id, const char *while_status, struct mx_sim_reply *r)
{
    for (int i = 0; i < 500; i++) {
        task_req("tasks/get", id, NULL, r);
        assert_non_null(r->result);
        if (strcmp(str_at(r->result, "status"), while_status) != 0)
            return;
        mx_sim_reply_clear(r);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("task %s stayed %s for 5 s", id, while_status);
}

static void test_sim_conf_tasks(void **state)
{
    struct mx_sim_reply r;
    char id[64];
    (void)state;
    modern_session(true, true);
    sess.tasks = mx_sim_tasks_new();

    /* without the extension: required tools and the tasks methods are -32021 */
    call_tool("failing_job", "{}", NULL, NULL, &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_NOCAP);
    assert_non_null(json_object_get(
        json_object_get(json_object_get(r.err_data, "requiredCapabilities"), "extensions"),
        MX_SIM_TASKS_EXT));
    mx_sim_reply_clear(&r);
    task_req("tasks/get", "any", NULL, &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_NOCAP);
    mx_sim_reply_clear(&r);
    /* ... and an optional one runs at once */
    call_tool("slow_compute", "{\"seconds\":5,\"label\":\"now\"}", NULL, NULL, &r);
    assert_null(json_object_get(r.result, "taskId"));
    assert_string_equal(str_at(r.result, "content.0.text"), "Computed now in 5 s");
    mx_sim_reply_clear(&r);

    sess.tasks_ext = true;
    run("tools/list", NULL, &r);
    json_t *tools = json_object_get(r.result, "tools");
    for (size_t i = 0; i < json_array_size(tools); i++) {
        if (strcmp(str_at(json_array_get(tools, i), "name"), "failing_job") == 0)
            assert_string_equal(str_at(json_array_get(tools, i), "execution.taskSupport"),
                                "required");
    }
    mx_sim_reply_clear(&r);

    /* a task: CreateTaskResult, working at once, then its result inlined */
    call_tool("slow_compute", "{\"seconds\":0.05,\"label\":\"t\"}", NULL, NULL, &r);
    assert_string_equal(str_at(r.result, "resultType"), "task");
    assert_string_equal(str_at(r.result, "status"), "working");
    assert_int_equal(json_integer_value(json_object_get(r.result, "ttlMs")), TTL_MS);
    assert_null(json_object_get(r.result, "task"));
    snprintf(id, sizeof(id), "%s", str_at(r.result, "taskId"));
    mx_sim_reply_clear(&r);
    poll_task(id, "working", &r);
    assert_string_equal(str_at(r.result, "status"), "completed");
    assert_string_equal(str_at(r.result, "result.content.0.text"), "Computed t in 0.05 s");
    mx_sim_reply_clear(&r);
    /* cancelling a finished task changes nothing */
    task_req("tasks/cancel", id, NULL, &r);
    assert_int_equal(json_object_size(r.result), 0);
    mx_sim_reply_clear(&r);
    task_req("tasks/get", id, NULL, &r);
    assert_string_equal(str_at(r.result, "status"), "completed");
    mx_sim_reply_clear(&r);

    /* input: a key it did not ask keeps it waiting, the asked one ends it */
    call_tool("confirm_delete", "{\"filename\":\"a.txt\"}", NULL, NULL, &r);
    snprintf(id, sizeof(id), "%s", str_at(r.result, "taskId"));
    mx_sim_reply_clear(&r);
    task_req("tasks/get", id, NULL, &r);
    assert_string_equal(str_at(r.result, "status"), "input_required");
    assert_string_equal(str_at(r.result, "inputRequests.confirm.method"), "elicitation/create");
    mx_sim_reply_clear(&r);
    task_req("tasks/update", id, "{\"inputResponses\":{\"other\":{}}}", &r);
    assert_non_null(r.result);
    mx_sim_reply_clear(&r);
    task_req("tasks/get", id, NULL, &r);
    assert_string_equal(str_at(r.result, "status"), "input_required");
    mx_sim_reply_clear(&r);
    task_req("tasks/update", id, "{\"inputResponses\":{\"confirm\":{\"action\":\"accept\"}}}", &r);
    mx_sim_reply_clear(&r);
    task_req("tasks/get", id, NULL, &r);
    assert_string_equal(str_at(r.result, "status"), "completed");
    assert_string_equal(str_at(r.result, "result.content.0.text"), "Deleted a.txt");
    mx_sim_reply_clear(&r);

    /* cancel while running; a protocol error fails with error, not result */
    call_tool("slow_compute", "{\"seconds\":60}", NULL, NULL, &r);
    snprintf(id, sizeof(id), "%s", str_at(r.result, "taskId"));
    mx_sim_reply_clear(&r);
    task_req("tasks/cancel", id, NULL, &r);
    mx_sim_reply_clear(&r);
    task_req("tasks/get", id, NULL, &r);
    assert_string_equal(str_at(r.result, "status"), "cancelled");
    mx_sim_reply_clear(&r);
    call_tool("protocol_error_job", "{}", NULL, NULL, &r);
    snprintf(id, sizeof(id), "%s", str_at(r.result, "taskId"));
    mx_sim_reply_clear(&r);
    poll_task(id, "working", &r);
    assert_string_equal(str_at(r.result, "status"), "failed");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(r.result, "error"), "code")),
        MX_SIM_RPC_INTERNAL);
    assert_null(json_object_get(r.result, "result"));
    mx_sim_reply_clear(&r);

    /* an id it never made */
    task_req("tasks/get", "0123456789abcdef0123456789abcdef", NULL, &r);
    assert_int_equal(r.err_code, MX_SIM_RPC_PARAMS);
    mx_sim_reply_clear(&r);
    mx_sim_tasks_free(sess.tasks);
    sess.tasks = NULL;
}

/* A 2026 task made straight in |t|: its id in |id| (33 bytes). */
static void make_task(struct mx_sim_tasks *t, enum mx_sim_task_end end, int64_t run_ms,
                      json_t *inputs, char *id)
{
    struct mx_sim_reply r = {0};
    mx_sim_tasks_create(t, end, "the text", run_ms, inputs, &r);
    assert_non_null(r.result);
    snprintf(id, 33, "%s", str_at(r.result, "taskId"));
    mx_sim_reply_clear(&r);
}

/* The taskIds filter of subscriptions/listen: known 2026 ids only, each once,
 * non-strings skipped, at most MX_SIM_TASKS_FOLLOW_MAX strings looked at. */
static void test_sim_conf_task_follow_filter(void **state)
{
    struct mx_sim_tasks *t = mx_sim_tasks_new();
    struct mx_sim_reply r = {0};
    char a[33], b[33];
    (void)state;
    make_task(t, MX_SIM_TASK_RESULT, 60000, NULL, a);
    make_task(t, MX_SIM_TASK_RESULT, 0, NULL, b);
    json_t *task25 = json_object();
    mx_sim_tasks_create_2025(t, "old", false, 60000, task25, &r);
    json_decref(task25);
    const char *id25 = str_at(r.result, "task.taskId");
    assert_non_null(id25);

    json_t *ids =
        json_pack("[s,s,i,s,n,s,s,{}]", a, "0123456789abcdef0123456789abcdef", 5, a, id25, b);
    json_t *known = mx_sim_tasks_known(t, ids);
    assert_int_equal(json_array_size(known), 2);
    assert_string_equal(json_string_value(json_array_get(known, 0)), a);
    assert_string_equal(json_string_value(json_array_get(known, 1)), b);
    json_decref(known);
    json_decref(ids);
    mx_sim_reply_clear(&r);

    /* not an array: nothing followed */
    ids = json_string(a);
    known = mx_sim_tasks_known(t, ids);
    assert_true(json_is_array(known));
    assert_int_equal(json_array_size(known), 0);
    json_decref(known);
    json_decref(ids);

    /* the cap counts strings: a known id as the 64th string is followed,
     * as the 65th it is not; non-strings in between do not count */
    for (int at = MX_SIM_TASKS_FOLLOW_MAX; at <= MX_SIM_TASKS_FOLLOW_MAX + 1; at++) {
        ids = json_array();
        for (int i = 1; i < at; i++) {
            json_array_append_new(ids, json_integer(i));
            json_array_append_new(ids, json_string("unknown"));
        }
        json_array_append_new(ids, json_string(b));
        known = mx_sim_tasks_known(t, ids);
        assert_int_equal(json_array_size(known), at == MX_SIM_TASKS_FOLLOW_MAX ? 1 : 0);
        json_decref(known);
        json_decref(ids);
    }
    mx_sim_tasks_free(t);
}

/* The body of notifications/tasks for each status: the task as tasks/get
 * answers it, without resultType, and when the clock changes it next. */
static void test_sim_conf_task_follow_detail(void **state)
{
    struct mx_sim_tasks *t = mx_sim_tasks_new();
    struct mx_sim_reply r = {0};
    char working[33], input[33], done[33], tool_err[33], failed[33], cancelled[33];
    int64_t due;
    json_t *d;
    (void)state;
    make_task(t, MX_SIM_TASK_RESULT, 60000, NULL, working);
    make_task(t, MX_SIM_TASK_RESULT, 0, json_pack("{s:{s:s}}", "confirm", "method", "x"), input);
    make_task(t, MX_SIM_TASK_RESULT, 0, NULL, done);
    make_task(t, MX_SIM_TASK_TOOL_ERROR, 0, NULL, tool_err);
    make_task(t, MX_SIM_TASK_PROTOCOL, 0, NULL, failed);
    make_task(t, MX_SIM_TASK_RESULT, 60000, NULL, cancelled);
    json_t *p = json_pack("{s:s}", "taskId", cancelled);
    mx_sim_tasks_cancel(t, p, &r);
    json_decref(p);
    mx_sim_reply_clear(&r);

    d = mx_sim_tasks_detail(t, working, &due);
    assert_string_equal(str_at(d, "taskId"), working);
    assert_string_equal(str_at(d, "status"), "working");
    assert_true(due > 59000 && due <= 60000);
    assert_non_null(str_at(d, "createdAt"));
    assert_non_null(str_at(d, "lastUpdatedAt"));
    assert_int_equal(json_integer_value(json_object_get(d, "ttlMs")), TTL_MS);
    assert_int_equal(json_integer_value(json_object_get(d, "pollIntervalMs")), POLL_MS);
    assert_null(json_object_get(d, "resultType"));
    assert_null(json_object_get(d, "result"));
    assert_null(json_object_get(d, "error"));
    assert_null(json_object_get(d, "inputRequests"));
    assert_false(mx_sim_tasks_is_terminal(str_at(d, "status")));
    json_decref(d);

    d = mx_sim_tasks_detail(t, input, &due);
    assert_string_equal(str_at(d, "status"), "input_required");
    assert_int_equal(due, -1);
    assert_string_equal(str_at(d, "inputRequests.confirm.method"), "x");
    assert_false(mx_sim_tasks_is_terminal(str_at(d, "status")));
    json_decref(d);

    d = mx_sim_tasks_detail(t, done, &due);
    assert_string_equal(str_at(d, "status"), "completed");
    assert_int_equal(due, -1);
    assert_string_equal(str_at(d, "result.content.0.text"), "the text");
    assert_true(json_is_false(json_object_get(json_object_get(d, "result"), "isError")));
    assert_null(json_object_get(d, "resultType"));
    assert_true(mx_sim_tasks_is_terminal(str_at(d, "status")));
    json_decref(d);

    d = mx_sim_tasks_detail(t, tool_err, &due);
    assert_string_equal(str_at(d, "status"), "completed");
    assert_true(json_is_true(json_object_get(json_object_get(d, "result"), "isError")));
    json_decref(d);

    d = mx_sim_tasks_detail(t, failed, &due);
    assert_string_equal(str_at(d, "status"), "failed");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "error"), "code")),
                     MX_SIM_RPC_INTERNAL);
    assert_string_equal(str_at(d, "error.message"), "the text");
    assert_null(json_object_get(d, "result"));
    assert_true(mx_sim_tasks_is_terminal(str_at(d, "status")));
    json_decref(d);

    d = mx_sim_tasks_detail(t, cancelled, &due);
    assert_string_equal(str_at(d, "status"), "cancelled");
    assert_int_equal(due, -1);
    assert_null(json_object_get(d, "result"));
    assert_null(json_object_get(d, "error"));
    assert_true(mx_sim_tasks_is_terminal(str_at(d, "status")));
    json_decref(d);

    /* answering the input ends it at once */
    p = json_pack("{s:s,s:{s:{}}}", "taskId", input, "inputResponses", "confirm");
    mx_sim_tasks_update(t, p, &r);
    json_decref(p);
    mx_sim_reply_clear(&r);
    d = mx_sim_tasks_detail(t, input, &due);
    assert_string_equal(str_at(d, "status"), "completed");
    assert_null(json_object_get(d, "inputRequests"));
    json_decref(d);

    /* the same as tasks/get */
    p = json_pack("{s:s}", "taskId", done);
    mx_sim_tasks_get(t, p, &r);
    json_decref(p);
    d = mx_sim_tasks_detail(t, done, &due);
    assert_true(json_equal(d, r.result));
    json_decref(d);
    mx_sim_reply_clear(&r);

    assert_null(mx_sim_tasks_detail(t, "0123456789abcdef0123456789abcdef", &due));
    assert_int_equal(due, -1);
    assert_null(mx_sim_tasks_detail(t, NULL, &due));
    assert_false(mx_sim_tasks_is_terminal(NULL));
    mx_sim_tasks_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_conf_lists),
        cmocka_unit_test(test_sim_conf_plain_tools),
        cmocka_unit_test(test_sim_conf_scripts),
        cmocka_unit_test(test_sim_conf_asks),
        cmocka_unit_test(test_sim_conf_resources),
        cmocka_unit_test(test_sim_conf_prompts_and_completion),
        cmocka_unit_test(test_sim_conf_input_required),
        cmocka_unit_test(test_sim_conf_asks_2026),
        cmocka_unit_test(test_sim_conf_param_header),
        cmocka_unit_test(test_sim_conf_tasks),
        cmocka_unit_test(test_sim_conf_task_follow_filter),
        cmocka_unit_test(test_sim_conf_task_follow_detail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
