/* SPDX-License-Identifier: MIT */
/*
 * The stateless revision's front-side checks: which POSTs are modern, the
 * Base64 sentinel form of header values, and every refusal of MCP 2026-07-28
 * with its HTTP status and JSON-RPC code, in the order the revision asks for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <jansson.h>

#include "err.h"
#include "revision.h"
#include "rpc.h"

static json_t *req(const char *method, const char *version, bool caps, const char *extra)
{
    json_t *meta = json_object();
    if (version)
        json_object_set_new(meta, MX_REV_META_VERSION, json_string(version));
    if (caps)
        json_object_set_new(meta, MX_REV_META_CAPS, json_object());
    json_t *params = extra ? json_loads(extra, 0, NULL) : json_object();
    assert_non_null(params);
    json_object_set_new(params, "_meta", meta);
    return json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", 7, "method", method, "params",
                     params);
}

static void test_revision_classify(void **state)
{
    struct mx_str v26 = MX_STR_LIT("2026-07-28"), v25 = MX_STR_LIT("2025-11-25");
    struct mx_str later = MX_STR_LIT("2027-01-01"), junk = MX_STR_LIT("v999");
    (void)state;
    json_t *modern = req("tools/list", "2026-07-28", true, NULL);
    json_t *legacy = json_pack("{s:s, s:i, s:s, s:{s:{s:i}}}", "jsonrpc", "2.0", "id", 1, "method",
                               "tools/list", "params", "_meta", "progressToken", 3);
    struct mx_rev_hdrs h = {0};
    /* the _meta version decides, whatever the headers say */
    assert_true(mx_rev_is_modern(modern, &h));
    h.session = true;
    assert_true(mx_rev_is_modern(modern, &h));
    /* a _meta with progressToken is not a modern signal */
    h.session = false;
    assert_false(mx_rev_is_modern(legacy, &h));
    h.version = &v25;
    assert_false(mx_rev_is_modern(legacy, &h));
    /* no session and a modern header: modern (then refused for its _meta) */
    h.version = &v26;
    assert_true(mx_rev_is_modern(legacy, &h));
    h.version = &later;
    assert_true(mx_rev_is_modern(legacy, &h));
    h.version = &junk;
    assert_false(mx_rev_is_modern(legacy, &h));
    /* with a session, the header alone is legacy */
    h.version = &v26;
    h.session = true;
    assert_false(mx_rev_is_modern(legacy, &h));
    json_decref(modern);
    json_decref(legacy);
}

static void test_revision_header_decode(void **state)
{
    static const struct {
        const char *in;
        int rc;
        const char *out;
    } cases[] = {
        {"get_weather", 11, "get_weather"},
        {"file:///a b.txt", 15, "file:///a b.txt"},
        {"=?base64?SGVsbG8sIOS4lueVjA==?=", 13, "Hello, \xe4\xb8\x96\xe7\x95\x8c"},
        {"=?base64?IHBhZGRlZCA=?=", 8, " padded "},
        {"=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", 18, "=?base64?literal?="},
        {"=?base64?YQ==?=", 1, "a"},
        {"=?base64?"
         "?=",
         0, ""},
        {"=?base64?YQ=?=", MX_EINVAL, NULL},        /* not a multiple of 4 */
        {"=?base64?Y$==?=", MX_EINVAL, NULL},       /* bad character */
        {"=?base64?AA==?=", MX_EINVAL, NULL},       /* a NUL inside */
        {"=?BASE64?YQ==?=", 15, "=?BASE64?YQ==?="}, /* markers are case-sensitive */
        {"tab\there", MX_EINVAL, NULL},
        {"caf\xc3\xa9", MX_EINVAL, NULL}, /* non-ASCII must be encoded */
    };
    char out[64];
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = mx_rev_header_decode(mx_str_cstr(cases[i].in), out, sizeof(out));
        assert_int_equal(rc, cases[i].rc);
        if (rc >= 0)
            assert_string_equal(out, cases[i].out);
    }
    /* the cap: exactly enough, and one byte short */
    assert_int_equal(mx_rev_header_decode(mx_str_cstr("abc"), out, 4), 3);
    assert_int_equal(mx_rev_header_decode(mx_str_cstr("abc"), out, 3), MX_ELIMIT);
    assert_int_equal(mx_rev_header_decode(mx_str_cstr("=?base64?YWJj?="), out, 4), 3);
    assert_int_equal(mx_rev_header_decode(mx_str_cstr("=?base64?YWJj?="), out, 3), MX_ELIMIT);
}

