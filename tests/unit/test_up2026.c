/* SPDX-License-Identifier: MIT */
/*
 * Requests toward MCP 2026-07-28 upstreams: the _meta every request carries,
 * the headers the revision requires (and the base64 form of names HTTP
 * cannot carry), what server/discover answers say about the revision, the
 * initialize-like result made from a discover result, the listen request
 * for the lists an upstream announces and the resources subscribed to, the
 * acknowledgement of those, what a 2025 upstream is spared of _meta, and the
 * answers that say the revision is wrong or that input is required.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "rpc.h"
#include "up2026.h"

static json_t *parse(const char *s)
{
    json_t *j = json_loads(s, 0, NULL);
    assert_non_null(j);
    return j;
}

/* The value of header |name| in |h|, or NULL. */
static const char *header(const struct mx_upreq_hdrs *h, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < h->cnt; i++) {
        if (strncmp(h->lines[i], name, n) == 0 && h->lines[i][n] == ':')
            return h->lines[i] + n + 2;
    }
    return NULL;
}

static void test_request_meta(void **state)
{
    (void)state;
    json_t *caps = parse("{\"sampling\":{},\"elicitation\":{}}");
    json_t *msg = parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
                        "\"params\":{\"name\":\"echo\",\"arguments\":{\"a\":1},"
                        "\"_meta\":{\"progressToken\":\"t-1\"}}}");
    json_t *out = mx_up26_request(msg, caps);
    json_t *meta = json_object_get(json_object_get(out, "params"), "_meta");
    assert_string_equal(
        json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion")),
        "2026-07-28");
    assert_true(
        json_equal(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"), caps));
    json_t *info = json_object_get(meta, "io.modelcontextprotocol/clientInfo");
    assert_string_equal(json_string_value(json_object_get(info, "name")), "mcplex");
    assert_non_null(json_string_value(json_object_get(info, "version")));
    /* the caller's keys stay; the original is not touched */
    assert_string_equal(json_string_value(json_object_get(meta, "progressToken")), "t-1");
    assert_int_equal(json_integer_value(json_object_get(out, "id")), 7);
    assert_int_equal(json_object_size(json_object_get(json_object_get(msg, "params"), "_meta")), 1);
    json_decref(out);
    json_decref(msg);

    /* a request without params gets them */
    msg = parse("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/list\"}");
    out = mx_up26_request(msg, NULL);
    meta = json_object_get(json_object_get(out, "params"), "_meta");
    assert_true(
        json_is_object(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities")));
    json_decref(out);
    json_decref(msg);
    json_decref(caps);
}

/* A stateless client's own capabilities go on, limited to what mcplex
 * relays; a 2025 upstream never sees the key. */
static void test_client_caps(void **state)
{
    (void)state;
    json_t *session = parse("{\"sampling\":{},\"elicitation\":{}}");
    json_t *msg = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                        "\"params\":{\"name\":\"t\",\"_meta\":{\"progressToken\":1,"
                        "\"io.modelcontextprotocol/clientCapabilities\":{\"roots\":{},"
                        "\"experimental\":{\"x\":{}}}}}}");
    json_t *out = mx_up26_request(msg, session);
    json_t *caps = json_object_get(json_object_get(json_object_get(out, "params"), "_meta"),
                                   "io.modelcontextprotocol/clientCapabilities");
    json_t *want = parse("{\"roots\":{}}");
    assert_true(json_equal(caps, want));
    json_decref(want);
    json_decref(out);

    json_t *legacy = mx_up26_strip(msg);
    json_t *meta = json_object_get(json_object_get(legacy, "params"), "_meta");
    assert_null(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"));
    assert_int_equal(json_integer_value(json_object_get(meta, "progressToken")), 1);
    /* the caller's message is not touched */
    assert_non_null(json_object_get(json_object_get(json_object_get(msg, "params"), "_meta"),
                                    "io.modelcontextprotocol/clientCapabilities"));
    json_decref(legacy);
    json_decref(msg);

    /* nothing to drop: the same message; an emptied _meta goes */
    msg = parse("{\"id\":1,\"method\":\"tools/list\"}");
    legacy = mx_up26_strip(msg);
    assert_ptr_equal(legacy, msg);
    json_decref(legacy);
    json_decref(msg);
    msg = parse("{\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                "{\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    legacy = mx_up26_strip(msg);
    assert_null(json_object_get(json_object_get(legacy, "params"), "_meta"));
    json_decref(legacy);
    json_decref(msg);
    json_decref(session);
}

static void check_headers(const char *msg_text, const char *method, const char *name)
{
    json_t *msg = parse(msg_text);
    struct mx_upreq_hdrs h;
    mx_upreq_hdrs_init(&h);
    assert_int_equal(mx_up26_headers(msg, &h), 0);
    assert_string_equal(header(&h, "MCP-Protocol-Version"), "2026-07-28");
    assert_string_equal(header(&h, "Mcp-Method"), method);
    if (name)
        assert_string_equal(header(&h, "Mcp-Name"), name);
    else
        assert_null(header(&h, "Mcp-Name"));
    mx_upreq_hdrs_clear(&h);
    json_decref(msg);
}

static void test_headers(void **state)
{
    (void)state;
    check_headers("{\"method\":\"tools/call\",\"params\":{\"name\":\"test_simple_text\"}}",
                  "tools/call", "test_simple_text");
    check_headers("{\"method\":\"prompts/get\",\"params\":{\"name\":\"p 1\"}}", "prompts/get",
                  "p 1");
    check_headers("{\"method\":\"resources/read\",\"params\":{\"uri\":\"test://static-text\"}}",
                  "resources/read", "test://static-text");
    check_headers("{\"method\":\"tools/list\",\"params\":{}}", "tools/list", NULL);
    check_headers("{\"method\":\"server/discover\"}", "server/discover", NULL);
    /* not plain ASCII, or spaces at an end: base64 sentinel ("café", " x") */
    check_headers("{\"method\":\"tools/call\",\"params\":{\"name\":\"caf\\u00e9\"}}", "tools/call",
                  "=?base64?Y2Fmw6k=?=");
    check_headers("{\"method\":\"prompts/get\",\"params\":{\"name\":\" x\"}}", "prompts/get",
                  "=?base64?IHg=?=");
    /* a line break never reaches a header line */
    check_headers("{\"method\":\"tools/call\",\"params\":{\"name\":\"a\\r\\nX-Evil: 1\"}}",
                  "tools/call", "=?base64?YQ0KWC1FdmlsOiAx?=");
}

static void test_verdict(void **state)
{
    (void)state;
    json_t *a = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"supportedVersions\":"
                      "[\"2026-07-28\"],\"capabilities\":{}}}");
    assert_int_equal(mx_up26_verdict(200, a), MX_UP26_MODERN);
    json_decref(a);
    /* a server that knows discover but not our version */
    a = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"supportedVersions\":[\"2027-01-01\"]}}");
    assert_int_equal(mx_up26_verdict(200, a), MX_UP26_LEGACY);
    json_decref(a);
    /* 2025 servers: method not found in a 200, or a session error */
    a = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"nope\"}}");
    assert_int_equal(mx_up26_verdict(200, a), MX_UP26_LEGACY);
    assert_int_equal(mx_up26_verdict(404, a), MX_UP26_LEGACY);
    json_decref(a);
    a = parse("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,"
              "\"message\":\"Bad Request: Server not initialized\"}}");
    assert_int_equal(mx_up26_verdict(400, a), MX_UP26_LEGACY);
    json_decref(a);
    assert_int_equal(mx_up26_verdict(400, NULL), MX_UP26_LEGACY);
    assert_int_equal(mx_up26_verdict(405, NULL), MX_UP26_LEGACY);
    /* no evidence: credential refused, a paused or broken upstream */
    assert_int_equal(mx_up26_verdict(401, NULL), MX_UP26_UNKNOWN);
    assert_int_equal(mx_up26_verdict(403, NULL), MX_UP26_UNKNOWN);
    assert_int_equal(mx_up26_verdict(502, NULL), MX_UP26_UNKNOWN);
    assert_int_equal(mx_up26_verdict(503, NULL), MX_UP26_UNKNOWN);
    assert_int_equal(mx_up26_verdict(200, NULL), MX_UP26_UNKNOWN);
}

static void test_init_result(void **state)
{
    (void)state;
    json_t *r = parse("{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{\"tools\":"
                      "{\"listChanged\":true}},\"instructions\":\"be nice\",\"resultType\":"
                      "\"complete\",\"_meta\":{\"io.modelcontextprotocol/serverInfo\":"
                      "{\"name\":\"sim\",\"version\":\"1\"}}}");
    json_t *i = mx_up26_init_result(r);
    assert_string_equal(json_string_value(json_object_get(i, "protocolVersion")), "2026-07-28");
    assert_true(json_equal(json_object_get(i, "capabilities"), json_object_get(r, "capabilities")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(i, "serverInfo"), "name")), "sim");
    assert_string_equal(json_string_value(json_object_get(i, "instructions")), "be nice");
    json_decref(i);
    json_decref(r);
    /* nothing announced: empty capabilities, no serverInfo */
    r = parse("{\"supportedVersions\":[\"2026-07-28\"]}");
    i = mx_up26_init_result(r);
    assert_int_equal(json_object_size(json_object_get(i, "capabilities")), 0);
    assert_null(json_object_get(i, "serverInfo"));
    json_decref(i);
    json_decref(r);
}

static void test_listen(void **state)
{
    (void)state;
    json_t *id = json_string("L1");
    json_t *sc = parse("{\"tools\":{\"listChanged\":true},\"prompts\":{},"
                       "\"resources\":{\"listChanged\":true,\"subscribe\":true}}");
    json_t *m = mx_up26_listen(id, sc, NULL, NULL);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "method")), "subscriptions/listen");
    json_t *n = json_object_get(json_object_get(m, "params"), "notifications");
    assert_true(json_is_true(json_object_get(n, "toolsListChanged")));
    assert_null(json_object_get(n, "promptsListChanged"));
    assert_true(json_is_true(json_object_get(n, "resourcesListChanged")));
    assert_true(json_equal(json_object_get(m, "id"), id));
    json_decref(m);
    json_decref(sc);
    sc = parse("{\"tools\":{},\"logging\":{}}");
    assert_null(mx_up26_listen(id, sc, NULL, NULL));
    json_decref(sc);
    json_decref(id);
}

