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

/* The captured stderr as one string (caller frees). */
static char *captured_text(void)
{
    fflush(stderr);
    rewind(captured);
    char *buf = calloc(1, 65536);
    assert_non_null(buf);
    size_t n = fread(buf, 1, 65535, captured);
    buf[n] = '\0';
    return buf;
}

/* A text line cannot be ended, or a terminal driven, by what it quotes. */
static void test_log_text_escapes_control(void **state)
{
    (void)state;
    mx_log_set_format(MX_LOG_TEXT);
    mx_log_warn("t", "a\nFORGED line\rb\tc\001d\x7f e\xc2\x9b f \xc3\xa9 \\n");
    char *text = captured_text();
    assert_non_null(strstr(text, "a\\nFORGED line\\rb\\tc\\x01d\\x7f e\\u009b f \xc3\xa9 \\n\n"));
    /* one line */
    assert_ptr_equal(strchr(text, '\n'), text + strlen(text) - 1);
    free(text);
}

static void mask_x(char *msg, size_t len, void *data)
{
    int *calls = data;
    (*calls)++;
    for (size_t i = 0; i < len; i++) {
        if (msg[i] == 'X')
            msg[i] = '*';
    }
}

/* The redaction hook sees every message, in both formats and access lines. */
static void test_log_redact_hook(void **state)
{
    int calls = 0;
    (void)state;
    mx_log_set_redact(mask_x, &calls);
    mx_log_set_access(true);
    mx_log_info("t", "text XX");
    mx_log_set_format(MX_LOG_JSON);
    mx_log_info("t", "json XX");
    struct mx_log_access a = {"POST", "/mcp/X", "X", NULL, 200, "ok", 1.0, -1.0, 1};
    mx_log_access(&a);
    mx_log_set_redact(NULL, NULL);
    mx_log_info("t", "after XX");
    char *text = captured_text();
    assert_int_equal(calls, 3);
    assert_null(strstr(text, "text XX"));
    assert_null(strstr(text, "json XX"));
    assert_non_null(strstr(text, "text **"));
    assert_non_null(strstr(text, "json **"));
    assert_non_null(strstr(text, "POST /mcp/* *"));
    assert_non_null(strstr(text, "after XX"));
    free(text);
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
        cmocka_unit_test_setup_teardown(test_log_text_escapes_control, capture, restore),
        cmocka_unit_test_setup_teardown(test_log_redact_hook, capture, restore),
        cmocka_unit_test(test_log_format_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
