/* SPDX-License-Identifier: MIT */
/*
 * The cheap JSON check: member spans of a response, and agreement with the
 * full parser on what it accepts and refuses (duplicates at any depth,
 * \u0000, lone surrogates, bad UTF-8, numbers that do not fit, trailing
 * bytes), and the cases it leaves to the full parser.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jscan.h"
#include "rpc.h"

static const char *const keys[] = {"jsonrpc", "id", "result", "error", "method"};
enum { NKEYS = sizeof(keys) / sizeof(keys[0]) };

static bool scan(const char *text, struct mx_str *vals)
{
    return mx_jscan_object(mx_str_cstr(text), keys, NKEYS, vals);
}

static void assert_span(struct mx_str v, const char *want)
{
    assert_non_null(v.p);
    assert_int_equal(v.len, strlen(want));
    assert_memory_equal(v.p, want, v.len);
}

static void test_response_spans(void **state)
{
    struct mx_str v[NKEYS];
    (void)state;
    assert_true(scan(" {\"jsonrpc\" : \"2.0\", \"id\":42,\n \"result\": {\"content\":[{\"type\":"
                     "\"text\",\"text\":\"a\\\"b\"}],\"isError\":false} } \r\n",
                     v));
    assert_span(v[0], "\"2.0\"");
    assert_span(v[1], "42");
    assert_span(v[2], "{\"content\":[{\"type\":\"text\",\"text\":\"a\\\"b\"}],\"isError\":false}");
    assert_null(v[3].p);
    assert_null(v[4].p);
    /* a nested member of the same name is not the top-level one */
    assert_true(scan("{\"result\":{\"id\":1},\"id\":[]}", v));
    assert_span(v[1], "[]");
    assert_span(v[2], "{\"id\":1}");
    assert_true(scan("{}", v));
    assert_null(v[2].p);
}

/* Texts the full parser refuses are refused too. */
static void test_refuses_what_jansson_refuses(void **state)
{
    static const char *const bad[] = {
        "",
        "[]",
        "\"x\"",
        "{",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\":1,}",
        "{\"a\":[1,]}",
        "{\"a\":1} x",
        "{\"a\":1}{}",
        "{\"a\":1,\"a\":2}",
        "{\"x\":{\"k\":1,\"k\":2}}",
        "{\"a\":\"\\u0000\"}",
        "{\"a\":\"\\ud800\"}",
        "{\"a\":\"\\udc00\"}",
        "{\"a\":\"\\ud800\\u0041\"}",
        "{\"a\":\"\xed\xa0\x80\"}",
        "{\"a\":\"\xc0\xaf\"}",
        "{\"a\":\"\xf4\x90\x80\x80\"}",
        "{\"a\":\"\xe2\x82\"}",
        "{\"a\":\"tab\there\"}",
        "{\"a\":\"\\x\"}",
        "{\"a\":01}",
        "{\"a\":-}",
        "{\"a\":1.}",
        "{\"a\":1e}",
        "{\"a\":.5}",
        "{\"a\":tru}",
        "{\"a\":nul}",
        "{\"a\":1e999}",
        "{\"a\":123456789012345678901}",
        "{\"a\" 1}",
        "{1:2}",
    };
    struct mx_str v[NKEYS];
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        json_t *full = mx_rpc_parse(mx_str_cstr(bad[i]));
        bool ok = scan(bad[i], v);
        if (ok || (full && json_is_object(full)))
            fail_msg("case %zu (%s): scan %d, full parser %d", i, bad[i], ok, full != NULL);
        json_decref(full);
    }
}

/* Valid texts it accepts, with the full parser agreeing. */
static void test_accepts_valid(void **state)
{
    static const char *const good[] = {
        "{\"a\":[1,-0,0.5,-1.25e-3,2E+2,true,false,null,{},[],\"\"]}",
        "{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\"}",
        "{\"a\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"}",
        "{\"a\":{\"k\":1},\"b\":{\"k\":1}}",
        "{\"a\":123456789012345678}",
        "{\"a\":1e-999}",
        "{\"a\":1.5e250}",
    };
    struct mx_str v[NKEYS];
    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        json_t *full = mx_rpc_parse(mx_str_cstr(good[i]));
        if (!scan(good[i], v) || full == NULL)
            fail_msg("case %zu (%s): scan refused or full parser %d", i, good[i], full != NULL);
        json_decref(full);
    }
}

/* What cannot be decided cheaply is left to the full parser. */
static void test_declines(void **state)
{
    struct mx_str v[NKEYS];
    char deep[2 * MX_JSCAN_MAX_DEPTH + 16];
    size_t n = 0;
    (void)state;
    n += (size_t)snprintf(deep, sizeof(deep), "{\"a\":");
    for (int i = 0; i < MX_JSCAN_MAX_DEPTH; i++)
        deep[n++] = '[';
    for (int i = 0; i < MX_JSCAN_MAX_DEPTH; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    deep[n] = '\0';
    assert_false(scan(deep, v));
    /* escaped keys: duplicates would need decoding */
    assert_false(scan("{\"\\u0061\":1}", v));
    /* 2^63 - 1 has 19 digits */
    assert_false(scan("{\"a\":9223372036854775807}", v));
    /* more keys alive than tracked */
    size_t cap = 16 * (MX_JSCAN_MAX_KEYS + 2);
    char *many = malloc(cap);
    assert_non_null(many);
    n = 0;
    many[n++] = '{';
    for (int i = 0; i <= MX_JSCAN_MAX_KEYS; i++)
        n += (size_t)snprintf(many + n, cap - n, "%s\"k%d\":%d", i ? "," : "", i, i);
    many[n++] = '}';
    many[n] = '\0';
    assert_false(scan(many, v));
    free(many);
}

static void test_newline(void **state)
{
    (void)state;
    assert_false(mx_jscan_has_newline(mx_str_cstr("{\"a\":\"\\n\"}")));
    assert_true(mx_jscan_has_newline(mx_str_cstr("{\"a\":\n1}")));
    assert_true(mx_jscan_has_newline(mx_str_cstr("{\"a\":\r1}")));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_response_spans), cmocka_unit_test(test_refuses_what_jansson_refuses),
        cmocka_unit_test(test_accepts_valid),  cmocka_unit_test(test_declines),
        cmocka_unit_test(test_newline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
