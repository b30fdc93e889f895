/* SPDX-License-Identifier: MIT */
/*
 * Requests toward MCP 2026-07-28 upstreams: the _meta every request carries,
 * the headers the revision requires (and the base64 form of names HTTP
 * cannot carry), what server/discover answers say about the revision, the
 * initialize-like result made from a discover result, the listen request
 * for the lists an upstream announces and the resources subscribed to, the
 * acknowledgement of those, what a 2025 upstream is spared of _meta, the
 * answers that say the revision is wrong or that input is required, and the
 * Mcp-Param-* headers of tools whose arguments are annotated with
 * x-mcp-header (and the tools whose annotations are invalid, which are left
 * out).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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
    assert_int_equal(mx_up26_headers(msg, NULL, &h), 0);
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
    static const struct {
        long status;
        const char *answer; /* NULL: none */
        enum mx_up26_verdict want;
    } cases[] = {
        {200, "{\"id\":1,\"result\":{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{}}}",
         MX_UP26_MODERN},
        /* a server that knows discover but not our version */
        {200, "{\"id\":1,\"result\":{\"supportedVersions\":[\"2027-01-01\"]}}", MX_UP26_LEGACY},
        /* 2025 servers: method not found in a 200, or a session error */
        {200, "{\"id\":1,\"error\":{\"code\":-32601,\"message\":\"nope\"}}", MX_UP26_LEGACY},
        {404, "{\"id\":1,\"error\":{\"code\":-32601,\"message\":\"nope\"}}", MX_UP26_LEGACY},
        {400,
         "{\"id\":null,\"error\":{\"code\":-32000,\"message\":\"Bad Request: Server not "
         "initialized\"}}",
         MX_UP26_LEGACY},
        {400, NULL, MX_UP26_LEGACY},
        {405, NULL, MX_UP26_LEGACY},
        /* -32022 that lists our version: ask again; one that does not: 2025 */
        {400,
         "{\"id\":1,\"error\":{\"code\":-32022,\"message\":\"no\",\"data\":{\"supported\":"
         "[\"2026-07-28\"],\"requested\":\"2026-07-28\"}}}",
         MX_UP26_RETRY},
        {200,
         "{\"id\":1,\"error\":{\"code\":-32022,\"message\":\"no\",\"data\":{\"supported\":"
         "[\"2026-07-28\"]}}}",
         MX_UP26_RETRY},
        {400,
         "{\"id\":1,\"error\":{\"code\":-32022,\"message\":\"no\",\"data\":{\"supported\":"
         "[\"2025-11-25\"]}}}",
         MX_UP26_LEGACY},
        /* no evidence: credential refused, a paused or broken upstream */
        {401, NULL, MX_UP26_UNKNOWN},
        {403, NULL, MX_UP26_UNKNOWN},
        {502, NULL, MX_UP26_UNKNOWN},
        {503, NULL, MX_UP26_UNKNOWN},
        {200, NULL, MX_UP26_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *a = cases[i].answer ? parse(cases[i].answer) : NULL;
        if (mx_up26_verdict(cases[i].status, a) != cases[i].want)
            fail_msg("case %zu (HTTP %ld): verdict %d, want %d", i, cases[i].status,
                     (int)mx_up26_verdict(cases[i].status, a), (int)cases[i].want);
        json_decref(a);
    }
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
    json_t *m = mx_up26_listen(id, sc, NULL, NULL, NULL);
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
    assert_null(mx_up26_listen(id, sc, NULL, NULL, NULL));
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
    json_t *m = mx_up26_listen(id, sc, uris, NULL, NULL);
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
    m = mx_up26_listen(id, sc, uris, NULL, NULL);
    assert_non_null(m);
    n = json_object_get(json_object_get(m, "params"), "notifications");
    assert_int_equal(json_object_size(n), 1);
    assert_int_equal(json_array_size(json_object_get(n, "resourceSubscriptions")), 2);
    json_decref(m);
    /* an empty set: nothing to listen to */
    json_t *none = json_object();
    assert_null(mx_up26_listen(id, sc, none, NULL, NULL));
    json_decref(none);
    json_decref(uris);
    json_decref(sc);
    json_decref(id);
}

