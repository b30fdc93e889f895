/* SPDX-License-Identifier: MIT */
/*
 * sandbox-sim --conformance over HTTP in 2026-07-28: the tool whose argument
 * carries an x-mcp-header annotation is answered only when Mcp-Param-Region
 * mirrors the argument (SEP-2243): literally, or as a well-formed
 * "=?base64?...?=" sentinel. A missing, different or malformed header, or a
 * header without the argument, is 400 with -32020 and the tool does not run
 * (the sim counts one call per answered request). The asking 2025 tools are
 * offered in this revision as input-required results: the retry with the
 * answer gets the 2025 text, a request without the capability 400/-32021.
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

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

struct world {
    char token[MX_IT_CANARY_SIZE];
    int port;
    pid_t sim;
    char *url;
};

/*
 * A 2026-07-28 tools/call of |tool| with |args| (a JSON object), more params
 * |extra| ("" or starting with a comma), clientCapabilities |caps| and, when
 * |param| is not NULL, the header "Mcp-Param-Region: |param|". Returns the
 * parsed answer and sets *|status|.
 */
static json_t *call(const struct world *w, const char *tool, const char *args, const char *extra,
                    const char *caps, const char *param, long *status)
{
    char *body = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{"
                              "\"name\":\"%s\",\"arguments\":%s%s,\"_meta\":{"
                              "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                              "\"io.modelcontextprotocol/clientCapabilities\":%s}}}",
                              tool, args, extra, caps);
    char *auth = mx_xasprintf("Authorization: Bearer %s", w->token);
    char *name = mx_xasprintf("Mcp-Name: %s", tool);
    char *hdr = param ? mx_xasprintf("Mcp-Param-Region: %s", param) : NULL;
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream",
                          "MCP-Protocol-Version: 2026-07-28",
                          "Mcp-Method: tools/call",
                          auth,
                          name,
                          hdr,
                          NULL};
    char *resp = NULL;
    assert_int_equal(mx_it_http("POST", w->url, hdrs, body, status, &resp), 0);
    json_t *msg = json_loads(resp, 0, NULL);
    if (msg == NULL)
        fail_msg("not JSON: %s", resp);
    free(resp);
    free(hdr);
    free(name);
    free(auth);
    free(body);
    return msg;
}

static const char *text_of(const json_t *msg)
{
    json_t *c = json_object_get(json_object_get(msg, "result"), "content");
    return json_string_value(json_object_get(json_array_get(c, 0), "text"));
}

/* |param| as the header for the argument |region|: a mismatch, refused. */
static void assert_refused(const struct world *w, const char *args, const char *param)
{
    long status = 0;
    json_t *msg = call(w, "test_header_param", args, "", "{}", param, &status);
    assert_int_equal(status, 400);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(msg, "error"), "code")),
                     -32020);
    assert_int_equal(json_integer_value(json_object_get(msg, "id")), 7);
    json_decref(msg);
}

static void assert_answered(const struct world *w, const char *args, const char *param,
                            const char *want)
{
    long status = 0;
    json_t *msg = call(w, "test_header_param", args, "", "{}", param, &status);
    assert_int_equal(status, 200);
    assert_null(json_object_get(msg, "error"));
    assert_string_equal(text_of(msg), want);
    json_decref(msg);
}