struct check_case {
    const char *what;
    const char *method;
    const char *meta_version; /* NULL: absent */
    bool caps;
    const char *params; /* extra params as JSON, or NULL */
    const char *h_version, *h_method, *h_name;
    int status; /* 0: accepted */
    int code;
};

static void test_revision_check_table(void **state)
{
    static const struct check_case cases[] = {
        {"discover ok", "server/discover", "2026-07-28", true, NULL, "2026-07-28",
         "server/discover", NULL, 0, 0},
        {"call ok", "tools/call", "2026-07-28", true, "{\"name\":\"echo\"}", "2026-07-28",
         "tools/call", "echo", 0, 0},
        {"read ok, encoded name", "resources/read", "2026-07-28", true,
         "{\"uri\":\"sim://\\u00e9\"}", "2026-07-28", "resources/read",
         "=?base64?c2ltOi8vw6k=?=", 0, 0},
        {"no version header", "tools/list", "2026-07-28", true, NULL, NULL, "tools/list", NULL, 400,
         MX_REV_HEADER_MISMATCH},
        {"no _meta version", "tools/list", NULL, true, NULL, "2026-07-28", "tools/list", NULL, 400,
         -32602},
        {"no capabilities", "tools/list", "2026-07-28", false, NULL, "2026-07-28", "tools/list",
         NULL, 400, -32602},
        /* mismatch is checked before support: header 2026 + body v999 */
        {"version mismatch", "tools/list", "v999", true, NULL, "2026-07-28", "tools/list", NULL,
         400, MX_REV_HEADER_MISMATCH},
        {"no Mcp-Method", "tools/list", "2026-07-28", true, NULL, "2026-07-28", NULL, NULL, 400,
         MX_REV_HEADER_MISMATCH},
        {"wrong Mcp-Method", "tools/list", "2026-07-28", true, NULL, "2026-07-28", "prompts/list",
         NULL, 400, MX_REV_HEADER_MISMATCH},
        {"Mcp-Method case", "tools/list", "2026-07-28", true, NULL, "2026-07-28", "Tools/List",
         NULL, 400, MX_REV_HEADER_MISMATCH},
        {"no Mcp-Name", "tools/call", "2026-07-28", true, "{\"name\":\"echo\"}", "2026-07-28",
         "tools/call", NULL, 400, MX_REV_HEADER_MISMATCH},
        {"wrong Mcp-Name", "prompts/get", "2026-07-28", true, "{\"name\":\"greet\"}", "2026-07-28",
         "prompts/get", "other", 400, MX_REV_HEADER_MISMATCH},
        {"Mcp-Name vs uri", "resources/read", "2026-07-28", true, "{\"uri\":\"sim://readme\"}",
         "2026-07-28", "resources/read", "sim://config", 400, MX_REV_HEADER_MISMATCH},
        {"Mcp-Name bad base64", "tools/call", "2026-07-28", true, "{\"name\":\"echo\"}",
         "2026-07-28", "tools/call", "=?base64?ZWNob?=", 400, MX_REV_HEADER_MISMATCH},
        {"unsupported version", "tools/list", "2099-01-01", true, NULL, "2099-01-01", "tools/list",
         NULL, 400, MX_REV_UNSUPPORTED_VERSION},
        {"removed ping", "ping", "2026-07-28", true, NULL, "2026-07-28", "ping", NULL, 404, -32601},
        {"removed initialize", "initialize", "2026-07-28", true, NULL, "2026-07-28", "initialize",
         NULL, 404, -32601},
        {"removed subscribe", "resources/subscribe", "2026-07-28", true, NULL, "2026-07-28",
         "resources/subscribe", NULL, 404, -32601},
        {"removed setLevel", "logging/setLevel", "2026-07-28", true, NULL, "2026-07-28",
         "logging/setLevel", NULL, 404, -32601},
        /* the tasks extension (SEP-2663): Mcp-Name mirrors taskId */
        {"tasks/get ok", "tasks/get", "2026-07-28", true, "{\"taskId\":\"t-1\"}", "2026-07-28",
         "tasks/get", "t-1", 0, 0},
        {"tasks/update no Mcp-Name", "tasks/update", "2026-07-28", true,
         "{\"taskId\":\"t-1\",\"inputResponses\":{}}", "2026-07-28", "tasks/update", NULL, 400,
         MX_REV_HEADER_MISMATCH},
        {"tasks/cancel wrong Mcp-Name", "tasks/cancel", "2026-07-28", true, "{\"taskId\":\"t-1\"}",
         "2026-07-28", "tasks/cancel", "t-2", 400, MX_REV_HEADER_MISMATCH},
        /* no tasks/result or tasks/list in the extension */
        {"removed tasks/result", "tasks/result", "2026-07-28", true, "{\"taskId\":\"t-1\"}",
         "2026-07-28", "tasks/result", NULL, 404, -32601},
        {"removed tasks/list", "tasks/list", "2026-07-28", true, NULL, "2026-07-28", "tasks/list",
         NULL, 404, -32601},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct check_case *c = &cases[i];
        json_t *msg = req(c->method, c->meta_version, c->caps, c->params);
        struct mx_str hv = mx_str_cstr(c->h_version ? c->h_version : "");
        struct mx_str hm = mx_str_cstr(c->h_method ? c->h_method : "");
        struct mx_str hn = mx_str_cstr(c->h_name ? c->h_name : "");
        struct mx_rev_hdrs h = {c->h_version ? &hv : NULL, c->h_method ? &hm : NULL,
                                c->h_name ? &hn : NULL, false, false};
        struct mx_rev_error err;
        int rc = mx_rev_check(msg, &h, &err);
        if (c->status == 0) {
            if (rc != 0)
                fail_msg("%s: refused with %d/%d: %s", c->what, err.status, err.code, err.message);
        } else {
            if (rc != MX_EPROTO || err.status != c->status || err.code != c->code)
                fail_msg("%s: got rc %d, %d/%d, want %d/%d", c->what, rc, err.status, err.code,
                         c->status, c->code);
            assert_true(strlen(err.message) > 0);
        }
        json_decref(err.data);
        json_decref(msg);
    }
}