/* Tasks followed on the listen stream become its taskIds (SEP-2663), with
 * nothing else to listen to as well. */
static void test_listen_tasks(void **state)
{
    (void)state;
    json_t *id = json_string("L3");
    json_t *sc = parse("{\"tools\":{}}");
    json_t *tasks = parse("{\"t-1\":true,\"t-2\":true}");
    json_t *m = mx_up26_listen(id, sc, NULL, tasks, NULL);
    assert_non_null(m);
    json_t *n = json_object_get(json_object_get(m, "params"), "notifications");
    assert_int_equal(json_object_size(n), 1);
    json_t *want = parse("[\"t-1\",\"t-2\"]");
    assert_true(json_equal(json_object_get(n, "taskIds"), want));
    json_decref(want);
    /* with the extension declared */
    json_t *meta = json_object_get(json_object_get(m, "params"), "_meta");
    json_t *ext = json_object_get(
        json_object_get(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"),
                        "extensions"),
        "io.modelcontextprotocol/tasks");
    assert_true(json_is_object(ext));
    json_decref(m);
    json_t *none = json_object();
    assert_null(mx_up26_listen(id, sc, NULL, none, NULL));
    json_decref(none);
    json_decref(tasks);
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
    assert_int_equal(mx_up26_headers(m, NULL, &h), 0);
    assert_string_equal(header(&h, "Mcp-Method"), "server/discover");
    mx_upreq_hdrs_clear(&h);
    json_decref(m);
    json_decref(id);
}

/* The Mcp-Param-* headers of one tools/call of a tool with |schema|
 * (inputSchema), with |args|; checked against |want|: "Name=value" pairs,
 * NULL-terminated, and no other Mcp-Param-* line. */
static void check_params(const char *schema, const char *args, const char *const *want)
{
    char tool[2048];
    snprintf(tool, sizeof(tool), "{\"name\":\"t\",\"inputSchema\":%s}", schema);
    json_t *t = parse(tool);
    json_t *map = mx_up26_param_map(t);
    assert_non_null(map);
    char msg_text[2048];
    snprintf(msg_text, sizeof(msg_text),
             "{\"method\":\"tools/call\",\"params\":{\"name\":\"t\",\"arguments\":%s}}", args);
    json_t *msg = parse(msg_text);
    struct mx_upreq_hdrs h;
    mx_upreq_hdrs_init(&h);
    assert_int_equal(mx_up26_headers(msg, map, &h), 0);
    size_t n = 0;
    for (size_t i = 0; i < h.cnt; i++) {
        if (strncmp(h.lines[i], "Mcp-Param-", 10) == 0)
            n++;
    }
    size_t k = 0;
    for (; want[k]; k++) {
        const char *eq = strchr(want[k], '=');
        char name[80];
        snprintf(name, sizeof(name), "Mcp-Param-%.*s", (int)(eq - want[k]), want[k]);
        if (eq[1] == '\0') {
            /* an empty value goes as "Name;", libcurl's empty header */
            char line[96];
            snprintf(line, sizeof(line), "%s;", name);
            bool found = false;
            for (size_t i = 0; i < h.cnt; i++)
                found = found || strcmp(h.lines[i], line) == 0;
            assert_true(found);
        } else {
            const char *v = header(&h, name);
            assert_non_null(v);
            assert_string_equal(v, eq + 1);
        }
    }
    assert_int_equal(n, k);
    mx_upreq_hdrs_clear(&h);
    json_decref(msg);
    json_decref(map);
    json_decref(t);
}