/* A 2025 client's resources/subscribe becomes resourceSubscriptions, also
 * for an upstream that announces no list changes. */
static void test_listen_resources(void **state)
{
    (void)state;
    json_t *id = json_string("L2");
    json_t *sc = parse("{\"tools\":{\"listChanged\":true},\"resources\":{}}");
    json_t *uris = parse("{\"test://a\":1,\"file:///b c\":2}");
    json_t *m = mx_up26_listen(id, sc, uris, NULL);
    assert_non_null(m);
    json_t *n = json_object_get(json_object_get(m, "params"), "notifications");
    assert_true(json_is_true(json_object_get(n, "toolsListChanged")));
    json_t *list = json_object_get(n, "resourceSubscriptions");
    assert_int_equal(json_array_size(list), 2);
    json_t *want = parse("[\"test://a\",\"file:///b c\"]");
    assert_true(json_equal(list, want)); /* jansson keeps insertion order */
    json_decref(want);
    json_t *meta = json_object_get(json_object_get(m, "params"), "_meta");
    assert_string_equal(
        json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion")),
        "2026-07-28");
    json_decref(m);
    json_decref(sc);
    /* no list changes announced: the resources alone */
    sc = parse("{\"resources\":{}}");
    m = mx_up26_listen(id, sc, uris, NULL);
    assert_non_null(m);
    n = json_object_get(json_object_get(m, "params"), "notifications");
    assert_int_equal(json_object_size(n), 1);
    assert_int_equal(json_array_size(json_object_get(n, "resourceSubscriptions")), 2);
    json_decref(m);
    /* an empty set: nothing to listen to */
    json_t *none = json_object();
    assert_null(mx_up26_listen(id, sc, none, NULL));
    json_decref(none);
    json_decref(uris);
    json_decref(sc);
    json_decref(id);
}