static void assert_param_headers(const struct world *w)
{
    json_int_t before = mx_it_sim_method_count(w->port, w->token, "tools/call");
    assert_answered(w, "{\"region\":\"eu-west\"}", "eu-west", "Region: eu-west");
    assert_answered(w, "{\"region\":\"eu-west\"}", "  eu-west  ", "Region: eu-west");
    /* "Hello" as a sentinel, then values that only look like one: literal */
    assert_answered(w, "{\"region\":\"Hello\"}", "=?base64?SGVsbG8=?=", "Region: Hello");
    assert_answered(w, "{\"region\":\"SGVsbG8=\"}", "SGVsbG8=", "Region: SGVsbG8=");
    assert_answered(w, "{\"region\":\"=?base64?SGVsbG8=\"}",
                    "=?base64?SGVsbG8=", "Region: =?base64?SGVsbG8=");
    assert_int_equal(mx_it_sim_method_count(w->port, w->token, "tools/call") - before, 5);

    before = mx_it_sim_method_count(w->port, w->token, "tools/call");
    assert_refused(w, "{\"region\":\"eu-west\"}", NULL);
    assert_refused(w, "{\"region\":\"eu-west\"}", "us-east");
    assert_refused(w, "{\"region\":\"eu-west\"}", "EU-WEST");
    assert_refused(w, "{\"region\":\"Hello\"}", "=?base64?SGVsbG8?=");
    assert_refused(w, "{\"region\":\"Hello\"}", "=?base64?SGVs!!!bG8=?=");
    assert_refused(w, "{}", "eu-west");
    assert_refused(w, "{\"region\":7}", "7");
    /* refused before the call: the sim counts none of them */
    assert_int_equal(mx_it_sim_method_count(w->port, w->token, "tools/call") - before, 0);

    /* tools without an annotated argument ignore the header */
    long status = 0;
    json_t *msg = call(w, "test_simple_text", "{}", "", "{}", "anything", &status);
    assert_int_equal(status, 200);
    assert_non_null(text_of(msg));
    json_decref(msg);
}

/* test_elicitation in 2026-07-28: the question, then the 2025 answer text. */
static void assert_asking_tool(const struct world *w)
{
    static const char args[] = "{\"message\":\"Who are you?\"}";
    long status = 0;
    json_t *msg = call(w, "test_elicitation", args, "", "{\"elicitation\":{}}", NULL, &status);
    assert_int_equal(status, 200);
    json_t *r = json_object_get(msg, "result");
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "input_required");
    json_t *q = json_object_get(json_object_get(r, "inputRequests"), "elicitation");
    assert_string_equal(json_string_value(json_object_get(q, "method")), "elicitation/create");
    assert_string_equal(json_string_value(json_object_get(json_object_get(q, "params"), "message")),
                        "Who are you?");
    json_decref(msg);

    msg = call(w, "test_elicitation", args,
               ",\"inputResponses\":{\"elicitation\":{\"action\":\"accept\",\"content\":{"
               "\"username\":\"ada\",\"email\":\"ada@example.com\"}}}",
               "{\"elicitation\":{}}", NULL, &status);
    assert_int_equal(status, 200);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(msg, "result"), "resultType")),
        "complete");
    assert_string_equal(text_of(msg),
                        "User response: action=accept, "
                        "content={\"email\":\"ada@example.com\",\"username\":\"ada\"}");
    json_decref(msg);

    msg = call(w, "test_elicitation", args, "", "{\"sampling\":{}}", NULL, &status);
    assert_int_equal(status, 400);
    json_t *err = json_object_get(msg, "error");
    assert_int_equal(json_integer_value(json_object_get(err, "code")), -32021);
    assert_non_null(json_object_get(
        json_object_get(json_object_get(err, "data"), "requiredCapabilities"), "elicitation"));
    json_decref(msg);
}

static void test_sim_param_headers(void **state)
{
    struct world w;
    (void)state;
    memset(&w, 0, sizeof(w));
    mx_it_canary(w.token, sizeof(w.token));
    const char *args[] = {"--conformance", "--name", "conf-sim", NULL};
    w.sim = mx_it_start_sim("conf-sim", w.token, args, &w.port);
    assert_true(w.sim > 0);
    w.url = mx_xasprintf("http://127.0.0.1:%d/mcp", w.port);

    assert_param_headers(&w);
    assert_asking_tool(&w);

    assert_int_equal(mx_it_signal(w.sim, SIGTERM), 0);
    int st = mx_it_wait_exit(w.sim, 15000);
    assert_true(st >= 0 && WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    free(w.url);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sim_param_headers, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