static void test_param_headers(void **state)
{
    (void)state;
    const char *schema = "{\"type\":\"object\",\"properties\":{"
                         "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
                         "\"priority\":{\"type\":\"integer\",\"x-mcp-header\":\"Priority\"},"
                         "\"verbose\":{\"type\":\"boolean\",\"x-mcp-header\":\"Verbose\"},"
                         "\"debug\":{\"type\":\"boolean\",\"x-mcp-header\":\"Debug\"},"
                         "\"empty\":{\"type\":\"string\",\"x-mcp-header\":\"EmptyVal\"},"
                         "\"m\":{\"type\":\"string\",\"x-mcp-header\":\"Method\"},"
                         "\"na\":{\"type\":\"string\",\"x-mcp-header\":\"NonAscii\"},"
                         "\"ws\":{\"type\":\"string\",\"x-mcp-header\":\"Whitespace\"},"
                         "\"inner\":{\"type\":\"string\",\"x-mcp-header\":\"InternalSpace\"},"
                         "\"crlf\":{\"type\":\"string\",\"x-mcp-header\":\"CrLf\"},"
                         "\"tab\":{\"type\":\"string\",\"x-mcp-header\":\"Tab\"},"
                         "\"f\":{\"type\":\"number\"},\"q\":{\"type\":\"string\"}}}";
    const char *const all[] = {"Region=us-west1",
                               "Priority=42",
                               "Verbose=false",
                               "Debug=true",
                               "EmptyVal=",
                               "Method=test-method",
                               "NonAscii==?base64?SGVsbG8sIOS4lueVjA==?=",
                               "Whitespace==?base64?IHBhZGRlZCA=?=",
                               "InternalSpace=us west 1",
                               "CrLf==?base64?bGluZTENCmxpbmUy?=",
                               "Tab==?base64?CWluZGVudGVk?=",
                               NULL};
    check_params(schema,
                 "{\"region\":\"us-west1\",\"priority\":42,\"verbose\":false,\"debug\":true,"
                 "\"empty\":\"\",\"m\":\"test-method\",\"na\":\"Hello, \\u4e16\\u754c\","
                 "\"ws\":\" padded \",\"inner\":\"us west 1\",\"crlf\":\"line1\\r\\nline2\","
                 "\"tab\":\"\\tindented\",\"f\":3.14,\"q\":\"SELECT 1\"}",
                 all);
    /* null and absent arguments get no header; nor does an object */
    const char *const some[] = {"Region=us-east1", "Priority=1", NULL};
    check_params(schema, "{\"region\":\"us-east1\",\"priority\":1,\"verbose\":null,\"m\":{}}",
                 some);
    /* a value over the cap is refused, not cut */
    json_t *t = parse("{\"name\":\"t\",\"inputSchema\":{\"properties\":{\"a\":{\"type\":"
                      "\"string\",\"x-mcp-header\":\"A\"}}}}");
    json_t *map = mx_up26_param_map(t);
    json_t *msg = json_pack("{s:s, s:{s:s, s:{s:o}}}", "method", "tools/call", "params", "name",
                            "t", "arguments", "a", json_string(""));
    char *big = calloc(1, 8194);
    memset(big, 'x', 8192);
    json_object_set_new(json_object_get(json_object_get(msg, "params"), "arguments"), "a",
                        json_string(big));
    struct mx_upreq_hdrs h;
    mx_upreq_hdrs_init(&h);
    assert_int_equal(mx_up26_headers(msg, map, &h), 0);
    mx_upreq_hdrs_clear(&h);
    big[8192] = 'x';
    json_object_set_new(json_object_get(json_object_get(msg, "params"), "arguments"), "a",
                        json_string(big));
    mx_upreq_hdrs_init(&h);
    assert_int_equal(mx_up26_headers(msg, map, &h), MX_ELIMIT);
    mx_upreq_hdrs_clear(&h);
    free(big);
    json_decref(msg);
    json_decref(map);
    json_decref(t);
}

