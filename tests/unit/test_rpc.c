/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC helpers: a request's text spliced for an upstream (the id, the
 * progress token and the tool's name replaced, every other byte kept, or
 * NULL where the cheap scan cannot decide), and members copied before a
 * change so that the client's message stays as it came.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rpc.h"

static char *splice(const char *text, uint64_t id, bool token, const char *name)
{
    struct mx_rpc_edits ed = {id, token, name};
    size_t len = 0;
    char *out = mx_rpc_splice(mx_str_cstr(text), &ed, &len);
    if (out)
        assert_int_equal(strlen(out), len);
    return out;
}

static void test_splice_edits(void **state)
{
    (void)state;
    char *out = splice("{\"jsonrpc\":\"2.0\",\"id\":\"c-1\",\"method\":\"ping\"}", 7, false, NULL);
    assert_string_equal(out, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
    free(out);
    /* spacing, order, number spelling and escapes as they came */
    out = splice(
        " {\"params\" : {\"name\" : \"a__echo\",\"arguments\":{\"n\":1.50,\"s\":\"\\u00e9\"},"
        "\"_meta\":{ \"progressToken\" : \"p\" }},\"id\":  12 ,\"method\":\"tools/call\","
        "\"jsonrpc\":\"2.0\"}\n",
        18446744073709551615u, true, "echo \"2\"\n");
    assert_string_equal(out,
                        " {\"params\" : {\"name\" : \"echo \\\"2\\\"\\n\",\"arguments\":{\"n\":"
                        "1.50,\"s\":\"\\u00e9\"},\"_meta\":{ \"progressToken\" : "
                        "18446744073709551615 }},\"id\":  18446744073709551615 ,\"method\":"
                        "\"tools/call\",\"jsonrpc\":\"2.0\"}\n");
    free(out);
    /* the id after params */
    out = splice("{\"params\":{\"_meta\":{\"progressToken\":1}},\"id\":1}", 2, true, NULL);
    assert_string_equal(out, "{\"params\":{\"_meta\":{\"progressToken\":2}},\"id\":2}");
    free(out);
}

static void test_splice_undecided(void **state)
{
    (void)state;
    /* no id; a member an edit changes is missing */
    assert_null(splice("{\"method\":\"x\"}", 1, false, NULL));
    assert_null(splice("{\"id\":1,\"params\":{}}", 1, true, NULL));
    assert_null(splice("{\"id\":1,\"params\":{\"_meta\":{}}}", 1, true, NULL));
    assert_null(splice("{\"id\":1}", 1, false, "n"));
    assert_null(splice("{\"id\":1,\"params\":[]}", 1, false, "n"));
    /* not valid, or not one the scan decides: the caller encodes */
    assert_null(splice("{\"id\":1,\"id\":2}", 1, false, NULL));
    assert_null(splice("{\"id\":1,\"params\":{\"a\":1,\"a\":2}}", 1, false, NULL));
    assert_null(splice("{\"i\\u0064\":1}", 1, false, NULL));
    assert_null(splice("{\"id\":1} x", 1, false, NULL));
    assert_null(splice("[{\"id\":1}]", 1, false, NULL));
}

static void test_own(void **state)
{
    (void)state;
    json_t *client = json_loads("{\"id\":1,\"params\":{\"_meta\":{\"progressToken\":\"t\"},"
                                "\"arguments\":{\"x\":[1]}}}",
                                0, NULL);
    json_t *up = json_copy(client);
    json_t *meta = mx_rpc_own(mx_rpc_own(up, "params", false), "_meta", false);
    json_object_set_new(meta, "progressToken", json_integer(5));
    json_object_set_new(up, "id", json_integer(5));
    /* the client's message is as it was; what did not change is shared */
    json_t *cparams = json_object_get(client, "params");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(cparams, "_meta"), "progressToken")),
        "t");
    assert_int_equal(json_integer_value(json_object_get(client, "id")), 1);
    assert_ptr_equal(json_object_get(json_object_get(up, "params"), "arguments"),
                     json_object_get(cparams, "arguments"));
    /* missing: made on request, else NULL */
    assert_null(mx_rpc_own(up, "nothing", false));
    assert_true(json_is_object(mx_rpc_own(up, "made", true)));
    json_object_set_new(up, "arr", json_array());
    assert_null(mx_rpc_own(up, "arr", false));
    json_decref(up);
    json_decref(client);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splice_edits),
        cmocka_unit_test(test_splice_undecided),
        cmocka_unit_test(test_own),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