static void test_honoured(void **state)
{
    (void)state;
    json_t *a = parse("{\"jsonrpc\":\"2.0\",\"method\":"
                      "\"notifications/subscriptions/acknowledged\",\"params\":{"
                      "\"notifications\":{\"toolsListChanged\":true,"
                      "\"resourceSubscriptions\":[\"test://a\",7]}}}");
    assert_true(mx_up26_honoured(a, "test://a"));
    assert_false(mx_up26_honoured(a, "test://b"));
    assert_false(mx_up26_honoured(a, "test://"));
    assert_false(mx_up26_honoured(a, NULL));
    json_decref(a);
    a = parse("{\"jsonrpc\":\"2.0\",\"method\":"
              "\"notifications/subscriptions/acknowledged\",\"params\":{"
              "\"notifications\":{\"toolsListChanged\":true}}}");
    assert_false(mx_up26_honoured(a, "test://a"));
    json_decref(a);
    assert_false(mx_up26_honoured(NULL, "test://a"));
}

/* What a 2025 upstream gets: no 2026 keys, the rest of _meta kept. */
static void test_strip(void **state)
{
    (void)state;
    json_t *m = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
                      "\"name\":\"t\",\"_meta\":{\"io.modelcontextprotocol/logLevel\":\"debug\","
                      "\"progressToken\":5}}}");
    json_t *out = mx_up26_strip(m);
    assert_true(out != m);
    json_t *meta = json_object_get(json_object_get(out, "params"), "_meta");
    assert_null(json_object_get(meta, "io.modelcontextprotocol/logLevel"));
    assert_int_equal(json_integer_value(json_object_get(meta, "progressToken")), 5);
    /* the caller's message is not changed */
    assert_non_null(json_object_get(json_object_get(json_object_get(m, "params"), "_meta"),
                                    "io.modelcontextprotocol/logLevel"));
    json_decref(out);
    json_decref(m);
    m = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{"
              "\"_meta\":{\"io.modelcontextprotocol/logLevel\":\"info\"}}}");
    out = mx_up26_strip(m);
    assert_null(json_object_get(json_object_get(out, "params"), "_meta"));
    json_decref(out);
    json_decref(m);
    m = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    out = mx_up26_strip(m);
    assert_ptr_equal(out, m);
    json_decref(out);
    json_decref(m);
}