static void test_param_map_invalid(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"\"}}",
        "{\"v\":{\"type\":\"object\",\"x-mcp-header\":\"Data\"}}",
        "{\"v\":{\"type\":\"array\",\"x-mcp-header\":\"Items\"}}",
        "{\"v\":{\"type\":\"null\",\"x-mcp-header\":\"Nil\"}}",
        "{\"v\":{\"type\":\"number\",\"x-mcp-header\":\"Score\"}}",
        "{\"v\":{\"x-mcp-header\":\"NoType\"}}",
        "{\"v\":{\"type\":\"string\",\"x-mcp-header\":7}}",
        "{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
        "\"b\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"}}",
        "{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"MyField\"},"
        "\"b\":{\"type\":\"string\",\"x-mcp-header\":\"myfield\"}}",
        "{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"My Region\"}}",
        "{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"Region:Primary\"}}",
        "{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"R\\u00e9gion\"}}",
        "{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"Region\\t1\"}}",
        NULL,
    };
    for (size_t i = 0; bad[i]; i++) {
        char tool[512];
        snprintf(tool, sizeof(tool), "{\"name\":\"t\",\"inputSchema\":{\"properties\":%s}}",
                 bad[i]);
        json_t *t = parse(tool);
        json_t *map = mx_up26_param_map(t);
        if (map)
            fail_msg("accepted: %s", bad[i]);
        json_decref(t);
    }
    /* no annotations: an empty map, the tool stays */
    json_t *t = parse("{\"name\":\"t\",\"inputSchema\":{\"properties\":{\"v\":{}}}}");
    json_t *map = mx_up26_param_map(t);
    assert_non_null(map);
    assert_int_equal(json_object_size(map), 0);
    json_decref(map);
    json_decref(t);
}

static void test_tools_seen(void **state)
{
    (void)state;
    json_t *r = parse("{\"tools\":[{\"name\":\"ok\",\"inputSchema\":{\"properties\":{\"r\":{"
                      "\"type\":\"string\",\"x-mcp-header\":\"Region\"}}}},"
                      "{\"name\":\"bad\",\"inputSchema\":{\"properties\":{\"r\":{"
                      "\"type\":\"number\",\"x-mcp-header\":\"Score\"}}}},"
                      "{\"name\":\"plain\",\"inputSchema\":{\"type\":\"object\"}}],"
                      "\"nextCursor\":\"c\"}");
    json_t *maps = parse("{\"plain\":{\"x\":\"Old\"}}");
    json_t *dropped = json_array();
    json_t *out = mx_up26_tools_seen(r, maps, dropped);
    json_t *tools = json_object_get(out, "tools");
    assert_int_equal(json_array_size(tools), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 0), "name")), "ok");
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 1), "name")),
                        "plain");
    assert_string_equal(json_string_value(json_object_get(out, "nextCursor")), "c");
    assert_int_equal(json_array_size(dropped), 1);
    assert_string_equal(json_string_value(json_array_get(dropped, 0)), "bad");
    assert_int_equal(json_object_size(maps), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(maps, "ok"), "r")),
                        "Region");
    /* the upstream's result is left as it was */
    assert_int_equal(json_array_size(json_object_get(r, "tools")), 3);
    json_decref(out);
    json_decref(dropped);
    json_decref(maps);
    json_decref(r);
}

static void test_legacy_result(void **state)
{
    (void)state;
    json_t *r = json_loads("{\"content\":[],\"resultType\":\"complete\",\"ttlMs\":5,"
                           "\"cacheScope\":\"public\",\"_meta\":{\"io.modelcontextprotocol/"
                           "serverInfo\":{\"name\":\"up\"}}}",
                           0, NULL);
    mx_up26_legacy_result(r);
    json_t *want = json_loads("{\"content\":[]}", 0, NULL);
    assert_true(json_equal(r, want));
    json_decref(r);
    json_decref(want);
    /* other _meta members stay */
    r = json_loads("{\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{},\"x\":1}}", 0, NULL);
    mx_up26_legacy_result(r);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "_meta"), "x")), 1);
    assert_int_equal(json_object_size(json_object_get(r, "_meta")), 1);
    json_decref(r);
    mx_up26_legacy_result(NULL); /* an error answer has no result */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_meta),  cmocka_unit_test(test_headers),
        cmocka_unit_test(test_verdict),       cmocka_unit_test(test_init_result),
        cmocka_unit_test(test_listen),        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_discover),      cmocka_unit_test(test_client_caps),
        cmocka_unit_test(test_param_headers), cmocka_unit_test(test_param_map_invalid),
        cmocka_unit_test(test_tools_seen),    cmocka_unit_test(test_listen_resources),
        cmocka_unit_test(test_listen_tasks),  cmocka_unit_test(test_honoured),
        cmocka_unit_test(test_strip),         cmocka_unit_test(test_legacy_result),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