/* Over stdio there are no headers: _meta alone says the version, and the
 * checks that follow it still hold. */
static void test_revision_no_headers(void **state)
{
    (void)state;
    struct mx_rev_hdrs h = {NULL, NULL, NULL, false, true};
    struct mx_rev_error err;
    json_t *msg = req("tools/list", "2026-07-28", true, NULL);
    assert_int_equal(mx_rev_check(msg, &h, &err), 0);
    json_decref(msg);
    msg = req("tools/list", "2026-07-28", false, NULL);
    assert_int_equal(mx_rev_check(msg, &h, &err), MX_EPROTO);
    assert_int_equal(err.code, -32602);
    json_decref(msg);
    msg = req("tools/list", "2099-01-01", true, NULL);
    assert_int_equal(mx_rev_check(msg, &h, &err), MX_EPROTO);
    assert_int_equal(err.code, MX_REV_UNSUPPORTED_VERSION);
    assert_string_equal(json_string_value(json_object_get(err.data, "requested")), "2099-01-01");
    json_decref(err.data);
    json_decref(msg);
    msg = req("ping", "2026-07-28", true, NULL);
    assert_int_equal(mx_rev_check(msg, &h, &err), MX_EPROTO);
    assert_int_equal(err.status, 404);
    json_decref(msg);
}

