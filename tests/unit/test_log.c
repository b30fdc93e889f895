/* SPDX-License-Identifier: MIT */
/*
 * The logger's JSON lines: every line parses whatever bytes the message
 * holds (quotes, control characters, broken UTF-8), access lines carry their
 * fields as members, and the access line is at debug unless switched on.
 * stderr is pointed at a temporary file for each test.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "log.h"

static int saved_fd = -1;
static FILE *captured;

static int capture(void **state)
{
    (void)state;
    captured = tmpfile();
    if (captured == NULL)
        return -1;
    fflush(stderr);
    saved_fd = dup(2);
    dup2(fileno(captured), 2);
    return 0;
}

static int restore(void **state)
{
    (void)state;
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    fclose(captured);
    mx_log_set_format(MX_LOG_TEXT);
    mx_log_set_level(MX_LOG_INFO);
    mx_log_set_access(false);
    return 0;
}

/* Every line of the captured stderr, parsed; fails on one that does not parse. */
static json_t *lines(void)
{
    char buf[8192];
    json_t *out = json_array();
    fflush(stderr);
    /* fd 2 shares the file and its offset: read from the start */
    rewind(captured);
    while (fgets(buf, sizeof(buf), captured)) {
        json_error_t err;
        json_t *o = json_loads(buf, JSON_REJECT_DUPLICATES, &err);
        if (!json_is_object(o))
            fail_msg("not a JSON object (%s): %s", err.text, buf);
        json_array_append_new(out, o);
    }
    return out;
}

static void test_log_json_lines_parse(void **state)
{
    (void)state;
    mx_log_set_format(MX_LOG_JSON);
    assert_int_equal(mx_log_get_format(), MX_LOG_JSON);
    mx_log_info("test", "quote \" backslash \\ newline \n tab \t bell \a del \x7f");
    mx_log_warn("test", "broken utf-8: \xc3 \xff \xe2\x82 \xed\xa0\x80 overlong \xc0\xaf");
    mx_log_info("test", "fine utf-8: \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    mx_log_debug("test", "not at info");
    json_t *l = lines();
    assert_int_equal(json_array_size(l), 3);
    json_t *a = json_array_get(l, 0);
    assert_string_equal(json_string_value(json_object_get(a, "level")), "info");
    assert_string_equal(json_string_value(json_object_get(a, "sub")), "test");
    assert_string_equal(json_string_value(json_object_get(a, "msg")),
                        "quote \" backslash \\ newline \n tab \t bell \a del \x7f");
    /* every byte that is not UTF-8 became U+FFFD */
    const char *b = json_string_value(json_object_get(json_array_get(l, 1), "msg"));
    assert_non_null(b);
    assert_non_null(strstr(b, "\xef\xbf\xbd"));
    assert_null(strchr(b, '\xff'));
    assert_string_equal(json_string_value(json_object_get(json_array_get(l, 2), "msg")),
                        "fine utf-8: \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    json_decref(l);
}

static void test_log_access_opt_in(void **state)
{
    (void)state;
    struct mx_log_access a = {"POST", "/mcp/alpha", "tools/call", "alpha", 200, "ok", 1.5, 1.25, 7};
    mx_log_set_format(MX_LOG_JSON);
    assert_false(mx_log_access_enabled());
    mx_log_access(&a); /* debug, not written at info */
    mx_log_set_access(true);
    assert_true(mx_log_access_enabled());
    mx_log_access(&a);
    a.upstream_ms = -1.0; /* unknown: left out */
    a.total_ms = NAN;
    a.rpc_method = NULL;
    mx_log_access(&a);
    json_t *l = lines();
    assert_int_equal(json_array_size(l), 2);
    json_t *o = json_array_get(l, 0);
    assert_string_equal(json_string_value(json_object_get(o, "sub")), "access");
    assert_string_equal(json_string_value(json_object_get(o, "level")), "info");
    assert_string_equal(json_string_value(json_object_get(o, "method")), "POST");
    assert_string_equal(json_string_value(json_object_get(o, "path")), "/mcp/alpha");
    assert_string_equal(json_string_value(json_object_get(o, "rpc_method")), "tools/call");
    assert_string_equal(json_string_value(json_object_get(o, "server")), "alpha");
    assert_string_equal(json_string_value(json_object_get(o, "outcome")), "ok");
    assert_int_equal(json_integer_value(json_object_get(o, "status")), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "req")), 7);
    assert_true(json_number_value(json_object_get(o, "latency_ms")) == 1.5);
    assert_true(json_number_value(json_object_get(o, "upstream_ms")) == 1.25);
    o = json_array_get(l, 1);
    assert_null(json_object_get(o, "upstream_ms"));
    assert_null(json_object_get(o, "rpc_method"));
    assert_true(json_number_value(json_object_get(o, "latency_ms")) == 0.0);
    json_decref(l);

    /* at debug level the line is written even when not switched on */
    mx_log_set_access(false);
    mx_log_set_level(MX_LOG_DEBUG);
    assert_true(mx_log_access_enabled());
}

static void test_log_format_parse(void **state)
{
    (void)state;
    enum mx_log_format f = MX_LOG_TEXT;
    assert_int_equal(mx_log_format_parse("json", &f), 0);
    assert_int_equal(f, MX_LOG_JSON);
    assert_int_equal(mx_log_format_parse("text", &f), 0);
    assert_int_equal(f, MX_LOG_TEXT);
    assert_true(mx_log_format_parse("JSON", &f) < 0);
    assert_true(mx_log_format_parse("", &f) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_log_json_lines_parse, capture, restore),
        cmocka_unit_test_setup_teardown(test_log_access_opt_in, capture, restore),
        cmocka_unit_test(test_log_format_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