static void test_answers(void **state)
{
    (void)state;
    json_t *a = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32022,\"message\":\"x\","
                      "\"data\":{\"supported\":[\"2027-01-01\"],\"requested\":\"2026-07-28\"}}}");
    assert_true(mx_up26_wrong_version(a));
    json_decref(a);
    a = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"x\"}}");
    assert_false(mx_up26_wrong_version(a));
    json_decref(a);
    assert_false(mx_up26_wrong_version(NULL));

    json_t *r = parse("{\"resultType\":\"input_required\",\"requestState\":\"s\"}");
    assert_true(mx_up26_input_required(r));
    json_decref(r);
    r = parse("{\"resultType\":\"complete\",\"content\":[]}");
    assert_false(mx_up26_input_required(r));
    json_decref(r);
    assert_false(mx_up26_input_required(NULL));
}

static void test_discover(void **state)
{
    (void)state;
    json_t *id = json_string("d");
    json_t *m = mx_up26_discover(id, NULL);
    assert_string_equal(json_string_value(json_object_get(m, "method")), "server/discover");
    json_t *meta = json_object_get(json_object_get(m, "params"), "_meta");
    assert_string_equal(
        json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion")),
        "2026-07-28");
    struct mx_upreq_hdrs h;
    mx_upreq_hdrs_init(&h);
    assert_int_equal(mx_up26_headers(m, &h), 0);
    assert_string_equal(header(&h, "Mcp-Method"), "server/discover");
    mx_upreq_hdrs_clear(&h);
    json_decref(m);
    json_decref(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_meta),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_verdict),
        cmocka_unit_test(test_init_result),
        cmocka_unit_test(test_listen),
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_discover),
        cmocka_unit_test(test_client_caps),
        cmocka_unit_test(test_listen_resources),
        cmocka_unit_test(test_honoured),
        cmocka_unit_test(test_strip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