static void test_revision_unsupported_data(void **state)
{
    (void)state;
    json_t *msg = req("tools/list", "2099-01-01", true, NULL);
    struct mx_str hv = MX_STR_LIT("2099-01-01"), hm = MX_STR_LIT("tools/list");
    struct mx_rev_hdrs h = {&hv, &hm, NULL, false, false};
    struct mx_rev_error err;
    assert_int_equal(mx_rev_check(msg, &h, &err), MX_EPROTO);
    assert_string_equal(json_string_value(json_object_get(err.data, "requested")), "2099-01-01");
    json_t *sup = json_object_get(err.data, "supported");
    assert_int_equal(json_array_size(sup), 1);
    assert_string_equal(json_string_value(json_array_get(sup, 0)), MX_REV_MODERN);
    assert_true(mx_rev_version_supported(MX_REV_MODERN));
    assert_false(mx_rev_version_supported("2025-11-25"));
    json_decref(err.data);
    json_decref(msg);
}

/* The Mcp-Param-* headers of one case: "Name: value" lines, NULL-ended. */
struct param_hdrs {
    const char *const *lines;
    struct mx_str value; /* the last one found */
};

static const struct mx_str *param_header(const void *ctx, const char *name)
{
    struct param_hdrs *h = (struct param_hdrs *)(uintptr_t)ctx;
    size_t n = strlen(name);
    for (const char *const *l = h->lines; *l; l++) {
        if (strncasecmp(*l, name, n) == 0 && (*l)[n] == ':') {
            h->value = mx_str_cstr(*l + n + 2);
            return &h->value;
        }
    }
    return NULL;
}

/* MCP 2026-07-28, Custom Headers, with the cases of the conformance
 * scenario http-custom-header-server-validation. */
static void test_revision_check_params(void **state)
{
    static const char schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
        "\"priority\":{\"type\":\"integer\",\"x-mcp-header\":\"Priority\"},"
        "\"verbose\":{\"type\":\"boolean\",\"x-mcp-header\":\"Verbose\"},"
        "\"data\":{\"type\":\"object\",\"x-mcp-header\":\"Data\"},"
        "\"spaced\":{\"type\":\"string\",\"x-mcp-header\":\"My Region\"},"
        "\"query\":{\"type\":\"string\"}}}";
    struct {
        const char *what;
        const char *args;
        const char *hdrs[4];
        bool ok;
    } cases[] = {
        {"plain values",
         "{\"region\":\"us-west1\",\"priority\":5,\"verbose\":true}",
         {"Mcp-Param-Region: us-west1", "Mcp-Param-Priority: 5", "mcp-param-verbose: true"},
         true},
        {"valid base64", "{\"region\":\"Hello\"}", {"Mcp-Param-Region: =?base64?SGVsbG8=?="}, true},
        {"base64 bad padding",
         "{\"region\":\"Hello\"}",
         {"Mcp-Param-Region: =?base64?SGVsbG8?="},
         false},
        {"base64 bad characters",
         "{\"region\":\"Hello\"}",
         {"Mcp-Param-Region: =?base64?SGVs!!!bG8=?="},
         false},
        {"no prefix: literal", "{\"region\":\"SGVsbG8=\"}", {"Mcp-Param-Region: SGVsbG8="}, true},
        {"no suffix: literal",
         "{\"region\":\"=?base64?SGVsbG8=\"}",
         {"Mcp-Param-Region: =?base64?SGVsbG8="},
         true},
        {"header missing", "{\"region\":\"test-value\"}", {NULL}, false},
        {"header without value", "{}", {"Mcp-Param-Region: x"}, false},
        {"value differs", "{\"region\":\"a\"}", {"Mcp-Param-Region: b"}, false},
        {"integer numerically", "{\"priority\":5}", {"Mcp-Param-Priority: 05"}, true},
        {"integer differs", "{\"priority\":5}", {"Mcp-Param-Priority: 6"}, false},
        {"integer not a number", "{\"priority\":5}", {"Mcp-Param-Priority: five"}, false},
        {"boolean differs", "{\"verbose\":false}", {"Mcp-Param-Verbose: true"}, false},
        {"null omitted", "{\"verbose\":null}", {NULL}, true},
        {"control character", "{\"region\":\"a\\tb\"}", {"Mcp-Param-Region: a\tb"}, false},
        {"unannotated and invalid annotations ignored",
         "{\"query\":\"q\",\"data\":{\"k\":1},\"spaced\":\"s\"}",
         {NULL},
         true},
    };
    (void)state;
    json_t *sch = json_loads(schema, 0, NULL);
    assert_non_null(sch);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *args = json_loads(cases[i].args, 0, NULL);
        assert_non_null(args);
        struct param_hdrs h = {cases[i].hdrs, {NULL, 0}};
        struct mx_rev_error err;
        int rc = mx_rev_check_params(sch, args, param_header, &h, &err);
        if (cases[i].ok && rc != 0)
            fail_msg("%s: refused: %s", cases[i].what, err.message);
        if (!cases[i].ok &&
            (rc != MX_EPROTO || err.status != 400 || err.code != MX_REV_HEADER_MISMATCH))
            fail_msg("%s: not refused with 400/-32020 (rc %d)", cases[i].what, rc);
        json_decref(args);
    }
    json_decref(sch);
}

/* The POST media check of both eras: JSON in, JSON and SSE accepted, where
 * a wildcard range may stand for either and q=0 refuses. */
static void test_revision_check_media(void **state)
{
    static const struct {
        const char *ct, *accept;
        int status;
    } cases[] = {
        {"application/json", "application/json, text/event-stream", 0},
        {"application/json; charset=utf-8", "text/event-stream, application/json;q=0.5", 0},
        {"Application/JSON", "*/*", 0},
        {"application/json", "application/*, text/*", 0},
        {"application/json", "application/json", 406},
        {"application/json", "text/event-stream", 406},
        {"application/json", "application/json, text/event-stream;q=0", 406},
        {"application/json", "text/*", 406},
        {"application/json", "application/jsonx, text/event-stream", 406},
        {"application/json", NULL, 406},
        {"text/plain", "application/json, text/event-stream", 415},
        {"application/jsonx", "application/json, text/event-stream", 415},
        {NULL, "application/json, text/event-stream", 415},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mx_str ct = mx_str_cstr(cases[i].ct ? cases[i].ct : "");
        struct mx_str acc = mx_str_cstr(cases[i].accept ? cases[i].accept : "");
        struct mx_rev_error err;
        int rc = mx_rev_check_media(cases[i].ct ? &ct : NULL, cases[i].accept ? &acc : NULL, &err);
        int got = rc == 0 ? 0 : err.status;
        if (got != cases[i].status)
            fail_msg("Content-Type '%s', Accept '%s': %d, want %d", cases[i].ct ? cases[i].ct : "-",
                     cases[i].accept ? cases[i].accept : "-", got, cases[i].status);
        if (rc != 0)
            assert_int_equal(err.code, MX_RPC_INVALID_REQUEST);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_revision_classify),
        cmocka_unit_test(test_revision_header_decode),
        cmocka_unit_test(test_revision_check_table),
        cmocka_unit_test(test_revision_unsupported_data),
        cmocka_unit_test(test_revision_no_headers),
        cmocka_unit_test(test_revision_check_params),
        cmocka_unit_test(test_revision_check_media),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
